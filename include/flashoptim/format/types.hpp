// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// Storage types of the narrow formats and the traits through which every
// layer converts them. A new format is a trivially copyable struct plus a
// `format_traits` specialization (usually by deriving from
// `small_float_traits<Spec>`), nothing else.
#pragma once

#include <type_traits>

#include "flashoptim/format/small_float.hpp"

namespace flashoptim {

/// bfloat16: 8 exponent bits, 7 mantissa bits.
struct bf16 {
  std::uint16_t bits;
};
/// IEEE binary16: 5 exponent bits, 10 mantissa bits.
struct fp16 {
  std::uint16_t bits;
};
/// OCP fp8 E4M3 (finite, max 448, NaN = 0x7f/0xff).
struct fp8_e4m3 {
  std::uint8_t bits;
};
/// OCP fp8 E5M2 (IEEE-like, max 57344).
struct fp8_e5m2 {
  std::uint8_t bits;
};

namespace format {

using bf16_spec = small_float_spec<8, 7, 0x7f7fu, 0x7fffu, true, overflow_rule::to_infinity>;
using fp16_spec = small_float_spec<5, 10, 0x7bffu, 0x7fffu, true, overflow_rule::to_infinity>;
/// fp8 conversions saturate to the largest finite value, as CUDA's hardware
/// conversion (cvt.rn.satfinite) does; non-finite states never reach them
/// (codecs encode those with sentinels).
using fp8_e4m3_spec = small_float_spec<4, 3, 0x7eu, 0x7fu, false, overflow_rule::saturate>;
using fp8_e5m2_spec = small_float_spec<5, 2, 0x7bu, 0x7fu, true, overflow_rule::saturate>;

/// Primary template: specialize for every storage type the library converts.
/// Required members: `storage`, `name`, `bytes`, `to_float(T)`,
/// `from_float(float, rounding, uint32_t random_bits)`.
template <class T>
struct format_traits;

/// Traits of any type that wraps a `small_float_spec` bit pattern.
template <class T, class Spec>
struct small_float_traits {
  using spec = Spec;
  using bits_type = decltype(T{}.bits);
  static constexpr std::size_t bytes = sizeof(T);
  static constexpr bool is_float = true;

  FLASHOPTIM_HOST_DEVICE static float to_float(T v) { return decode_small_float<Spec>(v.bits); }
  FLASHOPTIM_HOST_DEVICE static T from_float(float x, rounding mode = rounding::nearest_even,
                                             std::uint32_t random_bits = 0) {
    return T{static_cast<bits_type>(encode_small_float<Spec>(x, mode, random_bits))};
  }
};

template <>
struct format_traits<float> {
  static constexpr const char* name = "fp32";
  static constexpr std::size_t bytes = 4;
  static constexpr bool is_float = true;
  FLASHOPTIM_HOST_DEVICE static float to_float(float v) { return v; }
  /// Identity, except that NaNs are stored canonically (see canonicalize_nan).
  FLASHOPTIM_HOST_DEVICE static float from_float(float x, rounding = rounding::nearest_even, std::uint32_t = 0) {
    return canonicalize_nan(x);
  }
};

template <>
struct format_traits<bf16> : small_float_traits<bf16, bf16_spec> {
  static constexpr const char* name = "bf16";
  // bf16 is the upper half of fp32: widening is a shift, on every path
  // (NaN payloads included, which cvt.f32.bf16 would not promise).
  FLASHOPTIM_HOST_DEVICE static float to_float(bf16 v) {
#if FLASHOPTIM_DEVICE_CODE
    // The same bits as the shift, written as a 16-bit pair so that ptxas
    // takes either half of a packed word in one PRMT (the shift costs two
    // instructions for an upper half).
    float f;
    asm("mov.b32 %0, {%2, %1};" : "=f"(f) : "h"(v.bits), "h"(static_cast<unsigned short>(0)));
    return f;
#else
    return float_from_bits(std::uint32_t{v.bits} << 16);
#endif
  }
  FLASHOPTIM_HOST_DEVICE static bf16 from_float(float x, rounding mode = rounding::nearest_even,
                                                std::uint32_t random_bits = 0) {
#if FLASHOPTIM_DEVICE_CODE && __CUDA_ARCH__ >= 800
    // The conversion instruction alone: it also gives 0x7fff for every NaN
    // (test_gpu_exhaustive sweeps all 2^32 inputs against the host form
    // below). With the NaN test in front, a master's "re-encode only what
    // changed" became a branch around five instructions per element
    // (native<bf16>: 74.4 -> 68.4 instructions per element without it).
    if (mode != rounding::stochastic) {
      std::uint16_t r;
      asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(r) : "f"(x));
      return bf16{r};
    }
#endif
    const std::uint32_t u = bits_of(x);
    if ((u & 0x7fffffffu) > 0x7f800000u) return bf16{0x7fff};
    if (mode == rounding::stochastic) return bf16{static_cast<std::uint16_t>((u + (random_bits & 0xffffu)) >> 16)};
    return bf16{static_cast<std::uint16_t>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16)};
  }
};

