// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// The fused step on one tile of N consecutive elements: decode the master
// weight, the gradient and the states; apply the rule in fp32 registers;
// encode. Both the CPU path and the GPU kernel call this one function, which
// is what makes them bit-identical; they differ only in how they load and
// store a tile and in how `reduce` finds a group's maximum.
#pragma once

#include <type_traits>
#include <utility>

#include "flashoptim/rule/config.hpp"
#include "flashoptim/rule/scalars.hpp"
#include "flashoptim/rule/slots.hpp"

namespace flashoptim {

/// One state slot's registers in a tile: N codes and the group's scale.
template <class Codec, int N>
struct tile_slot {
  typename Codec::code_type codes[N];
  typename Codec::scale_type scale;
};

/// Registers of one tile. Scales belong to the group the tile lies in.
template <class Config, int N>
struct tile_data {
  template <class Codec>
  using slot_type = tile_slot<Codec, N>;
  typename Config::param_type param[N];
  typename Config::aux_type aux[N];
  typename Config::grad_type grad[N];
  typename Config::template slot_map<slot_type> states;  ///< slot I: slot_at<I>(states)
};

namespace detail {
/// Distinct random streams for the state slots (slots 0 and 1 keep the
/// salts of version 0.1, so stochastic rounding of existing configurations
/// is unchanged).
inline constexpr std::uint64_t slot_salt[4] = {0x5851f42d4c957f2dull, 0x14057b7ef767814full, 0x2545f4914f6cdd1dull,
                                               0x9e3779b97f4a7c15ull};
/// The same salts for device code, which cannot index a host constexpr
/// array (slots past 3: an odd multiple of the golden ratio per slot).
FLASHOPTIM_HOST_DEVICE constexpr std::uint64_t slot_salt_of(int slot) {
  return slot == 0   ? 0x5851f42d4c957f2dull
         : slot == 1 ? 0x14057b7ef767814full
         : slot == 2 ? 0x2545f4914f6cdd1dull
                     : 0x9e3779b97f4a7c15ull * static_cast<std::uint64_t>(2 * slot + 1);
}
}  // namespace detail

namespace detail {
/// Rule::checks_state_bounds when the rule declares it, else false.
template <class Rule, class = void>
struct checks_state_bounds : std::false_type {};
template <class Rule>
struct checks_state_bounds<Rule, std::void_t<decltype(Rule::checks_state_bounds)>>
    : std::integral_constant<bool, Rule::checks_state_bounds> {};
/// Whether codec C stores elements of a format (codec::plain), whose
/// codec::state_limit is that format's largest finite value; the others'
/// limit is FLT_MAX.
template <class C, class = void>
struct has_element_type : std::false_type {};
template <class C>
struct has_element_type<C, std::void_t<typename C::element_type>> : std::true_type {};
}  // namespace detail

/// The finite-arithmetic guarantee (docs/finite-arithmetic.md): finite
/// inputs never give a non-finite parameter or state. After the rule, one
/// compare per stored value flags an element whose result is not finite or
/// lies beyond what its slot stores finite (format::finite_limit,
/// codec::state_limit); a flagged element takes a rare branch that
/// recomputes it with saturating_math when its inputs are all finite (the
/// gradient, the decoded states, and the decoded parameter within what a
/// finite stored parameter decodes to), and clamps each result to its
/// slot's limit (a parameter that did not move keeps its bytes: a zero
/// update writes nothing). Elements with a non-finite input keep their
/// result (it propagates, one element wide). Scalars with an `ok` flag (the
/// GPU's range-checked first attempt) record the flag instead and the tile
/// is redone by the exact step. Configurations with a reference-layout state
/// keep the paper's arithmetic.
template <class Config>
struct finite_guard {
  static constexpr int K = Config::num_slots;
  template <int I>
  using S = typename Config::template state<I>;
  template <int I>
  struct reference_slot : codec::is_reference_layout<S<I>> {};
  static constexpr bool enabled = !any_of_slots<K, reference_slot>;
  FLASHOPTIM_HOST_DEVICE FLASHOPTIM_INLINE static float param_limit() {
    return codec::master_limit<typename Config::master>::value();
  }
  /// Whether an element's results need the recomputation: one compare per
  /// stored value (true for NaN, inf and finite values beyond the limit).
  /// A rule whose range checks already flag every state beyond a bound far
  /// below FLT_MAX (Rule::checks_state_bounds: the GPU's range-checked
  /// Adam, kernel/range_checked.cuh) leaves no compare to slots whose limit
  /// is FLT_MAX (grouped codecs); a plain 16-bit or fp8 state keeps its own.
  FLASHOPTIM_HOST_DEVICE FLASHOPTIM_INLINE static bool flagged(float p, const float (&st)[K]) {
    bool out = !format::within(p, param_limit());
    for_each_slot<K>([&](auto s) {
      constexpr int I = decltype(s)::value;
      constexpr bool implied =
          detail::checks_state_bounds<typename Config::rule>::value && !detail::has_element_type<S<I>>::value;
      if constexpr (S<I>::stores_state && !implied)
        out = out | !format::within(st[I], codec::state_limit<S<I>>::value());
    });
    return out;
  }

