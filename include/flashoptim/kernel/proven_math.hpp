// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// The element arithmetic of the ULP correction and of the default 8-bit
// state codecs, rewritten for the ranges its operands are proven to lie in,
// so the kernel issues fewer instructions for the same bits (policy flag
// ProvenRanges, docs/gpu.md "Instruction budget"). Plain C++ with device
// intrinsics behind FLASHOPTIM_DEVICE_CODE: the host build runs the same
// algebra, which tests/gpu/proven_math_test.cpp compares with the codecs'
// own functions (on every input where the domain is one float), and
// tests/gpu/exhaustive_test.cu checks the device build the same way.
//
// The proofs, in short (docs/gpu.md has them in full):
//   ULP correction (x -> lo = RNE(x), e = x - lo):
//     - e is exact and |e| <= h = 2^(E(lo) - m - 1) whenever lo is finite,
//       so the encoder's clamp to [-1, 1] never acts;
//     - e * 2^(1 - E) is exact (a power-of-two scaling with a normal or
//       exact result), so one multiply by 2^(1-E) — built from lo's
//       exponent bits, and +0 when lo is not finite, which turns a
//       non-finite e into NaN and NaN into code 0 through cvt.rzi — replaces
//       scale_pow2's two and the is_finite select;
//     - round-half-away(s) = trunc(RN(s + copysign(0.5, s))) (RN is
//       symmetric), and the fold lemma below makes s + 0.5 one FMA;
//     - decode: (c / M) * 2^-(m+1) is exact, so the correction is one
//       multiply by 2^E, built from lo's exponent bits.
//   Grouped codecs with an fp32 scale (the stored amax) and a sentinel:
//     - for finite t, |t * RN(1/amax)| <= 1 + 2^-23, so the [-1, 1] clamp
//       and the integer clamp of the code never change a code;
//     - a non-finite t makes the quantizer's operand NaN (softsign) or
//       NaN/+inf (sqrt compander), which a maxNum/minNum against the
//       sentinel's value turns into the sentinel: no is_finite select.
//   The fold lemma: floor(RN(RN(M * x) + 0.5)) == floor(RN(M * x + 0.5)) for
//   every fp32 |x| <= 1.01 and M in {127, 254, 32767} (checked over every
//   such x: tests/gpu/proven_math_test.cpp), so "multiply, then add 0.5"
//   is one FMA wherever a code rounds half up. (Near a boundary k - 0.5 the
//   product's rounding and the sum's rounding snap to the boundary at the
//   same distance, as both sit in binades of the same spacing.)
#pragma once

#include <climits>
#include <type_traits>

#include "flashoptim/codec/master.hpp"
#include "flashoptim/codec/state.hpp"

namespace flashoptim::kernel {

namespace detail {
/// a / b from an approximate reciprocal r of b by one correction of the
/// quotient: q = RN(a r), then RN(q + RN(a - b q) r). Not correctly rounded
/// for every a and b; half_softsign and ulp_arithmetic::fraction use it
/// where it is (below).
FLASHOPTIM_HOST_DEVICE FLASHOPTIM_INLINE float quotient_from_reciprocal(float a, float b, float r) {
  const float q = format::mul_rn(a, r);
  return format::fma_rn(format::fma_rn(-b, q, a), r, q);
}
#if FLASHOPTIM_DEVICE_CODE
/// rcp.approx.ftz.f32: within 1 ulp of 1 / b (PTX ISA), subnormals flushed.
FLASHOPTIM_DEVICE FLASHOPTIM_INLINE float rcp_approx(float b) {
  float r;
  asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(b));
  return r;
}
/// CUDA's IEEE division fast path (what __fdiv_rn runs when its operand
/// check passes), without the check: callers guarantee operands for which
/// the check passes.
FLASHOPTIM_DEVICE FLASHOPTIM_INLINE float div_fast_path(float a, float b) {
  const float r = rcp_approx(b);
  const float e = __fmaf_rn(-b, r, 1.0f);
  const float r2 = __fmaf_rn(r, e, r);
  const float q = __fmaf_rn(a, r2, 0.0f);
  const float rem = __fmaf_rn(-b, q, a);
  return __fmaf_rn(r2, rem, q);
}
/// __fsqrt_rn's fast path: y = v * r, the residual e = v - y * y and
/// y + e * r / 2, with r = rsqrt.approx(q). q = v is the fast path itself;
/// another q serves sqrt_in_range_or_zero.
FLASHOPTIM_DEVICE FLASHOPTIM_INLINE float sqrt_fast_path(float v, float q) {
  float r;
  asm("{\n\t.reg .f32 rs, y, h, ny, e;\n\t"
      "rsqrt.approx.ftz.f32 rs, %2;\n\t"
      "mul.ftz.f32 y, %1, rs;\n\t"
      "mul.ftz.f32 h, rs, 0f3F000000;\n\t"
      "neg.f32 ny, y;\n\t"
      "fma.rn.f32 e, ny, y, %1;\n\t"
      "fma.rn.f32 %0, e, h, y;\n\t}"
      : "=f"(r)
      : "f"(v), "f"(q));
  return r;
}
#endif
}  // namespace detail

