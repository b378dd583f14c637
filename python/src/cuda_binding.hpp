// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// The Python object over a device_engine (device_engine.cu): CUDA arrays
// checked here, the engine called with the object's stream. What differs
// from the CPU object, because device::optimizer keeps one step count on
// the device: a whole step needs every tensor's gradient (no per-parameter
// skipping). A gradient may be absent when the optimizer is built and
// unbound again (None) between steps -- what gradient release does: bind,
// step the tensor, unbind. Rebinding a gradient is a stream-ordered write
// of the new address into the device tables (no rebuild, no host
// synchronization), so a fresh gradient buffer every backward costs a few
// tiny launches.
#pragma once

#include "binding.hpp"
#include "device_engine.hpp"

namespace flashoptim::python {

class cuda_opt final : public opt_base {
 public:
  cuda_opt(std::string name, std::unique_ptr<device_engine> engine, const std::vector<group_arg>& groups,
           const options_arg& o, std::uintptr_t stream)
      : name_(std::move(name)), e_(std::move(engine)) {
    stream_ = stream;
    elem_ = name_.find("/fp32/") != std::string::npos ? elem::f32 : elem::bf16;
    std::vector<device_group> gs(groups.size());
    for (std::size_t g = 0; g < groups.size(); ++g) {
      const std::string where = "group " + std::to_string(g);
      gs[g].hyper = values_from_dict(groups[g].hyper, where);
      for (std::size_t k = 0; k < groups[g].params.size(); ++k) {
        const std::size_t i = params_.size();
        nb::tuple t;
        if (!nb::try_cast(groups[g].params[k], t) || (t.size() != 2 && t.size() != 3))
          throw nb::type_error((where + ", tensor " + std::to_string(k) + ": expected (param, grad[, name])").c_str());
        std::string nm = t.size() == 3 && !t[2].is_none() ? nb::cast<std::string>(t[2]) : std::string();
        const std::string what = "tensor " + std::to_string(i) + (nm.empty() ? "" : " ('" + nm + "')");
        nb::ndarray<> p;
        if (!nb::try_cast(t[0], p))
          throw nb::type_error((what + ": param is not a writable array (a torch parameter: pass p.detach())").c_str());
        const array_view pv = view_of(p, elem_, what + " param");
        check_device(pv, what + " param");
        nb::ndarray<nb::ro> gr;
        if (!t[1].is_none()) gr = grad_array(t[1], pv.size, what);
        optim::param_spec s;
        s.param = pv.data;
        s.grad = t[1].is_none() ? nullptr : gr.data();
        s.size = pv.size;
        s.rows = pv.rows;
        s.cols = pv.cols;
        s.name = nm;
        params_.push_back(p);
        grads_.push_back(gr);
        gs[g].params.push_back(std::move(s));
      }
    }
    optim::optimizer_options oo;
    oo.seed = o.seed;
    oo.lr_check = lr_mode(o.lr_check);
    check(e_->init(gs, oo, stream_), "init");
  }

