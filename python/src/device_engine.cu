// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// The CUDA half: device_engine over device::optimizer for the configurations
// of the CPU list (python/src/configs_*.cpp) that the paper's defaults use.
// Compiled by nvcc without nanobind (device_engine.hpp is plain C++).
#include <cuda_runtime.h>

#include <cstring>

#include "device_engine.hpp"
#include "flashoptim/codec/bulk.hpp"
#include "flashoptim/codec/presets.hpp"
#include "flashoptim/optim/device_optimizer.cuh"
#include "hyper.hpp"

namespace flashoptim::python {

namespace {

cudaStream_t as_stream(std::uintptr_t s) { return reinterpret_cast<cudaStream_t>(s); }

template <class Rule>
hyper_values values_of(const typename Rule::hyper& h) {
  hyper_values out;
  auto copy = h;
  visit_hyper<Rule>(copy, [&](const char* name, auto& v) { out.emplace_back(name, static_cast<double>(v)); });
  return out;
}

/// `base` with the given keys replaced; an unknown key is an error.
template <class Rule>
status merge_values(typename Rule::hyper& base, const hyper_values& given) {
  for (const auto& kv : given) {
    bool found = false;
    visit_hyper<Rule>(base, [&](const char* name, auto& v) {
      if (kv.first != name) return;
      found = true;
      using V = std::remove_reference_t<decltype(v)>;
      if constexpr (std::is_same<V, bool>::value) v = kv.second != 0.0;
      else v = static_cast<V>(kv.second);
    });
    if (!found)
      return status(status_code::invalid_argument, "unknown hyperparameter '%.60s'", kv.first.c_str());
  }
  return status();
}

template <class Config>
class device_impl final : public device_engine {
  using rule_t = typename Config::rule;
  using hyper_t = typename Config::hyper;
  using opt_t = device::optimizer<Config>;

