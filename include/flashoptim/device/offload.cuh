// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// Optimizer off-load: a fraction of the tensors (Megatron's rule, see
// layout/offload.hpp) keep their correction and states in pinned host memory
// and are stepped by the CPU path; the rest are stepped on the GPU. Each step
// copies the off-loaded gradients to the host in chunks, steps each chunk
// on CPU threads as soon as it lands, and copies its updated 16-bit
// parameters back, while the next chunks' copies and the GPU part's step run.
// The CPU path and the GPU kernel are bit-identical, so the result is the
// same for every fraction.
//
// Host memory per off-loaded parameter is exactly the layout's bytes: the
// parameter's host copy, its correction and its states (the caller's pinned
// buffers). Gradients pass through a fixed number of pinned staging chunks.
//
//   flashoptim::device::offload_plan<cfg> plan;
//   FLASHOPTIM_RETURN_IF_ERROR(plan.build(device_views, n, 0.5, host_views, plan_host_count));
//   FLASHOPTIM_RETURN_IF_ERROR(plan.step(hyper, {step}, stream));   // returns when the CPU part is done
#pragma once

#include <string>
#include <cstring>
#include <cuda_runtime.h>

#include <algorithm>
#include <cinttypes>
#include <cstdint>
#include <vector>

#include "flashoptim/cpu/step.hpp"
#include "flashoptim/device/chunk_team.cuh"
#include "flashoptim/device/step_plan.cuh"
#include "flashoptim/layout/offload.hpp"
#include "flashoptim/tuning/offload.hpp"

namespace flashoptim::device {

struct offload_options {
  /// Elements per pipelined chunk; a multiple of 32, so chunks are whole groups.
  std::int64_t chunk_elements = tuning::offload_chunk_elements;
  /// Pinned gradient staging buffers (chunks in flight).
  int staging_buffers = tuning::offload_staging_buffers;
  /// Threads, instruction set and denormal handling of the CPU part.
  cpu::step_options cpu{};
};

namespace detail {

struct offload_chunk {
  std::size_t tensor;
  std::int64_t begin;
  std::int64_t count;
};

}  // namespace detail

template <class Config, class Policy = typename tuning::default_step_policy<Config>::type>
class offload_plan {
 public:
  using hyper = typename Config::hyper;
  using grad_type = typename Config::grad_type;
  using param_type = typename Config::param_type;

  offload_plan() = default;
  offload_plan(const offload_plan&) = delete;
  offload_plan& operator=(const offload_plan&) = delete;
  ~offload_plan() { release(); }

  /// Tensors [0, host_count) of a list go to the host for this fraction.
  static std::size_t host_tensor_count(const tensor_ref<Config>* device_views, std::size_t count, double fraction) {
    std::vector<std::int64_t> sizes(count);
    for (std::size_t i = 0; i < count; ++i) sizes[i] = device_views[i].size;
    return layout::offload_count(sizes.data(), count, fraction);
  }

