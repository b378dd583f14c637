// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// One generic conversion between fp32 and any narrower binary floating-point
// format, parameterized by its exponent/mantissa widths and its rules for
// overflow and NaN. bf16, fp16 and both fp8 formats are instances; a user
// format is one more `small_float_spec`. The rounding is exact integer
// arithmetic on the fp32 significand, so it is the same on every compiler.
#pragma once

#include "flashoptim/format/bits.hpp"

namespace flashoptim::format {

/// What a conversion does with values beyond the largest finite number.
enum class overflow_rule : int {
  to_infinity,  ///< IEEE: ±inf (bf16, fp16, e5m2 without saturation)
  saturate,     ///< clamp to ±max finite, inf included (CUDA's __NV_SATFINITE)
  to_nan,       ///< formats without infinity (e4m3 without saturation)
};

/// Static description of a binary format of 1 + ExpBits + MantBits bits.
/// `MaxFinite` is the bit pattern of the largest finite magnitude (it encodes
/// formats such as e4m3 that give up only part of the top binade to NaN);
/// `NaNBits` is the canonical NaN a conversion returns.
template <int ExpBits, int MantBits, std::uint32_t MaxFinite, std::uint32_t NaNBits, bool HasInf, overflow_rule Overflow>
struct small_float_spec {
  static constexpr int exp_bits = ExpBits;
  static constexpr int mant_bits = MantBits;
  static constexpr int total_bits = 1 + ExpBits + MantBits;
  static constexpr int bias = (1 << (ExpBits - 1)) - 1;
  static constexpr int emin = 1 - bias;  ///< exponent of the smallest normal
  static constexpr std::uint32_t sign_bit = 1u << (ExpBits + MantBits);
  static constexpr std::uint32_t max_finite_bits = MaxFinite;
  static constexpr std::uint32_t nan_bits = NaNBits;
  static constexpr std::uint32_t inf_bits = HasInf ? (((1u << ExpBits) - 1u) << MantBits) : 0u;
  static constexpr bool has_inf = HasInf;
  static constexpr overflow_rule overflow = Overflow;
  static_assert(ExpBits >= 2 && ExpBits <= 8 && MantBits >= 1 && MantBits <= 22, "narrower than fp32 only");
};

/// Rounding of a conversion: nearest-even, or stochastic with caller-supplied
/// random bits (a deterministic function of seed, step and element index).
enum class rounding : int { nearest_even, stochastic };

/// fp32 -> Spec with round-to-nearest-even (`random_bits` ignored) or
/// stochastic rounding (round up with probability equal to the discarded
/// fraction, resolved to 2^-32). NaN becomes Spec::nan_bits (sign dropped, as
/// the CUDA intrinsics do); infinities follow Spec's overflow rule.
template <class Spec>
FLASHOPTIM_HOST_DEVICE inline std::uint32_t encode_small_float(float x, rounding mode = rounding::nearest_even,
                                                               std::uint32_t random_bits = 0) {
  constexpr int M = Spec::mant_bits;
  const std::uint32_t u = bits_of(x);
  const std::uint32_t sign = (u >> 31) ? Spec::sign_bit : 0u;
  const std::uint32_t a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return Spec::nan_bits;

  std::uint32_t result;
  if (a == 0x7f800000u) {
    result = Spec::max_finite_bits + 1u;  // forced through the overflow rule below
  } else {
    const int e32 = static_cast<int>(a >> 23);
    // value = sig * 2^(e - 23), with e the exponent of the leading bit slot.
    const int e = e32 == 0 ? -126 : e32 - 127;
    const std::uint64_t sig = e32 == 0 ? (a & 0x7fffffu) : ((a & 0x7fffffu) | 0x800000u);
    const int eq = e < Spec::emin ? Spec::emin : e;  // target exponent slot
    const int shift = (eq - M) - (e - 23);           // >= 23 - M > 0
    std::uint64_t kept;
    if (mode == rounding::nearest_even) {
      if (shift > 25) {
        kept = 0;  // below half of the smallest step: sig < 2^24 <= 2^(shift - 2)
      } else {
        kept = sig >> shift;
        const std::uint64_t rem = sig & ((std::uint64_t{1} << shift) - 1);
        const std::uint64_t half = std::uint64_t{1} << (shift - 1);
        if (rem > half || (rem == half && (kept & 1u))) ++kept;
      }
    } else {
      // Add `shift` random bits below the cut, then truncate. For shifts over
      // 32 the random bits are aligned to the top of the discarded field.
      if (shift >= 56) {
        kept = 0;  // probability below 2^-32
      } else {
        const std::uint64_t r = shift <= 32 ? (random_bits & ((std::uint64_t{1} << shift) - 1))
                                            : (std::uint64_t{random_bits} << (shift - 32));
        kept = (sig + r) >> shift;
      }
    }
    // Adding `kept` (which carries the implicit bit) to the exponent field
    // base moves a rounding carry into the exponent by itself; for targets'
    // subnormals the base is zero.
    result = (static_cast<std::uint32_t>(eq + Spec::bias - 1) << M) + static_cast<std::uint32_t>(kept);
  }
  if (result > Spec::max_finite_bits) {
    switch (Spec::overflow) {
      case overflow_rule::to_infinity: return sign | Spec::inf_bits;
      case overflow_rule::saturate: return sign | Spec::max_finite_bits;
      case overflow_rule::to_nan: return Spec::nan_bits;
    }
  }
  return sign | result;
}

/// Spec -> fp32, exact for every finite value. NaNs keep their sign and
/// payload (shifted), infinities map to infinities.
template <class Spec>
FLASHOPTIM_HOST_DEVICE inline float decode_small_float(std::uint32_t b) {
  constexpr int M = Spec::mant_bits;
  constexpr int E = Spec::exp_bits;
  const std::uint32_t sign = (b & Spec::sign_bit) ? 0x80000000u : 0u;
  const std::uint32_t field = (b >> M) & ((1u << E) - 1u);
  const std::uint32_t mant = b & ((1u << M) - 1u);
  const std::uint32_t mag = b & (Spec::sign_bit - 1u);
  if (Spec::has_inf ? field == (1u << E) - 1u : mag > Spec::max_finite_bits) {
    if (Spec::has_inf && mant == 0) return float_from_bits(sign | 0x7f800000u);
    return float_from_bits(sign | 0x7fc00000u | (mant << (23 - M)));
  }
  if (field == 0) {
    // subnormal: mant * 2^(emin - M), exact in fp32 for every format narrower
    // than it (bf16's subnormals are fp32 subnormals)
    const float m = static_cast<float>(mant);
    return float_from_bits(sign | bits_of(scale_pow2(m, Spec::emin - M)));
  }
  return float_from_bits(sign | ((field - Spec::bias + 127u) << 23) | (mant << (23 - M)));
}

}  // namespace flashoptim::format
