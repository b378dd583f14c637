// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// Bit-level views of fp32 and exact power-of-two arithmetic. Powers of two
// are built from their bit pattern, never through exp2f, so host and device
// agree to the last bit.
#pragma once

#include <cstring>

#include "flashoptim/config.hpp"

namespace flashoptim::format {

FLASHOPTIM_HOST_DEVICE FLASHOPTIM_INLINE std::uint32_t bits_of(float x) {
#if FLASHOPTIM_DEVICE_CODE
  return __float_as_uint(x);
#else
  std::uint32_t u;
  std::memcpy(&u, &x, sizeof u);
  return u;
#endif
}

FLASHOPTIM_HOST_DEVICE FLASHOPTIM_INLINE float float_from_bits(std::uint32_t u) {
#if FLASHOPTIM_DEVICE_CODE
  return __uint_as_float(u);
#else
  float x;
  std::memcpy(&x, &u, sizeof x);
  return x;
#endif
}

FLASHOPTIM_HOST_DEVICE FLASHOPTIM_INLINE std::uint64_t bits_of(double x) {
#if FLASHOPTIM_DEVICE_CODE
  return static_cast<std::uint64_t>(__double_as_longlong(x));
#else
  std::uint64_t u;
  std::memcpy(&u, &x, sizeof u);
  return u;
#endif
}

FLASHOPTIM_HOST_DEVICE FLASHOPTIM_INLINE bool is_nan(float x) { return (bits_of(x) & 0x7fffffffu) > 0x7f800000u; }
FLASHOPTIM_HOST_DEVICE FLASHOPTIM_INLINE bool is_finite(float x) { return (bits_of(x) & 0x7f800000u) != 0x7f800000u; }
FLASHOPTIM_HOST_DEVICE FLASHOPTIM_INLINE bool is_finite(double x) {
  return (bits_of(x) & 0x7ff0000000000000ull) != 0x7ff0000000000000ull;
}

/// The canonical quiet NaN every path stores (what the GPU's arithmetic
/// produces); host NaN payloads differ by operand order, so stored fp32 NaNs
/// are canonicalized to keep CPU and GPU bytes identical.
inline constexpr std::uint32_t canonical_nan_bits = 0x7fffffffu;

FLASHOPTIM_HOST_DEVICE FLASHOPTIM_INLINE float canonicalize_nan(float x) {
  return is_nan(x) ? float_from_bits(canonical_nan_bits) : x;
}

/// |x| without touching the sign through arithmetic (keeps NaN payloads).
FLASHOPTIM_HOST_DEVICE FLASHOPTIM_INLINE float abs_bits(float x) { return float_from_bits(bits_of(x) & 0x7fffffffu); }

FLASHOPTIM_HOST_DEVICE FLASHOPTIM_INLINE float copysign_bits(float magnitude, float sign_source) {
  return float_from_bits((bits_of(magnitude) & 0x7fffffffu) | (bits_of(sign_source) & 0x80000000u));
}

/// Exactly 2^k for k in [-126, 127] (normal range), built from its bits.
FLASHOPTIM_HOST_DEVICE FLASHOPTIM_INLINE float pow2(int k) {
  return float_from_bits(static_cast<std::uint32_t>(k + 127) << 23);
}

// ---- Arithmetic no compiler flag can contract
// The library's bytes must not depend on how the including program is
// compiled: GCC contracts a * b + c into one fma under its default
// -ffp-contract=fast wherever FMA is enabled (-march=native, or the target
// attributes of the CPU step's vector functions), nvcc under its default
// --fmad=true. So every product that feeds an add or a subtraction is formed
// here, where its rounding is visible, and an intended fused multiply-add is
// an explicit fma_rn. On the device the _rn intrinsics are the IEEE
// operations ptxas never contracts (the PTX is the same with or without
// --fmad=false). On the host the product passes through an empty asm whose
// operand lives in a floating-point register: the compiler must materialize
// the rounded product and can see nothing of where the value came from, so
// it cannot fuse it into a later add. The asm emits no instruction; it only
// keeps the optimizer from folding across it. MSVC never contracts without
// /fp:contract or /fp:fast (and /fp:fast is refused by the same rule as
// -ffast-math: it breaks IEEE arithmetic), so it needs no barrier.
namespace detail {
#if defined(__GNUC__) || defined(__clang__)
#if defined(__x86_64__) || (defined(__i386__) && defined(__SSE2_MATH__))
#define FLASHOPTIM_FP_OPAQUE(x) __asm__("" : "+x"(x))
#elif defined(__aarch64__) || (defined(__arm__) && defined(__ARM_FP))
#define FLASHOPTIM_FP_OPAQUE(x) __asm__("" : "+w"(x))
#else
#define FLASHOPTIM_FP_OPAQUE(x) __asm__("" : "+g"(x))
#endif
#else
#define FLASHOPTIM_FP_OPAQUE(x) ((void)0)
#endif
template <class T>
FLASHOPTIM_INLINE T host_opaque(T x) {
  FLASHOPTIM_FP_OPAQUE(x);
  return x;
}
}  // namespace detail

/// a·b rounded to fp32, never fused into a later add.
FLASHOPTIM_HOST_DEVICE FLASHOPTIM_INLINE float mul_rn(float a, float b) {
#if FLASHOPTIM_DEVICE_CODE
  return __fmul_rn(a, b);
#else
  return detail::host_opaque(a * b);
#endif
}
/// a + b and a - b, rounded. On the host a plain add can only be contracted
/// with a product that is not opaque, so these need no barrier there.
FLASHOPTIM_HOST_DEVICE FLASHOPTIM_INLINE float add_rn(float a, float b) {
#if FLASHOPTIM_DEVICE_CODE
  return __fadd_rn(a, b);
#else
  return a + b;
#endif
}
FLASHOPTIM_HOST_DEVICE FLASHOPTIM_INLINE float sub_rn(float a, float b) {
#if FLASHOPTIM_DEVICE_CODE
  return __fsub_rn(a, b);
#else
  return a - b;
#endif
}
/// The same in double (the step's scalars are computed in double on the
/// host and, for device inputs, on the device).
FLASHOPTIM_HOST_DEVICE FLASHOPTIM_INLINE double mul_rn(double a, double b) {
#if FLASHOPTIM_DEVICE_CODE
  return __dmul_rn(a, b);
#else
  return detail::host_opaque(a * b);
#endif
}
FLASHOPTIM_HOST_DEVICE FLASHOPTIM_INLINE double add_rn(double a, double b) {
#if FLASHOPTIM_DEVICE_CODE
  return __dadd_rn(a, b);
#else
  return a + b;
#endif
}
FLASHOPTIM_HOST_DEVICE FLASHOPTIM_INLINE double sub_rn(double a, double b) {
#if FLASHOPTIM_DEVICE_CODE
  return __dsub_rn(a, b);
#else
  return a - b;
#endif
}

/// x · 2^k as two multiplications by 2^floor(k/2) and 2^(k - floor(k/2)).
/// Each factor is a normal float for |k| <= 252, the first product is exact
/// for the operands this library feeds it, and the second rounds once; this
/// is also how the reference FlashOptim implementation splits the exponent,
/// so ULP corrections match it bit for bit.
FLASHOPTIM_HOST_DEVICE FLASHOPTIM_INLINE float scale_pow2(float x, int k) {
  // floor(k / 2) as an arithmetic shift (what GCC, Clang and nvcc do with a
  // negative int, and C++20 guarantees): one instruction where the
  // equivalent k >= 0 ? k / 2 : -((-k + 1) / 2) compiled to six on sm_90.
  const int k1 = k >> 1;
  return mul_rn(mul_rn(x, pow2(k1)), pow2(k - k1));
}

/// floor(), exact for every float (sign of zero and NaN included). The host
/// form avoids a libm call on x86-64 targets without SSE4.1.
FLASHOPTIM_HOST_DEVICE FLASHOPTIM_INLINE float floor_exact(float x) {
#if FLASHOPTIM_DEVICE_CODE
  return floorf(x);
#else
  const float big = 8388608.0f;  // 2^23: from here on every float is an integer
  if (!(x > -big && x < big)) return x;  // large, inf or NaN
  float t = static_cast<float>(static_cast<std::int32_t>(x));  // truncation, exact
  if (t > x) t -= 1.0f;
  return copysign_bits(t, x);  // floor(-0.0) = -0.0, floor(-0.5) = -1
#endif
}

FLASHOPTIM_HOST_DEVICE FLASHOPTIM_INLINE float sqrt_rn(float x) {
#if FLASHOPTIM_DEVICE_CODE
  return __fsqrt_rn(x);
#else
  return __builtin_sqrtf(x);
#endif
}

FLASHOPTIM_HOST_DEVICE FLASHOPTIM_INLINE double sqrt_rn(double x) {
#if FLASHOPTIM_DEVICE_CODE
  return __dsqrt_rn(x);
#else
  return __builtin_sqrt(x);
#endif
}

/// Fused multiply-add, a·b + c with one rounding, the same on every path.
FLASHOPTIM_HOST_DEVICE FLASHOPTIM_INLINE float fma_rn(float a, float b, float c) {
#if FLASHOPTIM_DEVICE_CODE
  return __fmaf_rn(a, b, c);
#else
  return __builtin_fmaf(a, b, c);
#endif
}

FLASHOPTIM_HOST_DEVICE FLASHOPTIM_INLINE float div_rn(float a, float b) {
#if FLASHOPTIM_DEVICE_CODE
  return __fdiv_rn(a, b);
#else
  return a / b;
#endif
}

/// The largest finite fp32 value, FLT_MAX.
inline constexpr std::uint32_t max_finite_bits = 0x7f7fffffu;

/// x clamped to [-limit, limit], NaN kept (docs/finite-arithmetic.md: a
/// finite computation that overflows saturates; a NaN is never laundered).
FLASHOPTIM_HOST_DEVICE FLASHOPTIM_INLINE float clamp_magnitude(float x, float limit) {
  return x > limit ? limit : (x < -limit ? -limit : x);
}

/// x clamped to +-FLT_MAX (an overflowed inf becomes the largest finite
/// value of its sign), NaN kept.
FLASHOPTIM_HOST_DEVICE FLASHOPTIM_INLINE float saturate(float x) {
  return clamp_magnitude(x, float_from_bits(max_finite_bits));
}

/// |x| <= limit: false for NaN, and for infinities when limit is finite.
/// One compare with an absolute-value operand on the device.
FLASHOPTIM_HOST_DEVICE FLASHOPTIM_INLINE bool within(float x, float limit) {
#if FLASHOPTIM_DEVICE_CODE
  return fabsf(x) <= limit;
#else
  return abs_bits(x) <= limit;
#endif
}

/// IEEE maxNum / minNum: a NaN operand loses to a number. Written out with
/// comparisons, the same on host and device (the library never compares +0
/// with -0 through these).
FLASHOPTIM_HOST_DEVICE FLASHOPTIM_INLINE float max_num(float a, float b) {
  return (a > b || b != b) ? a : b;
}
FLASHOPTIM_HOST_DEVICE FLASHOPTIM_INLINE float min_num(float a, float b) {
  return (a < b || b != b) ? a : b;
}

}  // namespace flashoptim::format