namespace proven {

/// cvt.rmi.s32.f32: floor, saturated to the int range, NaN -> 0.
FLASHOPTIM_HOST_DEVICE FLASHOPTIM_INLINE int floor_to_int(float x) {
#if FLASHOPTIM_DEVICE_CODE
  return __float2int_rd(x);
#else
  if (format::is_nan(x)) return 0;
  if (x >= 2147483648.0f) return INT_MAX;
  if (x < -2147483648.0f) return INT_MIN;
  return static_cast<int>(format::floor_exact(x));
#endif
}

/// floor(y) + floor_word_bias for y in [-2^22, 2^22]: y + 1.5 * 2^23
/// rounded toward -inf lies in [2^23, 2^24], where the floats are the
/// integers, so it is 1.5 * 2^23 + floor(y) exactly, and its bits are
/// 0x4b400000 + floor(y). The bias's low byte is 0: a code is the word's
/// low byte, and an integer maximum against bias + k is the code's maximum
/// against k. On the device one FADD.RM, on the FMA pipe, where cvt.rmi
/// (floor_to_int) issues an F2I to the conversion unit, which the step's
/// reciprocals and square roots share.
inline constexpr int floor_word_bias = 0x4b400000;
FLASHOPTIM_HOST_DEVICE FLASHOPTIM_INLINE int floor_word(float y) {
#if FLASHOPTIM_DEVICE_CODE
  return __float_as_int(__fadd_rd(y, 12582912.0f));
#else
  return floor_word_bias + static_cast<int>(format::floor_exact(y));
#endif
}
/// floor(y) for y in [-2^22, 2^22] through floor_word (a caller keeping the
/// low byte loses the bias's subtraction).
FLASHOPTIM_HOST_DEVICE FLASHOPTIM_INLINE int floor_code(float y) { return floor_word(y) - floor_word_bias; }

/// cvt.rzi.s32.f32: truncation, saturated to the int range, NaN -> 0.
FLASHOPTIM_HOST_DEVICE FLASHOPTIM_INLINE int trunc_to_int(float x) {
#if FLASHOPTIM_DEVICE_CODE
  return __float2int_rz(x);
#else
  if (format::is_nan(x)) return 0;
  if (x >= 2147483648.0f) return INT_MAX;
  if (x < -2147483648.0f) return INT_MIN;
  return static_cast<int>(x);
#endif
}

/// IEEE maxNum / minNum (a NaN operand loses), one FMNMX on the device.
/// Operands here are never a +0 / -0 pair.
FLASHOPTIM_HOST_DEVICE FLASHOPTIM_INLINE float max_num(float a, float b) {
#if FLASHOPTIM_DEVICE_CODE
  return fmaxf(a, b);
#else
  return format::max_num(a, b);
#endif
}
FLASHOPTIM_HOST_DEVICE FLASHOPTIM_INLINE float min_num(float a, float b) {
#if FLASHOPTIM_DEVICE_CODE
  return fminf(a, b);
#else
  return format::min_num(a, b);
#endif
}

/// |x| (a NaN stays a NaN; the group maximum ignores it).
FLASHOPTIM_HOST_DEVICE FLASHOPTIM_INLINE float magnitude(float x) {
#if FLASHOPTIM_DEVICE_CODE
  return fabsf(x);
#else
  return format::abs_bits(x);
#endif
}

/// 1 / s correctly rounded, for s in [2^-64, 2^64]: the division's fast
/// path on the device (its operand check always passes there; checked on
/// every such s by tests/gpu/exhaustive_test.cu).
FLASHOPTIM_HOST_DEVICE FLASHOPTIM_INLINE float reciprocal(float s) {
#if FLASHOPTIM_DEVICE_CODE
  return detail::div_fast_path(1.0f, s);
#else
  return format::div_rn(1.0f, s);
#endif
}

/// RN(1 / (s * 2^64)) for s in [2^-149, 2^-64): codec::scale_fp32's
/// reciprocal of a group maximum below 2^-64 (detail::make_reciprocal, whose
/// other factor is 2^64). On the device reciprocal() of s * 2^128 (two
/// exact lifts by 2^64; in [2^-21, 2^64), its proven range) times 2^64: that
/// quotient lies in (2^-64, 2^21] and the product in (1, 2^85], both normal,
/// so the product is the rounded reciprocal of s * 2^64 itself.
FLASHOPTIM_HOST_DEVICE FLASHOPTIM_INLINE float reciprocal_lifted(float s) {
  const float s64 = format::mul_rn(s, format::pow2(64));
#if FLASHOPTIM_DEVICE_CODE
  return format::mul_rn(reciprocal(format::mul_rn(s64, format::pow2(64))), format::pow2(64));
#else
  return format::div_rn(1.0f, s64);
#endif
}

/// sqrt(v) correctly rounded for v in [2^-100, 2^126]: the fast path of
/// __fsqrt_rn (taken for v in [2^-101, 2^128)), without its range check —
/// callers check the range (kernel/range_checked.cuh). Checked against
/// __fsqrt_rn on every such v by tests/gpu/exhaustive_test.cu.
FLASHOPTIM_HOST_DEVICE FLASHOPTIM_INLINE float sqrt_in_range(float v) {
#if FLASHOPTIM_DEVICE_CODE
  return detail::sqrt_fast_path(v, v);
#else
  return format::sqrt_rn(v);
#endif
}

/// sqrt(v) correctly rounded for v = +0 and for v in [2^-100, 2^126]:
/// sqrt_in_range with its rsqrt operand raised to at least 2^-126, which
/// leaves every normal v unchanged (the same instructions' results) and
/// turns v = +0 into y = 0 * 2^63 = +0, e = fma(-0, +0, +0) = +0 and a result
/// of +0, where rsqrt(+0) = +inf would make it NaN. One instruction more
/// than sqrt_in_range: the zero-tolerant attempt's (kernel/range_checked.cuh).
/// Checked against __fsqrt_rn on +0 and every such v by
/// tests/gpu/exhaustive_test.cu.
FLASHOPTIM_HOST_DEVICE FLASHOPTIM_INLINE float sqrt_in_range_or_zero(float v) {
#if FLASHOPTIM_DEVICE_CODE
  return detail::sqrt_fast_path(v, fmaxf(v, format::pow2(-126)));
#else
  return format::sqrt_rn(v);
#endif
}

/// a / b correctly rounded for |a| in [2^-60, 2^60] and b in [2^-60, 2^60]
/// (the quotient and every intermediate of the division's fast path are
/// normal there): the fast path of __fdiv_rn without its operand check.
FLASHOPTIM_HOST_DEVICE FLASHOPTIM_INLINE float div_in_range(float a, float b) {
#if FLASHOPTIM_DEVICE_CODE
  return detail::div_fast_path(a, b);
#else
  return format::div_rn(a, b);
#endif
}

/// The tiny-tolerant attempt's arithmetic (kernel/range_checked.cuh, a
/// second attempt's option): tiny operands lifted by a power of two into the
/// ranges above, where the fast paths are proven, and the result scaled back,
/// exact wherever that result is normal (scaling by 2^k commutes with
/// rounding to nearest there). No new fast path: only the lifts are new.
///
/// sqrt(v) correctly rounded for v = +0 and every v in (0, 2^126]: below
/// 2^-100 as sqrt_in_range_or_zero(v * 2^64) * 2^-32 (v * 2^64 lies in
/// [2^-85, 2^-36), the root is at least 2^-75: both normal, both exact).
FLASHOPTIM_HOST_DEVICE FLASHOPTIM_INLINE float sqrt_or_tiny(float v) {
  const bool tiny = v < format::pow2(-100);
  const float r = sqrt_in_range_or_zero(tiny ? format::mul_rn(v, format::pow2(64)) : v);
  return tiny ? format::mul_rn(r, format::pow2(-32)) : r;
}

/// a / b for |a| <= 2^60 and b in [2^-60, 2^60]: div_in_range, with a tiny
/// numerator (|a| < 2^-60, zeros included) divided as a * 2^100 (exact, in
/// [2^-49, 2^40) unless 0) and the quotient scaled back by 2^-100. That is
/// RN(a / b) wherever RN(a / b) is at least 2^-126 or a = +0; a smaller
/// quotient may differ from it in its last subnormal bits, and -0 gives +0:
/// callers accept those only where the quotient cannot change what they
/// compute (range_checked.cuh, checked_adam_math).
FLASHOPTIM_HOST_DEVICE FLASHOPTIM_INLINE float div_or_tiny(float a, float b) {
#if FLASHOPTIM_DEVICE_CODE
  const bool tiny = fabsf(a) < format::pow2(-60);
  const float q = detail::div_fast_path(tiny ? format::mul_rn(a, format::pow2(100)) : a, b);
  return tiny ? format::mul_rn(q, format::pow2(-100)) : q;
#else
  return format::div_rn(a, b);
#endif
}

/// n / (1 + |n|) correctly rounded for |n| <= 2, NaN for a non-finite n
/// (on the device: rcp.approx(inf) = 0 and -inf * 0 is NaN). Half the
/// softsign: softsign's 2n / (1 + |n|) is twice this value exactly (the
/// quotient is normal, or exact when 1 + |n| rounds to 1).
///
/// On the device the quotient is corrected once from rcp.approx's
/// reciprocal, which the division's fast path first refines with two more
/// FMAs: with d = 1 + |n| in [1, 3], quotient_from_reciprocal(n, d, r) is
/// RN(n / d) for every such n and every float r within 1 ulp of 1 / d (the
/// PTX bound on rcp.approx: the two floats next to 1 / d, or 1 / d and its
/// neighbours where it is exact), so whichever the hardware gives.
/// test_proven_math_cpu checks that on the host for every n and every such
/// r; test_gpu_exhaustive checks the element code on the device for every
/// fp32 n. (-0 gives +0, as the fast path does; its code is 0 either way.)
FLASHOPTIM_HOST_DEVICE FLASHOPTIM_INLINE float half_softsign(float n) {
#if FLASHOPTIM_DEVICE_CODE
  const float d = format::add_rn(1.0f, fabsf(n));
  return detail::quotient_from_reciprocal(n, d, detail::rcp_approx(d));
#else
  return format::div_rn(n, format::add_rn(1.0f, format::abs_bits(n)));
#endif
}

// ---------------------------------------------------------------------------
// ULP correction

/// The fp32 exponent field (biased) of the smallest normal exponent of T.
template <class T>
struct narrow_min_exponent;
template <>
struct narrow_min_exponent<bf16> : std::integral_constant<std::uint32_t, 1u> {};
template <>
struct narrow_min_exponent<fp16> : std::integral_constant<std::uint32_t, 113u> {};  // 2^-14

/// codec::ulp_correction<T, C> computed with exponent-bit arithmetic: the
/// same bytes and the same decoded floats for every input.
template <class T, class C>
struct ulp_arithmetic {
  using mode = codec::ulp_correction<T, C>;
  static constexpr int mant_bits = mode::layout::spec::mant_bits;
  static constexpr int max_code = mode::max_code;
  /// fp32 exponent bits of 2^E(lo)'s bounds: E(lo) is never below T's
  /// smallest normal exponent; the upper bound only keeps an infinite or
  /// NaN lo's correction finite (lo + finite is lo then).
  static constexpr std::uint32_t min_exponent_bits = narrow_min_exponent<T>::value << 23;
  static constexpr std::uint32_t max_exponent_bits = 254u << 23;
  /// M * 2^m: the multiplier of e * 2^(1-E) that gives e / h * M.
  static constexpr float code_scale = static_cast<float>(max_code) * static_cast<float>(1 << mant_bits);
  /// RN(c / M) * 2^-(m+1): exact (|c / M| >= 2^-15 keeps it normal). The
  /// kernel tabulates it for int8 corrections. On the device, RN(c / M) is
  /// one Newton step from RN(1 / M) (Markstein: q = c * r, then q + (c - q *
  /// M) * r: detail::quotient_from_reciprocal), the correctly rounded quotient for every integer numerator
  /// below 2^16 in magnitude and M = 127 or 32767 (the CPU's vector decode
  /// computes it so: tests/cpu/ops_test.cpp checks every such numerator),
  /// with both constants scaled by 2^(m+1), which scales every intermediate
  /// exactly: three FMA-pipe instructions where __fdiv_rn cost about twelve
  /// per int16 correction, its operand check (FCHK) and the branch around its
  /// slow path among them (AdamW, bf16 + int16: 794 -> 717 SASS instructions
  /// per tile of 8). tests/gpu/exhaustive_test.cu compares the device's
  /// decode with the codec's on every (parameter, correction) pair.
  FLASHOPTIM_HOST_DEVICE static float fraction(C c) {
#if FLASHOPTIM_DEVICE_CODE
    constexpr float d = static_cast<float>(max_code) * static_cast<float>(2 << mant_bits);  // M * 2^(m+1)
    constexpr float r = (1.0f / static_cast<float>(max_code)) / static_cast<float>(2 << mant_bits);
    return detail::quotient_from_reciprocal(static_cast<float>(c), d, r);
#else
    return format::mul_rn(format::div_rn(static_cast<float>(c), static_cast<float>(max_code)), format::pow2(-(mant_bits + 1)));
#endif
  }
  /// 2^E(lo), clamped to [2^Emin, 2^127], from lo's fp32 bits.
  FLASHOPTIM_HOST_DEVICE static float exponent_scale(float lo) {
    std::uint32_t u = format::bits_of(lo) & 0x7f800000u;
    u = u < min_exponent_bits ? min_exponent_bits : u;
    u = u > max_exponent_bits ? max_exponent_bits : u;
    return format::float_from_bits(u);
  }
  /// decode: lo + RN(fraction * 2^E). mode::decode computes the same
  /// correction as scale_pow2(c / M, E - m - 1), whose first product is
  /// exact: both round the same real number once.
  FLASHOPTIM_HOST_DEVICE static float decode(float lo, float fraction_of_c) {
    return format::add_rn(lo, format::mul_rn(fraction_of_c, exponent_scale(lo)));
  }
  /// 2^(1 - E(lo)) for a finite lo: the biased exponent 255 - F is the
  /// complement of lo's field F (clamped below at T's smallest normal); +0
  /// for an infinite or NaN lo.
  FLASHOPTIM_HOST_DEVICE static float inverse_scale(float lo) {
    std::uint32_t u = ~format::bits_of(lo) & 0x7f800000u;
    constexpr std::uint32_t cap = (255u << 23) - min_exponent_bits;
    u = u > cap ? cap : u;
    return format::float_from_bits(u);
  }
  /// mode::correction(x, lo): round half away of (x - lo) / h * M. A
  /// non-finite x - lo comes with a non-finite lo (x finite, lo = +-inf) or
  /// is NaN: times inverse_scale's +0 it is NaN, which converts to 0.
  FLASHOPTIM_HOST_DEVICE static C correction(float x, float lo) {
    const float t = format::mul_rn(format::sub_rn(x, lo), inverse_scale(lo));
    return static_cast<C>(trunc_to_int(format::fma_rn(t, code_scale, format::copysign_bits(0.5f, t))));
  }
  FLASHOPTIM_HOST_DEVICE static void encode(float x, T& p, C& c) {
    p = round_to_narrow(x);
    c = correction(x, format::to_float(p));
  }
  /// from_float<T>(x): on the device the conversion alone (cvt.rn.bf16.f32
  /// and cvt.rn.f16.f32 return the canonical NaN 0x7fff, as from_float
  /// does; checked over all 2^32 inputs by tests/gpu/exhaustive_test.cu).
  FLASHOPTIM_HOST_DEVICE static T round_to_narrow(float x) {
#if FLASHOPTIM_DEVICE_CODE
    std::uint16_t r;
    if constexpr (std::is_same<T, bf16>::value) {
      asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(r) : "f"(x));
    } else {
      asm("cvt.rn.f16.f32 %0, %1;" : "=h"(r) : "f"(x));
    }
    return T{r};
#else
    return format::from_float<T>(x);
#endif
  }
};

