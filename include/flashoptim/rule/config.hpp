// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// A step configuration names the four choices a fused step is built from:
// the update rule, the master-weight mode, the gradient type and one codec
// per state slot. Everything else (kernel, CPU path, layout, checkpoints) is
// derived from it.
#pragma once

#include <type_traits>

#include "flashoptim/codec/master.hpp"
#include "flashoptim/codec/presets.hpp"

namespace flashoptim {

template <class Rule, class Master, class Grad, class State0 = codec::none, class State1 = codec::none>
struct step_config {
  static_assert(codec::is_master_mode<Master>::value, "Master must be a codec master-weight mode");
  static_assert(Rule::num_states >= 2 || std::is_same<State1, codec::none>::value,
                "this rule has one state: leave State1 as codec::none");
  static_assert(Rule::num_states >= 1 || std::is_same<State0, codec::none>::value, "this rule has no state");

  using rule = Rule;
  using master = Master;
  using param_type = typename Master::param_type;
  using aux_type = typename Master::aux_type;
  using grad_type = Grad;
  using state0 = State0;
  using state1 = State1;
  using hyper = typename Rule::hyper;
  using scalars = typename Rule::scalars;

  static constexpr bool has_aux = !std::is_same<aux_type, none_t>::value;
  /// Elements that share a scale: 32 when any state is grouped, else 1.
  static constexpr int group_size = State0::group_size > State1::group_size ? State0::group_size : State1::group_size;
};

}  // namespace flashoptim
