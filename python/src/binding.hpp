// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// The Python extension's core: one run-time object (opt_base) per owning
// optimizer, whatever its compiled configuration, so the module exposes one
// class and a factory keyed by a configuration name. Arrays arrive through
// nanobind's nb::ndarray (DLPack or the buffer protocol: numpy, torch, JAX,
// CuPy), are checked here (dtype, C-contiguity, device, writability) and kept
// alive by the object for as long as it points at them.
//
// Per-parameter step counts: torch keeps a step count per parameter and
// skips a parameter whose .grad is None. cpu::optimizer keeps one count, so
// this layer keeps one per tensor; while they are all equal and every
// gradient is present a step is the optimizer's own step() (or its gradient
// pass step); otherwise the tensors with a gradient are stepped through
// cpu::step, each with its own count, which is the same per-tensor
// arithmetic (cpu::step's bytes depend on a tensor's own buffers, scalars
// and count only).
#pragma once

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "flashoptim/codec/bulk.hpp"
#include "flashoptim/codec/presets.hpp"
#include "flashoptim/cpu/grad_pass.hpp"
#include "flashoptim/cpu/serial.hpp"
#include "flashoptim/cpu/step.hpp"
#include "flashoptim/optim/cpu_optimizer.hpp"
#include "flashoptim/optim/lr_check.hpp"
#include "flashoptim/rule/adam.hpp"
#include "flashoptim/rule/config.hpp"
#include "flashoptim/rule/lion.hpp"
#include "flashoptim/rule/sgd.hpp"
#include "hyper.hpp"