  /// The rare branch for one flagged element: its raw gradient, decoded
  /// parameter x and decoded states st0 (with the tile's slots, for their
  /// group scales) in, the rule's results p, st replaced when every input
  /// is finite.
  template <class Slots>
  FLASHOPTIM_HOST_DEVICE static void recompute(const typename Config::scalars& sc, float graw, float x,
                                               const float (&st0)[K], const Slots& slots, float& p, float (&st)[K]) {
    float si[K];
    bool finite_states = true;
    for_each_slot<K>([&](auto s) {
      constexpr int I = decltype(s)::value;
      si[I] = codec::finite_decoded<S<I>>(st0[I], slot_at<I>(slots).scale);
      finite_states = finite_states && format::is_finite(si[I]);
    });
    // A master whose stored parameter is already non-finite (an fp32
    // master beyond an fp16 parameter's range) is a non-finite input.
    const float decoded_limit =
        format::float_from_bits(format::finite_limit_bits<typename Config::param_type>::decoded);
    if (!(format::is_finite(graw) && format::within(x, decoded_limit) && finite_states))
      return;  // a non-finite input propagates
    const float g = format::saturate(format::mul_rn(graw, sc.inv_grad_scale));
    float pi = x;
    Config::rule::apply(sc, g, pi, si, rule::saturating_math{});
    p = format::bits_of(pi) == format::bits_of(x) ? pi : format::clamp_magnitude(pi, param_limit());
    for_each_slot<K>([&](auto s) {
      constexpr int I = decltype(s)::value;
      st[I] = S<I>::stores_state ? format::clamp_magnitude(si[I], codec::state_limit<S<I>>::value()) : si[I];
    });
  }
};

namespace detail {
/// Scalars with an `ok` flag (the range-checked first attempt of a GPU
/// tile, kernel/range_checked.cuh) record a flagged element there: the tile
/// is then redone by the exact step, which recomputes it.
template <class S, class = void>
struct reports_to_flag : std::false_type {};
template <class S>
struct reports_to_flag<S, std::void_t<decltype(std::declval<S&>().ok)>> : std::true_type {};
}  // namespace detail

/// Steps elements [0, valid) of the tile. Elements at or past `valid` are
/// neither updated nor meaningful on output, and enter group maxima as 0.
/// `key.index` is the tensor index of element 0 (stochastic rounding).
template <class Config, int N, class Reduce>
FLASHOPTIM_HOST_DEVICE FLASHOPTIM_INLINE void step_tile(const typename Config::scalars& sc, tile_data<Config, N>& t,
                                                        int valid, Reduce&& reduce, codec::rounding_key key) {
  using master = typename Config::master;
  constexpr int K = Config::num_slots;
  float x[N], st[K][N];
  FLASHOPTIM_UNROLL for (int i = 0; i < N; ++i) x[i] = master::decode(t.param[i], t.aux[i]);
  for_each_slot<K>([&](auto s) {
    constexpr int I = decltype(s)::value;
    Config::template state<I>::decode_tile(slot_at<I>(t.states).codes, slot_at<I>(t.states).scale, st[I]);
  });
  using guard = finite_guard<Config>;
  constexpr bool reports = detail::reports_to_flag<typename Config::scalars>::value;
  bool flagged = false;
  FLASHOPTIM_UNROLL for (int i = 0; i < N; ++i) {
    if (i < valid) {
      const float graw = format::to_float(t.grad[i]);
      const float g = format::mul_rn(graw, sc.inv_grad_scale);
      float p = x[i];
      float e[K], e0[K];  // this element's states; e0 for the recomputation
      FLASHOPTIM_UNROLL for (int k = 0; k < K; ++k) e[k] = e0[k] = st[k][i];
      (void)e0;
      Config::rule::apply(sc, g, p, e);
      if constexpr (guard::enabled) {
        if constexpr (reports) {
          flagged = flagged | guard::flagged(p, e);
        } else if (guard::flagged(p, e)) {  // rare: an overflow, or a non-finite input
          guard::recompute(sc, graw, x[i], e0, t.states, p, e);
        }
      }
      FLASHOPTIM_UNROLL for (int k = 0; k < K; ++k) st[k][i] = e[k];
      codec::master_update<master>(x[i], p, t.param[i], t.aux[i]);
    } else {
      FLASHOPTIM_UNROLL for (int k = 0; k < K; ++k) st[k][i] = 0.0f;
    }
  }
  if constexpr (guard::enabled && reports) *sc.ok = *sc.ok & !flagged;
  const std::uint64_t seed = key.seed;
  for_each_slot<K>([&](auto s) {
    constexpr int I = decltype(s)::value;
    codec::rounding_key k = key;
    k.seed = seed ^ detail::slot_salt_of(I);
    Config::template state<I>::encode_tile(st[I], slot_at<I>(t.states).codes, slot_at<I>(t.states).scale, reduce, k);
  });
}

}  // namespace flashoptim
