// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// The adapter between the training run and flashoptim: every use of the
// library's optimizer API is in this file. Per tensor it allocates the
// parameter (in the configuration's dtype) and the gradient (in its gradient
// dtype), the trainer's side; the owning optimizer -- cpu::optimizer on the
// CPU, device::optimizer on the GPU -- allocates the corrections and states
// in one arena, initializes them from the fp32 weights and steps two
// parameter groups (decay: matrices and the embedding; no decay: biases).
// --offload keeps a fraction of the states in pinned host memory, stepped on
// CPU threads beside the GPU step: the device optimizer's offload_fraction.
// Built as CUDA when the toolkit is there (TRAIN_HAS_CUDA), as C++ otherwise.
#include "optimizers.hpp"

#include <cstdlib>
#include <cstring>
#include <type_traits>
#include <vector>

#include <flashoptim/flashoptim.hpp>
#include <flashoptim/optim/cpu_optimizer.hpp>

#if TRAIN_HAS_CUDA
#include <cuda_runtime.h>

#include <flashoptim/device/state_init.cuh>
#include <flashoptim/optim/device_optimizer.cuh>
#endif

namespace train {
namespace {

namespace fo = flashoptim;
namespace c = flashoptim::codec;
using split8 = c::rounded_split;  // the default bf16 + int8 split

// ---------------------------------------------------------------- the instantiated configurations
// Each one compiles the CPU step (AVX-512, AVX2, portable) and, with CUDA,
// the GPU kernel: keep the list short (CI builds it on 2 cores).
using adamw_fp32 = fo::step_config<fo::rule::adamw, c::native<float>, float, c::precision::fp32, c::precision::fp32>;
using adamw_bf16 =
    fo::step_config<fo::rule::adamw, c::native<fo::bf16>, fo::bf16, c::precision::bf16, c::precision::bf16>;
using adamw_mixed =
    fo::step_config<fo::rule::adamw, c::fp32_master<fo::bf16>, fo::bf16, c::precision::fp32, c::precision::fp32>;
using adamw_flash = fo::step_config<fo::rule::adamw, split8, fo::bf16, c::defaults::momentum, c::defaults::second_moment>;
using sgd_fp32 = fo::step_config<fo::rule::sgd, c::native<float>, float, c::precision::fp32>;
using sgd_flash = fo::step_config<fo::rule::sgd, split8, fo::bf16, c::defaults::momentum>;
using lion_fp32 = fo::step_config<fo::rule::lion, c::native<float>, float, c::precision::fp32>;
using lion_flash = fo::step_config<fo::rule::lion, split8, fo::bf16, c::defaults::momentum>;

template <class Config>
typename Config::hyper make_hyper(double lr, double weight_decay) {
  typename Config::hyper h;  // the library's (PyTorch's) defaults: betas, eps
  h.lr = lr;
  h.weight_decay = weight_decay;
  if constexpr (std::is_same<typename Config::rule, fo::rule::sgd>::value) h.momentum = 0.9;
  return h;
}

std::string message(const fo::status& s) { return s.ok() ? std::string() : std::string(s.what()); }

/// The parameter groups: the decay group (if any tensor decays), then the
/// one without (if any tensor does not). group_of[i] is model tensor i's
/// group, flat[i] its index in the optimizer's flattened list (group 0's
/// tensors first, each group in model order), which also picks its
/// stochastic-rounding seed, optim::tensor_seed(seed, flat[i]).
struct grouping {
  std::vector<bool> decays;  ///< per group
  std::vector<std::size_t> group_of, flat;
  std::vector<std::vector<std::size_t>> members;  ///< model tensors of each group, in order

