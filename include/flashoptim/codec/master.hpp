// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// Master-weight modes: how the fp32 value the optimizer updates is kept
// between steps. Each mode is a type with
//   param_type, aux_type              (aux_type = none_t when there is none)
//   float decode(param_type, aux_type)
//   void  encode(float x, param_type&, aux_type&)
// and a name. The step decodes, updates in fp32 registers and encodes; it
// re-encodes only elements whose fp32 value changed (see master_update), so a
// zero update never moves a byte.
#pragma once

#include <type_traits>

#include "flashoptim/format/dtype.hpp"

namespace flashoptim::codec {

/// The parameter alone: updated in fp32 registers and rounded to nearest even.
template <class T>
struct native {
  using param_type = T;
  using aux_type = none_t;
  static constexpr const char* name = "native";
  FLASHOPTIM_HOST_DEVICE static float decode(T p, none_t) { return format::to_float(p); }
  FLASHOPTIM_HOST_DEVICE static void encode(float x, T& p, none_t&) { p = format::from_float<T>(x); }
};

/// A separate fp32 copy; the parameter is its round-to-nearest-even image.
template <class T>
struct fp32_master {
  using param_type = T;
  using aux_type = float;
  static constexpr const char* name = "fp32_master";
  FLASHOPTIM_HOST_DEVICE static float decode(T, float master) { return master; }
  FLASHOPTIM_HOST_DEVICE static void encode(float x, T& p, float& master) {
    master = format::from_float<float>(x);
    p = format::from_float<T>(x);
  }
};

namespace detail {
template <class T>
struct narrow_float_layout {
  static_assert(std::is_same<T, bf16>::value || std::is_same<T, fp16>::value, "ULP correction needs bf16 or fp16");
  using spec = typename format::format_traits<T>::spec;
  /// Unbiased exponent E of a narrow value (1 - bias for zero and subnormals).
  FLASHOPTIM_HOST_DEVICE static int exponent(T v) {
    const int field = static_cast<int>((v.bits & (spec::sign_bit - 1u)) >> spec::mant_bits);
    return field == 0 ? 1 - spec::bias : field - spec::bias;
  }
};
}  // namespace detail

/// FlashOptim's weight split (arXiv 2602.23349): the parameter T plus a
/// signed integer C that stores the rounding error as a fraction of half an
/// ULP of the parameter.
///
///   lo = RNE(x -> T);  e = x - float(lo)
///   h  = 2^(E(lo) - mantissa_bits(T) - 1)        (half an ULP of lo)
///   c  = round_half_away(clamp(e / h, -1, 1) * M),  M = 127 or 32767
///   decode: x' = float(lo) + (c / M) * h
///
/// Exactly the reference implementation's arithmetic: e / h is an exact
/// power-of-two scaling split in two factors, the product with M rounds in
/// fp32, round_half_away is floor(|s| + 0.5) with the sign restored. A
/// non-finite e (x is inf/NaN, or x overflows T) stores c = 0.
/// Properties (docs/test-matrix.md C1): |x' - x| <= ULP(lo) / (2M) for every finite x
/// whose lo is finite; -0 decodes as +0; x beyond T's range decodes to ±inf.
template <class T, class C>
struct ulp_correction {
  static_assert(std::is_same<C, std::int8_t>::value || std::is_same<C, std::int16_t>::value,
                "the correction is int8 or int16");
  using param_type = T;
  using aux_type = C;
  using layout = detail::narrow_float_layout<T>;
  static constexpr int max_code = std::is_same<C, std::int8_t>::value ? 127 : 32767;
  static constexpr const char* name = "ulp_correction";

  /// log2 of half an ULP of lo.
  FLASHOPTIM_HOST_DEVICE static int log2_half_ulp(T lo) { return layout::exponent(lo) - layout::spec::mant_bits - 1; }