  std::string config() const override { return name_; }
  std::string device() const override { return "cuda"; }
  std::size_t group_count() const override { return e_->group_count(); }
  std::size_t tensor_count() const override { return e_->tensor_count(); }
  std::vector<std::string> names() const override { return e_->names(); }
  std::vector<std::int32_t> tensor_group() const override { return e_->tensor_group(); }
  nb::dict hyper(std::size_t g) const override {
    check_group(g);
    nb::dict d;
    for (const auto& kv : e_->hyper(g)) {
      const bool flag = kv.first == "decouple_lr" || kv.first == "maximize" || kv.first == "nesterov";
      if (flag) d[kv.first.c_str()] = kv.second != 0.0;
      else d[kv.first.c_str()] = kv.second;
    }
    return d;
  }
  void set_hyper(std::size_t g, const nb::dict& h) override {
    check_group(g);
    check(e_->set_hyper(g, values_from_dict(h, "set_hyper"), stream_), "set_hyper");
  }
  void set_lr(std::size_t g, double lr) override {
    check_group(g);
    check(e_->set_lr(g, lr, stream_), "set_lr");
  }
  void set_grad(std::size_t i, nb::object grad) override {
    check_tensor(i);
    if (grad.is_none()) {  // unbound: a whole step refuses until it is bound again
      check(e_->set_grad(i, nullptr, stream_), "set_grad");
      grads_[i] = nb::ndarray<nb::ro>();
      return;
    }
    nb::ndarray<nb::ro> g = grad_array(grad, e_->tensor_size(i), "tensor " + std::to_string(i));
    check(e_->set_grad(i, g.data(), stream_), "set_grad");
    grads_[i] = g;  // held: the device reads it later on the stream
  }
  std::vector<std::int64_t> step_counts() const override {
    std::int64_t c = 0;
    check(e_->step_count(c, stream_), "step_counts");
    return std::vector<std::int64_t>(e_->tensor_count(), c);
  }
  void set_step_counts(const std::vector<std::int64_t>&) override {
    throw nb::value_error("set_step_counts: on CUDA the step count comes with set_state");
  }
  void step(double inv_grad_scale) override {
    if (inv_grad_scale != 1.0)
      throw nb::value_error("step: on CUDA a gradient multiplier comes from the gradient pass (step_grad_pass) "
                            "or a release step (begin_step)");
    check(e_->step(stream_), "step");
  }
  nb::dict step_grad_pass(double max_norm, const nb::dict& scaler, const nb::dict& control) override {
    if (control.size() != 0)
      throw nb::value_error("step_grad_pass: on CUDA the loss scale lives on the device (control must be empty)");
    grad_pass_config cfg;
    cfg.max_norm = max_norm;
    for (auto item : scaler) {
      const std::string k = nb::cast<std::string>(item.first);
      if (k == "enabled") cfg.scaler.enabled = nb::cast<bool>(item.second);
      else if (k == "init_scale") cfg.scaler.init_scale = nb::cast<double>(item.second);
      else if (k == "growth_factor") cfg.scaler.growth_factor = nb::cast<double>(item.second);
      else if (k == "backoff_factor") cfg.scaler.backoff_factor = nb::cast<double>(item.second);
      else if (k == "growth_interval") cfg.scaler.growth_interval = nb::cast<std::int32_t>(item.second);
      else throw nb::value_error(("scaler: unknown key '" + k + "'").c_str());
    }
    grad_control ctl;
    check(e_->step_grad_pass(cfg, stream_, ctl), "step");
    nb::dict out;
    out["loss_scale"] = ctl.loss_scale;
    out["multiplier"] = ctl.multiplier;
    out["total_norm"] = ctl.total_norm;
    out["clip_coef"] = ctl.clip_coef;
    out["inv_loss_scale"] = ctl.inv_loss_scale;
    out["growth_tracker"] = ctl.growth_tracker;
    out["skip"] = ctl.skip != 0;
    return out;
  }
  void begin_step(double inv) override { check(e_->begin_step(inv), "begin_step"); }
  void step_tensor(std::size_t i) override { check(e_->step_tensor(i, stream_), "step_tensor"); }
  void end_step() override { check(e_->end_step(stream_), "end_step"); }
  bool in_release_step() const override { return e_->in_release_step(); }
  nb::dict state(std::size_t i) const override {
    check_tensor(i);
    byte_buffers b;
    check(e_->state(i, b, stream_), "state");
    nb::dict d;
    for (auto& kv : b) {
      auto* buf = new std::uint8_t[kv.second.empty() ? 1 : kv.second.size()];
      if (!kv.second.empty()) std::memcpy(buf, kv.second.data(), kv.second.size());
      nb::capsule owner(buf, [](void* q) noexcept { delete[] static_cast<std::uint8_t*>(q); });
      std::size_t shape[1] = {kv.second.size()};
      d[kv.first.c_str()] = nb::cast(nb::ndarray<nb::numpy, std::uint8_t, nb::ndim<1>>(buf, 1, shape, owner));
    }
    std::int64_t c = 0;
    check(e_->step_count(c, stream_), "state");
    d["step"] = c;
    return d;
  }
  void set_state(std::size_t i, const nb::dict& s) override {
    check_tensor(i);
    byte_buffers in;
    std::int64_t step = -1;
    for (auto item : s) {
      const std::string k = nb::cast<std::string>(item.first);
      if (k == "step") {
        step = nb::cast<std::int64_t>(item.second);
        continue;
      }
      nb::ndarray<nb::ro, nb::device::cpu> a;
      if (!nb::try_cast(item.second, a)) throw nb::type_error(("set_state: '" + k + "' is not a CPU array").c_str());
      const auto* b = static_cast<const std::uint8_t*>(a.data());
      in.emplace_back(k, std::vector<std::uint8_t>(b, b + a.nbytes()));
    }
    if (step < 0) throw nb::value_error("set_state: on CUDA 'step' is required (one count for every tensor)");
    check(e_->set_state(i, in, step, stream_), "set_state");
  }
  nb::dict memory() const override {
    const optim::memory_report r = e_->memory();
    nb::dict d;
    d["elements"] = r.elements;
    d["param_bytes"] = r.param_bytes;
    d["grad_bytes"] = r.grad_bytes;
    d["correction_bytes"] = r.correction_bytes;
    d["state_code_bytes"] = r.state_code_bytes;
    d["state_scale_bytes"] = r.state_scale_bytes;
    d["padding_bytes"] = r.padding_bytes;
    d["table_bytes"] = r.table_bytes;
    d["arena_bytes"] = r.arena_bytes;
    d["bytes_per_param"] = r.bytes_per_param(true);
    d["bytes_per_param_release"] = r.bytes_per_param(false);
    return d;
  }
  std::string memory_string() const override { return e_->memory().to_string(); }
  nb::dict lr_report() const override {
    const optim::lr_report r = e_->lr_report();
    nb::list entries;
    for (const auto& e : r.cannot_move) {
      nb::dict d;
      d["tensor"] = e.tensor;
      d["group"] = e.group;
      d["name"] = e.name;
      d["max_abs_param"] = e.max_abs_param;
      d["update"] = e.update;
      d["resolution"] = e.resolution;
      d["lr"] = e.lr;
      d["size"] = e.size;
      d["mode"] = e.mode;
      entries.append(d);
    }
    nb::dict out;
    out["cannot_move"] = entries;
    out["tensors"] = r.tensors;
    out["parameters"] = r.parameters;
    out["summary"] = r.summary();
    return out;
  }
  nb::object fp32_param(std::size_t i) const override {
    check_tensor(i);
    std::vector<float> v;
    check(e_->fp32_param(i, v, stream_), "fp32_param");
    auto out = new_f32(v.size());
    if (!v.empty()) std::memcpy(out.second, v.data(), v.size() * sizeof(float));
    return out.first;
  }
  void set_fp32_param(std::size_t i, nb::handle x) override {
    check_tensor(i);
    const auto a = f32_input(x, e_->tensor_size(i), "set_fp32_param(" + std::to_string(i) + ")");
    check(e_->set_fp32_param(i, static_cast<const float*>(a.data()), e_->tensor_size(i), stream_), "set_fp32_param");
  }
  std::string step_and_compare_serial() override {
    throw nb::value_error("step_and_compare_serial: CPU optimizers only (the GPU tests compare with a CPU twin)");
  }

