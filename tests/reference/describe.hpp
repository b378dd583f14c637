// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// Maps a library step_config onto R32's run-time description, and views an
// R32 tensor's byte buffers as the library's tensor_ref, so both step the
// same bytes and can be compared bitwise.
#pragma once

#include <type_traits>

#include "flashoptim/flashoptim.hpp"
#include "reference/r32.hpp"

namespace ref {

template <class T>
struct describe_master;
template <class T>
struct describe_master<flashoptim::codec::native<T>> {
  static master_desc get() { return {master_kind::native, flashoptim::dtype_v<T>, dtype::none, 0}; }
};
template <class T>
struct describe_master<flashoptim::codec::fp32_master<T>> {
  static master_desc get() { return {master_kind::fp32_master, flashoptim::dtype_v<T>, dtype::f32, 0}; }
};
template <class T, class C>
struct describe_master<flashoptim::codec::ulp_correction<T, C>> {
  static master_desc get() {
    return {master_kind::ulp_correction, flashoptim::dtype_v<T>, flashoptim::dtype_v<C>,
            flashoptim::codec::ulp_correction<T, C>::max_code};
  }
};
template <>
struct describe_master<flashoptim::codec::exact_split> {
  static master_desc get() { return {master_kind::exact_split, dtype::bf16, dtype::u16, 0}; }
};
template <>
struct describe_master<flashoptim::codec::rounded_split> {
  static master_desc get() { return {master_kind::rounded_split, dtype::bf16, dtype::i8, 0}; }
};

template <class C>
struct describe_codec;
template <>
struct describe_codec<flashoptim::codec::none> {
  static codec_desc get() { return {}; }
};
template <class T, flashoptim::format::rounding R>
struct describe_codec<flashoptim::codec::plain<T, R>> {
  static codec_desc get() {
    codec_desc d;
    d.kind = codec_kind::plain;
    d.element = flashoptim::dtype_v<T>;
    d.stochastic = R == flashoptim::format::rounding::stochastic;
    return d;
  }
};

template <class X> struct code_dtype;
template <bool S> struct code_dtype<flashoptim::codec::int8_code<S>> { static constexpr dtype value = dtype::i8; };
template <bool S> struct code_dtype<flashoptim::codec::uint8_code<S>> { static constexpr dtype value = dtype::u8; };
template <class T> struct code_dtype<flashoptim::codec::fp8_code<T>> { static constexpr dtype value = flashoptim::dtype_v<T>; };
template <class X> struct compander_of;
template <> struct compander_of<flashoptim::codec::identity> { static constexpr compander_kind value = compander_kind::identity; };
template <> struct compander_of<flashoptim::codec::softsign> { static constexpr compander_kind value = compander_kind::softsign; };
template <> struct compander_of<flashoptim::codec::sqrt_compander> { static constexpr compander_kind value = compander_kind::sqrt; };
template <class X> struct scale_of;
template <> struct scale_of<flashoptim::codec::scale_fp32> { static constexpr scale_kind value = scale_kind::fp32; };
template <> struct scale_of<flashoptim::codec::scale_fp16_reference> { static constexpr scale_kind value = scale_kind::fp16_reference; };
template <> struct scale_of<flashoptim::codec::scale_rounded_up<flashoptim::bf16>> { static constexpr scale_kind value = scale_kind::bf16_up; };
template <> struct scale_of<flashoptim::codec::scale_rounded_up<flashoptim::fp16>> { static constexpr scale_kind value = scale_kind::fp16_up; };

template <class Code, class Compander, class Scale, flashoptim::codec::code_rounding R>
struct describe_codec<flashoptim::codec::grouped<Code, Compander, Scale, R>> {
  static codec_desc get() {
    codec_desc d;
    d.kind = codec_kind::grouped;
    d.element = code_dtype<Code>::value;
    d.sentinel = Code::has_sentinel;
    d.compander = compander_of<Compander>::value;
    d.scale = scale_of<Scale>::value;
    d.rounding = R == flashoptim::codec::code_rounding::half_up           ? code_round::half_up
                 : R == flashoptim::codec::code_rounding::half_up_nonzero ? code_round::half_up_nonzero
                                                                          : code_round::stochastic;
    return d;
  }
};

template <class Rule>
rule_kind rule_kind_of() {
  using namespace flashoptim::rule;
  if (std::is_same<Rule, sgd>::value) return rule_kind::sgd;
  if (std::is_same<Rule, sgdw>::value) return rule_kind::sgdw;
  if (std::is_same<Rule, adam>::value || std::is_same<Rule, adam_amsgrad>::value) return rule_kind::adam;
  if (std::is_same<Rule, adamw>::value || std::is_same<Rule, adamw_amsgrad>::value) return rule_kind::adamw;
  return rule_kind::lion;
}

/// R32 hyperparameters from the library's.
template <class Config>
rule_desc describe_rule(const typename Config::hyper& h) {
  rule_desc r;
  r.kind = rule_kind_of<typename Config::rule>();
  r.lr = h.lr;
  r.weight_decay = h.weight_decay;
  r.decouple_lr = h.decouple_lr;
  r.initial_lr = h.initial_lr;
  r.maximize = h.maximize;
  r.amsgrad = std::is_same<typename Config::rule, flashoptim::rule::adam_amsgrad>::value ||
              std::is_same<typename Config::rule, flashoptim::rule::adamw_amsgrad>::value;
  if constexpr (std::is_same<typename Config::rule, flashoptim::rule::sgd>::value ||
                std::is_same<typename Config::rule, flashoptim::rule::sgdw>::value) {
    r.momentum = h.momentum;
    r.dampening = h.dampening;
    r.nesterov = h.nesterov;
  } else {
    r.beta1 = h.beta1;
    r.beta2 = h.beta2;
    if constexpr (!std::is_same<typename Config::rule, flashoptim::rule::lion>::value) r.eps = h.eps;
  }
  return r;
}

template <class Config>
model describe(const typename Config::hyper& h) {
  model m;
  m.rule = describe_rule<Config>(h);
  m.master = describe_master<typename Config::master>::get();
  m.grad = flashoptim::dtype_v<typename Config::grad_type>;
  static_assert(Config::num_slots <= slots, "R32 models three state slots");
  m.state[0] = describe_codec<typename Config::template state<0>>::get();
  m.state[1] = describe_codec<typename Config::template state<1>>::get();
  m.state[2] = describe_codec<typename Config::template state<2>>::get();
  return m;
}

/// The library's view of an R32 tensor's bytes.
template <class Config>
flashoptim::tensor_ref<Config> view(tensor& t) {
  using R = flashoptim::tensor_ref<Config>;
  R r;
  auto ptr = [](std::vector<std::uint8_t>& v, auto* tag) {
    using P = std::remove_pointer_t<decltype(tag)>;
    return v.empty() ? static_cast<P*>(nullptr) : reinterpret_cast<P*>(v.data());
  };
  r.param = ptr(t.param, static_cast<typename R::param_type*>(nullptr));
  r.aux = ptr(t.aux, static_cast<typename R::aux_type*>(nullptr));
  r.grad = ptr(t.grad, static_cast<typename R::grad_type*>(nullptr));
  flashoptim::for_each_slot<Config::num_slots>([&](auto s) {
    constexpr int I = decltype(s)::value;
    auto& ref = flashoptim::state_of<I>(r);
    ref.codes = ptr(t.code[I], ref.codes);
    ref.scales = ptr(t.scale[I], ref.scales);
  });
  r.size = t.n;
  r.seed = t.seed;
  return r;
}

}  // namespace ref