  FLASHOPTIM_HOST_DEVICE static C correction(float x, T lo) {
    const float e = format::sub_rn(x, format::to_float(lo));
    if (!format::is_finite(e)) return C{0};
    const float en = format::scale_pow2(e, -log2_half_ulp(lo));
    const float clamped = format::min_num(format::max_num(en, -1.0f), 1.0f);
    const float s = format::mul_rn(clamped, static_cast<float>(max_code));
    const float r = format::floor_exact(format::add_rn(format::abs_bits(s), 0.5f));
    return static_cast<C>(static_cast<int>(format::copysign_bits(r, s)));
  }

  /// A NaN parameter decodes to the canonical NaN: the device's add makes
  /// it, the host's keeps the operand's payload and is made to agree
  /// (master_update compares decoded values, updated_bits).
  FLASHOPTIM_HOST_DEVICE static float decode(T p, C c) {
    const float f = format::div_rn(static_cast<float>(c), static_cast<float>(max_code));
    const float x = format::add_rn(format::to_float(p), format::scale_pow2(f, log2_half_ulp(p)));
#if FLASHOPTIM_DEVICE_CODE
    return x;
#else
    return format::canonicalize_nan(x);
#endif
  }

  FLASHOPTIM_HOST_DEVICE static void encode(float x, T& p, C& c) {
    p = format::from_float<T>(x);
    c = correction(x, p);
  }
};

/// Lossless bf16 + 16-bit split of an fp32 value: the parameter is the upper
/// half rounded half away from zero (a carry into the upper half when the
/// lower half is >= 0x8000), the correction is the lower half; decoding
/// undoes the carry. Every finite fp32 value and both infinities round-trip
/// bit for bit. A NaN never carries (which could reach the sign): it is
/// stored as the canonical quiet NaN (0x7fff, correction 0x7fff), so CPU and
/// GPU store the same bytes, and decodes to a NaN.
struct exact_split {
  using param_type = bf16;
  using aux_type = std::uint16_t;
  static constexpr const char* name = "exact_split";

  FLASHOPTIM_HOST_DEVICE static float decode(bf16 p, std::uint16_t c) {
    const std::uint32_t hi = static_cast<std::uint32_t>(static_cast<std::uint16_t>(p.bits - (c >> 15)));
    return format::float_from_bits((hi << 16) | c);
  }

  FLASHOPTIM_HOST_DEVICE static void encode(float x, bf16& p, std::uint16_t& c) {
    // NaNs are stored canonically: their payload and sign come from the
    // arithmetic that made them, which differs between CPU and GPU.
    const std::uint32_t u = format::bits_of(format::canonicalize_nan(x));
    const std::uint32_t hi = u >> 16;
    const std::uint32_t lo = u & 0xffffu;
    if ((u & 0x7fffffffu) > 0x7f800000u) {
      p = bf16{static_cast<std::uint16_t>(hi | 0x0040u)};
      c = static_cast<std::uint16_t>(lo & 0x7fffu);
      return;
    }
    p = bf16{static_cast<std::uint16_t>(hi + (lo >> 15))};
    c = static_cast<std::uint16_t>(lo);
  }
};

/// bf16 + int8 split of an fp32 value rounded to 24 bits. x is first rounded
/// to nearest even at its eighth bit (a float with fp32's exponent and 15
/// stored mantissa bits; the rounding is one on the bit pattern, so it
/// carries into the exponent and overflows to infinity as any rounding to
/// a narrower format does); that 24-bit value w is then stored as its upper
/// 16 bits rounded half away from zero (the parameter) and the signed
/// remainder w - 256 * param (the correction, in [-128, 127]). Decoding is
/// the integer sum (param << 16) + (c << 8), the remainder reaching below
/// the parameter's binade where it must.
///
/// Against ulp_correction<bf16, int8> (the paper's split, same bytes):
/// - |x' - x| <= ULP(p) / 512 (half the 24-bit spacing), the ULP split's
///   worst case being ULP(lo) / 508 (half its code step): the same precision
///   (largest relative error 1.526e-5 against 1.541e-5 over [0.5, 2));
/// - -0 decodes as -0, subnormals are the same arithmetic;
/// - the parameter is the 24-bit value rounded half away from zero, so it
///   is RNE(x) except near a bf16 tie (the 24-bit rounding may reach the tie
///   first, and a tie goes away from zero), one bf16 ULP apart there;
/// - integer arithmetic only: no division, exponent or rounding-mode
///   handling, and the same few operations on every path (CPU vector code,
///   GPU kernel).
/// A NaN is stored as parameter 0x7fff, correction 0 (the canonical quiet
/// NaN's upper half: CPU and GPU store the same bytes) and decodes to a NaN.
/// Every pair encode writes is a fixed point of encode(decode(.)).
struct rounded_split {
  using param_type = bf16;
  using aux_type = std::int8_t;
  static constexpr const char* name = "rounded_split";

