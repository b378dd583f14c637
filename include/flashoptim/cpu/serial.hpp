// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// The plain CPU step: one thread, one 32-element tile at a time, through the
// same step_tile as the GPU kernel. It is the readable definition of what a
// step over whole tensors does; the threaded SIMD path must match it bit for
// bit.
#pragma once

#include <algorithm>

#include "flashoptim/rule/step_args.hpp"
#include "flashoptim/rule/tensor.hpp"
#include "flashoptim/rule/tile.hpp"

namespace flashoptim::cpu {

/// Elements per tile on the CPU: one group of the grouped codecs.
inline constexpr int tile_elements = 32;

/// Steps elements [begin, begin + count) of one tensor, count <= 32, where
/// begin is a multiple of 32 (a group start).
template <class Config>
void step_tile_at(const typename Config::scalars& sc, const tensor_ref<Config>& t, std::int64_t begin,
                  std::uint64_t step) {
  constexpr int N = tile_elements;
  constexpr int K = Config::num_slots;
  const int valid = static_cast<int>(std::min<std::int64_t>(N, t.size - begin));
  const std::int64_t group = begin / N;
  tile_data<Config, N> d{};
  for (int i = 0; i < valid; ++i) {
    d.param[i] = t.param[begin + i];
    if constexpr (Config::has_aux) d.aux[i] = t.aux[begin + i];
    d.grad[i] = t.grad[begin + i];
  }
  for_each_slot<K>([&](auto s) {
    constexpr int I = decltype(s)::value;
    using S = typename Config::template state<I>;
    auto& slot = slot_at<I>(d.states);
    const auto& ref = slot_at<I>(t.states);
    if constexpr (S::stores_state)
      for (int i = 0; i < valid; ++i) slot.codes[i] = ref.codes[begin + i];
    if constexpr (codec::is_grouped<S>::value) slot.scale = ref.scales[group];
  });

  step_tile<Config>(sc, d, valid, codec::whole_group{},
                    codec::rounding_key{t.seed, step, t.index_base + static_cast<std::uint64_t>(begin)});

  for (int i = 0; i < valid; ++i) {
    t.param[begin + i] = d.param[i];
    if constexpr (Config::has_aux) t.aux[begin + i] = d.aux[i];
  }
  for_each_slot<K>([&](auto s) {
    constexpr int I = decltype(s)::value;
    using S = typename Config::template state<I>;
    const auto& slot = slot_at<I>(d.states);
    const auto& ref = slot_at<I>(t.states);
    if constexpr (S::stores_state)
      for (int i = 0; i < valid; ++i) ref.codes[begin + i] = slot.codes[i];
    if constexpr (codec::is_grouped<S>::value) ref.scales[group] = slot.scale;
  });
}

/// Validates everything, then steps every tensor. On error nothing is written.
template <class Config>
status step_serial(const typename Config::hyper& h, const step_args& a, const tensor_ref<Config>* tensors,
                   std::size_t count) {
  FLASHOPTIM_RETURN_IF_ERROR(validate_step_args<Config>(h, a));
  FLASHOPTIM_RETURN_IF_ERROR(validate_tensor_list(tensors, count));
  if (a.skip) return status();
  const auto sc = make_step_scalars<Config>(h, a);
  for (std::size_t i = 0; i < count; ++i) {
    const auto& t = tensors[i];
    for (std::int64_t b = 0; b < t.size; b += tile_elements)
      step_tile_at<Config>(sc, t, b, static_cast<std::uint64_t>(a.step));
  }
  return status();
}

}  // namespace flashoptim::cpu
