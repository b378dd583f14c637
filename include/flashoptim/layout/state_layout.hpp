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

  std::int64_t size = 0;    ///< elements of the tensor
  std::int64_t groups = 0;  ///< scale entries of each grouped state
  std::int64_t aux_offset = 0, code0_offset = 0, scale0_offset = 0, code1_offset = 0, scale1_offset = 0;
  std::int64_t aux_bytes = 0, code0_bytes = 0, scale0_bytes = 0, code1_bytes = 0, scale1_bytes = 0;
  std::int64_t bytes = 0;  ///< total, padding included

  static constexpr std::int64_t round_up(std::int64_t x) { return (x + alignment - 1) / alignment * alignment; }

  /// For n in [0, max_elements], the sizes validate_tensor accepts: every
  /// byte count and offset below then fits int64_t.
  static state_layout for_size(std::int64_t n) {
    return for_counts(n, codec::scale_count<typename Config::state0>(n) > codec::scale_count<typename Config::state1>(n)
                             ? codec::scale_count<typename Config::state0>(n)
                             : codec::scale_count<typename Config::state1>(n));
  }

  /// Buffers for `elements` elements and `groups` scale entries per grouped
  /// state (a shard padded to a collective's size has more of both than
  /// its tensor pieces need).
  static state_layout for_counts(std::int64_t elements, std::int64_t groups) {
    using S0 = typename Config::state0;
    using S1 = typename Config::state1;
    state_layout l;
    l.size = elements;
    l.groups = groups;
    l.aux_bytes = elements * static_cast<std::int64_t>(storage_bytes<typename Config::aux_type>);
    l.code0_bytes = elements * static_cast<std::int64_t>(storage_bytes<typename S0::code_type>);
    l.scale0_bytes = codec::is_grouped<S0>::value ? groups * static_cast<std::int64_t>(storage_bytes<typename S0::scale_type>) : 0;
    l.code1_bytes = elements * static_cast<std::int64_t>(storage_bytes<typename S1::code_type>);
    l.scale1_bytes = codec::is_grouped<S1>::value ? groups * static_cast<std::int64_t>(storage_bytes<typename S1::scale_type>) : 0;
    std::int64_t at = 0;
    l.aux_offset = at;
    at += round_up(l.aux_bytes);
    l.code0_offset = at;
    at += round_up(l.code0_bytes);
    l.scale0_offset = at;
    at += round_up(l.scale0_bytes);
    l.code1_offset = at;
    at += round_up(l.code1_bytes);
    l.scale1_offset = at;
    at += round_up(l.scale1_bytes);
    l.bytes = at;
    return l;
  }

  /// Points t's correction and state buffers into `base` (an allocation of
  /// at least `bytes`, 256-byte aligned); empty pieces stay null.
  void carve(void* base, tensor_ref<Config>& t) const {
    using R = tensor_ref<Config>;
    auto at = [&](std::int64_t offset, std::int64_t len, auto* tag) {
      using P = std::remove_pointer_t<decltype(tag)>;
      return len == 0 ? static_cast<P*>(nullptr) : reinterpret_cast<P*>(static_cast<char*>(base) + offset);
    };
    t.size = size;
    t.aux = at(aux_offset, aux_bytes, static_cast<typename R::aux_type*>(nullptr));
    t.code0 = at(code0_offset, code0_bytes, static_cast<typename R::code0_type*>(nullptr));
    t.scale0 = at(scale0_offset, scale0_bytes, static_cast<typename R::scale0_type*>(nullptr));
    t.code1 = at(code1_offset, code1_bytes, static_cast<typename R::code1_type*>(nullptr));
    t.scale1 = at(scale1_offset, scale1_bytes, static_cast<typename R::scale1_type*>(nullptr));
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