  FLASHOPTIM_HOST_DEVICE static float decode(bf16 p, std::int8_t c) {
    // (param << 16) is the bf16 widening's bits (one pair move on the device)
    const std::uint32_t below = static_cast<std::uint32_t>(static_cast<std::int32_t>(c)) << 8;
    return format::float_from_bits(format::bits_of(format::to_float(p)) + below);
  }

  /// x's bits rounded to nearest even at bit 8 (adding 0x7f and the tie
  /// bit): bits 8-31 are the 24-bit value w, and bits 8-15 its low byte,
  /// which is the correction (w - 256 * param lies in [-128, 127] and is
  /// congruent to w modulo 256). The parameter is the upper half of this
  /// word plus 0x8000 (half away from zero). For non-NaN x no carry reaches
  /// bit 32.
  FLASHOPTIM_HOST_DEVICE static std::uint32_t rounded_word(std::uint32_t u) { return u + 0x7fu + ((u >> 8) & 1u); }

  FLASHOPTIM_HOST_DEVICE static void encode(float x, bf16& p, std::int8_t& c) {
    encode_bits(format::is_nan(x) ? 0x7fff0000u : format::bits_of(x), p, c);
  }

  /// encode for an x that is not NaN (the same bytes, without the NaN
  /// select): for a step that commits no NaN value (the GPU's range-checked
  /// first attempt, kernel/range_checked.cuh).
  FLASHOPTIM_HOST_DEVICE static void encode_not_nan(float x, bf16& p, std::int8_t& c) {
    encode_bits(format::bits_of(x), p, c);
  }

