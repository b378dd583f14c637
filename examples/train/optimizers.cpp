// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// The adapter between the training run and flashoptim: every use of the
// library's step API is in this file. Per tensor it allocates the parameter
// (in the configuration's dtype), the gradient (in its gradient dtype) and
// one block that state_layout cuts into the correction and the states; it
// initializes them (codec::split / device::init_tensor_async) and steps them
// (cpu::step, device::step_plan, or device::offload_plan for --offload).
// Built as CUDA when the toolkit is there (TRAIN_HAS_CUDA), as C++ otherwise.
#include "optimizers.hpp"

#include <cstdlib>
#include <cstring>
#include <type_traits>
#include <vector>

#include <flashoptim/flashoptim.hpp>

#if TRAIN_HAS_CUDA
#include <cuda_runtime.h>

#include <flashoptim/device/offload.cuh>
#include <flashoptim/device/state_init.cuh>
#include <flashoptim/device/step_plan.cuh>
#endif

namespace train {
namespace {

namespace fo = flashoptim;
namespace c = flashoptim::codec;
using ulp8 = c::ulp_correction<fo::bf16, std::int8_t>;

// ---------------------------------------------------------------- the instantiated configurations
// Each one compiles the CPU step (AVX-512, AVX2, portable) and, with CUDA,
// the GPU kernel: keep the list short (CI builds it on 2 cores).
using adamw_fp32 = fo::step_config<fo::rule::adamw, c::native<float>, float, c::precision::fp32, c::precision::fp32>;
using adamw_bf16 =
    fo::step_config<fo::rule::adamw, c::native<fo::bf16>, fo::bf16, c::precision::bf16, c::precision::bf16>;
using adamw_mixed =
    fo::step_config<fo::rule::adamw, c::fp32_master<fo::bf16>, fo::bf16, c::precision::fp32, c::precision::fp32>;
using adamw_flash = fo::step_config<fo::rule::adamw, ulp8, fo::bf16, c::defaults::momentum, c::defaults::second_moment>;
using sgd_fp32 = fo::step_config<fo::rule::sgd, c::native<float>, float, c::precision::fp32>;
using sgd_flash = fo::step_config<fo::rule::sgd, ulp8, fo::bf16, c::defaults::momentum>;
using lion_fp32 = fo::step_config<fo::rule::lion, c::native<float>, float, c::precision::fp32>;
using lion_flash = fo::step_config<fo::rule::lion, ulp8, fo::bf16, c::defaults::momentum>;

template <class Config>
typename Config::hyper make_hyper(double lr, const hyper_params& hp) {
  typename Config::hyper h;  // the library's (PyTorch's) defaults: betas, eps
  h.lr = lr;
  h.weight_decay = hp.weight_decay;
  if constexpr (std::is_same<typename Config::rule, fo::rule::sgd>::value) h.momentum = 0.9;
  return h;
}

std::string message(const fo::status& s) { return s.ok() ? std::string() : std::string(s.what()); }

struct host_free {
  void operator()(void* p) const { std::free(p); }
};
using host_block = std::unique_ptr<void, host_free>;
host_block host_alloc(std::int64_t bytes) {
  const std::int64_t rounded = (bytes + 255) / 256 * 256;
  return host_block(rounded > 0 ? std::aligned_alloc(256, static_cast<std::size_t>(rounded)) : nullptr);
}

// ---------------------------------------------------------------- CPU
template <class Config>
class cpu_optimizer final : public optimizer {
  using P = typename Config::param_type;
  using G = typename Config::grad_type;

 public:
  cpu_optimizer(const config_info& info, const std::vector<std::int64_t>& sizes, const hyper_params& hp)
      : info_(info), hp_(hp) {
    for (std::size_t i = 0; i < sizes.size(); ++i) {
      tensor t;
      t.layout = fo::state_layout<Config>::for_size(sizes[i]);
      t.param = host_alloc(sizes[i] * static_cast<std::int64_t>(sizeof(P)));
      t.grad = host_alloc(sizes[i] * static_cast<std::int64_t>(sizeof(G)));
      t.state = host_alloc(t.layout.bytes);
      fo::tensor_ref<Config> r;
      t.layout.carve(t.state.get(), r);  // correction and state buffers, r.size
      r.param = static_cast<P*>(t.param.get());
      r.grad = static_cast<const G*>(t.grad.get());
      r.seed = i;
      refs_.push_back(r);
      tensors_.push_back(std::move(t));
    }
  }
  const config_info& info() const override { return info_; }
  std::string init(const std::vector<std::vector<float>>& w) override {
    for (std::size_t i = 0; i < refs_.size(); ++i) {
      const auto& r = refs_[i];
      // states zero first: the block holds the correction too, which split then writes
      if (tensors_[i].layout.bytes) std::memset(tensors_[i].state.get(), 0, static_cast<std::size_t>(tensors_[i].layout.bytes));
      if (auto s = c::split<typename Config::master>(w[i].data(), r.size, r.param, r.aux); !s.ok()) return message(s);
    }
    return {};
  }
  void param_to_float(std::size_t i, float* dst) override {
    const auto& r = refs_[i];
    for (std::int64_t j = 0; j < r.size; ++j) dst[j] = fo::format::to_float(r.param[j]);
  }
  std::string master_to_float(std::size_t i, float* dst) override {
    return message(c::reconstruct<typename Config::master>(refs_[i].param, refs_[i].aux, refs_[i].size, dst));
  }
  void grad_from_float(std::size_t i, const float* src) override {
    G* g = static_cast<G*>(tensors_[i].grad.get());
    for (std::int64_t j = 0; j < refs_[i].size; ++j) g[j] = fo::format::from_float<G>(src[j]);
  }
  std::string step(double lr, std::int64_t step) override {
    fo::step_args a;
    a.step = step;
    fo::cpu::step_options o;
    o.threads = hp_.cpu_threads;
    return message(
        fo::cpu::step<Config>(make_hyper<Config>(lr * info_.lr_multiplier, hp_), a, refs_.data(), refs_.size(), o));
  }
  optimizer_memory memory() const override {
    optimizer_memory m;
    for (const auto& t : tensors_) {
      const auto& l = t.layout;
      m.params += l.size;
      m.param_bytes += l.size * static_cast<std::int64_t>(sizeof(P));
      m.correction_bytes += l.aux_bytes;
      for (const auto& piece : l.slots) m.state_bytes += piece.code_bytes + piece.scale_bytes;
      m.grad_bytes += l.size * static_cast<std::int64_t>(sizeof(G));
      m.allocated_bytes += (l.size * static_cast<std::int64_t>(sizeof(P)) + 255) / 256 * 256 + l.bytes;
    }
    return m;
  }