 private:
  static hyper_values values_from_dict(const nb::dict& d, const std::string& where) {
    hyper_values v;
    for (auto item : d) {
      double x = 0.0;
      if (!nb::try_cast<double>(item.second, x))
        throw nb::type_error((where + ": hyperparameter '" + nb::cast<std::string>(item.first) + "' is not a number")
                                 .c_str());
      v.emplace_back(nb::cast<std::string>(item.first), x);
    }
    return v;
  }
  void check_device(const array_view& v, const std::string& what) {
    if (v.device_type != 2)
      throw nb::value_error((what + ": the array is on " + device_name(v.device_type) +
                             ", this optimizer is a CUDA one (every array of one optimizer on one device)")
                                .c_str());
    if (device_id_ < 0) device_id_ = v.device_id;
    if (v.device_id != device_id_)
      throw nb::value_error((what + ": on cuda:" + std::to_string(v.device_id) + ", the optimizer's other arrays on cuda:" +
                             std::to_string(device_id_))
                                .c_str());
  }
  nb::ndarray<nb::ro> grad_array(nb::handle h, std::int64_t size, const std::string& what) {
    nb::ndarray<nb::ro> g;
    if (!nb::try_cast(h, g)) throw nb::type_error((what + ": grad is not an array").c_str());
    const array_view gv = view_of(g, elem_, what + " grad");
    check_device(gv, what + " grad");
    if (gv.size != size)
      throw nb::value_error((what + ": grad has " + std::to_string(gv.size) + " elements, the param " +
                             std::to_string(size))
                                .c_str());
    return g;
  }
  void check_group(std::size_t g) const {
    if (g >= e_->group_count()) throw nb::index_error(("group " + std::to_string(g) + " is out of range").c_str());
  }
  void check_tensor(std::size_t i) const {
    if (i >= e_->tensor_count()) throw nb::index_error(("tensor " + std::to_string(i) + " is out of range").c_str());
  }

  std::string name_;
  std::unique_ptr<device_engine> e_;
  elem elem_ = elem::bf16;
  std::int32_t device_id_ = -1;
  std::vector<nb::ndarray<>> params_;
  std::vector<nb::ndarray<nb::ro>> grads_;
};

}  // namespace flashoptim::python
