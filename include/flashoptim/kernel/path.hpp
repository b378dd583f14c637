// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// Which GPU encoders a configuration gets, known at compile time and
// without CUDA. The kernel runs every rule's own apply (one element per
// thread needs no vector form); what differs is the state codecs' encoders:
// for a grouped codec whose compander declares a compander_kind other than
// `generic` (codec/compander.hpp) the kernel uses its own arithmetic for
// that kind (branch-free softsign, the proven int8-softsign and uint8-sqrt
// element rules, the range-checked square root); a generic compander runs
// its own functions through the codec's general encoder. Both give the
// bytes of cpu::step_serial; the specialized ones are the faster.
#pragma once

#include <type_traits>
#include <utility>

#include "flashoptim/codec/compander.hpp"
#include "flashoptim/codec/state.hpp"

namespace flashoptim::kernel {

enum class path {
  specialized,  ///< every grouped slot's compander has a kernel form
  generic,      ///< some slot's compander runs through its own functions
};

namespace detail {
template <class C, bool Grouped = codec::is_grouped<C>::value>
struct slot_specialized : std::true_type {};
template <class C>
struct slot_specialized<C, true>
    : std::bool_constant<codec::compander_kind_of<typename C::compander> != codec::compander_kind::generic> {};

template <class Config, int... I>
constexpr bool all_slots_specialized(std::integer_sequence<int, I...>) {
  return (slot_specialized<typename Config::template state<I>>::value && ...);
}
}  // namespace detail

/// The GPU path of Config's state codecs.
template <class Config>
constexpr path path_of() {
  return detail::all_slots_specialized<Config>(std::make_integer_sequence<int, Config::num_slots>{})
             ? path::specialized
             : path::generic;
}

/// True when the kernel has its own encoder for every state slot of Config.
template <class Config>
inline constexpr bool is_specialized = path_of<Config>() == path::specialized;

}  // namespace flashoptim::kernel