 private:
  struct tensor {
    fo::state_layout<Config> layout;
    host_block param, grad, state;
  };
  config_info info_;
  hyper_params hp_;
  std::vector<tensor> tensors_;
  std::vector<fo::tensor_ref<Config>> refs_;
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
struct pinned_free {
  void operator()(void* p) const { cudaFreeHost(p); }
};
using device_block = std::unique_ptr<void, device_free>;
using pinned_block = std::unique_ptr<void, pinned_free>;

template <class Config>
class gpu_optimizer final : public optimizer {
  using P = typename Config::param_type;
  using G = typename Config::grad_type;

 public:
  gpu_optimizer(const config_info& info, const hyper_params& hp, double offload) : info_(info), hp_(hp), offload_(offload) {}

  /// Allocates every buffer; tensors [0, host_count) keep their parameter
  /// copy, correction and states in pinned host memory.
  std::string allocate(const std::vector<std::int64_t>& sizes) {
    if (auto s = fo::layout::check_offload_fraction(offload_); !s.ok()) return message(s);
    host_count_ = fo::layout::offload_count(sizes.data(), sizes.size(), offload_);
    for (std::size_t i = 0; i < sizes.size(); ++i) {
      tensor t;
      const std::int64_t n = sizes[i];
      t.layout = fo::state_layout<Config>::for_size(n);
      const bool host = i < host_count_;
      void* p = nullptr;
      if (auto e = cuda_message(cudaMalloc(&p, std::max<std::size_t>(1, n * sizeof(P))), "cudaMalloc"); !e.empty()) return e;
      t.param.reset(p);
      if (auto e = cuda_message(cudaMalloc(&p, std::max<std::size_t>(1, n * sizeof(G))), "cudaMalloc"); !e.empty()) return e;
      t.grad.reset(p);
      fo::tensor_ref<Config> d;
      d.size = n;
      d.seed = i;
      if (host) {
        if (auto e = cuda_message(cudaHostAlloc(&p, std::max<std::size_t>(1, n * sizeof(P)), cudaHostAllocDefault), "cudaHostAlloc");
            !e.empty())
          return e;
        t.host_param.reset(p);
        if (auto e = cuda_message(cudaHostAlloc(&p, std::max<std::int64_t>(1, t.layout.bytes), cudaHostAllocDefault), "cudaHostAlloc");
            !e.empty())
          return e;
        t.host_state.reset(p);
        fo::tensor_ref<Config> h;
        t.layout.carve(t.host_state.get(), h);
        h.param = static_cast<P*>(t.host_param.get());
        host_refs_.push_back(h);
      } else {
        if (auto e = cuda_message(cudaMalloc(&p, std::max<std::int64_t>(1, t.layout.bytes)), "cudaMalloc"); !e.empty()) return e;
        t.state.reset(p);
        t.layout.carve(t.state.get(), d);
      }
      d.param = static_cast<P*>(t.param.get());
      d.grad = static_cast<const G*>(t.grad.get());
      refs_.push_back(d);
      tensors_.push_back(std::move(t));
    }
    return {};
  }