namespace flashoptim::python {

namespace nb = nanobind;

/// A library status error, raised in Python as FlashoptimError (a ValueError).
struct status_error : std::runtime_error {
  explicit status_error(const std::string& m) : std::runtime_error(m) {}
};

inline void check(const status& s, const char* what) {
  if (!s.ok()) throw status_error(std::string(what) + ": " + to_string(s.code()) + ": " + s.message());
}

// ---------------------------------------------------------------- arrays

enum class elem { f32, bf16 };

inline const char* elem_name(elem e) { return e == elem::f32 ? "float32" : "bfloat16"; }

template <class T>
constexpr elem elem_of() {
  static_assert(std::is_same<T, float>::value || std::is_same<T, bf16>::value, "binding: fp32 or bf16 only");
  return std::is_same<T, float>::value ? elem::f32 : elem::bf16;
}

/// What a checked array gives the optimizer.
struct array_view {
  void* data = nullptr;
  std::int64_t size = 0;
  std::int64_t rows = 0, cols = 0;  ///< the 2-D shape when the array is 2-D
  std::int32_t device_type = 0;     ///< DLPack's: 1 = CPU, 2 = CUDA
  std::int32_t device_id = 0;
};

inline const char* device_name(std::int32_t t) {
  switch (t) {
    case 1: return "cpu";
    case 2: return "cuda";
    case 3: return "cuda_host";
    case 13: return "cuda_managed";
    default: return "another device";
  }
}

/// dtype: bf16 also accepts 16-bit integer arrays as raw bf16 bits (numpy has
/// no bfloat16); float32 is float32 only.
inline bool dtype_matches(nb::dlpack::dtype d, elem e) {
  if (d.lanes != 1) return false;
  if (e == elem::f32) return d.code == static_cast<std::uint8_t>(nb::dlpack::dtype_code::Float) && d.bits == 32;
  if (d.bits != 16) return false;
  return d.code == static_cast<std::uint8_t>(nb::dlpack::dtype_code::Bfloat) ||
         d.code == static_cast<std::uint8_t>(nb::dlpack::dtype_code::UInt) ||
         d.code == static_cast<std::uint8_t>(nb::dlpack::dtype_code::Int);
}

inline std::string dtype_string(nb::dlpack::dtype d) {
  const char* kind = "?";
  switch (static_cast<nb::dlpack::dtype_code>(d.code)) {
    case nb::dlpack::dtype_code::Int: kind = "int"; break;
    case nb::dlpack::dtype_code::UInt: kind = "uint"; break;
    case nb::dlpack::dtype_code::Float: kind = "float"; break;
    case nb::dlpack::dtype_code::Bfloat: kind = "bfloat"; break;
    case nb::dlpack::dtype_code::Complex: kind = "complex"; break;
    case nb::dlpack::dtype_code::Bool: kind = "bool"; break;
    default: break;
  }
  return std::string(kind) + std::to_string(d.bits) + (d.lanes != 1 ? "x" + std::to_string(d.lanes) : "");
}

/// Checks dtype and C-contiguity (a size-1 extent may have any stride, as
/// torch's is_contiguous allows) and reads the view.
template <class Array>
array_view view_of(const Array& a, elem e, const std::string& what) {
  if (!dtype_matches(a.dtype(), e))
    throw nb::type_error((what + ": dtype " + dtype_string(a.dtype()) + " is not the configuration's " +
                          elem_name(e) + (e == elem::bf16 ? " (or 16-bit integer bf16 bits)" : ""))
                             .c_str());
  // An empty array is contiguous whatever its strides (numpy 2 gives an
  // empty array stride 0).
  std::int64_t expected = 1, n = 1;
  for (std::size_t k = 0; k < a.ndim(); ++k) n *= static_cast<std::int64_t>(a.shape(k));
  const bool empty = n == 0;
  n = 1;
  for (std::size_t k = a.ndim(); k-- > 0;) {
    const auto extent = static_cast<std::int64_t>(a.shape(k));
    if (!empty && extent != 1 && a.stride(k) != expected)
      throw nb::value_error((what + ": the array is not C-contiguous (dimension " + std::to_string(k) + " has stride " +
                             std::to_string(a.stride(k)) + " elements, " + std::to_string(expected) +
                             " expected); pass a contiguous copy (.contiguous() / np.ascontiguousarray)")
                                .c_str());
    expected *= extent;
    n *= extent;
  }
  array_view v;
  v.data = const_cast<void*>(static_cast<const void*>(a.data()));
  v.size = n;
  if (a.ndim() == 2) {
    v.rows = static_cast<std::int64_t>(a.shape(0));
    v.cols = static_cast<std::int64_t>(a.shape(1));
  }
  v.device_type = a.device_type();
  v.device_id = a.device_id();
  return v;
}

// ---------------------------------------------------------------- hyperparameters

template <class Rule>
nb::dict hyper_to_dict(const typename Rule::hyper& h) {
  nb::dict d;
  auto copy = h;
  visit_hyper<Rule>(copy, [&](const char* name, auto& v) { d[name] = v; });
  return d;
}

/// Starts from Rule's defaults; an unknown key is an error naming the known ones.
template <class Rule>
typename Rule::hyper hyper_from_dict(const nb::dict& d, const std::string& where) {
  typename Rule::hyper h{};
  for (auto item : d) {
    const std::string key = nb::cast<std::string>(item.first);
    bool found = false;
    std::string known;
    visit_hyper<Rule>(h, [&](const char* name, auto& v) {
      known += known.empty() ? name : std::string(", ") + name;
      if (key != name) return;
      found = true;
      using V = std::remove_reference_t<decltype(v)>;
      if (!nb::try_cast<V>(item.second, v))
        throw nb::type_error((where + ": hyperparameter '" + key + "' is not a " +
                              (std::is_same<V, bool>::value ? "bool" : "number"))
                                 .c_str());
    });
    if (!found)
      throw nb::value_error((where + ": unknown hyperparameter '" + key + "' (known: " + known + ")").c_str());
  }
  return h;
}

// ---------------------------------------------------------------- the run-time object

/// One (param, grad or None, name) per tensor, and the group's hyperparameters.
struct group_arg {
  nb::list params;
  nb::dict hyper;
};

struct options_arg {
  std::uint64_t seed = 0;
  std::string lr_check = "report";  // off | report | strict (the Python layer turns a report into a warning)
  int threads = 0;
};

inline optim::lr_check_mode lr_mode(const std::string& s) {
  if (s == "off") return optim::lr_check_mode::off;
  if (s == "report") return optim::lr_check_mode::report;
  if (s == "strict") return optim::lr_check_mode::strict;
  throw nb::value_error(("lr_check must be 'off', 'report' or 'strict', not '" + s + "'").c_str());
}

class opt_base {
 public:
  virtual ~opt_base() = default;
  /// The CUDA stream later calls run on (torch's current stream); ignored on the CPU.
  void set_stream(std::uintptr_t s) { stream_ = s; }
  std::uintptr_t stream() const { return stream_; }
  virtual std::string config() const = 0;
  virtual std::string device() const = 0;
  virtual std::size_t group_count() const = 0;
  virtual std::size_t tensor_count() const = 0;
  virtual std::vector<std::string> names() const = 0;
  virtual std::vector<std::int32_t> tensor_group() const = 0;
  virtual nb::dict hyper(std::size_t g) const = 0;
  virtual void set_hyper(std::size_t g, const nb::dict& h) = 0;
  virtual void set_lr(std::size_t g, double lr) = 0;
  virtual void set_grad(std::size_t i, nb::object grad) = 0;
  virtual std::vector<std::int64_t> step_counts() const = 0;
  virtual void set_step_counts(const std::vector<std::int64_t>& c) = 0;
  /// Steps the tensors whose gradient is bound (all of them: the optimizer's step()).
  virtual void step(double inv_grad_scale) = 0;
  /// The gradient pass (clip, skip on overflow, GradScaler update), then the step.
  virtual nb::dict step_grad_pass(double max_norm, const nb::dict& scaler, const nb::dict& control) = 0;
  virtual void begin_step(double inv_grad_scale) = 0;
  virtual void step_tensor(std::size_t i) = 0;
  virtual void end_step() = 0;
  virtual bool in_release_step() const = 0;
  virtual nb::dict state(std::size_t i) const = 0;
  virtual void set_state(std::size_t i, const nb::dict& s) = 0;
  virtual nb::dict memory() const = 0;
  virtual std::string memory_string() const = 0;
  virtual nb::dict lr_report() const = 0;
  /// Steps the bound tensors through cpu::step_serial on a copy of the
  /// optimizer's state and compares with what step(1) then writes; "" when
  /// identical, else the first difference. The tests' bit-identity check.
  virtual std::string step_and_compare_serial() = 0;
  /// Tensor i's weights as fp32: Config::master::decode(param, correction)
  /// (what get_fp32_model_state_dict returns).
  virtual nb::object fp32_param(std::size_t i) const = 0;
  /// Sets tensor i's param and correction from fp32 weights
  /// (Config::master::encode, codec::split); states and counts unchanged.
  virtual void set_fp32_param(std::size_t i, nb::handle x) = 0;