  /// device_views: every tensor, with its parameter and gradient in device
  /// memory; for the tensors kept on the GPU also its correction and states.
  /// host_views: one per off-loaded tensor (the first host_tensor_count()),
  /// its parameter copy, correction and states in pinned host memory (their
  /// gradient pointers are ignored; seed and index_base come from the device
  /// view). The parameter copies are filled from the device here; the
  /// corrections and states are the caller's (e.g. codec::split and zeros).
  /// Everything is checked first; on error the plan is left as it was.
  status build(const tensor_ref<Config>* device_views, std::size_t count, double fraction,
               const tensor_ref<Config>* host_views, std::size_t host_count, const offload_options& o = {}) {
    FLASHOPTIM_RETURN_IF_ERROR(layout::check_offload_fraction(fraction));
    if (count > 0 && device_views == nullptr) return status(status_code::null_pointer, "device tensor list is null");
    const std::size_t k = host_tensor_count(device_views, count, fraction);
    if (host_count != k)
      return status(status_code::size_mismatch, "fraction %g off-loads %zu tensors, %zu host views were given", fraction,
                    k, host_count);
    if (k > 0 && host_views == nullptr) return status(status_code::null_pointer, "host tensor list is null");
    if (o.chunk_elements <= 0 || o.chunk_elements % 32 != 0)
      return status(status_code::invalid_argument, "chunk_elements = %" PRId64 " must be a positive multiple of 32",
                    o.chunk_elements);
    if (o.staging_buffers < 1)
      return status(status_code::invalid_argument, "staging_buffers = %d must be at least 1", o.staging_buffers);
    FLASHOPTIM_RETURN_IF_ERROR(cpu::step<Config>(hyper{}, step_args{}, nullptr, 0, o.cpu));  // the CPU options

    // the GPU part: an ordinary plan over the remaining tensors (all checks)
    step_plan<Config, Policy> gpu;
    if (count > k) FLASHOPTIM_RETURN_IF_ERROR(gpu.build(device_views + k, count - k));
    // the off-loaded part: device parameters and gradients, host buffers
    std::vector<tensor_ref<Config>> host(host_views, host_views + k);
    int dev = 0;
    if (k > 0) FLASHOPTIM_RETURN_IF_ERROR(cuda_status(cudaGetDevice(&dev), "cudaGetDevice"));
    for (std::size_t i = 0; i < k; ++i) {
      const tensor_ref<Config>& d = device_views[i];
      tensor_ref<Config>& h = host[i];
      if (h.size != d.size)
        return status(status_code::size_mismatch, "tensor %zu: host view has %" PRId64 " elements, device view %" PRId64,
                      i, h.size, d.size);
      h.seed = d.seed;
      h.index_base = d.index_base;
      h.grad = nullptr;
      // only the parameter and gradient of an off-loaded tensor live on the device
      ::flashoptim::detail::buffer_span span;
      FLASHOPTIM_RETURN_IF_ERROR(::flashoptim::detail::check_buffer(i, "param", d.param, d.size, span, true));
      FLASHOPTIM_RETURN_IF_ERROR(::flashoptim::detail::check_buffer(i, "grad", d.grad, d.size, span, false));
      const auto n = static_cast<std::size_t>(d.size);
      FLASHOPTIM_RETURN_IF_ERROR(check_memory_kind(i, "device param", d.param, n * sizeof(param_type), memory_need::device, dev));
      FLASHOPTIM_RETURN_IF_ERROR(check_memory_kind(i, "device grad", d.grad, n * sizeof(grad_type), memory_need::device, dev));
    }
    FLASHOPTIM_RETURN_IF_ERROR(validate_tensor_list(host.data(), k, /*with_grad=*/false));
    for (std::size_t i = 0; i < k; ++i) FLASHOPTIM_RETURN_IF_ERROR(check_host_buffers(i, host[i]));

    // resources, then commit
    std::vector<detail::offload_chunk> chunks;
    for (std::size_t i = 0; i < k; ++i)
      for (std::int64_t b = 0; b < host[i].size; b += o.chunk_elements)
        chunks.push_back({i, b, std::min<std::int64_t>(o.chunk_elements, host[i].size - b)});
    resources r;
    status s = r.create(chunks.empty() ? 0 : o.staging_buffers,
                        static_cast<std::size_t>(o.chunk_elements) * sizeof(grad_type));
    for (std::size_t i = 0; i < k && s.ok(); ++i) {
      const auto bytes = static_cast<std::size_t>(host[i].size) * sizeof(param_type);
      if (bytes)
        s = cuda_status(cudaMemcpy(host[i].param, device_views[i].param, bytes, cudaMemcpyDeviceToHost), "parameter copy");
    }
    if (!s.ok()) {
      r.destroy();
      return s;
    }
    release();
    gpu_ = std::move(gpu);
    device_.assign(device_views, device_views + count);
    host_ = std::move(host);
    chunks_ = std::move(chunks);
    team_.resize(chunks_.size());
    device_id_ = dev;
    options_ = o;
    res_ = r;
    r = resources{};
    built_ = true;
    return status();
  }

  bool built() const { return built_; }
  std::size_t host_tensor_count() const { return host_.size(); }
  std::size_t chunk_count() const { return chunks_.size(); }
  const step_plan<Config, Policy>& gpu_plan() const { return gpu_; }

