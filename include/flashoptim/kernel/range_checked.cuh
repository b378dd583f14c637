// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// Range-checked steps (policy flag RangeChecked): a tile is first stepped
// with the fast paths of the IEEE operations it needs — division and square
// root without their per-element slow-path branches, a group's
// normalization without its warp vote — while predicates record whether
// every operand lay in the range where the fast path is the correctly
// rounded result. One warp vote per tile then decides: when a check failed
// on any lane, the warp reads its tiles again and steps them with the exact
// functions (the codecs of kernel/proven_codecs.cuh with real votes, the
// rule's own arithmetic), so every result is the exact step's. The checks
// cost two chained compares per operand where the branches cost a compare,
// a branch and two convergence-barrier instructions.
//
// Ranges (docs/gpu.md has the argument):
//   Adam's v in [2^-100, v_max]: sqrt's fast path holds on [2^-101, 2^128);
//     v_max = 2^76 when eps is in [2^-60, 2^58] and 1/sqrt(bc2) <= 2^20,
//     which keeps d = sqrt(v) / sqrt(bc2) + eps in [2^-60, 2^59] (v_max < 0
//     otherwise: every tile is stepped exactly);
//   Adam's |m| in [2^-60, 2^60]: with d in that range the quotient m / d and
//     the division's intermediates are normal, where the fast path is
//     correctly rounded.
//
// The zero-tolerant attempt (Zeros = true): a warp whose first attempt
// failed steps its tiles once more before the exact redo, with the same
// checks except that m = +0 and v = +0 (by their bits) pass as well: the
// elements of a gradient that is exactly 0 over states that are 0 (a fresh
// optimizer, embedding rows no batch has touched yet). There sqrt is
// proven::sqrt_in_range_or_zero (sqrt(+0) = +0; the same result as
// sqrt_in_range elsewhere), d = fma(+0, inv_sqrt_bc2, eps) = eps lies in the
// range above, and the division's fast path gives +0 / d = +0 exactly:
// q = fma(+0, r, +0) = +0, rem = fma(-d, +0, +0) = +0, fma(r, +0, +0) = +0.
// (-0 / d would give +0, not -0: m = -0 still fails.) The second moment's
// encoder then meets n = +0, so it uses the sqrt code that tests the sign
// (positive_pre is false). The first attempt does not accept zeros itself:
// the extra compares and the sqrt's clamp cost 10-15% on dense gradients
// (bench/results/2026-12-04/session18, zero_tolerant.patch).
//
// The tiny-tolerant option of that attempt (Tiny = true, Policy::tiny_attempt,
// off by default until it has run on a GPU): rows left idle keep a subnormal
// m forever (round to nearest keeps 0.9 * k * 2^-149 at k for k <= 4), which
// fails both checks on every step. With Tiny the second attempt lifts tiny
// operands by powers of two into the proven ranges (proven::div_or_tiny,
// sqrt_or_tiny, reciprocal_lifted; scale_fp32_encoder's Tiny) and accepts a
// tiny m only where the update lands on p whatever its last bits
// (checked_adam_math below). docs/gpu.md, "Exact zeros in the gradient".
#pragma once

#include <type_traits>

#include "flashoptim/kernel/proven_math.hpp"
#include "flashoptim/rule/adam.hpp"

