// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// Which parts of a step configuration the vector CPU paths implement. A
// configuration is vectorized when its rule, master mode, gradient type and
// every state codec all are; anything else (companders without a kind, user
// code or scale formats) runs the scalar per-tile step on the same threads. Rules and companders are chosen by the
// traits they declare (rule::vector_form_t, codec::compander_kind_of), the
// library's and a user's alike (docs/extending.md). Both vector paths (AVX2, AVX-512) implement exactly this
// list, in cpu/detail/group_kernel.inl.
#pragma once

#include <type_traits>

#include "flashoptim/cpu/serial.hpp"
#include "flashoptim/rule/adam.hpp"
#include "flashoptim/rule/lion.hpp"
#include "flashoptim/rule/sgd.hpp"
#include "flashoptim/rule/vector_form.hpp"

#if defined(__GNUC__) || defined(__clang__)
#define FLASHOPTIM_CPU_NOINLINE __attribute__((noinline))
#elif defined(_MSC_VER)
#define FLASHOPTIM_CPU_NOINLINE __declspec(noinline)
#else
#define FLASHOPTIM_CPU_NOINLINE
#endif

// FLASHOPTIM_CPU_FOR_SLOTS(K, I, body...): `body` once for each slot I = 0 ..
// K-1, in order, with I a constant expression, unrolled in place. The vector
// kernels loop over slots with this rather than with for_each_slot and a
// lambda: a lambda does not inherit its enclosing function's target
// attribute, and nvcc's host front end drops an attribute written on a lambda
// (g++ then refuses to inline the always-inline vector operations into it).
// A block past K is a discarded statement of the enclosing template, never
// instantiated. It unrolls up to FLASHOPTIM_CPU_MAX_SLOTS slots (the vector
// rules keep at most 3 states; group_kernel checks its K against it).
#define FLASHOPTIM_CPU_MAX_SLOTS 4
#define FLASHOPTIM_CPU_SLOT_BLOCK(K, I, N, ...) \
  {                                             \
    constexpr int I = N;                        \
    (void)I;                                    \
    if constexpr (N < (K)) {                    \
      __VA_ARGS__                               \
    }                                           \
  }
#define FLASHOPTIM_CPU_FOR_SLOTS(K, I, ...)      \
  do {                                           \
    FLASHOPTIM_CPU_SLOT_BLOCK(K, I, 0, __VA_ARGS__) \
    FLASHOPTIM_CPU_SLOT_BLOCK(K, I, 1, __VA_ARGS__) \
    FLASHOPTIM_CPU_SLOT_BLOCK(K, I, 2, __VA_ARGS__) \
    FLASHOPTIM_CPU_SLOT_BLOCK(K, I, 3, __VA_ARGS__) \
  } while (false)

namespace flashoptim::cpu::detail {

template <class T>
inline constexpr bool is_one_of_floats =
    std::is_same<T, float>::value || std::is_same<T, bf16>::value || std::is_same<T, fp16>::value;

/// The vector forms group_kernel.inl implements (its vrule specializations):
/// arithmetic programs, which a rule names as its rule::vector_form.
template <class Form>
struct vector_form_implemented : std::false_type {};
template <bool D, bool A>
struct vector_form_implemented<rule::adam_rule<D, A>> : std::true_type {};
template <bool D>
struct vector_form_implemented<rule::sgd_rule<D>> : std::true_type {};
template <>
struct vector_form_implemented<rule::lion> : std::true_type {};

/// A rule is vectorized when it declares an implemented vector form taking
/// its scalars and states; a declared form that is not is a build error, not
/// a silent scalar path.
template <class Rule, class Form = rule::vector_form_t<Rule>>
struct vector_rule : std::bool_constant<!std::is_void<Form>::value> {
  static_assert(std::is_void<Form>::value ||
                    (vector_form_implemented<Form>::value && rule::vector_form_compatible<Rule, Form>::value),
                "Rule::vector_form must name one of the library's vector forms (adam_rule, sgd_rule, lion) whose "
                "scalars type and num_states are the rule's (rule/vector_form.hpp)");
};

template <class Master>
struct vector_master : std::false_type {};
template <class T>
struct vector_master<codec::native<T>> : std::bool_constant<is_one_of_floats<T>> {};
template <class T>
struct vector_master<codec::fp32_master<T>> : std::bool_constant<is_one_of_floats<T>> {};
template <class T, class C>
struct vector_master<codec::ulp_correction<T, C>> : std::true_type {};
template <>
struct vector_master<codec::exact_split> : std::true_type {};
template <>
struct vector_master<codec::rounded_split> : std::true_type {};

/// Companders of a known kind (codec/compander.hpp): the vector code runs
/// that kind's arithmetic.
template <class Compander>
inline constexpr bool vector_compander = codec::compander_kind_of<Compander> != codec::compander_kind::generic;

template <class Code>
struct vector_code : std::false_type {};
template <bool S>
struct vector_code<codec::int8_code<S>> : std::true_type {};
template <bool S>
struct vector_code<codec::uint8_code<S>> : std::true_type {};
template <>
struct vector_code<codec::fp8_code<fp8_e4m3>> : std::true_type {};
template <>
struct vector_code<codec::fp8_code<fp8_e5m2>> : std::true_type {};

template <class Scale>
struct vector_scale : std::false_type {};
template <>
struct vector_scale<codec::scale_fp32> : std::true_type {};
template <>
struct vector_scale<codec::scale_fp16_reference> : std::true_type {};
template <class T>
struct vector_scale<codec::scale_rounded_up<T>> : std::bool_constant<std::is_same<T, bf16>::value || std::is_same<T, fp16>::value> {};

template <class State>
struct vector_state : std::false_type {};
template <>
struct vector_state<codec::none> : std::true_type {};
// fp32 ignores the rounding mode (it stores the value); bf16 and fp16 round
// to nearest even or stochastically.
template <format::rounding R>
struct vector_state<codec::plain<float, R>> : std::true_type {};
template <format::rounding R>
struct vector_state<codec::plain<bf16, R>> : std::true_type {};
template <format::rounding R>
struct vector_state<codec::plain<fp16, R>> : std::true_type {};
template <class Code, class Compander, class Scale, codec::code_rounding R>
struct vector_state<codec::grouped<Code, Compander, Scale, R>>
    : std::bool_constant<vector_code<Code>::value && vector_compander<Compander> && vector_scale<Scale>::value> {};

template <class Config, class Seq = std::make_integer_sequence<int, Config::num_slots>>
struct vector_states;
template <class Config, int... I>
struct vector_states<Config, std::integer_sequence<int, I...>>
    : std::bool_constant<(vector_state<typename Config::template state<I>>::value && ...)> {};

template <class Config>
inline constexpr bool vectorized = vector_rule<typename Config::rule>::value &&
                                   vector_master<typename Config::master>::value &&
                                   is_one_of_floats<typename Config::grad_type> && vector_states<Config>::value;

/// The scalar step of one group, for groups the vector code leaves to it
/// (partial last groups, groups holding NaN/inf). Never inlined, so it keeps
/// the including program's default code generation even when called from a
/// function compiled for a wider instruction set.
template <class Config>
FLASHOPTIM_CPU_NOINLINE void scalar_group(const typename Config::scalars& sc, const tensor_ref<Config>& t,
                                            std::int64_t begin, std::uint64_t step) {
  step_tile_at<Config>(sc, t, begin, step);
}

template <class Config>
using scalar_group_fn = void (*)(const typename Config::scalars&, const tensor_ref<Config>&, std::int64_t,
                                 std::uint64_t);

}  // namespace flashoptim::cpu::detail