  /// One step: the GPU part on `stream`, the off-loaded part on CPU threads
  /// with its copies on the plan's own streams, ordered after everything
  /// already on `stream` (the backward pass). Returns when the CPU part is
  /// done; `stream` is made to wait for the parameters' copy back, so work
  /// queued on it after this call sees the updated parameters.
  status step(const hyper& h, const step_args& a, cudaStream_t stream) {
    if (!built_) return status(status_code::invalid_argument, "offload_plan: step before a successful build");
    FLASHOPTIM_RETURN_IF_ERROR(validate_step_args<Config>(h, a));
    if (a.skip) return status();
    FLASHOPTIM_RETURN_IF_ERROR(cuda_status(cudaEventRecord(res_.inputs_ready, stream), "event record"));
    if (gpu_.built()) FLASHOPTIM_RETURN_IF_ERROR(gpu_.step_async(h, a, stream));
    if (chunks_.empty()) return status();
    FLASHOPTIM_RETURN_IF_ERROR(cuda_status(cudaStreamWaitEvent(res_.d2h, res_.inputs_ready, 0), "stream wait"));
    const std::size_t buffers = res_.staging.size();
    team_.reset(0, chunks_.size());
    for (std::size_t i = 0; i < std::min(buffers, chunks_.size()); ++i) FLASHOPTIM_RETURN_IF_ERROR(copy_in(i));
    // the chunks on one team of CPU threads (device/chunk_team.cuh)
    cpu::step_options one = options_.cpu;
    one.threads = 1;
    FLASHOPTIM_RETURN_IF_ERROR(detail::run_chunk_team(
        team_, 0, chunks_.size(), options_.cpu, device_id_,
        [&](std::size_t i) { return cpu::dispatch::group_count(chunks_[i].count); },
        [&](std::size_t i) { return cuda_status(cudaEventSynchronize(res_.copied_in[i % buffers]), "gradient copy"); },
        [&](std::size_t i, std::int64_t g0, std::int64_t g1) {
          const detail::offload_chunk& c = chunks_[i];
          const detail::offload_chunk part{c.tensor, c.begin + g0 * 32, std::min(c.count, g1 * 32) - g0 * 32};
          const tensor_ref<Config> v =
              chunk_view(part, reinterpret_cast<const grad_type*>(res_.staging[i % buffers]) + g0 * 32);
          return cpu::step<Config>(h, a, &v, 1, one);
        },
        [&](std::size_t i) {
          const detail::offload_chunk& c = chunks_[i];
          FLASHOPTIM_RETURN_IF_ERROR(cuda_status(
              cudaMemcpyAsync(device_[c.tensor].param + c.begin, host_[c.tensor].param + c.begin,
                              static_cast<std::size_t>(c.count) * sizeof(param_type), cudaMemcpyHostToDevice, res_.h2d),
              "parameter copy"));
          return i + buffers < chunks_.size() ? copy_in(i + buffers) : status();
        }));
    FLASHOPTIM_RETURN_IF_ERROR(cuda_status(cudaEventRecord(res_.copied_out, res_.h2d), "event record"));
    return cuda_status(cudaStreamWaitEvent(stream, res_.copied_out, 0), "stream wait");
  }

  /// As step(), after checking that `device_views` are the tensors the plan
  /// was built for (same buffers, sizes, seeds): a model whose parameters
  /// were re-allocated must rebuild its plan, not step stale pointers.
  status step(const hyper& h, const step_args& a, const tensor_ref<Config>* device_views, std::size_t count,
              cudaStream_t stream) {
    FLASHOPTIM_RETURN_IF_ERROR(check_unchanged(device_views, count));
    return step(h, a, stream);
  }

  /// Copies the device parameters of the off-loaded tensors into their host
  /// copies, after the caller changed them outside the optimizer (e.g.
  /// loaded weights). Synchronous.
  status refresh_host_params() {
    for (std::size_t i = 0; i < host_.size(); ++i) {
      const auto bytes = static_cast<std::size_t>(host_[i].size) * sizeof(param_type);
      if (bytes)
        FLASHOPTIM_RETURN_IF_ERROR(
            cuda_status(cudaMemcpy(host_[i].param, device_[i].param, bytes, cudaMemcpyDeviceToHost), "parameter copy"));
    }
    return status();
  }

 private:
  struct resources {
    std::vector<void*> staging;
    std::vector<cudaEvent_t> copied_in;
    cudaStream_t d2h = nullptr, h2d = nullptr;
    cudaEvent_t inputs_ready = nullptr, copied_out = nullptr;

    status create(int buffers, std::size_t bytes) {
      FLASHOPTIM_RETURN_IF_ERROR(cuda_status(cudaStreamCreateWithFlags(&d2h, cudaStreamNonBlocking), "stream"));
      FLASHOPTIM_RETURN_IF_ERROR(cuda_status(cudaStreamCreateWithFlags(&h2d, cudaStreamNonBlocking), "stream"));
      FLASHOPTIM_RETURN_IF_ERROR(cuda_status(cudaEventCreateWithFlags(&inputs_ready, cudaEventDisableTiming), "event"));
      FLASHOPTIM_RETURN_IF_ERROR(cuda_status(cudaEventCreateWithFlags(&copied_out, cudaEventDisableTiming), "event"));
      for (int b = 0; b < buffers; ++b) {
        void* p = nullptr;
        FLASHOPTIM_RETURN_IF_ERROR(cuda_status(cudaHostAlloc(&p, bytes, cudaHostAllocDefault), "pinned staging"));
        staging.push_back(p);
        cudaEvent_t e = nullptr;
        FLASHOPTIM_RETURN_IF_ERROR(cuda_status(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "event"));
        copied_in.push_back(e);
      }
      return status();
    }
    void destroy() {
      for (void* p : staging) cudaFreeHost(p);
      for (cudaEvent_t e : copied_in) cudaEventDestroy(e);
      if (inputs_ready) cudaEventDestroy(inputs_ready);
      if (copied_out) cudaEventDestroy(copied_out);
      if (d2h) cudaStreamDestroy(d2h);
      if (h2d) cudaStreamDestroy(h2d);
      *this = resources{};
    }
  };

