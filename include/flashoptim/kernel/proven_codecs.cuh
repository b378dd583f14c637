// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// The kernel wrappers of policy flag ProvenRanges: the ULP correction and
// the grouped fp32-scale codecs computed by kernel/proven_math.hpp (the
// arithmetic rewritten for the ranges its operands are proven to lie in).
// Same bytes and the same decoded floats as the codecs they wrap; decode
// tables as in kernel/code_tables.cuh (the ULP table holds the fraction
// already scaled by 2^-(m+1)).
#pragma once

#include "flashoptim/kernel/code_tables.cuh"
#include "flashoptim/kernel/proven_math.hpp"

namespace flashoptim::kernel {

template <class M, bool Tabulate>
struct proven_master;

/// ulp_correction<T, C> through proven::ulp_arithmetic; int8 fractions read
/// from table slot 0 (Tabulate).
template <class T, class C, bool Tabulate>
struct proven_master<codec::ulp_correction<T, C>, Tabulate> : codec::ulp_correction<T, C> {
  using arithmetic = proven::ulp_arithmetic<T, C>;
  static constexpr bool tabulated = Tabulate;

  FLASHOPTIM_HOST_DEVICE static float entry(unsigned b) { return arithmetic::fraction(detail::from_byte<C>(b)); }

  FLASHOPTIM_HOST_DEVICE static float decode(T p, C c) {
#if FLASHOPTIM_DEVICE_CODE
    if constexpr (Tabulate) return arithmetic::decode(format::to_float(p), shared_tables()[detail::byte_of(c)]);
#endif
    return arithmetic::decode(format::to_float(p), arithmetic::fraction(c));
  }
  FLASHOPTIM_HOST_DEVICE static void encode(float x, T& p, C& c) { arithmetic::encode(x, p, c); }
};

/// A grouped codec C decoded as kernel_codec (tables) and encoded by
/// Encoder::encode_tile (one of kernel/proven_math.hpp's encoders).
template <class C, int Slot, bool Tabulate, bool BranchFree, class Encoder>
struct encoder_codec : kernel_codec<C, Slot, Tabulate, BranchFree> {
  using wrapped = kernel_codec<C, Slot, Tabulate, BranchFree>;
  using typename wrapped::code_type;
  using typename wrapped::scale_type;

  template <int N, class Reduce>
  FLASHOPTIM_HOST_DEVICE static void encode_tile(const float (&x)[N], code_type (&q)[N], scale_type& s, Reduce&& reduce,
                                                 const codec::rounding_key& key) {
    Encoder::encode_tile(x, q, s, reduce, key);
  }
};

/// A grouped codec with an fp32 scale and a sentinel code, encoded through
/// proven::scale_fp32_encoder. PreCompander: C's compander, or one with the
/// same pre() on the operands the step gives it (kernel/range_checked.cuh).
/// Tiny: the tiny-tolerant attempt's encoder (group maxima below 2^-64 too).
template <class C, int Slot, bool Tabulate, bool BranchFree, class PreCompander = typename C::compander,
          bool Tiny = false>
using proven_codec = encoder_codec<
    C, Slot, Tabulate, BranchFree,
    proven::scale_fp32_encoder<C, typename kernel_codec<C, Slot, Tabulate, BranchFree>::base::compander, PreCompander,
                               Tiny>>;

/// The reference layout's codecs in the first attempt of a range-checked
/// Adam step, whose rule bounds this slot's new values (CheckedRange in
/// kernel_config.cuh), encoded through proven::reference_checked_encoder
/// (the division's fast path instead of IEEE division per element, no NaN
/// rule, no clamps).
template <class C, int Slot, bool Tabulate, bool BranchFree, class PreCompander = typename C::compander>
using reference_checked_codec =
    encoder_codec<C, Slot, Tabulate, BranchFree, proven::reference_checked_encoder<C, PreCompander>>;

/// Codecs proven_codec covers: the group maximum ignores non-finite elements
/// only with a sentinel, and the range proofs need the fp32 scale.
template <class C>
struct is_proven_codec : std::false_type {};
template <class Code, class Compander, codec::code_rounding R>
struct is_proven_codec<codec::grouped<Code, Compander, codec::scale_fp32, R>>
    : std::integral_constant<bool, Code::has_sentinel> {};

}  // namespace flashoptim::kernel

namespace flashoptim::codec {
/// master_update for proven_master: encode, then keep the old bytes by a
/// select when the fp32 value did not change (as the branch-free modes of
/// kernel/code_tables.cuh). Same bytes as the primary template.
#define FLASHOPTIM_PROVEN_MASTER_UPDATE(T, C, TAB)                                                               \
  template <>                                                                                                    \
  FLASHOPTIM_HOST_DEVICE FLASHOPTIM_INLINE void master_update<kernel::proven_master<ulp_correction<T, C>, TAB>>( \
      float before, float after, T& p, C& a) {                                                                   \
    T np;                                                                                                        \
    C na;                                                                                                        \
    kernel::proven_master<ulp_correction<T, C>, TAB>::encode(after, np, na);                                     \
    kernel::proven::keep_if_equal(before, after, p, a, np, na);                                                  \
  }
FLASHOPTIM_PROVEN_MASTER_UPDATE(bf16, std::int8_t, true)
FLASHOPTIM_PROVEN_MASTER_UPDATE(bf16, std::int8_t, false)
FLASHOPTIM_PROVEN_MASTER_UPDATE(fp16, std::int8_t, true)
FLASHOPTIM_PROVEN_MASTER_UPDATE(fp16, std::int8_t, false)
FLASHOPTIM_PROVEN_MASTER_UPDATE(bf16, std::int16_t, false)
FLASHOPTIM_PROVEN_MASTER_UPDATE(fp16, std::int16_t, false)
#undef FLASHOPTIM_PROVEN_MASTER_UPDATE
}  // namespace flashoptim::codec
