// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// The scalars of a training step that the gradient statistics decide:
// PyTorch's clip_grad_norm_ coefficient, torch.amp.GradScaler's unscale,
// overflow check and scale update, and the one multiplier the step applies
// to the raw gradients. One host/device function computes them from a
// grad_summary (rule/grad_order.hpp), so the CPU pass and the GPU's
// finalize kernel write the same bits: double arithmetic through the
// format:: _rn operations (no product can be contracted into an add), the
// fp32 roundings GradScaler makes done as explicit conversions, and every
// stored NaN canonical. docs/grad-passes.md has the derivations.
#pragma once

#include <cstdint>

#include "flashoptim/config.hpp"
#include "flashoptim/format/bits.hpp"
#include "flashoptim/rule/grad_order.hpp"
#include "flashoptim/status.hpp"

namespace flashoptim {

/// torch.amp.GradScaler's constructor arguments, with its defaults.
struct grad_scaler_config {
  bool enabled = true;               ///< false: no loss scale (inv_loss_scale 1, no update)
  double init_scale = 65536.0;       ///< stored as fp32, as GradScaler does
  double growth_factor = 2.0;        ///< > 1
  double backoff_factor = 0.5;       ///< in (0, 1)
  std::int32_t growth_interval = 2000;  ///< >= 1
};

/// What the pass does with its statistics.
struct grad_pass_config {
  /// clip_grad_norm_'s max_norm (L2), applied to the unscaled gradients;
  /// +infinity: no clipping (the coefficient clamps to 1). Must be > 0.
  double max_norm = __builtin_huge_val();
  grad_scaler_config scaler{};
};

/// The training loop's scalars in one struct (device memory for the GPU
/// pass). loss_scale and growth_tracker are GradScaler's state, carried
/// from step to step; the rest is written by every pass. The step reads
/// &multiplier as device_inputs::inv_grad_scale and &skip as
/// device_inputs::skip.
struct grad_control {
  double loss_scale = 1.0;      ///< in: the scale this backward used; out: the next backward's scale
  double multiplier = 1.0;      ///< inv_loss_scale * clip_coef; 1 when skip (a valid value for the step)
  double total_norm = 0.0;      ///< clip_grad_norm_'s return value: the unscaled global norm
  double clip_coef = 1.0;       ///< min(max_norm / (total_norm + 1e-6), 1), NaN propagated
  double inv_loss_scale = 1.0;  ///< fp32(1 / loss_scale), as GradScaler unscales
  std::int32_t growth_tracker = 0;
  std::int32_t skip = 0;        ///< 1: found_inf, the step must write nothing
};

namespace rule {
namespace grad_detail {
FLASHOPTIM_HOST_DEVICE FLASHOPTIM_INLINE double div_rn(double a, double b) {
#if FLASHOPTIM_DEVICE_CODE
  return __ddiv_rn(a, b);
#else
  return a / b;
#endif
}
/// Round to fp32 (nearest even; +-inf beyond FLT_MAX's rounding range), as
/// a double: GradScaler's scale and inverse scale are fp32 tensors.
FLASHOPTIM_HOST_DEVICE FLASHOPTIM_INLINE double round_f32(double x) {
#if FLASHOPTIM_DEVICE_CODE
  return static_cast<double>(__double2float_rn(x));
#else
  return static_cast<double>(static_cast<float>(x));
#endif
}
FLASHOPTIM_HOST_DEVICE FLASHOPTIM_INLINE float to_f32(double x) {
#if FLASHOPTIM_DEVICE_CODE
  return __double2float_rn(x);
#else
  return static_cast<float>(x);
#endif
}
}  // namespace grad_detail

/// clip_grad_norm_'s coefficient: max_norm / (total_norm + 1e-6), clamped
/// to at most 1 (torch.clamp(max=1.0): a NaN stays NaN). A non-finite norm
/// gives NaN (inf/inf, NaN) or 0 (finite/inf); torch would then multiply
/// the gradients by it (error_if_nonfinite=False), this library skips the
/// step instead: a non-finite norm only comes from a non-finite gradient,
/// whose step is skipped (grad_control::skip).
FLASHOPTIM_HOST_DEVICE FLASHOPTIM_INLINE double clip_coef(double total_norm, double max_norm) {
  const double coef = grad_detail::div_rn(max_norm, format::add_rn(total_norm, 1e-6));
  return coef > 1.0 ? 1.0 : coef;
}

/// GradScaler's inverse scale: self._scale.double().reciprocal().float().
FLASHOPTIM_HOST_DEVICE FLASHOPTIM_INLINE double inv_scale(double scale) {
  return grad_detail::round_f32(grad_detail::div_rn(1.0, scale));
}

/// torch._amp_update_scale_ on (scale, growth_tracker): with found_inf the
/// scale is multiplied by backoff_factor and the tracker reset; otherwise
/// the tracker counts the step and, reaching growth_interval, resets while
/// the scale grows by growth_factor unless that would overflow fp32. The
/// products are formed in double and stored as fp32, as torch's kernel
/// does (float * double, assigned to the fp32 scale).
FLASHOPTIM_HOST_DEVICE FLASHOPTIM_INLINE void scaler_update(double& scale, std::int32_t& growth_tracker,
                                                            bool found_inf, const grad_scaler_config& c) {
  if (found_inf) {
    scale = grad_detail::round_f32(format::mul_rn(scale, c.backoff_factor));
    growth_tracker = 0;
    return;
  }
  const std::int32_t successful = growth_tracker + 1;
  if (successful == c.growth_interval) {
    const double grown = grad_detail::round_f32(format::mul_rn(scale, c.growth_factor));
    if (format::is_finite(grown)) scale = grown;
    growth_tracker = 0;
  } else {
    growth_tracker = successful;
  }
}

/// GradScaler's found_inf for gradients whose largest magnitude has bits
/// `max_abs_bits` (grad_summary): unscaling multiplies each gradient by the
/// fp32 inverse scale in fp32 and flags any non-finite product. Rounding is
/// monotonic, so the largest magnitude overflows if and only if some
/// product does. No element: nothing is found.
FLASHOPTIM_HOST_DEVICE FLASHOPTIM_INLINE bool unscale_finds_inf(std::uint32_t max_abs_bits, std::int64_t elements,
                                                                double inv_loss_scale) {
  if (elements == 0) return false;
  if (max_abs_bits >= 0x7f800000u) return true;
  return !format::is_finite(
      format::mul_rn(format::float_from_bits(max_abs_bits), grad_detail::to_f32(inv_loss_scale)));
}

/// The pass's decision, from the statistics of the raw gradients:
///   inv_loss_scale = fp32(1 / loss_scale)          (1 without a scaler)
///   skip           = any non-finite gradient, or (scaler) unscale overflows
///   total_norm     = sqrt(sum_squares) * inv_loss_scale   (the unscaled norm)
///   clip_coef      = min(max_norm / (total_norm + 1e-6), 1)
///   multiplier     = inv_loss_scale * clip_coef, or 1 when skip
///   loss_scale, growth_tracker: scaler_update(skip)   (scaler only)
/// The step multiplies the raw gradients by `multiplier`: unscale and clip
/// in one product. NaN results are stored canonically.
FLASHOPTIM_HOST_DEVICE FLASHOPTIM_INLINE void finalize(const grad_summary& s, const grad_pass_config& c,
                                                       grad_control& ctl) {
  const bool scaled = c.scaler.enabled;
  const double inv = scaled ? inv_scale(ctl.loss_scale) : 1.0;
  const bool found = s.non_finite != 0 || (scaled && unscale_finds_inf(s.max_abs_bits, s.elements, inv));
  const double norm = format::mul_rn(format::sqrt_rn(s.sum_squares), inv);
  const double coef = clip_coef(norm, c.max_norm);
  ctl.inv_loss_scale = grad_order::canonical(inv);
  ctl.total_norm = grad_order::canonical(norm);
  ctl.clip_coef = grad_order::canonical(coef);
  ctl.multiplier = found ? 1.0 : grad_order::canonical(format::mul_rn(inv, coef));
  ctl.skip = found ? 1 : 0;
  if (scaled) scaler_update(ctl.loss_scale, ctl.growth_tracker, found, c.scaler);
}

/// Refuses a configuration torch would refuse or this library cannot run:
/// max_norm NaN or <= 0 (0 would zero every gradient: the step refuses a
/// zero multiplier; pass +infinity for no clipping); with the scaler,
/// init_scale not finite and positive as fp32, growth_factor not finite
/// and > 1, backoff_factor not in (0, 1), growth_interval < 1.
inline status check(const grad_pass_config& c) {
  if (!(c.max_norm > 0.0))
    return status(status_code::invalid_argument, "grad pass: max_norm %g must be > 0 (+infinity: no clipping)",
                  c.max_norm);
  if (!c.scaler.enabled) return status();
  const double init = grad_detail::round_f32(c.scaler.init_scale);
  if (!format::is_finite(init) || !(init > 0.0))
    return status(status_code::invalid_argument, "grad pass: init_scale %g is not a finite positive fp32 value",
                  c.scaler.init_scale);
  if (!format::is_finite(c.scaler.growth_factor) || !(c.scaler.growth_factor > 1.0))
    return status(status_code::invalid_argument, "grad pass: growth_factor %g must be finite and > 1",
                  c.scaler.growth_factor);
  if (!(c.scaler.backoff_factor > 0.0 && c.scaler.backoff_factor < 1.0))
    return status(status_code::invalid_argument, "grad pass: backoff_factor %g must be in (0, 1)",
                  c.scaler.backoff_factor);
  if (c.scaler.growth_interval < 1)
    return status(status_code::invalid_argument, "grad pass: growth_interval %d must be >= 1",
                  static_cast<int>(c.scaler.growth_interval));
  return status();
}

/// Checks a control struct against its configuration before a pass reads
/// it: with the scaler, a finite loss scale >= 0 that is an fp32 value
/// (backoff can take GradScaler's scale down to 0; growth never makes it
/// infinite) and a growth tracker in [0, growth_interval).
inline status check(const grad_control& ctl, const grad_pass_config& c) {
  if (!c.scaler.enabled) return status();
  if (!(ctl.loss_scale >= 0.0) || !format::is_finite(ctl.loss_scale) ||
      grad_detail::round_f32(ctl.loss_scale) != ctl.loss_scale)
    return status(status_code::invalid_argument, "grad pass: loss_scale %g is not a finite fp32 value >= 0",
                  ctl.loss_scale);
  if (ctl.growth_tracker < 0 || ctl.growth_tracker >= c.scaler.growth_interval)
    return status(status_code::invalid_argument, "grad pass: growth_tracker %d is outside [0, growth_interval %d)",
                  static_cast<int>(ctl.growth_tracker), static_cast<int>(c.scaler.growth_interval));
  return status();
}

/// The control struct before the first step: GradScaler's fp32 init_scale
/// and a zero tracker (loss scale 1 without a scaler). c must pass check().
inline grad_control initial_control(const grad_pass_config& c) {
  grad_control ctl;
  ctl.loss_scale = c.scaler.enabled ? grad_detail::round_f32(c.scaler.init_scale) : 1.0;
  return ctl;
}

}  // namespace rule
}  // namespace flashoptim
