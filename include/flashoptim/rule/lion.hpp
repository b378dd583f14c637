// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// Lion (Chen et al., 2023, "Symbolic Discovery of Optimization Algorithms").
#pragma once

#include "flashoptim/rule/scalars.hpp"

namespace flashoptim::rule {

/// Lion. Canonical order, in fp32:
///   c = fma(beta1, m, (1 - beta1) * g)
///   u = sign(c)                    (0 for 0, NaN for NaN)
///   p = fma(-lr, u, p * decay)     decay = 1 - lr*wd
///   m = fma(beta2, m, (1 - beta2) * g)
/// State 0 is m.
struct lion {
  static constexpr const char* name = "lion";
  static constexpr int num_states = 1;
  using vector_form = lion;  ///< rule/vector_form.hpp
  static constexpr bool decoupled_decay = true;

  struct hyper {
    double lr = 1e-4;
    double beta1 = 0.9;
    double beta2 = 0.99;
    double weight_decay = 0.0;
    bool decouple_lr = false;
    double initial_lr = 0.0;
    bool maximize = false;  ///< ascend: the gradient is negated
  };

  struct scalars {
    float neg_lr, beta1, one_minus_beta1, beta2, one_minus_beta2, decay, inv_grad_scale;
  };

  static status validate(const hyper& h) {
    FLASHOPTIM_RETURN_IF_ERROR(detail::check_nonnegative(name, "lr", h.lr));
    FLASHOPTIM_RETURN_IF_ERROR(detail::check_range(name, "beta1", h.beta1, 0.0, 1.0, false));
    FLASHOPTIM_RETURN_IF_ERROR(detail::check_range(name, "beta2", h.beta2, 0.0, 1.0, false));
    FLASHOPTIM_RETURN_IF_ERROR(detail::check_nonnegative(name, "weight_decay", h.weight_decay));
    FLASHOPTIM_RETURN_IF_ERROR(detail::check_initial_lr(name, h.decouple_lr, h.initial_lr));
    return detail::scalar_status(name, check_scalars(make_scalars(h, h.lr, 1, 1.0)));  // as the step uses them
  }

  /// Every scalar finite and the gradient multiplier positive, in fp32.
  FLASHOPTIM_HOST_DEVICE static scalar_fault check_scalars(const scalars& s) {
    scalar_fault f;
    f.finite("lr", s.neg_lr).finite("beta1", s.beta1).finite("1 - beta1", s.one_minus_beta1).finite("beta2", s.beta2);
    f.finite("1 - beta2", s.one_minus_beta2);
    f.finite("the decay factor 1 - lr * weight_decay (1 - weight_decay * lr / initial_lr with decouple_lr)", s.decay);
    return f.nonzero("inv_grad_scale", s.inv_grad_scale);
  }

  FLASHOPTIM_HOST_DEVICE static scalars make_scalars(const hyper& h, double lr, std::int64_t /*step*/,
                                                     double inv_grad_scale) {
    scalars s;
    s.neg_lr = static_cast<float>(-lr);
    s.beta1 = static_cast<float>(h.beta1);
    s.one_minus_beta1 = static_cast<float>(format::sub_rn(1.0, h.beta1));
    s.beta2 = static_cast<float>(h.beta2);
    s.one_minus_beta2 = static_cast<float>(format::sub_rn(1.0, h.beta2));
    s.decay = decay_factor(lr, h.weight_decay, h.decouple_lr, h.initial_lr);
    s.inv_grad_scale = detail::signed_grad_scale(inv_grad_scale, h.maximize);
    return s;
  }

  FLASHOPTIM_HOST_DEVICE static float sign(float c) {
    const float zero_or_nan = format::mul_rn(c, 0.0f);  // formed first: the choice stays a select
    return c > 0.0f ? 1.0f : (c < 0.0f ? -1.0f : zero_or_nan);
  }

  /// `Math` bounds every intermediate that can overflow (ieee_math: the
  /// identity; saturating_math: the recomputation of rule/tile.hpp). c needs
  /// none: only its sign is used, and an overflow keeps it.
  template <class Math = ieee_math>
  FLASHOPTIM_HOST_DEVICE static void apply(const scalars& s, float g, float& p, float (&st)[num_states],
                                           const Math& math = Math{}) {
    float& m = st[0];
    const float c = format::fma_rn(s.beta1, m, format::mul_rn(s.one_minus_beta1, g));
    p = math.bound(format::fma_rn(s.neg_lr, sign(c), math.bound(format::mul_rn(p, s.decay))));
    m = math.bound(format::fma_rn(s.beta2, m, format::mul_rn(s.one_minus_beta2, g)));
  }
};

}  // namespace flashoptim::rule
