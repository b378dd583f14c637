// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// A step configuration names the choices a fused step is built from: the
// update rule, the master-weight mode, the gradient type and one codec per
// state slot (Rule::num_states of them; slots not given are codec::none).
// Everything else (kernel, CPU path, layout, checkpoints) is derived from it.
#pragma once

#include <type_traits>
#include <utility>

#include "flashoptim/codec/master.hpp"
#include "flashoptim/codec/presets.hpp"
#include "flashoptim/rule/slots.hpp"

namespace flashoptim {

namespace detail {
template <class...>
struct type_list {};

/// The slot whose codec slot I takes when none is given (Rule declares
/// `default_codec_of[num_states]`, -1 for codec::none), else -1.
template <class Rule, int I, class = void>
struct default_codec_slot : std::integral_constant<int, -1> {};
template <class Rule, int I>
struct default_codec_slot<Rule, I, std::enable_if_t<(I < Rule::num_states) && (sizeof(Rule::default_codec_of) > 0)>>
    : std::integral_constant<int, Rule::default_codec_of[I]> {};

template <class Rule, int I, class... Given>
struct slot_codec {
  static constexpr int from = default_codec_slot<Rule, I>::value;
  using type = typename std::conditional_t<
      (I < static_cast<int>(sizeof...(Given))), given_or_none<I, Given...>,
      std::conditional_t<(from >= 0 && from < I), slot_codec<Rule, (from >= 0 && from < I ? from : 0), Given...>,
                         std::enable_if<true, codec::none>>>::type;
};
template <class Rule, class Codecs, class Seq>
struct slot_types;
template <class Rule, class... Codecs, int... I>
struct slot_types<Rule, type_list<Codecs...>, std::integer_sequence<int, I...>> {
  template <template <class> class F>
  using map = slot_list<F<typename slot_codec<Rule, I, Codecs...>::type>...>;
  static constexpr int max_group_size() {
    int g = 1;
    ((g = slot_codec<Rule, I, Codecs...>::type::group_size > g ? slot_codec<Rule, I, Codecs...>::type::group_size : g),
     ...);
    return g;
  }
};
}  // namespace detail

template <class Rule, class Master, class Grad, class... States>
struct step_config {
  static_assert(codec::is_master_mode<Master>::value, "Master must be a codec master-weight mode");
  static_assert(Rule::num_states >= 1,
                "a rule declares at least one state slot (a stateless rule leaves it codec::none)");
  static_assert(static_cast<int>(sizeof...(States)) <= Rule::num_states,
                "more state codecs than the rule has states (Rule::num_states)");

  using rule = Rule;
  using master = Master;
  using param_type = typename Master::param_type;
  using aux_type = typename Master::aux_type;
  using grad_type = Grad;
  using hyper = typename Rule::hyper;
  using scalars = typename Rule::scalars;

  /// State slots: one per rule state.
  static constexpr int num_slots = Rule::num_states;
  /// The codec of slot I (codec::none past the codecs given, and past the
  /// rule's slots, so state1 names a codec for one-state rules too).
  template <int I>
  using state = typename detail::slot_codec<Rule, I, States...>::type;
  using state0 = state<0>;
  using state1 = state<1>;
  /// F<codec of slot I> for every slot, as a slot_list.
  using slot_types =
      detail::slot_types<Rule, detail::type_list<States...>, std::make_integer_sequence<int, num_slots>>;
  template <template <class> class F>
  using slot_map = typename slot_types::template map<F>;

  static constexpr bool has_aux = !std::is_same<aux_type, none_t>::value;
  /// Elements that share a scale: 32 when any state is grouped, else 1.
  static constexpr int group_size = slot_types::max_group_size();
};

}  // namespace flashoptim
