// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// Shared pieces of the update rules: validation of hyperparameters, and the
// double-precision arithmetic that turns (hyperparameters, lr, step) into
// the fp32 scalars a step uses. These run on the host for ordinary launches
// and on the device when lr and step are read from device memory (graph
// capture); both use only IEEE +, -, *, / and sqrt, so the scalars are the
// same bits either way.
#pragma once

#include "flashoptim/format/bits.hpp"
#include "flashoptim/status.hpp"

namespace flashoptim::rule {

/// beta^step by repeated squaring (no pow(): libm's is not the device's).
FLASHOPTIM_HOST_DEVICE inline double pow_int(double base, std::int64_t exponent) {
  double result = 1.0;
  double b = base;
  std::uint64_t e = exponent < 0 ? 0 : static_cast<std::uint64_t>(exponent);
  while (e) {
    if (e & 1u) result *= b;
    b *= b;
    e >>= 1;
  }
  return result;
}

/// Per-step values every rule can use, computed once per step.
struct common_scalars {
  float lr = 0.0f;
  float inv_grad_scale = 1.0f;  ///< gradients are multiplied by this first (AMP unscale)
};

namespace detail {
inline status check_finite(const char* rule, const char* what, double v) {
  if (!format::is_finite(v)) return status(status_code::non_finite_hyperparameter, "%s: %s is %g", rule, what, v);
  return status();
}
inline status check_range(const char* rule, const char* what, double v, double lo, double hi, bool hi_open) {
  FLASHOPTIM_RETURN_IF_ERROR(check_finite(rule, what, v));
  if (v < lo || (hi_open ? v >= hi : v > hi))
    return status(status_code::hyperparameter_out_of_range, "%s: %s = %g is outside [%g, %g%s", rule, what, v, lo,
                  hi, hi_open ? ")" : "]");
  return status();
}
inline status check_nonnegative(const char* rule, const char* what, double v) {
  FLASHOPTIM_RETURN_IF_ERROR(check_finite(rule, what, v));
  if (v < 0.0) return status(status_code::hyperparameter_out_of_range, "%s: %s = %g is negative", rule, what, v);
  return status();
}
/// decouple_lr needs the schedule's initial lr to divide by.
inline status check_initial_lr(const char* rule, bool decouple_lr, double initial_lr) {
  if (!decouple_lr) return status();
  FLASHOPTIM_RETURN_IF_ERROR(check_finite(rule, "initial_lr", initial_lr));
  if (!(initial_lr > 0.0))
    return status(status_code::hyperparameter_out_of_range, "%s: decouple_lr needs initial_lr > 0, got %g", rule,
                  initial_lr);
  return status();
}
}  // namespace detail

/// Validates the per-step inputs shared by all rules.
inline status validate_step(const char* rule, double lr, std::int64_t step, double inv_grad_scale) {
  FLASHOPTIM_RETURN_IF_ERROR(detail::check_nonnegative(rule, "lr", lr));
  if (step < 1) return status(status_code::invalid_argument, "%s: step = %lld, steps count from 1", rule, (long long)step);
  FLASHOPTIM_RETURN_IF_ERROR(detail::check_finite(rule, "inv_grad_scale", inv_grad_scale));
  if (!(inv_grad_scale > 0.0))
    return status(status_code::hyperparameter_out_of_range, "%s: inv_grad_scale = %g must be positive", rule,
                  inv_grad_scale);
  return status();
}

/// The multiplicative decay of decoupled weight decay:
/// 1 - lr * wd, or 1 - wd * lr / initial_lr with decouple_lr.
FLASHOPTIM_HOST_DEVICE inline float decay_factor(double lr, double weight_decay, bool decouple_lr, double initial_lr) {
  return static_cast<float>(decouple_lr ? 1.0 - weight_decay * (lr / initial_lr) : 1.0 - lr * weight_decay);
}

}  // namespace flashoptim::rule
