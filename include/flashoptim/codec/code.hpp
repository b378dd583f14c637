// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// Code formats of grouped codecs: how a companded, normalized value
// y in [-1, 1] becomes one stored element, and back. A code format provides
//   storage, name, has_sentinel
//   storage quantize(float y, code_rounding, uint32_t random_bits)
//   float   value(storage q)          y of a code (never called on the sentinel)
//   bool    is_sentinel(storage q);  storage sentinel()
// The sentinel marks an element whose state is non-finite, so a NaN or inf
// costs that element alone, never its group's scale.
#pragma once

#include "flashoptim/format/types.hpp"

namespace flashoptim::codec {

/// How y * qmax becomes an integer code.
enum class code_rounding : int {
  half_up,          ///< floor(qmax * y + 0.5): the reference layout
  half_up_nonzero,  ///< as half_up, but a positive value never rounds to 0
  stochastic,       ///< floor(qmax * y + u), u from (seed, step, index)
};

FLASHOPTIM_HOST_DEVICE constexpr const char* to_string(code_rounding r) {
  return r == code_rounding::half_up ? "half_up" : r == code_rounding::half_up_nonzero ? "half_up_nonzero" : "stochastic";
}

namespace detail {
/// u in [0, 1) with 24 random bits, exact in fp32.
FLASHOPTIM_HOST_DEVICE FLASHOPTIM_INLINE float unit_uniform(std::uint32_t r) {
  return format::mul_rn(static_cast<float>(r >> 8), format::pow2(-24));
}
/// round(qmax * y) as an integer in [lo, qmax], NaN -> 0.
template <int Lo, int QMax>
FLASHOPTIM_HOST_DEVICE FLASHOPTIM_INLINE int round_code(float y, code_rounding mode, std::uint32_t random_bits) {
  const float s = format::mul_rn(y, static_cast<float>(QMax));
  const float offset = mode == code_rounding::stochastic ? unit_uniform(random_bits) : 0.5f;
#if FLASHOPTIM_DEVICE_CODE
  // cvt.rmi.s32.f32 is floor, saturates out-of-range values and maps NaN to
  // 0: the host expression below in one instruction (checked on all 2^32 y).
  const int r = __float2int_rd(format::add_rn(s, offset));
  int q = r < Lo ? Lo : (r > QMax ? QMax : r);
#else
  // Clamp in float, then convert: float -> int of an out-of-range value (an
  // inf state under a code without sentinel) is undefined, and x86 and the
  // GPU answer differently (INT_MIN vs INT_MAX).
  const float f = format::min_num(format::max_num(format::floor_exact(format::add_rn(s, offset)), static_cast<float>(Lo)),
                                  static_cast<float>(QMax));
  int q = format::is_nan(y) ? 0 : static_cast<int>(f);
#endif
  if (mode == code_rounding::half_up_nonzero && q == 0 && y > 0.0f) q = 1;
  return q;
}
}  // namespace detail

/// Signed int8 codes q in [-127, 127], y = q / 127. -128 is the sentinel
/// when Sentinel is set (it costs no range).
template <bool Sentinel>
struct int8_code {
  using storage = std::int8_t;
  static constexpr const char* name = "int8";
  static constexpr bool is_signed = true;
  static constexpr bool has_sentinel = Sentinel;
  static constexpr int qmax = 127;
  FLASHOPTIM_HOST_DEVICE static storage quantize(float y, code_rounding mode, std::uint32_t random_bits) {
    return static_cast<storage>(detail::round_code<-127, 127>(y, mode, random_bits));
  }
  FLASHOPTIM_HOST_DEVICE static float value(storage q) { return format::div_rn(static_cast<float>(q), 127.0f); }
  FLASHOPTIM_HOST_DEVICE static bool is_sentinel(storage q) { return Sentinel && q == -128; }
  FLASHOPTIM_HOST_DEVICE static storage sentinel() { return -128; }
};

/// Unsigned uint8 codes for non-negative values, y = q / qmax. With a
/// sentinel, 255 is reserved and qmax = 254; without, qmax = 255.
template <bool Sentinel>
struct uint8_code {
  using storage = std::uint8_t;
  static constexpr const char* name = "uint8";
  static constexpr bool is_signed = false;
  static constexpr bool has_sentinel = Sentinel;
  static constexpr int qmax = Sentinel ? 254 : 255;
  FLASHOPTIM_HOST_DEVICE static storage quantize(float y, code_rounding mode, std::uint32_t random_bits) {
    return static_cast<storage>(detail::round_code<0, qmax>(y, mode, random_bits));
  }
  FLASHOPTIM_HOST_DEVICE static float value(storage q) {
    return format::div_rn(static_cast<float>(q), static_cast<float>(qmax));
  }
  FLASHOPTIM_HOST_DEVICE static bool is_sentinel(storage q) { return Sentinel && q == 255; }
  FLASHOPTIM_HOST_DEVICE static storage sentinel() { return 255; }
};

/// fp8 codes: y * 2^K rounded to the fp8 format (saturating), y = q * 2^-K,
/// with K the largest power of two below the format's max (e4m3: 8, e5m2: 15).
/// The format's own NaN is the sentinel. Stochastic rounding rounds the fp8
/// conversion; half_up and half_up_nonzero round to nearest even (the latter
/// keeping positive values off zero by the smallest subnormal).
template <class T>
struct fp8_code {
  using storage = T;
  using traits = format::format_traits<T>;
  static constexpr const char* name = traits::name;
  static constexpr bool is_signed = true;
  static constexpr bool has_sentinel = true;
  static constexpr int exponent = traits::spec::exp_bits == 4 ? 8 : 15;
  FLASHOPTIM_HOST_DEVICE static storage quantize(float y, code_rounding mode, std::uint32_t random_bits) {
    if (format::is_nan(y)) return T{0};
    const float s = format::mul_rn(y, format::pow2(exponent));
    T q = format::from_float<T>(s, mode == code_rounding::stochastic ? format::rounding::stochastic
                                                                     : format::rounding::nearest_even,
                                random_bits);
    if (mode == code_rounding::half_up_nonzero && y > 0.0f && (q.bits & 0x7fu) == 0) q.bits = 1;
    return q;
  }
  FLASHOPTIM_HOST_DEVICE static float value(storage q) { return format::mul_rn(format::to_float(q), format::pow2(-exponent)); }
  FLASHOPTIM_HOST_DEVICE static bool is_sentinel(storage q) { return (q.bits & 0x7fu) == traits::spec::nan_bits; }
  FLASHOPTIM_HOST_DEVICE static storage sentinel() { return T{static_cast<std::uint8_t>(traits::spec::nan_bits)}; }
};

}  // namespace flashoptim::codec