/// master_update's "an unchanged value keeps its bytes" as a select on the
/// bits (a mask), which the compiler keeps branch-free: (p, a) become
/// (np, na) unless before and after are the same bits.
template <class T, class C>
FLASHOPTIM_HOST_DEVICE FLASHOPTIM_INLINE void keep_if_equal(float before, float after, T& p, C& a, T np, C na) {
  using U = std::make_unsigned_t<C>;
  const std::uint32_t keep = 0u - static_cast<std::uint32_t>(format::bits_of(before) == format::bits_of(after));
  p.bits = static_cast<std::uint16_t>((p.bits & keep) | (np.bits & ~keep));
  a = static_cast<C>(static_cast<U>((static_cast<U>(a) & keep) | (static_cast<U>(na) & ~keep)));
}

// ---------------------------------------------------------------------------
// Grouped state codecs with an fp32 scale

/// How an element of a grouped codec is quantized once normalized.
enum class element_rule : int {
  general,        ///< the codec's own post / clamp / quantize / sentinel (any code)
  softsign_int8,  ///< int8 sentinel code, softsign, half up (defaults::momentum)
  sqrt_uint8,     ///< uint8 sentinel code, sqrt compander, half up [nonzero] (defaults::second_moment)
  fp8_nearest,    ///< fp8 code (NaN sentinel), identity or sqrt compander, nearest even [nonzero with sqrt]
                  ///< (precision::fp8_momentum, fp8_second_moment)
};

