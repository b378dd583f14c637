// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// The rules' hyperparameters by name, without nanobind: shared by the
// binding (binding.hpp) and the CUDA translation units, which nvcc compiles
// without nanobind's headers.
#pragma once

#include "flashoptim/rule/adam.hpp"
#include "flashoptim/rule/lion.hpp"
#include "flashoptim/rule/sgd.hpp"

namespace flashoptim::python {

template <class R>
struct rule_kind {
  static constexpr int value = -1;
};
template <bool D, bool A>
struct rule_kind<rule::adam_rule<D, A>> {
  static constexpr int value = 0;
};
template <bool D>
struct rule_kind<rule::sgd_rule<D>> {
  static constexpr int value = 1;
};
template <>
struct rule_kind<rule::lion> {
  static constexpr int value = 2;
};

/// Calls f(name, field&) for every hyperparameter of Rule.
template <class Rule, class H, class F>
void visit_hyper(H& h, F&& f) {
  constexpr int k = rule_kind<Rule>::value;
  static_assert(k >= 0, "binding: a rule the binding does not know");
  f("lr", h.lr);
  if constexpr (k == 0) {
    f("beta1", h.beta1);
    f("beta2", h.beta2);
    f("eps", h.eps);
  } else if constexpr (k == 1) {
    f("momentum", h.momentum);
    f("dampening", h.dampening);
    f("nesterov", h.nesterov);
  } else {
    f("beta1", h.beta1);
    f("beta2", h.beta2);
  }
  f("weight_decay", h.weight_decay);
  f("decouple_lr", h.decouple_lr);
  f("initial_lr", h.initial_lr);
  f("maximize", h.maximize);
}

}  // namespace flashoptim::python
