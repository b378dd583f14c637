// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// State slots: a rule keeps Rule::num_states per-element states (Adam: m and
// v; AMSGrad adds max(v)), each stored by its own codec. Everything that
// moves a tensor's buffers (validation, binding, tiles, kernels, layout,
// checkpoints) is written as a loop over slots with these helpers, so a rule
// with another state is one more codec, not an edit of every header.
//
// slot_list is a recursive aggregate rather than std::tuple: it must stay
// trivially copyable (tensor views are copied into device tables and
// __grid_constant__ parameters) and usable in device code.
#pragma once

#include <type_traits>
#include <utility>

#include "flashoptim/codec/state.hpp"
#include "flashoptim/config.hpp"

namespace flashoptim {

/// A compile-time slot index, what for_each_slot hands its body.
template <int I>
using slot_index = std::integral_constant<int, I>;

namespace detail {
// (f may be host-only, from host code: config.hpp, FLASHOPTIM_EXEC_CHECK_DISABLE)
FLASHOPTIM_EXEC_CHECK_DISABLE
template <class F, int... I>
FLASHOPTIM_HOST_DEVICE FLASHOPTIM_INLINE void for_each_slot_impl(F&& f, std::integer_sequence<int, I...>) {
  (f(slot_index<I>{}), ...);
}
FLASHOPTIM_EXEC_CHECK_DISABLE
template <class F, int... I>
FLASHOPTIM_HOST_DEVICE FLASHOPTIM_INLINE constexpr bool any_slot_impl(F&& f, std::integer_sequence<int, I...>) {
  return (false || ... || f(slot_index<I>{}));
}
}  // namespace detail

/// Calls f(slot_index<I>{}) for I = 0 .. K-1, in order (unrolled at compile time).
template <int K, class F>
FLASHOPTIM_HOST_DEVICE FLASHOPTIM_INLINE void for_each_slot(F&& f) {
  detail::for_each_slot_impl(f, std::make_integer_sequence<int, K>{});
}
/// Whether f(slot_index<I>{}) holds for some I < K (left to right, stops at the first).
template <int K, class F>
FLASHOPTIM_HOST_DEVICE FLASHOPTIM_INLINE constexpr bool any_slot(F&& f) {
  return detail::any_slot_impl(f, std::make_integer_sequence<int, K>{});
}

namespace detail {
template <template <int> class P, class Seq>
struct any_of_slots_impl;
template <template <int> class P, int... I>
struct any_of_slots_impl<P, std::integer_sequence<int, I...>> : std::bool_constant<(false || ... || P<I>::value)> {};
}  // namespace detail
/// Whether P<I>::value holds for some slot I < K (a compile-time query:
/// no lambda, so it reads the same to every compiler, nvcc included).
template <int K, template <int> class P>
inline constexpr bool any_of_slots = detail::any_of_slots_impl<P, std::make_integer_sequence<int, K>>::value;

/// One value per slot, of per-slot types. The last element has no empty
/// tail member, so a list of pointer pairs has the layout of the pairs
/// written out one after the other.
template <class... Ts>
struct slot_list;
template <class T0>
struct slot_list<T0> {
  T0 head;
};
template <class T0, class T1, class... Ts>
struct slot_list<T0, T1, Ts...> {
  T0 head;
  slot_list<T1, Ts...> tail;
};

namespace detail {
template <int I>
struct slot_get {
  template <class L>
  FLASHOPTIM_HOST_DEVICE FLASHOPTIM_INLINE static constexpr auto& get(L& l) {
    return slot_get<I - 1>::get(l.tail);
  }
};
template <>
struct slot_get<0> {
  template <class L>
  FLASHOPTIM_HOST_DEVICE FLASHOPTIM_INLINE static constexpr auto& get(L& l) {
    return l.head;
  }
};

template <int I, class... Ts>
struct nth_type;
template <class T0, class... Ts>
struct nth_type<0, T0, Ts...> {
  using type = T0;
};
template <int I, class T0, class... Ts>
struct nth_type<I, T0, Ts...> : nth_type<I - 1, Ts...> {};
}  // namespace detail

/// Element I of a slot_list.
template <int I, class L>
FLASHOPTIM_HOST_DEVICE FLASHOPTIM_INLINE constexpr auto& slot_at(L& l) {
  return detail::slot_get<I>::get(l);
}

namespace detail {
template <int I, class... Given>
struct given_or_none {
  using type = codec::none;
};
template <int I, class G0, class... Given>
struct given_or_none<I, G0, Given...> {
  using type = typename std::conditional_t<I == 0, std::enable_if<true, G0>, given_or_none<I - 1, Given...>>::type;
};
}  // namespace detail

/// A state slot's buffers in a tensor view: n codes and, for grouped
/// codecs, one scale per group. Absent pieces are null (codec::none has
/// neither).
template <class Codec>
struct state_ref {
  using codec_type = Codec;
  using code_type = typename Codec::code_type;
  using scale_type = typename Codec::scale_type;
  code_type* codes = nullptr;
  scale_type* scales = nullptr;
};

}  // namespace flashoptim