/// The rule for codec C: the proven ones need the fp32 scale (the stored
/// amax, so |n| <= 1 + 2^-23) and a sentinel code. The compander is chosen
/// by its declared kind (codec::compander_kind_of), never by its type.
template <class C>
struct element_rule_of : std::integral_constant<element_rule, element_rule::general> {};
template <class Compander, codec::code_rounding R>
struct element_rule_of<codec::grouped<codec::int8_code<true>, Compander, codec::scale_fp32, R>>
    : std::integral_constant<element_rule, R == codec::code_rounding::half_up &&
                                                   codec::compander_kind_of<Compander> == codec::compander_kind::softsign
                                               ? element_rule::softsign_int8
                                               : element_rule::general> {};
template <class Compander, codec::code_rounding R>
struct element_rule_of<codec::grouped<codec::uint8_code<true>, Compander, codec::scale_fp32, R>>
    : std::integral_constant<element_rule, R != codec::code_rounding::stochastic &&
                                                   codec::compander_kind_of<Compander> == codec::compander_kind::sqrt
                                               ? element_rule::sqrt_uint8
                                               : element_rule::general> {};
/// fp8 codes: half_up (nearest even) with the identity or sqrt compander;
/// half_up_nonzero with the sqrt compander only, whose nonzero operands keep
/// the folded product positive (fp8_element_codes).
template <class T, class Compander, codec::code_rounding R>
struct element_rule_of<codec::grouped<codec::fp8_code<T>, Compander, codec::scale_fp32, R>>
    : std::integral_constant<element_rule,
                             (R == codec::code_rounding::half_up &&
                              (codec::compander_kind_of<Compander> == codec::compander_kind::identity ||
                               codec::compander_kind_of<Compander> == codec::compander_kind::sqrt)) ||
                                     (R == codec::code_rounding::half_up_nonzero &&
                                      codec::compander_kind_of<Compander> == codec::compander_kind::sqrt)
                                 ? element_rule::fp8_nearest
                                 : element_rule::general> {};

