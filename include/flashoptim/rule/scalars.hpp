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
    const double next = format::mul_rn(result, b);  // formed first: the choice stays a select
    result = (e & 1u) ? next : result;
    b = format::mul_rn(b, b);
    e >>= 1;
  }
  return result;
}

/// IEEE square root and division, correctly rounded (the definition), and
/// no bound on intermediates: the arithmetic of every rule's `apply`.
struct ieee_math {
  FLASHOPTIM_HOST_DEVICE static void observe(float, float, float) {}
  FLASHOPTIM_HOST_DEVICE static float sqrt(float x) { return format::sqrt_rn(x); }
  FLASHOPTIM_HOST_DEVICE static float div(float a, float b) { return format::div_rn(a, b); }
  /// Applied to every intermediate that can overflow: the value itself.
  FLASHOPTIM_HOST_DEVICE static float bound(float x) { return x; }
};

/// The arithmetic of an element recomputed because its finite inputs gave a
/// non-finite result (rule/tile.hpp, docs/finite-arithmetic.md): every
/// intermediate that overflowed is clamped to +-FLT_MAX, and a square root
/// of a negative second moment (only a crafted state holds one) is taken
/// of 0. Where nothing overflows it computes the same bits as ieee_math.
struct saturating_math : ieee_math {
  FLASHOPTIM_HOST_DEVICE static float bound(float x) { return format::saturate(x); }
  FLASHOPTIM_HOST_DEVICE static float sqrt(float x) { return format::sqrt_rn(x > 0.0f ? x : 0.0f); }
};

/// The first of a rule's fp32 scalars that the step cannot use: not finite
/// (its hyperparameters are out of fp32 range) or, where it must be
/// positive, rounded to 0. `what` is null when every scalar is usable. Host
/// and device code (the kernel checks the scalars it computes from device
/// inputs with the same function).
struct scalar_fault {
  const char* what = nullptr;
  bool rounds_to_zero = false;
  FLASHOPTIM_HOST_DEVICE explicit operator bool() const { return what != nullptr; }
  FLASHOPTIM_HOST_DEVICE scalar_fault& finite(const char* name, float x) {
    if (what == nullptr && !format::is_finite(x)) what = name;
    return *this;
  }
  FLASHOPTIM_HOST_DEVICE scalar_fault& positive(const char* name, float x) {
    finite(name, x);
    if (what == nullptr && !(x > 0.0f)) {
      what = name;
      rounds_to_zero = true;
    }
    return *this;
  }
  /// Positive up to its sign: the gradient multiplier carries maximize's
  /// negation (detail::signed_grad_scale).
  FLASHOPTIM_HOST_DEVICE scalar_fault& nonzero(const char* name, float x) {
    return positive(name, x < 0.0f ? -x : x);
  }
};

/// Per-step values every rule can use, computed once per step.
struct common_scalars {
  float lr = 0.0f;
  float inv_grad_scale = 1.0f;  ///< gradients are multiplied by this first (AMP unscale)
};

namespace detail {
/// The fp32 gradient multiplier: inv_grad_scale, negated for maximize
/// (g * (-s) is -(g * s) exactly, so maximize costs no operation).
FLASHOPTIM_HOST_DEVICE inline float signed_grad_scale(double inv_grad_scale, bool maximize) {
  const float s = static_cast<float>(inv_grad_scale);
  return maximize ? -s : s;
}
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
/// The status of Rule::check_scalars: validation of the hyperparameters as
/// the step uses them, after conversion to fp32.
inline status scalar_status(const char* rule, scalar_fault f) {
  if (!f) return status();
  if (f.rounds_to_zero)
    return status(status_code::hyperparameter_out_of_range,
                  "%s: %s rounds to 0 in fp32, the precision the step computes in", rule, f.what);
  return status(status_code::hyperparameter_out_of_range,
                "%s: %s is out of fp32 range (not finite in fp32, the precision the step computes in)", rule, f.what);
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
  return static_cast<float>(decouple_lr ? format::sub_rn(1.0, format::mul_rn(weight_decay, lr / initial_lr))
                                       : format::sub_rn(1.0, format::mul_rn(lr, weight_decay)));
}

}  // namespace flashoptim::rule