 protected:
  std::uintptr_t stream_ = 0;
};

using factory_fn = std::function<std::unique_ptr<opt_base>(const std::vector<group_arg>&, const options_arg&)>;
using registry = std::map<std::string, factory_fn>;

/// A buffer name as a state key ("state0 scales" -> "state0_scales").
inline std::string key_with_underscore(const char* name) {
  std::string k(name);
  std::replace(k.begin(), k.end(), ' ', '_');
  return k;
}

/// A new float32 numpy array of n elements (filled by the caller).
inline std::pair<nb::object, float*> new_f32(std::size_t n) {
  auto* buf = new float[n > 0 ? n : 1];
  nb::capsule owner(buf, [](void* q) noexcept { delete[] static_cast<float*>(q); });
  std::size_t shape[1] = {n};
  return {nb::cast(nb::ndarray<nb::numpy, float, nb::ndim<1>>(buf, 1, shape, owner)), buf};
}

/// A CPU float32 C-contiguous array of n elements (set_fp32_param's input).
inline nb::ndarray<nb::ro, nb::device::cpu> f32_input(nb::handle h, std::int64_t n, const std::string& what) {
  nb::ndarray<nb::ro, nb::device::cpu> a;
  if (!nb::try_cast(h, a)) throw nb::type_error((what + ": not a CPU array").c_str());
  const array_view v = view_of(a, elem::f32, what);
  if (v.size != n)
    throw nb::value_error((what + ": " + std::to_string(v.size) + " elements, the tensor has " + std::to_string(n))
                              .c_str());
  return a;
}

// ---------------------------------------------------------------- the CPU implementation

template <class Config>
class cpu_opt final : public opt_base {
  using P = typename Config::param_type;
  using G = typename Config::grad_type;
  using rule_t = typename Config::rule;
  using hyper_t = typename Config::hyper;

 public:
  cpu_opt(std::string name, const std::vector<group_arg>& groups, const options_arg& o) : name_(std::move(name)) {
    std::vector<optim::param_group<Config>> gs(groups.size());
    for (std::size_t g = 0; g < groups.size(); ++g) {
      const std::string where = "group " + std::to_string(g);
      gs[g].hyper = hyper_from_dict<rule_t>(groups[g].hyper, where);
      for (std::size_t k = 0; k < groups[g].params.size(); ++k) {
        const std::size_t i = params_.size();
        nb::handle item = groups[g].params[k];
        nb::tuple t;
        if (!nb::try_cast(item, t) || (t.size() != 2 && t.size() != 3))
          throw nb::type_error((where + ", tensor " + std::to_string(k) + ": expected (param, grad or None[, name])")
                                   .c_str());
        std::string name = t.size() == 3 && !t[2].is_none() ? nb::cast<std::string>(t[2]) : std::string();
        const std::string what = "tensor " + std::to_string(i) + (name.empty() ? "" : " ('" + name + "')");
        nb::ndarray<> p;
        if (!nb::try_cast(t[0], p))
          throw nb::type_error((what + ": param is not a writable array (DLPack or buffer protocol; a torch "
                                       "parameter: pass p.detach())")
                                   .c_str());
        const array_view pv = view_of(p, elem_of<P>(), what + " param");
        check_device(pv, what + " param");
        optim::param_spec s;
        s.param = pv.data;
        s.size = pv.size;
        s.rows = pv.rows;
        s.cols = pv.cols;
        s.name = name;
        params_.push_back(p);
        grads_.emplace_back();
        if (!t[1].is_none()) {
          nb::ndarray<nb::ro> gr = grad_array(t[1], pv.size, what);
          s.grad = gr.data();
          grads_.back() = gr;
          has_grad_.push_back(1);
        } else {
          has_grad_.push_back(0);
        }
        gs[g].params.push_back(std::move(s));
      }
    }
    optim::optimizer_options oo;
    oo.seed = o.seed;
    oo.lr_check = lr_mode(o.lr_check);
    cpu::step_options so;
    so.threads = o.threads;
    check(opt_.init(std::move(gs), oo, so), "init");
    counts_.assign(opt_.tensor_count(), 0);
  }