/// int8 code of softsign(n) rounded half up, the sentinel (-128) for a
/// non-finite n; n finite with |n| <= 1 + 2^-23, or non-finite. With
/// q = RN(n / (1 + |n|)), softsign(n) = 2q and 127 * 2q = 254q; a NaN q
/// (non-finite n) survives the rounding steps and maxNum turns it into -128;
/// finite codes lie in [-127, 127] already.
FLASHOPTIM_HOST_DEVICE FLASHOPTIM_INLINE int softsign_int8_code(float n) {
  const float q = half_softsign(n);
  return floor_code(max_num(format::fma_rn(q, 254.0f, 0.5f), -128.0f));
}

/// uint8 code of n rounded half up (a positive n never to 0 with
/// Nonzero), the sentinel (255) for a NaN or +inf n; n in [0, 1 + 2^-23]
/// (or -0), or NaN, or +inf — what the sqrt compander and a non-negative
/// scale give. minNum turns NaN and +inf into 255; finite codes lie in
/// [0, 254] already. n > 0 exactly when its bits, as a signed int, are.
template <bool Nonzero>
FLASHOPTIM_HOST_DEVICE FLASHOPTIM_INLINE int sqrt_uint8_code(float n) {
  int c = floor_code(min_num(format::fma_rn(n, 254.0f, 0.5f), 255.0f));
  if constexpr (Nonzero) {
    const int positive = static_cast<int>(format::bits_of(n)) < 1 ? static_cast<int>(format::bits_of(n)) : 1;
    c = c > positive ? c : positive;
  }
  return c;
}

