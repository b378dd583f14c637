// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// Decoding through shared-memory tables. A 1-byte state code's normalized
// value (grouped::code_value: a division by qmax, and for softsign a second
// division) and an int8 correction's fraction c / M are pure functions of
// one byte, so each block evaluates them once for all 256 bytes, with the
// very functions the CPU calls, and every element looks its value up. This
// saves two to three IEEE divisions per element, which is what keeps the
// fused step within the H200's instruction budget at the bandwidth floor
// (docs/gpu.md). The wrappers change nothing else: `tabulated_config<C>`
// has C's rule, storage types and encoders, and tests/gpu checks that every
// table entry and every tabulated decode is bitwise the host's.
#pragma once

#include <cuda_runtime.h>

#include <cstring>
#include <type_traits>

#include "flashoptim/codec/master.hpp"
#include "flashoptim/codec/state.hpp"
#include "flashoptim/rule/config.hpp"

namespace flashoptim::kernel {

/// Entries of one table: every value of a byte.
inline constexpr int table_entries = 256;
/// Table slots: 0 the master correction, 1 state 0, 2 state 1.
inline constexpr int table_slots = 3;

/// The block's tables, in dynamic shared memory (launches reserve
/// table_slots * table_entries floats when the config tabulates anything).
FLASHOPTIM_DEVICE FLASHOPTIM_INLINE float* shared_tables() {
  extern __shared__ float flashoptim_shared_tables[];
  return flashoptim_shared_tables;
}

namespace detail {
template <class T>
FLASHOPTIM_HOST_DEVICE FLASHOPTIM_INLINE unsigned byte_of(T q) {
  static_assert(sizeof(T) == 1, "one-byte codes");
  unsigned char b;
  std::memcpy(&b, &q, 1);
  return b;
}
template <class T>
FLASHOPTIM_HOST_DEVICE FLASHOPTIM_INLINE T from_byte(unsigned b) {
  static_assert(sizeof(T) == 1, "one-byte codes");
  const unsigned char c = static_cast<unsigned char>(b);
  T q;
  std::memcpy(&q, &c, 1);
  return q;
}
}  // namespace detail

/// A grouped codec whose code is one byte.
template <class C>
struct is_tabulable_codec
    : std::integral_constant<bool, codec::is_grouped<C>::value && sizeof(typename C::code_type) == 1> {};

/// A ULP-correction master mode with an int8 correction.
template <class M>
struct is_tabulable_master : std::false_type {};
template <class T>
struct is_tabulable_master<codec::ulp_correction<T, std::int8_t>> : std::true_type {};

/// Codec C with decode_tile reading code values from table slot Slot.
template <class C, int Slot>
struct tabulated_codec : C {
  using typename C::code_type;
  using typename C::scale_type;
  using scale_format = typename C::scale_format;

  /// Entry b of the table: the host's code_value of byte b.
  FLASHOPTIM_HOST_DEVICE static float entry(unsigned b) { return C::code_value(detail::from_byte<code_type>(b)); }

  template <int N>
  FLASHOPTIM_HOST_DEVICE static void decode_tile(const code_type (&q)[N], scale_type s, float (&out)[N]) {
#if FLASHOPTIM_DEVICE_CODE
    const float* table = shared_tables() + Slot * table_entries;
    const float scale = scale_format::load(s);
    FLASHOPTIM_UNROLL for (int i = 0; i < N; ++i) out[i] = C::decode(table[detail::byte_of(q[i])], scale);
#else
    C::decode_tile(q, s, out);
#endif
  }
};

/// ulp_correction<T, int8> with the fraction c / 127 read from table slot Slot.
/// decode is master.hpp's: float(p) + scale_pow2(c / M, log2_half_ulp(p)).
template <class M, int Slot>
struct tabulated_master : M {
  using typename M::param_type;
  using typename M::aux_type;

  FLASHOPTIM_HOST_DEVICE static float entry(unsigned b) {
    return format::div_rn(static_cast<float>(detail::from_byte<aux_type>(b)), static_cast<float>(M::max_code));
  }

  FLASHOPTIM_HOST_DEVICE static float decode(param_type p, aux_type c) {
#if FLASHOPTIM_DEVICE_CODE
    const float f = shared_tables()[Slot * table_entries + detail::byte_of(c)];
    return format::to_float(p) + format::scale_pow2(f, M::log2_half_ulp(p));
#else
    return M::decode(p, c);
#endif
  }
};

/// Config with every tabulable decode going through a table (Enable), or
/// Config's own types (!Enable). Everything step_tile reads is forwarded.
template <class Config, bool Enable>
struct tabulated_config {
  static constexpr bool tab_master = Enable && is_tabulable_master<typename Config::master>::value;
  static constexpr bool tab_state0 = Enable && is_tabulable_codec<typename Config::state0>::value;
  static constexpr bool tab_state1 = Enable && is_tabulable_codec<typename Config::state1>::value;
  static constexpr bool any = tab_master || tab_state0 || tab_state1;

  using rule = typename Config::rule;
  using master = std::conditional_t<tab_master, tabulated_master<typename Config::master, 0>, typename Config::master>;
  using param_type = typename Config::param_type;
  using aux_type = typename Config::aux_type;
  using grad_type = typename Config::grad_type;
  using state0 = std::conditional_t<tab_state0, tabulated_codec<typename Config::state0, 1>, typename Config::state0>;
  using state1 = std::conditional_t<tab_state1, tabulated_codec<typename Config::state1, 2>, typename Config::state1>;
  using hyper = typename Config::hyper;
  using scalars = typename Config::scalars;
  static constexpr bool has_aux = Config::has_aux;
  static constexpr int group_size = Config::group_size;

  /// Dynamic shared memory a launch must reserve.
  static constexpr std::size_t shared_bytes = any ? table_slots * table_entries * sizeof(float) : 0;

  /// Every thread of the block calls this, then the block synchronizes.
  FLASHOPTIM_DEVICE FLASHOPTIM_INLINE static void fill_tables() {
#if FLASHOPTIM_DEVICE_CODE
    if constexpr (any) {
      float* t = shared_tables();
      for (unsigned b = threadIdx.x; b < static_cast<unsigned>(table_entries); b += blockDim.x) {
        if constexpr (tab_master) t[0 * table_entries + b] = master::entry(b);
        if constexpr (tab_state0) t[1 * table_entries + b] = state0::entry(b);
        if constexpr (tab_state1) t[2 * table_entries + b] = state1::entry(b);
      }
    }
#endif
  }
};

}  // namespace flashoptim::kernel