  std::string config() const override { return name_; }
  std::string device() const override { return "cpu"; }
  std::size_t group_count() const override { return opt_.group_count(); }
  std::size_t tensor_count() const override { return opt_.tensor_count(); }
  std::vector<std::string> names() const override { return opt_.names(); }
  std::vector<std::int32_t> tensor_group() const override { return opt_.tensor_group(); }
  nb::dict hyper(std::size_t g) const override {
    check_group(g);
    return hyper_to_dict<rule_t>(opt_.hyper(g));
  }
  void set_hyper(std::size_t g, const nb::dict& d) override {
    check_group(g);
    // unspecified keys keep the group's current values
    hyper_t h = opt_.hyper(g);
    const hyper_t given = hyper_from_dict<rule_t>(d, "set_hyper");
    for (auto item : d) {
      const std::string key = nb::cast<std::string>(item.first);
      auto src = given;
      visit_hyper<rule_t>(h, [&](const char* name, auto& dst) {
        if (key != name) return;
        visit_hyper<rule_t>(src, [&](const char* n2, auto& v) {
          if constexpr (std::is_same<std::remove_reference_t<decltype(v)>,
                                     std::remove_reference_t<decltype(dst)>>::value)
            if (key == n2) dst = v;
        });
      });
    }
    check(opt_.set_hyper(g, h), "set_hyper");
  }
  void set_lr(std::size_t g, double lr) override {
    check_group(g);
    check(opt_.set_lr(g, lr), "set_lr");
  }

  void set_grad(std::size_t i, nb::object grad) override {
    check_tensor(i);
    if (grad.is_none()) {
      check(opt_.set_grad(i, nullptr), "set_grad");
      grads_[i] = nb::ndarray<nb::ro>();
      has_grad_[i] = 0;
      return;
    }
    nb::ndarray<nb::ro> g = grad_array(grad, opt_.tensors()[i].size, "tensor " + std::to_string(i));
    check(opt_.set_grad(i, g.data()), "set_grad");
    grads_[i] = g;
    has_grad_[i] = 1;
  }

  std::vector<std::int64_t> step_counts() const override { return counts_; }
  void set_step_counts(const std::vector<std::int64_t>& c) override {
    if (c.size() != counts_.size())
      throw nb::value_error(("set_step_counts: " + std::to_string(c.size()) + " counts for " +
                             std::to_string(counts_.size()) + " tensors")
                                .c_str());
    for (auto v : c)
      if (v < 0) throw nb::value_error("set_step_counts: a count is negative");
    if (opt_.in_release_step()) throw nb::value_error("set_step_counts: a release step is open");
    if (!c.empty() && std::all_of(c.begin(), c.end(), [&](std::int64_t v) { return v == c[0]; }))
      check(opt_.set_step_count(c[0]), "set_step_counts");
    counts_ = c;
  }

  void step(double inv_grad_scale) override {
    check_not_releasing("step");
    const std::vector<std::size_t> idx = present();
    if (idx.size() == counts_.size() && uniform() && inv_grad_scale == 1.0) {
      check(opt_.step(), "step");
      for (auto& c : counts_) ++c;
      return;
    }
    step_subset(idx, inv_grad_scale);
  }