  explicit grouping(const std::vector<tensor_info>& t) {
    for (const bool d : {true, false}) {
      std::vector<std::size_t> m;
      for (std::size_t i = 0; i < t.size(); ++i)
        if (t[i].decay == d) m.push_back(i);
      if (m.empty()) continue;
      decays.push_back(d);
      members.push_back(std::move(m));
    }
    group_of.resize(t.size());
    flat.resize(t.size());
    std::size_t k = 0;
    for (std::size_t g = 0; g < members.size(); ++g)
      for (const std::size_t i : members[g]) group_of[i] = g, flat[i] = k++;
  }
};

/// The optimizer's groups over the adapter's buffers, split from `w`.
template <class Config>
std::vector<fo::optim::param_group<Config>> make_groups(const std::vector<tensor_info>& tensors, const grouping& gr,
                                                        const hyper_params& hp, double multiplier,
                                                        const std::vector<void*>& params,
                                                        const std::vector<const void*>& grads,
                                                        const std::vector<const float*>& init) {
  std::vector<fo::optim::param_group<Config>> groups(gr.members.size());
  for (std::size_t g = 0; g < groups.size(); ++g) {
    groups[g].hyper = make_hyper<Config>(hp.lr * multiplier, gr.decays[g] ? hp.weight_decay : 0.0);
    for (const std::size_t i : gr.members[g]) {
      fo::optim::param_spec s;
      s.param = params[i];
      s.grad = grads[i];
      s.size = tensors[i].size;
      s.name = tensors[i].name;
      s.rows = tensors[i].rows;
      s.cols = tensors[i].cols;
      s.init_fp32 = init[i];
      groups[g].params.push_back(std::move(s));
    }
  }
  return groups;
}

/// The options every optimizer here gets. The lr check is off: it asks
/// whether one step at the current lr can move a tensor, and the schedule's
/// warm-up starts near zero, where every 16-bit mode would be reported;
/// the side-by-side run shows what a too-small step does (naive bf16).
fo::optim::optimizer_options optimizer_options(const hyper_params& hp) {
  fo::optim::optimizer_options o;
  o.seed = hp.seed;
  o.lr_check = fo::optim::lr_check_mode::off;
  return o;
}

/// The summary's figures from an owning optimizer's memory() report.
optimizer_memory from_report(const fo::optim::memory_report& r) {
  optimizer_memory m;
  m.params = r.elements;
  m.param_bytes = r.param_bytes;
  m.correction_bytes = r.correction_bytes;
  m.state_bytes = r.state_code_bytes + r.state_scale_bytes;
  m.grad_bytes = r.grad_bytes;
  m.allocated_bytes = r.param_bytes + r.arena_bytes + r.table_bytes;
  m.host_bytes = r.host_bytes;  // off-loaded: pinned host arena, parameter copies, staging
  return m;
}

struct host_free {
  void operator()(void* p) const { std::free(p); }
};
using host_block = std::unique_ptr<void, host_free>;
host_block host_alloc(std::int64_t bytes) {
  const std::int64_t rounded = (bytes + 255) / 256 * 256;
  return host_block(rounded > 0 ? std::aligned_alloc(256, static_cast<std::size_t>(rounded)) : nullptr);
}

// ---------------------------------------------------------------- CPU: cpu::optimizer
template <class Config>
class cpu_optimizer final : public optimizer {
  using P = typename Config::param_type;
  using G = typename Config::grad_type;

 public:
  cpu_optimizer(const config_info& info, const std::vector<tensor_info>& tensors, const hyper_params& hp)
      : info_(info), hp_(hp), tensors_(tensors), groups_(tensors) {
    for (const auto& t : tensors) {
      params_.push_back(host_alloc(t.size * static_cast<std::int64_t>(sizeof(P))));
      grads_.push_back(host_alloc(t.size * static_cast<std::int64_t>(sizeof(G))));
    }
  }
  const config_info& info() const override { return info_; }
  std::string init(const std::vector<std::vector<float>>& w) override {
    if (w.size() != tensors_.size()) return "init: " + std::to_string(w.size()) + " weight tensors for " +
                                            std::to_string(tensors_.size());
    std::vector<void*> p;
    std::vector<const void*> g;
    std::vector<const float*> x;
    for (std::size_t i = 0; i < tensors_.size(); ++i) {
      if (static_cast<std::int64_t>(w[i].size()) != tensors_[i].size) return "init: " + tensors_[i].name + " has the wrong size";
      p.push_back(params_[i].get());
      g.push_back(grads_[i].get());
      x.push_back(w[i].data());
    }
    fo::cpu::step_options so;
    so.threads = hp_.cpu_threads;
    return message(opt_.init(make_groups<Config>(tensors_, groups_, hp_, info_.lr_multiplier, p, g, x),
                             optimizer_options(hp_), so));
  }
  void param_to_float(std::size_t i, float* dst) override {
    const P* p = static_cast<const P*>(params_[i].get());
    for (std::int64_t j = 0; j < tensors_[i].size; ++j) dst[j] = fo::format::to_float(p[j]);
  }
  std::string master_to_float(std::size_t i, float* dst) override {
    const auto& t = opt_.tensors()[groups_.flat[i]];
    return message(c::reconstruct<typename Config::master>(t.param, t.aux, t.size, dst));
  }
  void grad_from_float(std::size_t i, const float* src) override {
    G* g = static_cast<G*>(grads_[i].get());
    for (std::int64_t j = 0; j < tensors_[i].size; ++j) g[j] = fo::format::from_float<G>(src[j]);
  }
  std::string step(double lr, std::int64_t step) override {
    if (step != opt_.step_count() + 1)
      return "step " + std::to_string(step) + " after " + std::to_string(opt_.step_count()) + " steps";
    for (std::size_t g = 0; g < opt_.group_count(); ++g)
      if (auto s = opt_.set_lr(g, lr * info_.lr_multiplier); !s.ok()) return message(s);
    return message(opt_.step());
  }
  optimizer_memory memory() const override { return from_report(opt_.memory()); }