 public:
  status init(const std::vector<device_group>& groups, const optim::optimizer_options& o,
              std::uintptr_t stream) override {
    std::vector<optim::param_group<Config>> gs(groups.size());
    for (std::size_t g = 0; g < groups.size(); ++g) {
      const status s = merge_values<rule_t>(gs[g].hyper, groups[g].hyper);
      if (!s.ok()) return status(s.code(), "group %zu: %s", g, s.message());
      gs[g].params = groups[g].params;
    }
    return opt_.init(std::move(gs), o, as_stream(stream));
  }
  std::size_t group_count() const override { return opt_.group_count(); }
  std::size_t tensor_count() const override { return opt_.tensor_count(); }
  std::vector<std::string> names() const override { return opt_.names(); }
  std::vector<std::int32_t> tensor_group() const override { return opt_.tensor_group(); }
  std::int64_t tensor_size(std::size_t i) const override { return opt_.tensors().at(i).size; }
  hyper_values hyper(std::size_t g) const override { return values_of<rule_t>(opt_.hyper(g)); }
  status set_hyper(std::size_t g, const hyper_values& h, std::uintptr_t stream) override {
    if (g >= opt_.group_count()) return status(status_code::invalid_argument, "group %zu is out of range", g);
    hyper_t x = opt_.hyper(g);
    FLASHOPTIM_RETURN_IF_ERROR(merge_values<rule_t>(x, h));
    return opt_.set_hyper(g, x, as_stream(stream));
  }
  status set_lr(std::size_t g, double lr, std::uintptr_t stream) override {
    return opt_.set_lr(g, lr, as_stream(stream));
  }
  status set_grad(std::size_t i, const void* grad, std::uintptr_t stream) override {
    if (i >= opt_.tensor_count()) return status(status_code::invalid_argument, "tensor %zu is out of range", i);
    if (static_cast<const void*>(opt_.tensors()[i].grad) == grad) return status();
    // the step, release and gradient-pass tables all take the new address
    return opt_.set_grad(i, grad, as_stream(stream));
  }
  status step(std::uintptr_t stream) override {
    if (opt_.has_grad_pass()) opt_.clear_grad_pass();
    return opt_.step_async(as_stream(stream));
  }
  status step_grad_pass(const grad_pass_config& cfg, std::uintptr_t stream, grad_control& out) override {
    if (!opt_.has_grad_pass() || !same(cfg, pass_)) {
      FLASHOPTIM_RETURN_IF_ERROR(opt_.set_grad_pass(cfg, as_stream(stream)));
      pass_ = cfg;
    }
    FLASHOPTIM_RETURN_IF_ERROR(opt_.step_async(as_stream(stream)));
    device::optimizer_control c;
    FLASHOPTIM_RETURN_IF_ERROR(opt_.read_control(c, as_stream(stream)));
    out = c.control;
    return status();
  }
  status begin_step(double inv) override {
    if (opt_.has_grad_pass()) opt_.clear_grad_pass();
    if (!release_ready_) {
      FLASHOPTIM_RETURN_IF_ERROR(opt_.enable_release());  // one table per tensor (set-up: synchronous)
      release_ready_ = true;
    }
    return opt_.begin_step(inv);
  }
  status step_tensor(std::size_t i, std::uintptr_t stream) override {
    return opt_.step_tensor_async(i, as_stream(stream));
  }
  status end_step(std::uintptr_t stream) override { return opt_.end_step_async(as_stream(stream)); }
  bool in_release_step() const override { return opt_.in_release_step(); }
  status step_count(std::int64_t& out, std::uintptr_t stream) const override {
    return opt_.step_count(out, as_stream(stream));
  }
  status state(std::size_t i, byte_buffers& out, std::uintptr_t stream) const override {
    if (i >= opt_.tensor_count()) return status(status_code::invalid_argument, "tensor %zu is out of range", i);
    typename opt_t::host_copy h;
    FLASHOPTIM_RETURN_IF_ERROR(opt_.copy_to_host(h, as_stream(stream)));
    out.clear();
    for_each_buffer(h.tensors[i], [&](const char* name, const void* p, std::size_t bytes, bool written) {
      if (!written || std::strcmp(name, "param") == 0) return;
      std::string k(name);
      for (auto& ch : k)
        if (ch == ' ') ch = '_';
      const auto* b = static_cast<const std::uint8_t*>(p);
      out.emplace_back(k, bytes > 0 ? std::vector<std::uint8_t>(b, b + bytes) : std::vector<std::uint8_t>());
    });
    return status();
  }
  status set_state(std::size_t i, const byte_buffers& in, std::int64_t step, std::uintptr_t stream) override {
    if (i >= opt_.tensor_count()) return status(status_code::invalid_argument, "tensor %zu is out of range", i);
    typename opt_t::host_copy h;
    FLASHOPTIM_RETURN_IF_ERROR(opt_.copy_to_host(h, as_stream(stream)));
    std::vector<std::pair<void*, const std::vector<std::uint8_t>*>> copies;
    status bad;
    std::size_t keys = 0;
    for_each_buffer(h.tensors[i], [&](const char* name, const void* p, std::size_t bytes, bool written) {
      if (!written || std::strcmp(name, "param") == 0 || !bad.ok()) return;
      std::string k(name);
      for (auto& ch : k)
        if (ch == ' ') ch = '_';
      ++keys;
      const std::vector<std::uint8_t>* v = nullptr;
      for (const auto& kv : in)
        if (kv.first == k) v = &kv.second;
      if (v == nullptr) bad = status(status_code::invalid_argument, "set_state: key '%s' is missing", k.c_str());
      else if (v->size() != bytes)
        bad = status(status_code::size_mismatch, "set_state: '%s' has %zu bytes, the optimizer's has %zu", k.c_str(),
                     v->size(), bytes);
      else copies.emplace_back(const_cast<void*>(p), v);  // h is this call's own host copy
    });
    FLASHOPTIM_RETURN_IF_ERROR(bad);
    if (in.size() != keys) return status(status_code::invalid_argument, "set_state: unknown keys");
    if (step < 0) return status(status_code::invalid_argument, "set_state: step is negative");
    for (auto& c : copies)
      if (!c.second->empty()) std::memcpy(c.first, c.second->data(), c.second->size());
    h.step_count = step;
    return opt_.copy_from_host(h, nullptr, as_stream(stream));
  }
  status fp32_param(std::size_t i, std::vector<float>& out, std::uintptr_t stream) const override {
    if (i >= opt_.tensor_count()) return status(status_code::invalid_argument, "tensor %zu is out of range", i);
    typename opt_t::host_copy h;
    FLASHOPTIM_RETURN_IF_ERROR(opt_.copy_to_host(h, as_stream(stream)));
    const auto& t = h.tensors[i];
    out.resize(static_cast<std::size_t>(t.size));
    for (std::int64_t k = 0; k < t.size; ++k) {
      typename Config::aux_type a{};
      if constexpr (Config::has_aux) a = t.aux[k];
      out[static_cast<std::size_t>(k)] = Config::master::decode(t.param[k], a);
    }
    return status();
  }
  status set_fp32_param(std::size_t i, const float* x, std::int64_t n, std::uintptr_t stream) override {
    if (i >= opt_.tensor_count()) return status(status_code::invalid_argument, "tensor %zu is out of range", i);
    if (n != opt_.tensors()[i].size)
      return status(status_code::size_mismatch, "set_fp32_param: %lld elements for a tensor of %lld",
                    static_cast<long long>(n), static_cast<long long>(opt_.tensors()[i].size));
    typename opt_t::host_copy h;
    FLASHOPTIM_RETURN_IF_ERROR(opt_.copy_to_host(h, as_stream(stream)));
    const auto& t = h.tensors[i];
    FLASHOPTIM_RETURN_IF_ERROR(codec::split<typename Config::master>(x, n, t.param, t.aux));
    return opt_.copy_from_host(h, nullptr, as_stream(stream));
  }
  optim::memory_report memory() const override { return opt_.memory(); }
  optim::lr_report lr_report() const override { return opt_.lr_report(); }