  nb::dict step_grad_pass(double max_norm, const nb::dict& scaler, const nb::dict& control) override {
    check_not_releasing("step");
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
    for (auto item : control) {
      const std::string k = nb::cast<std::string>(item.first);
      if (k == "loss_scale") ctl.loss_scale = nb::cast<double>(item.second);
      else if (k == "growth_tracker") ctl.growth_tracker = nb::cast<std::int32_t>(item.second);
      else throw nb::value_error(("control: unknown key '" + k + "' (loss_scale, growth_tracker)").c_str());
    }
    const std::vector<std::size_t> idx = present();
    if (idx.size() == counts_.size() && uniform()) {
      check(opt_.step(cfg, ctl), "step");
      if (ctl.skip == 0)
        for (auto& c : counts_) ++c;
    } else {
      // the pass over the gradients present only (torch's clip_grad_norm_
      // and GradScaler see only those too)
      std::vector<grad_tensor> gl;
      for (auto i : idx) gl.push_back(grad_tensor{opt_.tensors()[i].grad, dtype_v<G>, opt_.tensors()[i].size});
      cpu::grad_pass_options po;
      po.threads = opt_.cpu_step_options().threads;
      check(cpu::grad_pass(grad_list{gl.data(), static_cast<std::int64_t>(gl.size())}, cfg, &ctl, {}, po), "step");
      if (ctl.skip == 0) step_subset(idx, ctl.multiplier);
    }
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

  void begin_step(double inv_grad_scale) override {
    if (!uniform())
      throw nb::value_error("begin_step: the tensors' step counts differ (some were skipped); gradient release "
                            "needs one count");
    check(opt_.begin_step(inv_grad_scale), "begin_step");
  }
  void step_tensor(std::size_t i) override {
    check_tensor(i);
    if (!has_grad_[i]) throw nb::value_error(("step_tensor(" + std::to_string(i) + "): no gradient bound").c_str());
    check(opt_.step_tensor(i), "step_tensor");
  }
  void end_step() override {
    check(opt_.end_step(), "end_step");
    for (auto& c : counts_) ++c;
  }
  bool in_release_step() const override { return opt_.in_release_step(); }

  nb::dict state(std::size_t i) const override {
    check_tensor(i);
    nb::dict d;
    for_each_buffer(opt_.tensors()[i], [&](const char* name, const void* p, std::size_t bytes, bool written) {
      if (!written || std::strcmp(name, "param") == 0) return;
      d[key_of(name).c_str()] = bytes_array(p, bytes);
    });
    d["step"] = counts_[i];
    return d;
  }
  void set_state(std::size_t i, const nb::dict& s) override {
    check_tensor(i);
    if (opt_.in_release_step()) throw nb::value_error("set_state: a release step is open");
    // every check first, then the copies: nothing is written on error
    std::vector<std::pair<void*, nb::ndarray<nb::ro, nb::device::cpu>>> copies;
    std::size_t keys = 0;
    std::int64_t step = -1;
    for_each_buffer(opt_.tensors()[i], [&](const char* name, const void* p, std::size_t bytes, bool written) {
      if (!written || std::strcmp(name, "param") == 0) return;
      const std::string k = key_of(name);
      ++keys;
      if (!s.contains(k.c_str()))
        throw nb::value_error(("set_state(" + std::to_string(i) + "): key '" + k + "' is missing").c_str());
      nb::ndarray<nb::ro, nb::device::cpu> a;
      if (!nb::try_cast(s[k.c_str()], a))
        throw nb::type_error(("set_state: '" + k + "' is not a CPU array").c_str());
      std::size_t nbytes = a.nbytes();
      if (nbytes != bytes)
        throw nb::value_error(("set_state(" + std::to_string(i) + "): '" + k + "' has " + std::to_string(nbytes) +
                               " bytes, the optimizer's has " + std::to_string(bytes))
                                  .c_str());
      std::int64_t expected = 1;
      for (std::size_t d = a.ndim(); d-- > 0;) {
        if (nbytes != 0 && a.shape(d) != 1 && a.stride(d) != expected)
          throw nb::value_error(("set_state: '" + k + "' is not C-contiguous").c_str());
        expected *= static_cast<std::int64_t>(a.shape(d));
      }
      // the arena is the optimizer's own memory, writable (for_each_buffer hands out const views)
      copies.emplace_back(const_cast<void*>(p), a);
    });
    if (s.contains("step")) {
      step = nb::cast<std::int64_t>(s["step"]);
      if (step < 0) throw nb::value_error("set_state: step is negative");
      ++keys;
    }
    if (s.size() != keys) throw nb::value_error(("set_state(" + std::to_string(i) + "): unknown keys").c_str());
    for (auto& c : copies)
      if (c.second.nbytes() > 0) std::memcpy(c.first, c.second.data(), c.second.nbytes());
    if (step >= 0) {
      counts_[i] = step;
      if (uniform()) (void)opt_.set_step_count(counts_[0]);
    }
  }

  nb::dict memory() const override {
    const optim::memory_report r = opt_.memory();
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
  std::string memory_string() const override { return opt_.memory().to_string(); }

  nb::dict lr_report() const override {
    optim::lr_report r;
    for (std::size_t i = 0; i < opt_.tensor_count(); ++i) {
      const auto& t = opt_.tensors()[i];
      const auto g = static_cast<std::size_t>(opt_.tensor_group()[i]);
      optim::lr_report_add<Config>(r, i, static_cast<std::int32_t>(g), opt_.names()[i], t.size, opt_.hyper(g),
                                   optim::max_abs_param<Config>(t.param, t.aux, t.size));
    }
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

  std::string step_and_compare_serial() override {
    check_not_releasing("step_and_compare_serial");
    const std::vector<std::size_t> idx = present();
    // a copy of every bound tensor's param and arena buffers, stepped by step_serial
    std::vector<std::vector<unsigned char>> store;
    std::vector<tensor_ref<Config>> copy;
    for (auto i : idx) {
      tensor_ref<Config> t = opt_.tensors()[i];
      std::vector<std::pair<const void*, std::size_t>> spans;
      for_each_buffer(t, [&](const char*, const void* p, std::size_t bytes, bool written) {
        if (written) spans.emplace_back(p, bytes);
      });
      // the same order as for_each_buffer: param, correction, slot codes, slot scales
      std::size_t k = 0;
      auto dup = [&](auto*& ptr) {
        const auto& sp = spans[k++];
        store.emplace_back(static_cast<const unsigned char*>(sp.first),
                           static_cast<const unsigned char*>(sp.first) + sp.second);
        store.back().resize(sp.second + 64);  // never empty: a distinct pointer for every buffer
        using T = std::remove_pointer_t<std::remove_reference_t<decltype(ptr)>>;
        ptr = ptr == nullptr ? nullptr : reinterpret_cast<T*>(store.back().data());
      };
      dup(t.param);
      dup(t.aux);
      for_each_slot<Config::num_slots>([&](auto s) {
        constexpr int I = decltype(s)::value;
        auto& r = slot_at<I>(t.states);
        dup(r.codes);
        dup(r.scales);
      });
      copy.push_back(t);
    }
    for (std::size_t k = 0; k < idx.size(); ++k) {
      const auto i = idx[k];
      step_args a;
      a.step = counts_[i] + 1;
      check(cpu::step_serial<Config>(opt_.hyper(static_cast<std::size_t>(opt_.tensor_group()[i])), a, &copy[k], 1),
            "step_serial");
    }
    step(1.0);
    for (std::size_t k = 0; k < idx.size(); ++k) {
      const tensor_ref<Config>& a = opt_.tensors()[idx[k]];
      const tensor_ref<Config>& b = copy[k];
      std::vector<std::pair<const void*, std::size_t>> sa, sb;
      std::vector<const char*> names;
      for_each_buffer(a, [&](const char* n, const void* p, std::size_t bytes, bool w) {
        if (w) sa.emplace_back(p, bytes), names.push_back(n);
      });
      for_each_buffer(b, [&](const char*, const void* p, std::size_t bytes, bool w) {
        if (w) sb.emplace_back(p, bytes);
      });
      for (std::size_t j = 0; j < sa.size(); ++j)
        if (sa[j].second > 0 && std::memcmp(sa[j].first, sb[j].first, sa[j].second) != 0)
          return "tensor " + std::to_string(idx[k]) + " ('" + opt_.names()[idx[k]] + "'): " + names[j] + " differs";
    }
    return std::string();
  }

  nb::object fp32_param(std::size_t i) const override {
    check_tensor(i);
    const auto& t = opt_.tensors()[i];
    auto out = new_f32(static_cast<std::size_t>(t.size));
    for (std::int64_t k = 0; k < t.size; ++k) {
      typename Config::aux_type a{};
      if constexpr (Config::has_aux) a = t.aux[k];
      out.second[k] = Config::master::decode(t.param[k], a);
    }
    return out.first;
  }
  void set_fp32_param(std::size_t i, nb::handle x) override {
    check_tensor(i);
    check_not_releasing("set_fp32_param");
    const auto& t = opt_.tensors()[i];
    const auto a = f32_input(x, t.size, "set_fp32_param(" + std::to_string(i) + ")");
    check(codec::split<typename Config::master>(static_cast<const float*>(a.data()), t.size, t.param, t.aux),
          "set_fp32_param");
  }

 private:
  static std::string key_of(const char* name) {
    std::string k(name);
    std::replace(k.begin(), k.end(), ' ', '_');
    return k;
  }
  static nb::object bytes_array(const void* p, std::size_t bytes) {
    auto* buf = new std::uint8_t[bytes > 0 ? bytes : 1];
    if (bytes > 0) std::memcpy(buf, p, bytes);
    nb::capsule owner(buf, [](void* q) noexcept { delete[] static_cast<std::uint8_t*>(q); });
    std::size_t shape[1] = {bytes};
    return nb::cast(nb::ndarray<nb::numpy, std::uint8_t, nb::ndim<1>>(buf, 1, shape, owner));
  }
  void check_device(const array_view& v, const std::string& what) const {
    if (v.device_type != 1)
      throw nb::value_error((what + ": the array is on " + device_name(v.device_type) +
                             ", this optimizer is a CPU one (every array of one optimizer on one device)")
                                .c_str());
  }
  nb::ndarray<nb::ro> grad_array(nb::handle h, std::int64_t size, const std::string& what) const {
    nb::ndarray<nb::ro> g;
    if (!nb::try_cast(h, g))
      throw nb::type_error((what + ": grad is not an array (DLPack or buffer protocol)").c_str());
    const array_view gv = view_of(g, elem_of<G>(), what + " grad");
    check_device(gv, what + " grad");
    if (gv.size != size)
      throw nb::value_error((what + ": grad has " + std::to_string(gv.size) + " elements, the param " +
                             std::to_string(size))
                                .c_str());
    return g;
  }
  void check_group(std::size_t g) const {
    if (g >= opt_.group_count())
      throw nb::index_error(("group " + std::to_string(g) + " is out of range (" +
                             std::to_string(opt_.group_count()) + " groups)")
                                .c_str());
  }
  void check_tensor(std::size_t i) const {
    if (i >= opt_.tensor_count())
      throw nb::index_error(("tensor " + std::to_string(i) + " is out of range (" +
                             std::to_string(opt_.tensor_count()) + " tensors)")
                                .c_str());
  }
  void check_not_releasing(const char* who) const {
    if (opt_.in_release_step())
      throw nb::value_error((std::string(who) + ": a release step is open (begin_step .. end_step)").c_str());
  }
  bool uniform() const {
    return std::all_of(counts_.begin(), counts_.end(), [&](std::int64_t c) { return c == opt_.step_count(); });
  }
  std::vector<std::size_t> present() const {
    std::vector<std::size_t> idx;
    for (std::size_t i = 0; i < has_grad_.size(); ++i)
      if (has_grad_[i]) idx.push_back(i);
    return idx;
  }
  /// Steps tensors `idx`, each with its own count + 1 and its group's
  /// hyperparameters: every check first, then cpu::step per tensor.
  void step_subset(const std::vector<std::size_t>& idx, double inv_grad_scale) {
    // strict lr check: refused as the optimizer's own step() refuses
    if (opt_.options().lr_check == optim::lr_check_mode::strict && !opt_.lr_report().empty())
      check(status(status_code::hyperparameter_out_of_range, "refused (lr_check_mode::strict): %s",
                   opt_.lr_report().summary().c_str()),
            "step");
    std::vector<tensor_ref<Config>> ts;
    for (auto i : idx) {
      step_args a;
      a.step = counts_[i] + 1;
      a.inv_grad_scale = inv_grad_scale;
      const auto g = static_cast<std::size_t>(opt_.tensor_group()[i]);
      const status s = validate_step_args<Config>(opt_.hyper(g), a);
      if (!s.ok()) check(status(s.code(), "group %zu: %s", g, s.message()), "step");
      ts.push_back(opt_.tensors()[i]);
    }
    check(validate_tensor_list(ts.data(), ts.size(), true), "step");
    for (std::size_t k = 0; k < idx.size(); ++k) {
      const auto i = idx[k];
      step_args a;
      a.step = counts_[i] + 1;
      a.inv_grad_scale = inv_grad_scale;
      check(cpu::step<Config>(opt_.hyper(static_cast<std::size_t>(opt_.tensor_group()[i])), a, &ts[k], 1,
                              opt_.cpu_step_options()),
            "step");
      ++counts_[i];
    }
    if (uniform_counts()) (void)opt_.set_step_count(counts_.empty() ? 0 : counts_[0]);
  }
  bool uniform_counts() const {
    return std::all_of(counts_.begin(), counts_.end(), [&](std::int64_t c) { return c == counts_[0]; });
  }

  std::string name_;
  cpu::optimizer<Config> opt_;
  std::vector<nb::ndarray<>> params_;        ///< keeps the trainer's arrays alive
  std::vector<nb::ndarray<nb::ro>> grads_;
  std::vector<unsigned char> has_grad_;
  std::vector<std::int64_t> counts_;  ///< per-tensor step counts (torch's per-parameter "step")
};

// ---------------------------------------------------------------- decoded states
//
// A configuration's state codecs apart from any optimizer: the stored bytes
// of state(i) ("stateK", "stateK_scales") <-> fp32 values. State dicts with
// compress_state_dict=False hold the decoded values, and states written by
// other implementations arrive as fp32; both need this. The bytes are the
// same on the CPU and on CUDA (cuda_binding's state() gives them), so one
// table keyed by configuration name serves both.
struct state_codec_ops {
  std::function<nb::dict(const nb::dict&, std::int64_t)> decode;  ///< bytes -> {"stateK": float32[n]}
  std::function<nb::dict(const nb::dict&, std::int64_t)> encode;  ///< {"stateK": float32[n]} -> bytes
};
using codec_registry = std::map<std::string, state_codec_ops>;
/// Filled by add_cpu (one entry per compiled CPU configuration).
inline codec_registry& state_codecs() {
  static codec_registry r;
  return r;
}

/// The bytes of key k as a vector of T (a copy: a uint8 array need not be
/// aligned for T), checked to hold `count` elements.
template <class T>
std::vector<T> typed_copy(const nb::dict& d, const std::string& k, std::int64_t count, const char* who) {
  std::vector<T> out(static_cast<std::size_t>(count > 0 ? count : 0));
  const std::size_t want = out.size() * storage_bytes<T>;
  if (want == 0) return out;
  if (!d.contains(k.c_str())) throw nb::value_error((std::string(who) + ": key '" + k + "' is missing").c_str());
  nb::ndarray<nb::ro, nb::device::cpu> a;
  if (!nb::try_cast(d[k.c_str()], a))
    throw nb::type_error((std::string(who) + ": '" + k + "' is not a CPU array").c_str());
  if (a.nbytes() != want)
    throw nb::value_error((std::string(who) + ": '" + k + "' has " + std::to_string(a.nbytes()) + " bytes, " +
                           std::to_string(want) + " expected")
                              .c_str());
  std::int64_t expected = 1;
  for (std::size_t dim = a.ndim(); dim-- > 0;) {
    if (a.shape(dim) != 1 && a.stride(dim) != expected)
      throw nb::value_error((std::string(who) + ": '" + k + "' is not C-contiguous").c_str());
    expected *= static_cast<std::int64_t>(a.shape(dim));
  }
  std::memcpy(static_cast<void*>(out.data()), a.data(), want);
  return out;
}

template <class Config>
state_codec_ops make_state_codec_ops() {
  state_codec_ops ops;
  ops.decode = [](const nb::dict& in, std::int64_t n) {
    if (n < 0) throw nb::value_error("decode_states: negative element count");
    nb::dict out;
    for_each_slot<Config::num_slots>([&](auto s) {
      constexpr int I = decltype(s)::value;
      using S = typename Config::template state<I>;
      if constexpr (S::stores_state) {
        const auto codes = typed_copy<typename S::code_type>(in, slot_code_name(I), n, "decode_states");
        const auto scales = typed_copy<typename S::scale_type>(in, key_with_underscore(slot_scale_name(I)),
                                                               codec::scale_count<S>(n), "decode_states");
        auto f = new_f32(static_cast<std::size_t>(n));
        check(codec::dequantize<S>(codes.data(), scales.data(), n, f.second), "decode_states");
        out[slot_code_name(I)] = f.first;
      }
    });
    return out;
  };
  ops.encode = [](const nb::dict& in, std::int64_t n) {
    if (n < 0) throw nb::value_error("encode_states: negative element count");
    nb::dict out;
    for_each_slot<Config::num_slots>([&](auto s) {
      constexpr int I = decltype(s)::value;
      using S = typename Config::template state<I>;
      if constexpr (S::stores_state) {
        const std::string k = slot_code_name(I);
        if (!in.contains(k.c_str())) throw nb::value_error(("encode_states: key '" + k + "' is missing").c_str());
        const auto a = f32_input(in[k.c_str()], n, "encode_states: '" + k + "'");
        std::vector<typename S::code_type> codes(static_cast<std::size_t>(n));
        std::vector<typename S::scale_type> scales(static_cast<std::size_t>(codec::scale_count<S>(n)));
        // the rounding key is fixed: these codecs round half-up (deterministic)
        check(codec::quantize<S>(static_cast<const float*>(a.data()), n, codes.data(), scales.data()),
              "encode_states");
        auto bytes = [](const void* p, std::size_t nbytes) {
          auto* buf = new std::uint8_t[nbytes > 0 ? nbytes : 1];
          if (nbytes > 0) std::memcpy(buf, p, nbytes);
          nb::capsule owner(buf, [](void* q) noexcept { delete[] static_cast<std::uint8_t*>(q); });
          std::size_t shape[1] = {nbytes};
          return nb::cast(nb::ndarray<nb::numpy, std::uint8_t, nb::ndim<1>>(buf, 1, shape, owner));
        };
        out[k.c_str()] = bytes(codes.data(), codes.size() * storage_bytes<typename S::code_type>);
        out[key_with_underscore(slot_scale_name(I)).c_str()] =
            bytes(scales.data(), scales.size() * storage_bytes<typename S::scale_type>);
      }
    });
    return out;
  };
  return ops;
}

template <class Config>
void add_cpu(registry& r, const std::string& name) {
  r[name] = [name](const std::vector<group_arg>& g, const options_arg& o) -> std::unique_ptr<opt_base> {
    return std::make_unique<cpu_opt<Config>>(name, g, o);
  };
  state_codecs()[name] = make_state_codec_ops<Config>();
}

// The configurations (python/src/configs_*.cpp; docs/python.md lists them).
namespace cfg {
namespace c = ::flashoptim::codec;
/// bf16 + int8 (master_weight_bits=24): the rounded split, the library's
/// default (0.2.0 used the paper's ULP correction; its state dicts load
/// through fp32, python/flashoptim_kernels/optim.py).
using split8 = c::rounded_split;
using dm = c::defaults::momentum;
using dv = c::defaults::second_moment;
using f32 = c::precision::fp32;
}  // namespace cfg

void register_bf16_int8(registry& cpu);
void register_fp32(registry& cpu);
void register_bf16_fp32_master(registry& cpu);

}  // namespace flashoptim::python