template <>
struct format_traits<fp16> : small_float_traits<fp16, fp16_spec> {
  static constexpr const char* name = "fp16";
  FLASHOPTIM_HOST_DEVICE static float to_float(fp16 v) {
#if FLASHOPTIM_DEVICE_CODE
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(v.bits));
    return f;
#else
    // A NaN as the canonical NaN, which cvt.f32.f16 gives for every fp16 NaN:
    // master_update's "unchanged" compares decoded values (codec::updated_bits)
    return canonicalize_nan(decode_small_float<fp16_spec>(v.bits));
#endif
  }
  FLASHOPTIM_HOST_DEVICE static fp16 from_float(float x, rounding mode = rounding::nearest_even,
                                                std::uint32_t random_bits = 0) {
#if FLASHOPTIM_DEVICE_CODE
    if (mode == rounding::nearest_even) {
      std::uint16_t r;
      asm("cvt.rn.f16.f32 %0, %1;" : "=h"(r) : "f"(x));
      return fp16{r};
    }
#endif
    return fp16{static_cast<std::uint16_t>(encode_small_float<fp16_spec>(x, mode, random_bits))};
  }
};

/// fp8 from fp32 through the hardware's saturating conversion where it
/// exists (sm_89+), the generic one elsewhere; the GPU tests check that the
/// two agree on all 2^32 inputs.
template <class T, class Spec, bool E4M3>
struct fp8_traits : small_float_traits<T, Spec> {
  FLASHOPTIM_HOST_DEVICE static T from_float(float x, rounding mode = rounding::nearest_even,
                                             std::uint32_t random_bits = 0) {
#if FLASHOPTIM_DEVICE_CODE && __CUDA_ARCH__ >= 890
    if (mode == rounding::nearest_even) {
      std::uint16_t r;
      if (E4M3)
        asm("cvt.rn.satfinite.e4m3x2.f32 %0, %2, %1;" : "=h"(r) : "f"(x), "f"(0.0f));
      else
        asm("cvt.rn.satfinite.e5m2x2.f32 %0, %2, %1;" : "=h"(r) : "f"(x), "f"(0.0f));
      return T{static_cast<std::uint8_t>(r & 0xffu)};
    }
#endif
    return T{static_cast<std::uint8_t>(encode_small_float<Spec>(x, mode, random_bits))};
  }
};

template <>
struct format_traits<fp8_e4m3> : fp8_traits<fp8_e4m3, fp8_e4m3_spec, true> {
  static constexpr const char* name = "fp8_e4m3";
};

template <>
struct format_traits<fp8_e5m2> : fp8_traits<fp8_e5m2, fp8_e5m2_spec, false> {
  static constexpr const char* name = "fp8_e5m2";
};

