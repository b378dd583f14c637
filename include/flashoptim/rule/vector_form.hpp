// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// Which vector form a rule has. The CPU vector kernels (cpu/detail/
// group_kernel.inl) implement a fixed set of arithmetic programs, the vector
// forms: rule::adam_rule<D, A>, rule::sgd_rule<D>, rule::lion. A rule opts in
// by naming the one its apply computes, bit for bit, for every input:
//   using vector_form = rule::lion;
// with the form's scalars as its own (`using scalars = rule::lion::scalars;`
// or the same type) and the form's number of states. The library's rules
// declare themselves (`using vector_form = lion;`), through the same trait.
// A rule without the declaration runs the scalar per-tile step on the CPU's
// threads (cpu::path_of<Config>() says so); the GPU runs every rule's own
// apply and needs no vector form.
//
// Why a named form rather than a user-written vector apply: the vector
// kernels are compiled once per instruction set with target attributes, and
// a function written outside them (a user template, a lambda) does not
// inherit that attribute, so the compiler refuses to inline the always-
// inline vector operations into it.
#pragma once

#include <type_traits>

namespace flashoptim::rule {

namespace detail {
template <class Rule, class = void>
struct vector_form_of {
  using type = void;
};
template <class Rule>
struct vector_form_of<Rule, std::void_t<typename Rule::vector_form>> {
  using type = typename Rule::vector_form;
};
}  // namespace detail

/// Rule::vector_form when the rule declares one, else void.
template <class Rule>
using vector_form_t = typename detail::vector_form_of<Rule>::type;

template <class Rule>
inline constexpr bool has_vector_form = !std::is_void<vector_form_t<Rule>>::value;

/// Whether Rule's declared vector form takes Rule's scalars and states (the
/// vector kernel hands Rule's scalars to the form's arithmetic).
template <class Rule, class Form = vector_form_t<Rule>, class = void>
struct vector_form_compatible : std::false_type {};
template <class Rule, class Form>
struct vector_form_compatible<Rule, Form, std::enable_if_t<!std::is_void<Form>::value>>
    : std::bool_constant<std::is_same<typename Rule::scalars, typename Form::scalars>::value &&
                         Rule::num_states == Form::num_states> {};

}  // namespace flashoptim::rule