 private:
  static bool same(const grad_pass_config& a, const grad_pass_config& b) {
    return a.max_norm == b.max_norm && a.scaler.enabled == b.scaler.enabled &&
           a.scaler.init_scale == b.scaler.init_scale && a.scaler.growth_factor == b.scaler.growth_factor &&
           a.scaler.backoff_factor == b.scaler.backoff_factor && a.scaler.growth_interval == b.scaler.growth_interval;
  }
  opt_t opt_;
  grad_pass_config pass_{};
  bool release_ready_ = false;
};

template <class Config>
void add(device_registry& r, const std::string& name) {
  r[name] = [] { return std::unique_ptr<device_engine>(new device_impl<Config>()); };
}

}  // namespace

void register_cuda(device_registry& r) {
  namespace c = ::flashoptim::codec;
  using split8 = c::rounded_split;  // bf16 + int8 (binding.hpp)
  using dm = c::defaults::momentum;
  using dv = c::defaults::second_moment;
  using f32 = c::precision::fp32;
  using n32 = c::native<float>;
  // the paper's default (bf16 + int8 correction, 8-bit states) and the fp32 reference, per rule
  add<step_config<rule::adamw, split8, bf16, dm, dv>>(r, "adamw/bf16+int8/8bit");
  add<step_config<rule::adam, split8, bf16, dm, dv>>(r, "adam/bf16+int8/8bit");
  add<step_config<rule::sgd, split8, bf16, dm>>(r, "sgd/bf16+int8/8bit");
  add<step_config<rule::sgdw, split8, bf16, dm>>(r, "sgdw/bf16+int8/8bit");
  add<step_config<rule::lion, split8, bf16, dm>>(r, "lion/bf16+int8/8bit");
  add<step_config<rule::adamw, n32, float, f32, f32>>(r, "adamw/fp32/fp32");
  add<step_config<rule::adam, n32, float, f32, f32>>(r, "adam/fp32/fp32");
  add<step_config<rule::sgd, n32, float, f32>>(r, "sgd/fp32/fp32");
  add<step_config<rule::sgdw, n32, float, f32>>(r, "sgdw/fp32/fp32");
  add<step_config<rule::lion, n32, float, f32>>(r, "lion/fp32/fp32");
}

}  // namespace flashoptim::python
