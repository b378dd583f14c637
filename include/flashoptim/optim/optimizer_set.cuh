// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// Optimizers of several configurations stepped as one: bf16 weights with
// an int8 correction beside fp32 norms, another state codec for the
// embeddings. Each device::optimizer keeps its own launches (a kernel is
// compiled for one configuration); the set runs ONE gradient pass over the
// gradients of all of them -- the global norm, the clip coefficient, the
// skip on overflow and the loss-scale update are those of the whole model,
// as torch's clip_grad_norm_ and GradScaler see it -- and every member's
// step reads that pass's multiplier and skip flag. Stream-ordered, no host
// synchronization, capturable in a CUDA graph like a single optimizer.
//
//   device::optimizer<bf16_cfg> matrices;  device::optimizer<fp32_cfg> norms;
//   ... init both ...
//   device::optimizer_set<decltype(matrices), decltype(norms)> all(matrices, norms);
//   FLASHOPTIM_RETURN_IF_ERROR(all.set_grad_pass(cfg));
//   FLASHOPTIM_RETURN_IF_ERROR(all.step_async(stream));
//
// The set refers to the optimizers (it does not own them): they must
// outlive it and keep their tensors (call set_grad_pass again after any
// member's set_grad or init).
#pragma once

#include <cuda_runtime.h>

#include <tuple>
#include <utility>
#include <vector>

#include "flashoptim/optim/device_optimizer.cuh"

namespace flashoptim::device {

template <class... Optimizers>
class optimizer_set {
  static_assert(sizeof...(Optimizers) >= 1, "an optimizer_set holds at least one optimizer");

 public:
  explicit optimizer_set(Optimizers&... members) : members_(members...) {}
  ~optimizer_set() {
    if (control_ != nullptr) cudaFree(control_);
  }
  optimizer_set(const optimizer_set&) = delete;
  optimizer_set& operator=(const optimizer_set&) = delete;

  /// Builds one gradient pass over every member's gradients (in member
  /// order, each member's tensors in its order) and resets the loss scale
  /// to cfg.scaler's initial value. Set-up: allocates and synchronizes.
  status set_grad_pass(const grad_pass_config& cfg, cudaStream_t stream = nullptr) {
    std::vector<grad_tensor> grads;
    status st;
    std::apply(
        [&](auto&... m) {
          (
              [&](auto& o) {
                using C = typename std::decay_t<decltype(o)>::config;
                if (st.ok() && !o.initialized())
                  st = status(status_code::invalid_argument, "optimizer_set: a member is not initialized");
                for (const auto& t : o.tensors())
                  grads.push_back(grad_tensor{t.grad, dtype_of<typename C::grad_type>::value, t.size});
              }(m),
              ...);
        },
        members_);
    FLASHOPTIM_RETURN_IF_ERROR(st);
    if (control_ == nullptr) {
      void* p = nullptr;
      FLASHOPTIM_RETURN_IF_ERROR(
          detail::cuda_status(cudaMalloc(&p, sizeof(grad_control) + sizeof(grad_summary)), "optimizer_set: control"));
      control_ = static_cast<grad_control*>(p);
    }
    grad_list list{grads.data(), static_cast<std::int64_t>(grads.size())};
    grad_pass_outputs outs;
    outs.control = control_;
    outs.summary = reinterpret_cast<grad_summary*>(control_ + 1);
    grad_pass_plan pass;
    FLASHOPTIM_RETURN_IF_ERROR(pass.build(list, cfg, outs));
    FLASHOPTIM_RETURN_IF_ERROR(pass.reset_control_async(stream));
    FLASHOPTIM_RETURN_IF_ERROR(detail::cuda_status(cudaStreamSynchronize(stream), "optimizer_set: synchronize"));
    pass_ = std::move(pass);
    return status();
  }

  /// The pass, then every member's step with its multiplier and skip flag.
  status step_async(cudaStream_t stream) const {
    if (!pass_.built())
      return status(status_code::invalid_argument, "optimizer_set: call set_grad_pass() first");
    FLASHOPTIM_RETURN_IF_ERROR(pass_.run_async(stream));
    status st;
    std::apply([&](auto&... m) { ((st = st.ok() ? m.step_async(control_, stream) : st), ...); }, members_);
    return st;
  }

  /// The shared pass's scalars (device memory): loss_scale is the scale
  /// for the next backward.
  const grad_control* device_control() const { return control_; }
  status read_control(grad_control& out, cudaStream_t stream = nullptr) const {
    if (control_ == nullptr) return status(status_code::invalid_argument, "optimizer_set: no pass yet");
    FLASHOPTIM_RETURN_IF_ERROR(detail::cuda_status(cudaStreamSynchronize(stream), "optimizer_set: synchronize"));
    return detail::cuda_status(cudaMemcpy(&out, control_, sizeof(out), cudaMemcpyDeviceToHost),
                               "optimizer_set: read control");
  }

 private:
  std::tuple<Optimizers&...> members_;
  grad_pass_plan pass_;
  grad_control* control_ = nullptr;
};

}  // namespace flashoptim::device
