// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// How many bytes of optimizer state a tensor needs under a configuration,
// and how one allocation of that size is cut into the correction (or fp32
// master) and the state buffers. Every piece starts on a 256-byte boundary,
// like a fresh cudaMalloc, so all of them take the kernel's 16-byte vector
// path. Plain C++: the same layout serves host buffers.
#pragma once

#include <cstdint>
#include <type_traits>

#include "flashoptim/layout/bytes.hpp"
#include "flashoptim/rule/tensor.hpp"

namespace flashoptim {

template <class Config>
struct state_layout {
  static constexpr std::int64_t alignment = 256;
  static constexpr int num_slots = Config::num_slots;

  /// Offset and length of one state slot's pieces.
  struct slot_piece {
    std::int64_t code_offset = 0, scale_offset = 0;
    std::int64_t code_bytes = 0, scale_bytes = 0;
  };

  std::int64_t size = 0;    ///< elements of the tensor
  std::int64_t groups = 0;  ///< scale entries of each grouped state
  std::int64_t aux_offset = 0, aux_bytes = 0;
  slot_piece slots[num_slots];  ///< in slot order: codes, then scales
  std::int64_t bytes = 0;       ///< total, padding included

  static constexpr std::int64_t round_up(std::int64_t x) { return (x + alignment - 1) / alignment * alignment; }

  /// For n in [0, max_elements], the sizes validate_tensor accepts: every
  /// byte count and offset below then fits int64_t.
  static state_layout for_size(std::int64_t n) {
    std::int64_t groups = 0;
    for_each_slot<num_slots>([&](auto s) {
      const std::int64_t g = codec::scale_count<typename Config::template state<decltype(s)::value>>(n);
      groups = g > groups ? g : groups;
    });
    return for_counts(n, groups);
  }

  /// Buffers for `elements` elements and `groups` scale entries per grouped
  /// state (a shard padded to a collective's size has more of both than
  /// its tensor pieces need). Pieces follow each other: correction, then
  /// per slot its codes and its scales (the order of version 0.1).
  static state_layout for_counts(std::int64_t elements, std::int64_t groups) {
    state_layout l;
    l.size = elements;
    l.groups = groups;
    l.aux_bytes = elements * static_cast<std::int64_t>(storage_bytes<typename Config::aux_type>);
    std::int64_t at = 0;
    l.aux_offset = at;
    at += round_up(l.aux_bytes);
    for_each_slot<num_slots>([&](auto s) {
      constexpr int I = decltype(s)::value;
      using S = typename Config::template state<I>;
      slot_piece& p = l.slots[I];
      p.code_bytes = elements * static_cast<std::int64_t>(storage_bytes<typename S::code_type>);
      p.scale_bytes =
          codec::is_grouped<S>::value ? groups * static_cast<std::int64_t>(storage_bytes<typename S::scale_type>) : 0;
      p.code_offset = at;
      at += round_up(p.code_bytes);
      p.scale_offset = at;
      at += round_up(p.scale_bytes);
    });
    l.bytes = at;
    return l;
  }

  /// Points t's correction and state buffers into `base` (an allocation of
  /// at least `bytes`, 256-byte aligned); empty pieces stay null.
  void carve(void* base, tensor_ref<Config>& t) const {
    auto at = [&](std::int64_t offset, std::int64_t len, auto* tag) {
      using P = std::remove_pointer_t<decltype(tag)>;
      return len == 0 ? static_cast<P*>(nullptr) : reinterpret_cast<P*>(static_cast<char*>(base) + offset);
    };
    t.size = size;
    t.aux = at(aux_offset, aux_bytes, static_cast<typename tensor_ref<Config>::aux_type*>(nullptr));
    for_each_slot<num_slots>([&](auto s) {
      constexpr int I = decltype(s)::value;
      auto& r = slot_at<I>(t.states);
      r.codes = at(slots[I].code_offset, slots[I].code_bytes, r.codes);
      r.scales = at(slots[I].scale_offset, slots[I].scale_bytes, r.scales);
    });
  }
};

/// Optimizer-state bytes of a tensor of n elements, without padding (the
/// number layout::bytes reports); state_layout<Config>::for_size(n).bytes
/// is what one padded allocation needs.
template <class Config>
constexpr std::int64_t state_bytes(std::int64_t n) {
  return layout::bytes<Config>::state_for_size(n);
}

}  // namespace flashoptim
