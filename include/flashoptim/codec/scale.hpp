// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// Scale formats of grouped codecs: how a group's max |pre(x)| is stored and
// what the elements are normalized by. A scale policy provides
//   storage                          the stored type (one per group)
//   storage store(float amax)        amax >= 0 and finite
//   float load(storage)              the value decoding multiplies by
//   norm_type make_norm(amax, s)     once per group
//   float normalize(t, norm_type)    n = t / scale with |n| <= 1
// docs/codec-defaults.md has the measurements behind the default.
#pragma once

#include "flashoptim/format/types.hpp"

namespace flashoptim::codec {

/// n = (t * pre) * factor: a per-group reciprocal instead of a division per
/// element. Scales outside [2^-64, 2^64] are first brought inside by an exact
/// power of two (applied to t as well), so the reciprocal neither overflows
/// nor loses precision as a subnormal.
struct reciprocal_norm {
  float pre;
  float factor;
};

namespace detail {
FLASHOPTIM_HOST_DEVICE inline reciprocal_norm make_reciprocal(float s) {
  if (!(s > 0.0f)) return {1.0f, 0.0f};
  if (s < format::pow2(-64)) return {format::pow2(64), format::div_rn(1.0f, format::mul_rn(s, format::pow2(64)))};
  if (s > format::pow2(64)) return {format::pow2(-64), format::div_rn(1.0f, format::mul_rn(s, format::pow2(-64)))};
  return {1.0f, format::div_rn(1.0f, s)};
}
FLASHOPTIM_HOST_DEVICE inline float apply_reciprocal(float t, reciprocal_norm n) {
  return format::min_num(format::max_num(format::mul_rn(format::mul_rn(t, n.pre), n.factor), -1.0f), 1.0f);
}
}  // namespace detail

/// fp32 scale, elements normalized by the stored value. Covers the whole fp32
/// range, follows any decay to fp32 precision, never inf, NaN or zero for a
/// nonzero group. 4 bytes per group: 1/8 byte per element.
struct scale_fp32 {
  using storage = float;
  using norm_type = reciprocal_norm;
  static constexpr const char* name = "fp32";
  FLASHOPTIM_HOST_DEVICE static storage store(float amax) { return amax; }
  FLASHOPTIM_HOST_DEVICE static float load(storage s) { return s; }
  FLASHOPTIM_HOST_DEVICE static norm_type make_norm(float, storage s) { return detail::make_reciprocal(s); }
  FLASHOPTIM_HOST_DEVICE static float normalize(float t, norm_type n) { return detail::apply_reciprocal(t, n); }
};

/// The reference FlashOptim layout: amax clamped below at 1e-12, stored as
/// fp16 (round to nearest even), while elements are normalized by dividing by
/// the fp32 amax. Interoperable with the reference implementation's
/// checkpoints; wrong for groups above 65504 (inf scale), below ~3e-8 (zero
/// scale) and under slow decay (normalized by one value, decoded with another).
struct scale_fp16_reference {
  using storage = fp16;
  using norm_type = float;
  static constexpr const char* name = "fp16_reference";
  FLASHOPTIM_HOST_DEVICE static float clamp_amax(float amax) { return format::max_num(amax, 1e-12f); }
  FLASHOPTIM_HOST_DEVICE static storage store(float amax) { return format::from_float<fp16>(clamp_amax(amax)); }
  FLASHOPTIM_HOST_DEVICE static float load(storage s) { return format::to_float(s); }
  FLASHOPTIM_HOST_DEVICE static norm_type make_norm(float amax, storage) { return clamp_amax(amax); }
  FLASHOPTIM_HOST_DEVICE static float normalize(float t, norm_type amax) { return format::div_rn(t, amax); }
};

/// A 16-bit scale rounded *up* to T (so |n| <= 1) and used as stored. Ships
/// for the measurements in docs/codec-defaults.md: like any 16-bit scale
/// rounded every step, it cannot follow a 0.05%-per-step decay.
template <class T>
struct scale_rounded_up {
  using storage = T;
  using norm_type = reciprocal_norm;
  static constexpr const char* name = format::format_traits<T>::name;
  FLASHOPTIM_HOST_DEVICE static storage store(float amax) {
    using bits_t = decltype(T{}.bits);
    T s = format::from_float<T>(amax);
    if (format::to_float(s) < amax) s.bits = static_cast<bits_t>(s.bits + 1);  // next value up (amax >= 0)
    if (!format::is_finite(format::to_float(s))) s.bits = static_cast<bits_t>(s.bits - 1);  // saturate
    return s;
  }
  FLASHOPTIM_HOST_DEVICE static float load(storage s) { return format::to_float(s); }
  FLASHOPTIM_HOST_DEVICE static norm_type make_norm(float, storage s) { return detail::make_reciprocal(load(s)); }
  FLASHOPTIM_HOST_DEVICE static float normalize(float t, norm_type n) { return detail::apply_reciprocal(t, n); }
};

}  // namespace flashoptim::codec
