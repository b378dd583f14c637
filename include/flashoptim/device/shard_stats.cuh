// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// Gradient statistics of a sharded step. Each rank runs
// step_plan::grad_stats_async over its shard's views; the caller all-reduces
// the result across ranks (sum of sum_squares, max of non_finite: two
// ncclAllReduce calls on the struct's fields), and then every rank holds
// the same global statistics. This header turns them into the step's device
// inputs: the skip flag is &stats->non_finite as it is, and the gradient
// multiplier for clipping by the global norm is computed here, on the
// device, so that a CUDA graph can hold the whole sharded step.
//
// The multiplier is computed in double with IEEE operations only (sqrt,
// divide), by the same function on host and device: every rank computes the
// same bits from the same reduced statistics, and a test can recompute it on
// the host.
#pragma once

#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

#include "flashoptim/device/step_plan.cuh"
#include "flashoptim/format/bits.hpp"

namespace flashoptim::device {

/// The gradient multiplier of a step that unscales by `inv_loss_scale` and
/// clips the global norm to `max_norm` (PyTorch's clip_grad_norm_: the
/// gradients are scaled by max_norm / (norm + 1e-6) when that is below 1).
/// norm = sqrt(sum_squares) * inv_loss_scale, sum_squares being the raw
/// (still loss-scaled) sum of the reduced statistics. max_norm <= 0 or
/// infinite disables clipping. With non-finite gradients the step is
/// skipped; the multiplier then stays inv_loss_scale (a valid value, so the
/// skipped step does not also raise the device error flag).
FLASHOPTIM_HOST_DEVICE inline double clip_grad_multiplier(double sum_squares, std::int32_t non_finite, double max_norm,
                                                          double inv_loss_scale) {
  if (non_finite != 0 || !(max_norm > 0.0) || !format::is_finite(max_norm)) return inv_loss_scale;
  const double norm = format::mul_rn(sqrt(sum_squares), inv_loss_scale);
  if (!format::is_finite(norm)) return inv_loss_scale;
  const double coef = max_norm / format::add_rn(norm, 1e-6);
  return coef < 1.0 ? format::mul_rn(inv_loss_scale, coef) : inv_loss_scale;
}

namespace detail {
/// A template only so that the header defines it in every translation unit.
template <int Unused = 0>
__global__ void clip_grad_multiplier_kernel(const grad_stats* stats, double max_norm, double inv_loss_scale,
                                            double* out) {
  if (threadIdx.x == 0 && blockIdx.x == 0)
    *out = clip_grad_multiplier(stats->sum_squares, stats->non_finite, max_norm, inv_loss_scale);
}
}  // namespace detail

/// *inv_grad_scale = clip_grad_multiplier(*stats, max_norm, inv_loss_scale),
/// stream-ordered (capturable). Pass inv_grad_scale as
/// device_inputs::inv_grad_scale and &stats->non_finite as device_inputs::skip.
inline status clip_grad_multiplier_async(const grad_stats* stats, double max_norm, double inv_loss_scale,
                                         double* inv_grad_scale, cudaStream_t stream) {
  if (stats == nullptr || inv_grad_scale == nullptr)
    return status(status_code::null_pointer, "clip_grad_multiplier: %s is null",
                  stats == nullptr ? "stats" : "inv_grad_scale");
  FLASHOPTIM_RETURN_IF_ERROR(detail::check_device_scalar("inv_grad_scale", inv_grad_scale));
  if (reinterpret_cast<std::uintptr_t>(stats) % alignof(grad_stats) != 0)
    return status(status_code::misaligned, "grad_stats at %p is not 8-byte aligned", static_cast<const void*>(stats));
  if (!format::is_finite(inv_loss_scale) || !(inv_loss_scale > 0.0))
    return status(status_code::invalid_argument, "clip_grad_multiplier: inv_loss_scale %g is not finite and positive",
                  inv_loss_scale);
  if (max_norm != max_norm) return status(status_code::invalid_argument, "clip_grad_multiplier: max_norm is NaN");
  detail::clip_grad_multiplier_kernel<><<<1, 32, 0, stream>>>(stats, max_norm, inv_loss_scale, inv_grad_scale);
  return detail::cuda_status(cudaGetLastError(), "clip_grad_multiplier launch");
}

}  // namespace flashoptim::device