/// sqrt_uint8_code<true> of a positive n (in (0, 1 + 2^-23]): the code is
/// at least 1, so "a positive value never becomes 0" is max(c, 1) without
/// testing n's sign.
FLASHOPTIM_HOST_DEVICE FLASHOPTIM_INLINE int sqrt_uint8_code_positive(float n) {
  const int w = floor_word(min_num(format::fma_rn(n, 254.0f, 0.5f), 255.0f));
  return (w > floor_word_bias + 1 ? w : floor_word_bias + 1) - floor_word_bias;
}

/// Whether a pre-compander is given, on every tile whose bytes are kept,
/// only operands whose pre() is at least 2^-50 (range_checked.cuh's
/// range_checked_sqrt_compander: the range-checked attempt keeps a tile only
/// if every new v is in [2^-100, 2^76]). Its normalized values are then
/// positive: n = RN(t RN(1/amax)) >= 2^-50 2^-38 with amax <= 2^38.
template <class P, class = void>
struct positive_pre : std::false_type {};
template <class P>
struct positive_pre<P, std::void_t<decltype(P::positive_pre)>> : std::bool_constant<P::positive_pre> {};

/// The fp8 element rule on a tile whose group maximum lies in [2^-64, 2^64]
/// (or is 0), so every t is finite or NaN: s = RN(t * (RN(1/amax) * 2^K))
/// converted to nearest even. Same bytes as clamp, quantize and sentinel:
///   - |n| <= 1 + 2^-23 makes |s| <= 2^K (1 + 2^-23), inside the format
///     (e4m3: 2^8 against 448, e5m2: 2^15 against 57344), so the clamp and
///     the saturation never act;
///   - the folded product equals RN(t / amax-normalized) * 2^K, the codec's
///     y * 2^K, whenever that is normal; when it is not (|s| < 2^-118),
///     both convert to a zero of t's sign;
///   - a NaN t gives a NaN s, which converts to the sentinel (the pair
///     conversion is format::from_float_pair, the codec's own conversion);
///   - Nonzero (the sqrt compander only, t = sqrt(v) >= 2^-74.5 when
///     positive, amax <= 2^64): s > 0 exactly when the codec's y > 0, and
///     then a code of 0 becomes 1 by an integer maximum (positive codes
///     0x00..0x7e are ordered).
template <class T, bool Nonzero, int N>
FLASHOPTIM_HOST_DEVICE FLASHOPTIM_INLINE void fp8_element_codes(const float (&s)[N], T (&q)[N]) {
  FLASHOPTIM_UNROLL for (int i = 0; i + 1 < N; i += 2) format::from_float_pair(s[i], s[i + 1], q[i], q[i + 1]);
  if constexpr (N % 2 == 1) q[N - 1] = format::from_float<T>(s[N - 1]);
  if constexpr (Nonzero) {
    FLASHOPTIM_UNROLL for (int i = 0; i < N; ++i) {
      const int positive = static_cast<int>(format::bits_of(s[i])) < 1 ? static_cast<int>(format::bits_of(s[i])) : 1;
      const int c = q[i].bits;
      q[i].bits = static_cast<std::uint8_t>(c > positive ? c : positive);
    }
  }
}