 private:
  FLASHOPTIM_HOST_DEVICE static void encode_bits(std::uint32_t u, bf16& p, std::int8_t& c) {
    const std::uint32_t w = rounded_word(u);
    p = bf16{static_cast<std::uint16_t>((w + 0x8000u) >> 16)};
    c = static_cast<std::int8_t>(static_cast<std::uint8_t>(w >> 8));
  }
};

/// The updated value's bits as master_update compares them with the value
/// before: a NaN as the canonical NaN. The host's arithmetic keeps a NaN
/// operand's payload (a NaN parameter times 1 is itself), the GPU's makes
/// every NaN it computes canonical (docs/contract.md §1), so without this a
/// NaN parameter stored with another payload (0x7fc0, torch's bf16 NaN) kept
/// its bytes on the CPU and was re-encoded on the GPU. With it both re-encode
/// it, to the mode's NaN, unless its decoded value is the canonical NaN
/// itself, which both keep: every fp16 NaN and every NaN of the ULP modes
/// decodes so on both (the device's conversion and add make it, the host's
/// decodes canonicalize: format_traits<fp16>, ulp_correction::decode). On
/// the device the updated value is already an arithmetic result: the bits
/// as they are.
FLASHOPTIM_HOST_DEVICE FLASHOPTIM_INLINE std::uint32_t updated_bits(float after) {
#if FLASHOPTIM_DEVICE_CODE
  return format::bits_of(after);
#else
  return format::bits_of(format::canonicalize_nan(after));
#endif
}

/// Decode, and the re-encode the step performs after updating: an element
/// whose fp32 value did not change keeps its bytes (a zero update must not
/// move a parameter; ULP corrections are not idempotent at c = ±M). A NaN
/// value counts as changed unless it was the canonical NaN (updated_bits).
template <class Master>
FLASHOPTIM_HOST_DEVICE FLASHOPTIM_INLINE void master_update(float before, float after,
                                                            typename Master::param_type& p,
                                                            typename Master::aux_type& a) {
  if (format::bits_of(before) == updated_bits(after)) return;
  Master::encode(after, p, a);
}

/// master_update's "an unchanged value keeps its bytes" as a select between
/// the old bytes and the new ones (np, na: after's encode).
template <class P, class A>
FLASHOPTIM_HOST_DEVICE FLASHOPTIM_INLINE void keep_unchanged(float before, float after, P& p, A& a, P np, A na) {
  const bool keep = format::bits_of(before) == updated_bits(after);
  p = keep ? p : np;
  a = keep ? a : na;
}

/// rounded_split's update without a branch around its encode (a few integer
/// operations): the old bytes are kept by a select. Same bytes as the
/// primary template. (Every pair encode writes re-encodes to itself, and so
/// does every pair whose value is not NaN (reencodes_every_pair, below); a
/// zero update keeps the others too, zero with a negative remainder among
/// them, except a NaN, which is re-encoded as in the primary template.)
template <>
FLASHOPTIM_HOST_DEVICE FLASHOPTIM_INLINE void master_update<rounded_split>(float before, float after, bf16& p,
                                                                           std::int8_t& a) {
  bf16 np;
  std::int8_t na;
  rounded_split::encode(after, np, na);
  keep_unchanged(before, after, p, a, np, na);
}

/// The largest magnitude a master mode stores with a finite parameter: the
/// finite-arithmetic guard (rule/tile.hpp, docs/finite-arithmetic.md)
/// clamps updated values to it. By default the parameter type's limit under
/// round to nearest even.
template <class Master>
struct master_limit {
  FLASHOPTIM_HOST_DEVICE FLASHOPTIM_INLINE static float value() {
    return format::finite_limit<typename Master::param_type>(format::rounding::nearest_even);
  }
};
/// rounded_split: 0x7f7f7f7f rounds to the 24-bit value 0x7f7f7f, whose
/// parameter is bf16's largest finite value; above it the 24-bit rounding
/// reaches the tie 0x7f7f80, which goes to infinity (half away from zero).
template <>
struct master_limit<rounded_split> {
  FLASHOPTIM_HOST_DEVICE FLASHOPTIM_INLINE static float value() { return format::float_from_bits(0x7f7f7f7fu); }
};

/// Whether re-encoding a stored pair's value gives the pair back for every
/// pair whose value is not NaN, not only for the pairs encode writes. Then
/// master_update's "an unchanged value keeps its bytes" changes nothing
/// where the value is not NaN, and a step that never commits an element
/// whose value was NaN may encode without that select: the CPU's vector
/// path (such groups are the scalar step's) and the GPU's range-checked
/// first attempt (a NaN parameter stays NaN through every rule, and a
/// non-finite result sends the tile to the exact step).
///   - native<T>: decode widens exactly and rounding an exact value to T
///     gives it back (zeros, subnormals and infinities included);
///   - rounded_split: the value's bits are (p << 16) + (c << 8), c
///     sign-extended. Their low 8 bits are 0, so the 24-bit rounding adds
///     at most 0x80 without a carry into bit 8, and bits 8-15 are c again;
///     the low 16 bits are c * 256 mod 2^16, below 0x7f80 for c >= 0 and
///     at least 0x8000 for c < 0, so adding 0x8000 leaves the upper half p,
///     or carries it from p - 1 back to p. The pairs this misses decode to
///     NaN: NaN parameters, infinities with c > 0, zeros with c < 0.
/// tests/cpu/ops_test.cpp checks every pair of both.
template <class M>
struct reencodes_every_pair : std::false_type {};
template <class T>
struct reencodes_every_pair<native<T>> : std::true_type {};
template <>
struct reencodes_every_pair<rounded_split> : std::true_type {};

template <class M>
struct is_master_mode : std::false_type {};
template <class T>
struct is_master_mode<native<T>> : std::true_type {};
template <class T>
struct is_master_mode<fp32_master<T>> : std::true_type {};
template <class T, class C>
struct is_master_mode<ulp_correction<T, C>> : std::true_type {};
template <>
struct is_master_mode<exact_split> : std::true_type {};
template <>
struct is_master_mode<rounded_split> : std::true_type {};

}  // namespace flashoptim::codec