  static status cuda_status(cudaError_t e, const char* what) { return detail::cuda_status(e, what); }

  static status check_host_buffers(std::size_t i, const tensor_ref<Config>& h) {
    // every host buffer but the gradient (which stays on the GPU)
    status st;
    for_each_buffer(h, [&](const char* name, const void* p, std::size_t bytes, bool) {
      if (st.ok() && std::strcmp(name, "grad") != 0)
        st = check_memory_kind(i, (std::string("host ") + name).c_str(), p, bytes, memory_need::pinned_host, -1);
    });
    return st;
  }

  /// The host view of one chunk: whole groups of one tensor, its gradients
  /// in a staging buffer.
  tensor_ref<Config> chunk_view(const detail::offload_chunk& c, const grad_type* grad) const {
    using C = Config;
    tensor_ref<Config> v = host_[c.tensor];
    v.param += c.begin;
    if constexpr (C::has_aux) v.aux += c.begin;
    for_each_slot<C::num_slots>([&](auto s) {
      constexpr int I = decltype(s)::value;
      using S = typename C::template state<I>;
      if constexpr (S::stores_state) slot_at<I>(v.states).codes += c.begin;
      if constexpr (codec::is_grouped<S>::value) slot_at<I>(v.states).scales += c.begin / 32;
    });
    v.grad = grad;
    v.size = c.count;
    v.index_base += static_cast<std::uint64_t>(c.begin);
    return v;
  }

  status copy_in(std::size_t i) {
    const detail::offload_chunk& c = chunks_[i];
    const std::size_t slot = i % res_.staging.size();
    FLASHOPTIM_RETURN_IF_ERROR(cuda_status(
        cudaMemcpyAsync(res_.staging[slot], device_[c.tensor].grad + c.begin,
                        static_cast<std::size_t>(c.count) * sizeof(grad_type), cudaMemcpyDeviceToHost, res_.d2h),
        "gradient copy"));
    FLASHOPTIM_RETURN_IF_ERROR(cuda_status(cudaEventRecord(res_.copied_in[slot], res_.d2h), "event record"));
    team_.mark_queued(i);
    return status();
  }

  status check_unchanged(const tensor_ref<Config>* views, std::size_t count) const {
    if (!built_) return status(status_code::invalid_argument, "offload_plan: step before a successful build");
    if (count != device_.size())
      return status(status_code::state_changed, "the plan was built for %zu tensors, %zu were given", device_.size(), count);
    if (count > 0 && views == nullptr) return status(status_code::null_pointer, "device tensor list is null");
    for (std::size_t i = 0; i < count; ++i) {
      const tensor_ref<Config>& a = device_[i];
      const tensor_ref<Config>& b = views[i];
      const bool on_gpu = i >= host_.size();
      bool states_moved = false;
      for_each_slot<Config::num_slots>([&](auto s) {
        constexpr int I = decltype(s)::value;
        states_moved = states_moved || slot_at<I>(a.states).codes != slot_at<I>(b.states).codes ||
                       slot_at<I>(a.states).scales != slot_at<I>(b.states).scales;
      });
      const char* what = a.size != b.size                              ? "size"
                         : a.param != b.param                          ? "param"
                         : a.grad != b.grad                            ? "grad"
                         : a.seed != b.seed || a.index_base != b.index_base ? "seed or index_base"
                         : on_gpu && (a.aux != b.aux || states_moved)
                             ? "correction or state buffer"
                             : nullptr;
      if (what != nullptr)
        return status(status_code::state_changed, "tensor %zu: %s changed since the plan was built (rebuild it)", i, what);
    }
    return status();
  }

  void release() {
    res_.destroy();
    built_ = false;
  }

  step_plan<Config, Policy> gpu_;
  std::vector<tensor_ref<Config>> device_, host_;
  std::vector<detail::offload_chunk> chunks_;
  detail::chunk_team_state team_;
  int device_id_ = 0;
  offload_options options_{};
  resources res_{};
  bool built_ = false;
};

}  // namespace flashoptim::device