/// grouped<Code, Compander, scale_fp32, R>::encode_tile, the same bytes:
///   - the group maximum is maxNum over |t| (NaN ignored, +inf kept): equal
///     to the codec's (finite |t| only) unless the group holds an infinity;
///   - when every group of the warp (`reduce.all`) has a maximum of 0 or in
///     [2^-64, 2^64], scale_fp32's normalization (t * 1) * RN(1/amax) is one
///     multiply by the reciprocal's fast path; otherwise the warp takes the
///     codec's own path (exact maximum, make_norm, two multiplies);
///   - the element rule (above) quantizes without clamps or selects.
/// `reduce` provides operator() (the codec's group maximum), max_num (plain
/// maxNum over the group) and all (a predicate over every lane that
/// reduces together; a range-checked reduce records the predicate and
/// answers true, the step being redone exactly where it fails).
/// PreCompander: Codec's compander, or one computing the same pre() for the
/// operands it is given (kernel/range_checked.cuh).
/// Tiny (the tiny-tolerant attempt's): a maximum in [2^-149, 2^-64) takes
/// the plain path too, with scale_fp32's own two factors (t * 2^64, exact,
/// times reciprocal_lifted(amax)) instead of failing `reduce.all`: the same
/// bytes as the codec's normalization, one multiply more per element.
template <class Codec, class PostCompander = typename Codec::compander, class PreCompander = typename Codec::compander,
          bool Tiny = false>
struct scale_fp32_encoder {
  using code_type = typename Codec::code_type;
  using Code = typename Codec::code_format;
  using Compander = PreCompander;
  static_assert(std::is_same<typename Codec::scale_format, codec::scale_fp32>::value, "fp32 scales only");
  static constexpr element_rule rule = element_rule_of<Codec>::value;

  /// RN(1/amax) for amax in [2^-64, 2^64]; for fp8 codes times the
  /// conversion's 2^K (exact), folded in once per group.
  FLASHOPTIM_HOST_DEVICE static float normalizer(float amax) {
    if constexpr (rule == element_rule::fp8_nearest) return format::mul_rn(reciprocal(amax), format::pow2(Code::exponent));
    return reciprocal(amax);
  }
  /// The same for amax in [2^-149, 2^-64), to follow a lift of t by 2^64.
  FLASHOPTIM_HOST_DEVICE static float tiny_normalizer(float amax) {
    if constexpr (rule == element_rule::fp8_nearest)
      return format::mul_rn(reciprocal_lifted(amax), format::pow2(Code::exponent));
    return reciprocal_lifted(amax);
  }

  template <int N, class Reduce>
  FLASHOPTIM_HOST_DEVICE static void encode_tile(const float (&x)[N], code_type (&q)[N], float& s, Reduce&& reduce,
                                                 const codec::rounding_key& key) {
    float t[N];
    FLASHOPTIM_UNROLL for (int i = 0; i < N; ++i) t[i] = Compander::pre(x[i]);
    float m = 0.0f;
    FLASHOPTIM_UNROLL for (int i = 0; i < N; ++i) m = max_num(m, magnitude(t[i]));
    m = reduce.max_num(m);
    const bool plain_range =
        Tiny ? m <= format::pow2(64) : (m == 0.0f) | ((m >= format::pow2(-64)) & (m <= format::pow2(64)));
    float n[N];
    if (reduce.all(plain_range)) {
      s = m;
      if constexpr (Tiny) {
        // t * 2^64 is exact (|t| <= m < 2^-64), n the codec's
        // RN(RN(t * 2^64) * RN(1 / (m * 2^64))); t * 1 is t
        const bool tiny = m < format::pow2(-64);
        const float lift = tiny ? format::pow2(64) : 1.0f;
        const float factor = m > 0.0f ? (tiny ? tiny_normalizer(m) : normalizer(m)) : 0.0f;
        FLASHOPTIM_UNROLL for (int i = 0; i < N; ++i) n[i] = format::mul_rn(format::mul_rn(t[i], lift), factor);
      } else {
        const float factor = m > 0.0f ? normalizer(m) : 0.0f;
        FLASHOPTIM_UNROLL for (int i = 0; i < N; ++i) n[i] = format::mul_rn(t[i], factor);
      }
      if constexpr (rule == element_rule::fp8_nearest) {
        fp8_element_codes<code_type, Codec::rounding == codec::code_rounding::half_up_nonzero>(n, q);
        return;
      }
    } else {  // rare: a group with an infinity, or a scale outside [2^-64, 2^64]
      const float amax = reduce(Codec::template tile_amax<N>(t));
      s = codec::scale_fp32::store(amax);
      const codec::reciprocal_norm norm = codec::scale_fp32::make_norm(amax, s);
      FLASHOPTIM_UNROLL for (int i = 0; i < N; ++i) n[i] = format::mul_rn(format::mul_rn(t[i], norm.pre), norm.factor);
    }
    FLASHOPTIM_UNROLL for (int i = 0; i < N; ++i) {
      if constexpr (rule == element_rule::softsign_int8) {
        q[i] = static_cast<code_type>(softsign_int8_code(n[i]));
      } else if constexpr (rule == element_rule::sqrt_uint8 && positive_pre<PreCompander>::value &&
                           Codec::rounding == codec::code_rounding::half_up_nonzero) {
        q[i] = static_cast<code_type>(sqrt_uint8_code_positive(n[i]));
      } else if constexpr (rule == element_rule::sqrt_uint8) {
        q[i] = static_cast<code_type>(sqrt_uint8_code<Codec::rounding == codec::code_rounding::half_up_nonzero>(n[i]));
      } else {
        // The codec's own element: clamp, post, quantize, sentinel select
        // (and fp8's rare branch).
        const float y = PostCompander::post(format::min_num(format::max_num(n[i], -1.0f), 1.0f));
        const code_type v =
            Code::quantize(y, Codec::rounding, Codec::rounding == codec::code_rounding::stochastic ? key.bits(i) : 0u);
        q[i] = Code::has_sentinel && !format::is_finite(t[i]) ? Code::sentinel() : v;
      }
    }
  }
};