namespace flashoptim::kernel {

/// Rule::scalars plus where the tile's range checks accumulate and the
/// bound on Adam's second moment for this launch.
template <class Rule>
struct checked_scalars : Rule::scalars {
  bool* ok = nullptr;
  float v_max = -1.0f;
};

/// Rule as the range-checked step runs it: itself (its arithmetic has no
/// slow paths), except Adam and AdamW. zero_tolerant_type: as the
/// zero-tolerant attempt runs it (has_zero_attempt: there is one).
template <class Rule>
struct range_checked_rule {
  using type = Rule;
  using zero_tolerant_type = Rule;
  using tiny_tolerant_type = Rule;
  static constexpr bool checks_second_moment = false;
  static constexpr bool has_zero_attempt = false;
  FLASHOPTIM_HOST_DEVICE static float second_moment_bound(const typename Rule::scalars&) { return -1.0f; }
};

/// The square root of a checked attempt: proven::sqrt_in_range, or with
/// Zeros its variant exact on +0 as well, or with Tiny on every v in
/// [0, 2^126] (proven::sqrt_or_tiny).
template <bool Zeros, bool Tiny = false>
FLASHOPTIM_HOST_DEVICE FLASHOPTIM_INLINE float checked_sqrt(float v) {
  if constexpr (Tiny) return proven::sqrt_or_tiny(v);
  if constexpr (Zeros) return proven::sqrt_in_range_or_zero(v);
  return proven::sqrt_in_range(v);
}

/// adam_rule<Decoupled>::apply itself, with sqrt and the division through
/// their fast paths, and the ranges that make them exact recorded in *ok.
/// Zeros: m = +0 and v = +0 pass the check too (the zero-tolerant attempt).
/// Tiny (with Zeros): so do every v in (0, 2^-100) (proven::sqrt_or_tiny is
/// exact there) and every m below 2^-60 in magnitude, -0 included, where
/// the parameter p the update lands on satisfies |p| >= 2^-126 and
/// |lr / bc1| * 2^-99 <= |p|. There proven::div_or_tiny's quotient q is
/// exact wherever RN(m / d) >= 2^-126; where it is smaller, both it and the
/// exact one are at most 2^-126, so |lr / bc1 * q| < 2^-27 |p| < ulp(p) / 4
/// and fma(-lr / bc1, q, p) is p for either (and p + (-0) = p + (+0) for
/// p != 0): the same p, m and v as the exact step.
template <bool Zeros, bool Tiny = false>
struct checked_adam_math {
  static_assert(Zeros || !Tiny, "the tiny-tolerant attempt is a zero-tolerant one");
  bool* ok;
  float v_max;
  /// |lr / bc1| * 2^-99 (Tiny): the least |p| for which a tiny m is accepted.
  float p_floor = 0.0f;
  FLASHOPTIM_HOST_DEVICE void observe(float m, float v, float p) const {
    const float am = proven::magnitude(m);
    // & rather than &&: one chain of predicated compares, no branch.
    if constexpr (Tiny) {
      const float ap = proven::magnitude(p);
      const bool p_far = (ap >= format::pow2(-126)) & (ap >= p_floor);
      // v: +0 or positive up to v_max (a negative v, which no step makes
      // but a state given to it could hold, has no square root)
      *ok = *ok & (format::bits_of(v) < 0x80000000u) & (v <= v_max) &
            ((am >= format::pow2(-60)) | (format::bits_of(m) == 0u) | p_far) & (am <= format::pow2(60));
    } else if constexpr (Zeros) {
      *ok = *ok & ((v >= format::pow2(-100)) | (format::bits_of(v) == 0u)) & (v <= v_max) &
            ((am >= format::pow2(-60)) | (format::bits_of(m) == 0u)) & (am <= format::pow2(60));
    } else {
      *ok = *ok & (v >= format::pow2(-100)) & (v <= v_max) & (am >= format::pow2(-60)) & (am <= format::pow2(60));
    }
  }
  FLASHOPTIM_HOST_DEVICE static float sqrt(float x) { return checked_sqrt<Zeros, Tiny>(x); }
  FLASHOPTIM_HOST_DEVICE static float div(float a, float b) {
    if constexpr (Tiny) return proven::div_or_tiny(a, b);
    return proven::div_in_range(a, b);
  }
  /// No bound: an overflow is flagged by step_tile and the tile redone.
  FLASHOPTIM_HOST_DEVICE static float bound(float x) { return x; }
};

template <bool Decoupled, bool Zeros = false, bool Tiny = false>
struct range_checked_adam : rule::adam_rule<Decoupled> {
  using base = rule::adam_rule<Decoupled>;
  using scalars = checked_scalars<base>;
  /// observe() flags every m outside [-2^60, 2^60] and every v above
  /// v_max <= 2^76 (NaN included; every v when v_max < 0), so step_tile's
  /// finite guard need not compare m and v with a limit of FLT_MAX again
  /// (rule/tile.hpp, finite_guard::flagged: two compares per element fewer
  /// on the default layout, the same tiles redone).
  static constexpr bool checks_state_bounds = true;
  FLASHOPTIM_HOST_DEVICE static void apply(const scalars& s, float g, float& p, float (&st)[base::num_states]) {
    checked_adam_math<Zeros, Tiny> math{s.ok, s.v_max};
    if constexpr (Tiny) math.p_floor = format::mul_rn(proven::magnitude(s.neg_step_size), format::pow2(-99));
    base::apply(s, g, p, st, math);
  }
};

template <bool Decoupled>
struct range_checked_rule<rule::adam_rule<Decoupled>> {
  using type = range_checked_adam<Decoupled>;
  using zero_tolerant_type = range_checked_adam<Decoupled, true>;
  using tiny_tolerant_type = range_checked_adam<Decoupled, true, true>;
  static constexpr bool checks_second_moment = true;
  static constexpr bool has_zero_attempt = true;
  FLASHOPTIM_HOST_DEVICE static float second_moment_bound(const typename rule::adam_rule<Decoupled>::scalars& s) {
    const bool bounded = s.eps >= format::pow2(-60) && s.eps <= format::pow2(58) && s.inv_sqrt_bc2 >= 0.0f &&
                         s.inv_sqrt_bc2 <= format::pow2(20);
    return bounded ? format::pow2(76) : -1.0f;
  }
};

/// The sqrt compander of the second moment, for a step whose rule checked
/// the range of the very value it is given (range_checked_adam): the same
/// pre() there (the same function, so the compiler computes it once). A
/// tile is kept only if every v is in [2^-100, 2^76], so there
/// pre(v) >= 2^-50 (proven::positive_pre); with Zeros v = +0 passes too,
/// and pre(+0) = +0.
template <bool Zeros = false, bool Tiny = false>
struct range_checked_sqrt_compander : codec::sqrt_compander {
  static constexpr bool positive_pre = !Zeros;
  FLASHOPTIM_HOST_DEVICE static float pre(float v) { return checked_sqrt<Zeros, Tiny>(v); }
};

/// The checked scalars of a launch (ok is set per tile).
template <class Rule>
FLASHOPTIM_HOST_DEVICE FLASHOPTIM_INLINE checked_scalars<Rule> make_checked_scalars(const typename Rule::scalars& s) {
  checked_scalars<Rule> c;
  static_cast<typename Rule::scalars&>(c) = s;
  c.v_max = range_checked_rule<Rule>::second_moment_bound(s);
  return c;
}

/// A master mode M of codec::reencodes_every_pair as the range-checked
/// attempt runs it with Policy::checked_reencode (kernel_config.cuh): M
/// itself, with master_update the encode alone (below).
template <class M>
struct reencoding_master : M {};

/// A master mode M with a NaN select in its encode (codec::rounded_split)
/// as the range-checked attempt runs it without Policy::checked_reencode:
/// master_update keeps its select of the old bytes and encodes without the
/// NaN select (the attempt commits no element whose updated value is NaN:
/// the finite guard flags it and the tile is stepped exactly).
template <class M>
struct non_nan_master : M {};

/// The checked attempt's master for M (range-checked, finite guard on):
/// without the keep select where Reencode allows it, without the NaN select
/// where M has one.
template <class M, bool Reencode>
struct checked_attempt_master {
  using type = std::conditional_t<Reencode && codec::reencodes_every_pair<M>::value, reencoding_master<M>, M>;
};
template <bool Reencode>
struct checked_attempt_master<codec::rounded_split, Reencode> {
  using type = std::conditional_t<Reencode, reencoding_master<codec::rounded_split>, non_nan_master<codec::rounded_split>>;
};

}  // namespace flashoptim::kernel