 private:
  config_info info_;
  hyper_params hp_;
  std::vector<tensor_info> tensors_;
  grouping groups_;
  std::vector<host_block> params_, grads_;  // the trainer's: the optimizer points at them
  fo::cpu::optimizer<Config> opt_;
};

// ---------------------------------------------------------------- GPU
#if TRAIN_HAS_CUDA
template <class T>
__global__ void to_float_kernel(const T* p, std::int64_t n, float* out) {
  for (std::int64_t i = blockIdx.x * std::int64_t{blockDim.x} + threadIdx.x; i < n; i += std::int64_t{gridDim.x} * blockDim.x)
    out[i] = fo::format::to_float(p[i]);
}
template <class T>
__global__ void from_float_kernel(const float* x, std::int64_t n, T* out) {
  for (std::int64_t i = blockIdx.x * std::int64_t{blockDim.x} + threadIdx.x; i < n; i += std::int64_t{gridDim.x} * blockDim.x)
    out[i] = fo::format::from_float<T>(x[i]);
}
int blocks_for(std::int64_t n) { return static_cast<int>(std::min<std::int64_t>((n + 255) / 256, 4096)); }

std::string cuda_message(cudaError_t e, const char* what) {
  return e == cudaSuccess ? std::string() : std::string(what) + ": " + cudaGetErrorString(e);
}
struct device_free {
  void operator()(void* p) const { cudaFree(p); }
};
using device_block = std::unique_ptr<void, device_free>;

std::string device_alloc(std::int64_t bytes, device_block& out) {
  void* p = nullptr;
  if (auto e = cuda_message(cudaMalloc(&p, static_cast<std::size_t>(std::max<std::int64_t>(1, bytes))), "cudaMalloc");
      !e.empty())
    return e;
  out.reset(p);
  return {};
}

/// The trainer's side of a GPU optimizer: each tensor's parameter and
/// gradient in device memory, and the dtype conversions the model needs.
template <class Config>
class gpu_buffers {
 protected:
  using P = typename Config::param_type;
  using G = typename Config::grad_type;

  std::string allocate(const std::vector<tensor_info>& tensors) {
    for (const auto& t : tensors) {
      params_.emplace_back();
      grads_.emplace_back();
      if (auto e = device_alloc(t.size * static_cast<std::int64_t>(sizeof(P)), params_.back()); !e.empty()) return e;
      if (auto e = device_alloc(t.size * static_cast<std::int64_t>(sizeof(G)), grads_.back()); !e.empty()) return e;
    }
    return {};
  }
  P* param(std::size_t i) const { return static_cast<P*>(params_[i].get()); }
  G* grad(std::size_t i) const { return static_cast<G*>(grads_[i].get()); }
  void to_float(std::size_t i, std::int64_t n, float* dst) { to_float_kernel<<<blocks_for(n), 256>>>(param(i), n, dst); }
  void from_float(std::size_t i, std::int64_t n, const float* src) {
    from_float_kernel<<<blocks_for(n), 256>>>(src, n, grad(i));
  }

  std::vector<device_block> params_, grads_;
};

// ---------------------------------------------------------------- GPU: device::optimizer
template <class Config>
class gpu_optimizer final : public optimizer, gpu_buffers<Config> {
  using base = gpu_buffers<Config>;

 public:
  gpu_optimizer(const config_info& info, const std::vector<tensor_info>& tensors, const hyper_params& hp,
                double offload)
      : info_(info), hp_(hp), offload_(offload), tensors_(tensors), groups_(tensors) {}
  std::string allocate() { return base::allocate(tensors_); }

