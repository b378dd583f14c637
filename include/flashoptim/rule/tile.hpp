// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// The fused step on one tile of N consecutive elements: decode the master
// weight, the gradient and the states; apply the rule in fp32 registers;
// encode. Both the CPU path and the GPU kernel call this one function, which
// is what makes them bit-identical; they differ only in how they load and
// store a tile and in how `reduce` finds a group's maximum.
#pragma once

#include "flashoptim/rule/config.hpp"

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
  FLASHOPTIM_UNROLL for (int i = 0; i < N; ++i) {
    if (i < valid) {
      const float g = format::to_float(t.grad[i]) * sc.inv_grad_scale;
      float p = x[i];
      Config::rule::apply(sc, g, p, m[i], v[i]);
      codec::master_update<master>(x[i], p, t.param[i], t.aux[i]);
    } else {
      m[i] = 0.0f;
      v[i] = 0.0f;
    }
  }
  const std::uint64_t seed = key.seed;
  key.seed = seed ^ detail::slot_salt_of(0);
  Config::state0::encode_tile(m, t.code0, t.scale0, reduce, key);
  key.seed = seed ^ detail::slot_salt_of(1);
  Config::state1::encode_tile(v, t.code1, t.scale1, reduce, key);
}

}  // namespace flashoptim