/// from_float<T>(a) and from_float<T>(b) (T = fp8_e4m3 or fp8_e5m2, round
/// to nearest even) in one conversion where the hardware has it (sm_89+:
/// cvt.rn.satfinite of the pair, whose low byte is a's), one at a time
/// elsewhere: the same bytes (the one-value form above is that instruction).
template <class T>
FLASHOPTIM_HOST_DEVICE FLASHOPTIM_INLINE void from_float_pair(float a, float b, T& lo, T& hi) {
  static_assert(std::is_same<T, fp8_e4m3>::value || std::is_same<T, fp8_e5m2>::value, "fp8 pairs");
#if FLASHOPTIM_DEVICE_CODE && __CUDA_ARCH__ >= 890
  std::uint16_t r;
  if constexpr (std::is_same<T, fp8_e4m3>::value)
    asm("cvt.rn.satfinite.e4m3x2.f32 %0, %2, %1;" : "=h"(r) : "f"(a), "f"(b));
  else
    asm("cvt.rn.satfinite.e5m2x2.f32 %0, %2, %1;" : "=h"(r) : "f"(a), "f"(b));
  lo = T{static_cast<std::uint8_t>(r & 0xffu)};
  hi = T{static_cast<std::uint8_t>(r >> 8)};
#else
  lo = format_traits<T>::from_float(a);
  hi = format_traits<T>::from_float(b);
#endif
}

/// The largest fp32 value whose conversion to T under `mode` is finite
/// (docs/finite-arithmetic.md): the step clamps a finite result to it
/// before storing, so a finite value never becomes a stored infinity.
/// Round to nearest even: just below the midpoint between T's largest
/// finite value and the next power of two (ties go to the even infinity for
/// bf16 and fp16); stochastic rounding: T's largest finite value itself
/// (anything above may round up). fp32, formats whose conversion saturates
/// (fp8) and formats without a small_float_spec: FLT_MAX.
template <class T, class = void>
struct finite_limit_bits {
  static constexpr std::uint32_t nearest = max_finite_bits;
  static constexpr std::uint32_t stochastic = max_finite_bits;
  static constexpr std::uint32_t decoded = max_finite_bits;
};
template <class T>
struct finite_limit_bits<T, std::void_t<typename format_traits<T>::spec>> {
  using S = typename format_traits<T>::spec;
  static constexpr int M = S::mant_bits;
  static constexpr std::uint32_t field = (S::max_finite_bits >> M) & ((1u << S::exp_bits) - 1u);
  static constexpr std::uint32_t mant = S::max_finite_bits & ((1u << M) - 1u);
  /// T's largest finite value as fp32 bits (a normal number in every format).
  static constexpr std::uint32_t max32 = ((field - S::bias + 127u) << 23) | (mant << (23 - M));
  static constexpr std::uint32_t half_ulp = 1u << (22 - M);
  static constexpr bool saturates = S::overflow == overflow_rule::saturate;
  static constexpr std::uint32_t nearest =
      saturates ? max_finite_bits : ((mant & 1u) ? max32 + half_ulp - 1u : max32 + half_ulp);
  static constexpr std::uint32_t stochastic = saturates ? max_finite_bits : max32;
  /// The largest value a finite stored T decodes to with a correction
  /// below half its ULP (codec::ulp_correction at c = +M): the midpoint.
  static constexpr std::uint32_t decoded = saturates ? max_finite_bits : max32 + half_ulp;
};
template <class T>
FLASHOPTIM_HOST_DEVICE FLASHOPTIM_INLINE float finite_limit(rounding mode = rounding::nearest_even) {
  return float_from_bits(mode == rounding::stochastic ? finite_limit_bits<T>::stochastic
                                                      : finite_limit_bits<T>::nearest);
}

/// Shorthands used throughout the library.
template <class T>
FLASHOPTIM_HOST_DEVICE FLASHOPTIM_INLINE float to_float(T v) {
  return format_traits<T>::to_float(v);
}
template <class T>
FLASHOPTIM_HOST_DEVICE FLASHOPTIM_INLINE T from_float(float x, rounding mode = rounding::nearest_even,
                                                      std::uint32_t random_bits = 0) {
  return format_traits<T>::from_float(x, mode, random_bits);
}

}  // namespace format
}  // namespace flashoptim
