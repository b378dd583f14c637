// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// What a checkpoint records about the configuration that wrote it: a stable
// text name for each master-weight mode and state codec, the state keys of
// each rule (the reference implementation's names, so files map one-to-one
// onto its state dicts), and the list of hyperparameter fields.
//
// A grouped codec's Code, Compander and Scale each need a `name` (the shipped
// ones have one; a user compander without one does not compile here).
// The names are the configuration's identity on disk: the loader compares
// them to refuse a file written for another layout, and tools/ scripts write
// them. Changing one is a format change (docs/io.md lists them all).
#pragma once

#include <string>
#include <type_traits>

#include "flashoptim/codec/state.hpp"
#include "flashoptim/format/dtype.hpp"
#include "flashoptim/rule/adam.hpp"
#include "flashoptim/rule/config.hpp"
#include "flashoptim/rule/lion.hpp"
#include "flashoptim/rule/sgd.hpp"

namespace flashoptim::io {

inline const char* to_string(format::rounding r) {
  return r == format::rounding::stochastic ? "stochastic" : "nearest_even";
}

/// "native<bf16>", "fp32_master<fp16>", "ulp_correction<bf16,int8>", "exact_split",
/// "rounded_split".
template <class Master>
std::string describe_master() {
  using P = typename Master::param_type;
  using A = typename Master::aux_type;
  if constexpr (std::is_same<Master, codec::exact_split>::value) {
    return "exact_split";
  } else if constexpr (std::is_same<Master, codec::rounded_split>::value) {
    return "rounded_split";
  } else if constexpr (std::is_same<A, none_t>::value || std::is_same<A, float>::value) {
    return std::string(Master::name) + "<" + to_string(dtype_v<P>) + ">";
  } else {
    return std::string(Master::name) + "<" + to_string(dtype_v<P>) + "," + to_string(dtype_v<A>) + ">";
  }
}

namespace detail {
template <class C>
struct codec_description;

template <>
struct codec_description<codec::none> {
  static std::string get() { return "none"; }
};
template <class T, format::rounding R>
struct codec_description<codec::plain<T, R>> {
  static std::string get() { return std::string("plain<") + to_string(dtype_v<T>) + "," + to_string(R) + ">"; }
};
template <class Code, class Compander, class Scale, codec::code_rounding R>
struct codec_description<codec::grouped<Code, Compander, Scale, R>> {
  static std::string get() {
    return std::string("grouped<") + Code::name + (Code::has_sentinel ? "+sentinel," : ",") + Compander::name + "," +
           Scale::name + "," + codec::to_string(R) + "," +
           std::to_string(codec::grouped<Code, Compander, Scale, R>::group_size) + ">";
  }
};

template <class C>
struct stochastic_codec : std::false_type {};
template <class T>
struct stochastic_codec<codec::plain<T, format::rounding::stochastic>> : std::true_type {};
template <class Code, class Compander, class Scale>
struct stochastic_codec<codec::grouped<Code, Compander, Scale, codec::code_rounding::stochastic>> : std::true_type {};
}  // namespace detail

/// "none", "plain<bf16,stochastic>",
/// "grouped<int8+sentinel,softsign,fp32,half_up,32>" (code[+sentinel],
/// compander, scale format, code rounding, group size).
template <class Codec>
std::string describe_codec() {
  return detail::codec_description<Codec>::get();
}

/// True when a codec's stored bytes depend on the stochastic-rounding seed.
template <class Codec>
inline constexpr bool uses_stochastic_rounding = detail::stochastic_codec<Codec>::value;

/// Checkpoint facts of an update rule: its state keys and hyperparameter
/// fields (the checkpoint names the rule itself by Rule::name). A rule
/// declares them as its own members, which the primary template reads:
///   static constexpr const char* state_names[num_states];        // one per state slot
///   template <class H, class F> static void visit_hyper(H& h, F&& f);  // f(name, double& or bool&)
/// (`maximize`, when hyper has it, is recorded without being visited), or
/// specializes rule_io with `state_names` and `visit` (the library's rules).
template <class Rule, class = void>
struct rule_io;
template <class Rule>
struct rule_io<Rule, std::void_t<decltype(Rule::state_names)>> {
  static_assert(sizeof(Rule::state_names) / sizeof(Rule::state_names[0]) == Rule::num_states,
                "Rule::state_names holds one name per state slot");
  static constexpr const char* const* state_names = Rule::state_names;
  template <class H, class F>
  static void visit(H& h, F&& f) {
    Rule::visit_hyper(h, f);
  }
};

template <bool Decoupled>
struct rule_io<rule::sgd_rule<Decoupled>> {
  static constexpr const char* state_names[1] = {"momentum_buffer"};
  template <class H, class F>
  static void visit(H& h, F&& f) {
    f("lr", h.lr);
    f("momentum", h.momentum);
    f("dampening", h.dampening);
    f("weight_decay", h.weight_decay);
    f("nesterov", h.nesterov);
    f("decouple_lr", h.decouple_lr);
    f("initial_lr", h.initial_lr);
  }
};

template <bool Decoupled, bool AMSGrad>
struct rule_io<rule::adam_rule<Decoupled, AMSGrad>> {
  /// torch's names (AMSGrad's third: max_exp_avg_sq).
  static constexpr const char* state_names[3] = {"exp_avg", "exp_avg_sq", "max_exp_avg_sq"};
  template <class H, class F>
  static void visit(H& h, F&& f) {
    f("lr", h.lr);
    f("beta1", h.beta1);
    f("beta2", h.beta2);
    f("eps", h.eps);
    f("weight_decay", h.weight_decay);
    f("decouple_lr", h.decouple_lr);
    f("initial_lr", h.initial_lr);
  }
};

template <>
struct rule_io<rule::lion> {
  static constexpr const char* state_names[1] = {"exp_avg"};
  template <class H, class F>
  static void visit(H& h, F&& f) {
    f("lr", h.lr);
    f("beta1", h.beta1);
    f("beta2", h.beta2);
    f("weight_decay", h.weight_decay);
    f("decouple_lr", h.decouple_lr);
    f("initial_lr", h.initial_lr);
  }
};

/// Which state slots of a rule never hold a negative value (Adam's second
/// moment, an average of squares): the loader refuses a file whose such
/// state is negative, which every later step would turn into NaN. A rule
/// without a specialization constrains neither slot.
template <class Rule>
struct rule_state_domain {
  static constexpr bool nonnegative[Rule::num_states] = {};
};

template <bool Decoupled, bool AMSGrad>
struct rule_state_domain<rule::adam_rule<Decoupled, AMSGrad>> {
  static constexpr bool nonnegative[3] = {false, true, true};
};

/// Name of the correction tensor of a master mode, or nullptr without one.
/// ulp_correction's int8/int16 correction is the reference's "error_bits";
/// exact_split's lower halves, rounded_split's remainders below the 24-bit
/// value's upper half and fp32_master's copies are not the same quantity, so
/// they get names of their own.
template <class Master>
constexpr const char* aux_key() {
  using A = typename Master::aux_type;
  if constexpr (std::is_same<A, none_t>::value) {
    return nullptr;
  } else if constexpr (std::is_same<Master, codec::exact_split>::value) {
    return "low_bits";
  } else if constexpr (std::is_same<Master, codec::rounded_split>::value) {
    return "low_byte";
  } else if constexpr (std::is_same<A, float>::value) {
    return "master";
  } else {
    return "error_bits";
  }
}

}  // namespace flashoptim::io