// ---------------------------------------------------------------------------
// The reference layout (codec::reference::*) on a range-checked tile

/// codec::reference::momentum / second_moment (fp16 scale, no sentinel,
/// half up) as a range-checked Adam step encodes them: the rule has checked
/// that every new m lies in [2^-60, 2^60] in magnitude and every new v in
/// [2^-100, 2^76] (kernel/range_checked.cuh; the tile is redone exactly
/// otherwise), so with t = m or t = sqrt(v) in [2^-50, 2^38]:
///   - every t is finite: the group maximum is plain maxNum, the reference's
///     NaN rule never acts;
///   - the divisor d = max(amax, 1e-12) and every t lie in [2^-60, 2^60],
///     where the division's fast path is the IEEE quotient; |t| <= d, so
///     |n| <= 1 and no clamp acts;
///   - momentum: softsign_int8_code (the same half-up rounding of
///     softsign(n) * 127 for finite |n| <= 2);
///   - second moment: floor(RN(n * 255 + 0.5)), the fold lemma for M = 255
///     on n >= 0 (tests/gpu/proven_math_test.cpp), already in [0, 255].
/// Same bytes as grouped::encode_tile on such tiles.
template <class Codec, class PreCompander = typename Codec::compander>
struct reference_checked_encoder {
  using code_type = typename Codec::code_type;
  static_assert(std::is_same<typename Codec::scale_format, codec::scale_fp16_reference>::value, "the reference scale");
  static constexpr bool momentum = std::is_same<typename Codec::code_format, codec::int8_code<false>>::value;

  template <int N, class Reduce>
  FLASHOPTIM_HOST_DEVICE static void encode_tile(const float (&x)[N], code_type (&q)[N], fp16& s, Reduce&& reduce,
                                                 const codec::rounding_key&) {
    float t[N];
    FLASHOPTIM_UNROLL for (int i = 0; i < N; ++i) t[i] = PreCompander::pre(x[i]);
    float m = 0.0f;
    FLASHOPTIM_UNROLL for (int i = 0; i < N; ++i) m = max_num(m, magnitude(t[i]));
    m = reduce.max_num(m);
    s = codec::scale_fp16_reference::store(m);
    const float d = codec::scale_fp16_reference::make_norm(m, s);
    FLASHOPTIM_UNROLL for (int i = 0; i < N; ++i) {
      const float n = div_in_range(t[i], d);
      if constexpr (momentum) {
        q[i] = static_cast<code_type>(softsign_int8_code(n));
      } else {
        q[i] = static_cast<code_type>(floor_code(format::fma_rn(n, 255.0f, 0.5f)));
      }
    }
  }
};

/// The reference layout's two codecs, by their parts (the compander by its
/// declared kind).
template <class C>
struct is_reference_checked_codec : std::false_type {};
template <class Compander>
struct is_reference_checked_codec<
    codec::grouped<codec::int8_code<false>, Compander, codec::scale_fp16_reference, codec::code_rounding::half_up>>
    : std::bool_constant<codec::compander_kind_of<Compander> == codec::compander_kind::softsign> {};
template <class Compander>
struct is_reference_checked_codec<
    codec::grouped<codec::uint8_code<false>, Compander, codec::scale_fp16_reference, codec::code_rounding::half_up>>
    : std::bool_constant<codec::compander_kind_of<Compander> == codec::compander_kind::sqrt> {};

}  // namespace proven
}  // namespace flashoptim::kernel