  const config_info& info() const override { return info_; }
  std::string init(const std::vector<std::vector<float>>& w) override {
    for (std::size_t i = 0; i < refs_.size(); ++i) {
      const std::int64_t n = refs_[i].size;
      if (i < host_count_) {  // off-loaded: split on the host, the parameter copied up
        auto& h = host_refs_[i];
        std::memset(tensors_[i].host_state.get(), 0, static_cast<std::size_t>(tensors_[i].layout.bytes));  // before split: it holds the correction
        if (auto s = c::split<typename Config::master>(w[i].data(), n, h.param, h.aux); !s.ok()) return message(s);
        if (auto e = cuda_message(cudaMemcpy(refs_[i].param, h.param, n * sizeof(P), cudaMemcpyHostToDevice), "copy");
            !e.empty())
          return e;
        continue;
      }
      void* x = nullptr;
      if (auto e = cuda_message(cudaMalloc(&x, std::max<std::size_t>(1, n * 4)), "cudaMalloc"); !e.empty()) return e;
      device_block tmp(x);
      if (auto e = cuda_message(cudaMemcpy(x, w[i].data(), n * 4, cudaMemcpyHostToDevice), "copy"); !e.empty()) return e;
      if (auto s = fo::device::init_tensor_async(static_cast<const float*>(x), refs_[i], nullptr); !s.ok()) return message(s);
      if (auto e = cuda_message(cudaDeviceSynchronize(), "init"); !e.empty()) return e;
    }
    if (offload_ > 0)
      return message(offload_plan_.build(refs_.data(), refs_.size(), offload_, host_refs_.data(), host_refs_.size()));
    return message(plan_.build(refs_.data(), refs_.size()));
  }
  void param_to_float(std::size_t i, float* dst) override {
    to_float_kernel<<<blocks_for(refs_[i].size), 256>>>(refs_[i].param, refs_[i].size, dst);
  }
  std::string master_to_float(std::size_t i, float* dst) override {
    const std::int64_t n = refs_[i].size;
    if (i >= host_count_)
      return message(fo::device::reconstruct_async<typename Config::master>(refs_[i].param, refs_[i].aux, n, dst, nullptr));
    std::vector<float> x(static_cast<std::size_t>(n));  // off-loaded: the correction is on the host
    if (auto s = c::reconstruct<typename Config::master>(host_refs_[i].param, host_refs_[i].aux, n, x.data()); !s.ok())
      return message(s);
    return cuda_message(cudaMemcpy(dst, x.data(), n * 4, cudaMemcpyHostToDevice), "copy");
  }
  void grad_from_float(std::size_t i, const float* src) override {
    from_float_kernel<<<blocks_for(refs_[i].size), 256>>>(src, refs_[i].size, static_cast<G*>(tensors_[i].grad.get()));
  }
  std::string step(double lr, std::int64_t step) override {
    fo::step_args a;
    a.step = step;
    const auto h = make_hyper<Config>(lr * info_.lr_multiplier, hp_);
    return message(offload_ > 0 ? offload_plan_.step(h, a, nullptr) : plan_.step_async(h, a, nullptr));
  }
  optimizer_memory memory() const override {
    optimizer_memory m;
    for (std::size_t i = 0; i < tensors_.size(); ++i) {
      const auto& l = tensors_[i].layout;
      const std::int64_t pb = l.size * static_cast<std::int64_t>(sizeof(P));
      m.params += l.size;
      m.param_bytes += pb;
      m.correction_bytes += l.aux_bytes;
      for (const auto& piece : l.slots) m.state_bytes += piece.code_bytes + piece.scale_bytes;
      m.grad_bytes += l.size * static_cast<std::int64_t>(sizeof(G));
      m.allocated_bytes += (pb + 255) / 256 * 256 + l.bytes;
      if (i < host_count_) m.host_bytes += (pb + 255) / 256 * 256 + l.bytes;  // the host copy and the states
    }
    return m;
  }

 private:
  struct tensor {
    fo::state_layout<Config> layout;
    device_block param, grad, state;
    pinned_block host_param, host_state;
  };
  config_info info_;
  hyper_params hp_;
  double offload_;
  std::size_t host_count_ = 0;
  std::vector<tensor> tensors_;
  std::vector<fo::tensor_ref<Config>> refs_, host_refs_;
  fo::device::step_plan<Config> plan_;
  fo::device::offload_plan<Config> offload_plan_;
};
#endif

// ---------------------------------------------------------------- the table
using factory = std::unique_ptr<optimizer> (*)(const config_info&, place, const std::vector<std::int64_t>&, double,
                                               const hyper_params&, std::string&);

template <class Config>
std::unique_ptr<optimizer> make(const config_info& info, place where, const std::vector<std::int64_t>& sizes,
                                double offload, const hyper_params& hp, std::string& error) {
  if (where == place::cpu) {
    if (offload > 0) {
      error = "--offload needs the GPU";
      return nullptr;
    }
    return std::make_unique<cpu_optimizer<Config>>(info, sizes, hp);
  }
#if TRAIN_HAS_CUDA
  auto o = std::make_unique<gpu_optimizer<Config>>(info, hp, offload);
  error = o->allocate(sizes);
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

std::unique_ptr<optimizer> make_optimizer(const std::string& name, place where, const std::vector<std::int64_t>& sizes,
                                          double offload, const hyper_params& hp, std::string& error) {
  for (const auto& e : entries())
    if (name == e.info.name) return e.create(e.info, where, sizes, offload, hp, error);
  error = "unknown configuration '" + name + "'";
  return nullptr;
}

}  // namespace train
