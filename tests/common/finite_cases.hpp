// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// Finite adversarial inputs for the finite-arithmetic guarantee
// (docs/finite-arithmetic.md): hyperparameters at their validated bounds,
// parameters near their format's largest value, gradients up to their
// format's largest value; and the check that every parameter, master,
// correction and state of a tensor is finite. Shared by the CPU and GPU
// property tests.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <type_traits>
#include <vector>

#include "common/data.hpp"
#include "flashoptim/flashoptim.hpp"

namespace finite_cases {

using namespace flashoptim;

/// The largest finite value of T.
template <class T>
float max_finite() {
  if constexpr (std::is_same<T, float>::value) {
    return format::float_from_bits(format::max_finite_bits);
  } else {
    using bits_t = decltype(T{}.bits);
    return format::to_float(T{static_cast<bits_t>(format::format_traits<T>::spec::max_finite_bits)});
  }
}

/// Hyperparameter sets at the edges validation accepts: 0 huge lr and
/// weight decay with the smallest eps; 1 ordinary values (the gradients and
/// the multiplier overflow instead); 2 betas next to 1, decouple_lr with a
/// tiny initial lr, huge decay.
template <class Config>
typename Config::hyper hyper_set(int which) {
  using R = typename Config::rule;
  typename Config::hyper h;
  if constexpr (std::is_same<R, rule::sgd>::value || std::is_same<R, rule::sgdw>::value) {
    const bool mom = Config::state0::stores_state;
    if (which == 0) h.lr = 1e30, h.momentum = mom ? 1e30 : 0.0, h.nesterov = mom, h.weight_decay = 1e6;
    if (which == 1) h.lr = 1e-2, h.momentum = mom ? 0.9 : 0.0, h.weight_decay = 1e-2;
    if (which == 2) h.lr = 1.0, h.momentum = mom ? 0.999 : 0.0, h.dampening = 0.5, h.weight_decay = 1e10;
  } else if constexpr (std::is_same<R, rule::lion>::value) {
    if (which == 0) h.lr = 1e30, h.beta1 = 0.99, h.beta2 = 0.999, h.weight_decay = 1e6;
    if (which == 1) h.lr = 1e-4, h.weight_decay = 0.1;
    if (which == 2) h.lr = 1.0, h.beta1 = 1.0, h.beta2 = 0.9999999, h.weight_decay = 1e10;
  } else {
    if (which == 0) h.lr = 1e30, h.beta1 = 0.99999, h.beta2 = 0.999, h.eps = 1e-45, h.weight_decay = 1e6;
    if (which == 1) h.lr = 1e-3, h.weight_decay = 1e-2;
    if (which == 2) h.lr = 1.0, h.beta1 = 0.9999999, h.beta2 = 0.99999999999, h.eps = 1e-45, h.weight_decay = 1e10;
  }
  if constexpr (R::decoupled_decay) {
    if (which == 2) h.decouple_lr = true, h.initial_lr = 1e-20;
  }
  return h;
}

/// The gradient multiplier of a hyperparameter set: huge for set 1.
inline double inv_grad_scale(int which) { return which == 1 ? 1e30 : 1.0; }

inline float signed_unit(testdata::generator& gen) { return gen.uniform() < 0.5 ? -1.0f : 1.0f; }

/// A magnitude from 2^-150 to `top`, or `top` itself, or 0.
inline float wild(testdata::generator& gen, float top) {
  const std::uint32_t pick = gen.u32() % 8u;
  if (pick == 0) return 0.0f;
  if (pick <= 2) return top * static_cast<float>(0.5 + 0.5 * gen.uniform());
  if (pick == 3) return top;
  const float x = std::ldexp(static_cast<float>(0.5 + 0.5 * gen.uniform()), static_cast<int>(gen.u32() % 280u) - 150);
  return x > top ? top : x;
}

/// Parameters near the parameter format's largest value, and others.
template <class Config>
void init_params(const tensor_ref<Config>& r, testdata::generator& gen) {
  const float top = format::finite_limit<typename Config::param_type>();
  for (std::int64_t i = 0; i < r.size; ++i) {
    const float x = signed_unit(gen) * wild(gen, top);
    typename Config::aux_type a{};
    Config::master::encode(x, r.param[i], a);
    if constexpr (Config::has_aux) r.aux[i] = a;
  }
}

/// Gradients up to the gradient format's largest value.
template <class Config>
void fill_grads(typename Config::grad_type* g, std::int64_t n, testdata::generator& gen) {
  using G = typename Config::grad_type;
  const float top = max_finite<G>();
  for (std::int64_t i = 0; i < n; ++i) g[i] = format::from_float<G>(signed_unit(gen) * wild(gen, top));
}

/// Whether every parameter, decoded master, correction and decoded state of
/// r is finite; `where` names the first that is not.
/// f(slot_index<I>{}) for the slot I == slot.
template <class Config, class F>
void with_slot_index(int slot, F&& f) {
  for_each_slot<Config::num_slots>([&](auto k) {
    if (decltype(k)::value == slot) f(k);
  });
}

template <class Config>
bool all_finite(const tensor_ref<Config>& r, std::string& where) {
  char buf[160];
  for (std::int64_t i = 0; i < r.size; ++i) {
    typename Config::aux_type a{};
    if constexpr (Config::has_aux) a = r.aux[i];
    const float p = format::to_float(r.param[i]);
    const float x = Config::master::decode(r.param[i], a);
    if (!std::isfinite(p) || !std::isfinite(x)) {
      std::snprintf(buf, sizeof buf, "element %lld: parameter %g, master %g", static_cast<long long>(i), p, x);
      where = buf;
      return false;
    }
  }
  std::vector<float> s(static_cast<std::size_t>(r.size));
  for (int slot = 0; slot < Config::num_slots; ++slot) {
    bool stored = false;
    with_slot_index<Config>(slot, [&](auto k) {
      using S = typename Config::template state<decltype(k)::value>;
      stored = S::stores_state;
      if constexpr (S::stores_state)
        codec::dequantize<S>(state_of<decltype(k)::value>(r).codes, state_of<decltype(k)::value>(r).scales, r.size,
                             s.data());
    });
    if (!stored) continue;
    for (std::int64_t i = 0; i < r.size; ++i) {
      if (!std::isfinite(s[static_cast<std::size_t>(i)])) {
        std::snprintf(buf, sizeof buf, "element %lld: state %d = %g", static_cast<long long>(i), slot,
                      s[static_cast<std::size_t>(i)]);
        where = buf;
        return false;
      }
    }
  }
  return true;
}

}  // namespace finite_cases