namespace flashoptim::codec {
/// master_update without the keep select: re-encoding an unchanged value
/// gives its bytes back unless it is NaN (reencodes_every_pair), and the
/// attempt that uses this commits no element whose value was NaN.
#define FLASHOPTIM_REENCODING_MASTER_UPDATE(M)                                                           \
  template <>                                                                                            \
  FLASHOPTIM_HOST_DEVICE FLASHOPTIM_INLINE void master_update<kernel::reencoding_master<M>>(             \
      float, float after, typename M::param_type & p, typename M::aux_type & a) {                        \
    static_assert(reencodes_every_pair<M>::value, "only where re-encoding is the keep");                 \
    M::encode(after, p, a);                                                                              \
  }
FLASHOPTIM_REENCODING_MASTER_UPDATE(native<float>)
FLASHOPTIM_REENCODING_MASTER_UPDATE(native<bf16>)
FLASHOPTIM_REENCODING_MASTER_UPDATE(native<fp16>)
#undef FLASHOPTIM_REENCODING_MASTER_UPDATE

/// rounded_split's: the encode without its NaN select as well.
template <>
FLASHOPTIM_HOST_DEVICE FLASHOPTIM_INLINE void master_update<kernel::reencoding_master<rounded_split>>(float,
                                                                                                     float after,
                                                                                                     bf16& p,
                                                                                                     std::int8_t& a) {
  rounded_split::encode_not_nan(after, p, a);
}

/// non_nan_master<rounded_split>: master_update<rounded_split> with the
/// encode without its NaN select. Same bytes for every updated value that
/// is not NaN.
template <>
FLASHOPTIM_HOST_DEVICE FLASHOPTIM_INLINE void master_update<kernel::non_nan_master<rounded_split>>(float before,
                                                                                                  float after,
                                                                                                  bf16& p,
                                                                                                  std::int8_t& a) {
  bf16 np;
  std::int8_t na;
  rounded_split::encode_not_nan(after, np, na);
  keep_unchanged(before, after, p, a, np, na);
}

/// The wrapped mode's limit (rounded_split's is its own).
template <class M>
struct master_limit<kernel::reencoding_master<M>> : master_limit<M> {};
template <class M>
struct master_limit<kernel::non_nan_master<M>> : master_limit<M> {};
}  // namespace flashoptim::codec