  const config_info& info() const override { return info_; }
  std::string init(const std::vector<std::vector<float>>& w) override {
    if (w.size() != tensors_.size()) return "init: " + std::to_string(w.size()) + " weight tensors for " +
                                            std::to_string(tensors_.size());
    // the fp32 weights in device memory until init (which synchronizes) has split them
    std::vector<device_block> up(tensors_.size());
    std::vector<void*> p;
    std::vector<const void*> g;
    std::vector<const float*> x;
    for (std::size_t i = 0; i < tensors_.size(); ++i) {
      const std::int64_t n = tensors_[i].size;
      if (static_cast<std::int64_t>(w[i].size()) != n) return "init: " + tensors_[i].name + " has the wrong size";
      if (auto e = device_alloc(n * 4, up[i]); !e.empty()) return e;
      if (auto e = cuda_message(cudaMemcpy(up[i].get(), w[i].data(), static_cast<std::size_t>(n) * 4,
                                           cudaMemcpyHostToDevice), "copy");
          !e.empty())
        return e;
      p.push_back(base::param(i));
      g.push_back(base::grad(i));
      x.push_back(static_cast<const float*>(up[i].get()));
    }
    auto o = optimizer_options(hp_);
    o.offload_fraction = offload_;  // that part of the state in pinned host memory, stepped on CPU threads
    return message(opt_.init(make_groups<Config>(tensors_, groups_, hp_, info_.lr_multiplier, p, g, x), o, nullptr));
  }
  void param_to_float(std::size_t i, float* dst) override { base::to_float(i, tensors_[i].size, dst); }
  std::string master_to_float(std::size_t i, float* dst) override {
    const auto& t = opt_.tensors()[groups_.flat[i]];
    return message(fo::device::reconstruct_async<typename Config::master>(t.param, t.aux, t.size, dst, nullptr));
  }
  void grad_from_float(std::size_t i, const float* src) override { base::from_float(i, tensors_[i].size, src); }
  std::string step(double lr, std::int64_t step) override {
    // the optimizer counts on the device (reading it would synchronize): keep a host twin
    if (step != steps_ + 1) return "step " + std::to_string(step) + " after " + std::to_string(steps_) + " steps";
    for (std::size_t g = 0; g < opt_.group_count(); ++g)
      if (auto s = opt_.set_lr(g, lr * info_.lr_multiplier, nullptr); !s.ok()) return message(s);
    if (auto s = opt_.step_async(nullptr); !s.ok()) return message(s);
    ++steps_;
    return {};
  }
  optimizer_memory memory() const override { return from_report(opt_.memory()); }

 private:
  config_info info_;
  hyper_params hp_;
  double offload_;
  std::vector<tensor_info> tensors_;
  grouping groups_;
  std::int64_t steps_ = 0;
  fo::device::optimizer<Config> opt_;
};

#endif

// ---------------------------------------------------------------- the table
using factory = std::unique_ptr<optimizer> (*)(const config_info&, place, const std::vector<tensor_info>&, double,
                                               const hyper_params&, std::string&);

template <class Config>
std::unique_ptr<optimizer> make(const config_info& info, place where, const std::vector<tensor_info>& tensors,
                                double offload, const hyper_params& hp, std::string& error) {
  if (where == place::cpu) {
    if (offload > 0) {
      error = "--offload needs the GPU";
      return nullptr;
    }
    return std::make_unique<cpu_optimizer<Config>>(info, tensors, hp);
  }
#if TRAIN_HAS_CUDA
  auto o = std::make_unique<gpu_optimizer<Config>>(info, tensors, hp, offload);
  error = o->allocate();
  if (!error.empty()) return nullptr;
  return o;
#else
  error = "this build has no CUDA";
  return nullptr;
#endif
}
struct entry {
  config_info info;
  factory create;
};

const std::vector<entry>& entries() {
  static const std::vector<entry> e = {
      {{"fp32", "adamw", "AdamW as torch: fp32 params, fp32 grads, fp32 m and v", 1.0}, &make<adamw_fp32>},
      {{"bf16", "adamw", "AdamW on bf16 params, bf16 grads, bf16 m and v, no master (naive bf16)", 1.0},
       &make<adamw_bf16>},
      {{"flash", "adamw", "flashoptim default: bf16 params + int8 correction, bf16 grads, 8-bit m and v", 1.0},
       &make<adamw_flash>},
      {{"mixed", "adamw", "mixed precision: bf16 params + fp32 master, bf16 grads, fp32 m and v", 1.0},
       &make<adamw_mixed>},
      {{"sgd_fp32", "sgd", "SGD momentum 0.9: fp32 params, fp32 grads, fp32 momentum", 30.0}, &make<sgd_fp32>},
      {{"sgd_flash", "sgd", "SGD momentum 0.9: bf16 params + int8 correction, bf16 grads, 8-bit momentum", 30.0},
       &make<sgd_flash>},
      {{"lion_fp32", "lion", "Lion: fp32 params, fp32 grads, fp32 momentum", 0.3}, &make<lion_fp32>},
      {{"lion_flash", "lion", "Lion: bf16 params + int8 correction, bf16 grads, 8-bit momentum", 0.3},
       &make<lion_flash>},
  };
  return e;
}

}  // namespace

const std::vector<config_info>& configurations() {
  static const std::vector<config_info> list = [] {
    std::vector<config_info> l;
    for (const auto& e : entries()) l.push_back(e.info);
    return l;
  }();
  return list;
}

const config_info* find_configuration(const std::string& name) {
  for (const auto& e : entries())
    if (name == e.info.name) return &e.info;
  return nullptr;
}

std::unique_ptr<optimizer> make_optimizer(const std::string& name, place where, const std::vector<tensor_info>& tensors,
                                          double offload, const hyper_params& hp, std::string& error) {
  for (const auto& e : entries())
    if (name == e.info.name) return e.create(e.info, where, tensors, offload, hp, error);
  error = "unknown configuration '" + name + "'";
  return nullptr;
}

}  // namespace train
