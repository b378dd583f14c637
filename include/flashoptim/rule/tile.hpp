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

namespace flashoptim {

/// Registers of one tile. Scales belong to the group the tile lies in.
template <class Config, int N>
struct tile_data {
  typename Config::param_type param[N];
  typename Config::aux_type aux[N];
  typename Config::grad_type grad[N];
  typename Config::state0::code_type code0[N];
  typename Config::state1::code_type code1[N];
  typename Config::state0::scale_type scale0;
  typename Config::state1::scale_type scale1;
};

namespace detail {
/// Distinct random streams for the two state slots.
inline constexpr std::uint64_t slot_salt[2] = {0x5851f42d4c957f2dull, 0x14057b7ef767814full};
/// The same salts for device code, which cannot index a host constexpr array.
FLASHOPTIM_HOST_DEVICE constexpr std::uint64_t slot_salt_of(int slot) {
  return slot == 0 ? 0x5851f42d4c957f2dull : 0x14057b7ef767814full;
}
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
  using S0 = typename Config::state0;
  using S1 = typename Config::state1;
  static constexpr bool enabled = !codec::is_reference_layout<S0>::value && !codec::is_reference_layout<S1>::value;
  FLASHOPTIM_HOST_DEVICE FLASHOPTIM_INLINE static float param_limit() {
    return format::finite_limit<typename Config::param_type>(format::rounding::nearest_even);
  }
  /// Whether an element's results need the recomputation: one compare per
  /// stored value (true for NaN, inf and finite values beyond the limit).
  FLASHOPTIM_HOST_DEVICE FLASHOPTIM_INLINE static bool flagged(float p, float m, float v) {
    bool out = !format::within(p, param_limit());
    if constexpr (S0::stores_state) out = out | !format::within(m, codec::state_limit<S0>::value());
    if constexpr (S1::stores_state) out = out | !format::within(v, codec::state_limit<S1>::value());
    return out;
  }

  /// The rare branch for one flagged element: its raw gradient, decoded
  /// parameter x and decoded states m0, v0 (with their group scales) in,
  /// the rule's results p, m, v replaced when every input is finite.
  FLASHOPTIM_HOST_DEVICE static void recompute(const typename Config::scalars& sc, float graw, float x, float m0,
                                               float v0, typename S0::scale_type scale0,
                                               typename S1::scale_type scale1, float& p, float& m, float& v) {
    m0 = codec::finite_decoded<S0>(m0, scale0);
    v0 = codec::finite_decoded<S1>(v0, scale1);
    // A master whose stored parameter is already non-finite (an fp32
    // master beyond an fp16 parameter's range) is a non-finite input.
    const float decoded_limit =
        format::float_from_bits(format::finite_limit_bits<typename Config::param_type>::decoded);
    if (!(format::is_finite(graw) && format::within(x, decoded_limit) && format::is_finite(m0) &&
          format::is_finite(v0)))
      return;  // a non-finite input propagates
    const float g = format::saturate(format::mul_rn(graw, sc.inv_grad_scale));
    float pi = x, mi = m0, vi = v0;
    Config::rule::apply(sc, g, pi, mi, vi, rule::saturating_math{});
    p = format::bits_of(pi) == format::bits_of(x) ? pi : format::clamp_magnitude(pi, param_limit());
    m = S0::stores_state ? format::clamp_magnitude(mi, codec::state_limit<S0>::value()) : mi;
    v = S1::stores_state ? format::clamp_magnitude(vi, codec::state_limit<S1>::value()) : vi;
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
  float x[N], m[N], v[N];
  FLASHOPTIM_UNROLL for (int i = 0; i < N; ++i) x[i] = master::decode(t.param[i], t.aux[i]);
  Config::state0::decode_tile(t.code0, t.scale0, m);
  Config::state1::decode_tile(t.code1, t.scale1, v);
  using guard = finite_guard<Config>;
  constexpr bool reports = detail::reports_to_flag<typename Config::scalars>::value;
  bool flagged = false;
  FLASHOPTIM_UNROLL for (int i = 0; i < N; ++i) {
    if (i < valid) {
      const float graw = format::to_float(t.grad[i]);
      const float g = format::mul_rn(graw, sc.inv_grad_scale);
      float p = x[i];
      const float m0 = m[i], v0 = v[i];  // for the recomputation
      (void)m0, (void)v0;
      Config::rule::apply(sc, g, p, m[i], v[i]);
      if constexpr (guard::enabled) {
        if constexpr (reports) {
          flagged = flagged | guard::flagged(p, m[i], v[i]);
        } else if (guard::flagged(p, m[i], v[i])) {  // rare: an overflow, or a non-finite input
          guard::recompute(sc, graw, x[i], m0, v0, t.scale0, t.scale1, p, m[i], v[i]);
        }
      }
      codec::master_update<master>(x[i], p, t.param[i], t.aux[i]);
    } else {
      m[i] = 0.0f;
      v[i] = 0.0f;
    }
  }
  if constexpr (guard::enabled && reports) *sc.ok = *sc.ok & !flagged;
  const std::uint64_t seed = key.seed;
  key.seed = seed ^ detail::slot_salt_of(0);
  Config::state0::encode_tile(m, t.code0, t.scale0, reduce, key);
  key.seed = seed ^ detail::slot_salt_of(1);
  Config::state1::encode_tile(v, t.code1, t.scale1, reduce, key);
}

}  // namespace flashoptim
