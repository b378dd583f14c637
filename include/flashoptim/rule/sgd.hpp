// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// SGD and SGDW with PyTorch's semantics (torch.optim.SGD).
#pragma once

#include "flashoptim/rule/scalars.hpp"

namespace flashoptim::rule {

/// SGD / SGDW. Canonical order, in fp32:
///   g' = fma(wd, p, g)                       coupled decay (SGD), else g' = g
///   p  = p * decay                           decoupled decay (SGDW), decay = 1 - lr*wd
///   m  = step == 1 ? g' : fma(mu, m, (1 - dampening) * g')   PyTorch: buffer = g' on step 1
///   u  = nesterov ? fma(mu, m, g') : m       (mu = 0: u = g', no state)
///   p  = fma(-lr, u, p)
/// State 0 is the momentum buffer; with momentum = 0 use codec::none for it.
template <bool Decoupled>
struct sgd_rule {
  static constexpr const char* name = Decoupled ? "sgdw" : "sgd";
  static constexpr int num_states = 1;
  using vector_form = sgd_rule;  ///< rule/vector_form.hpp
  static constexpr bool decoupled_decay = Decoupled;

  struct hyper {
    double lr = 1e-3;
    double momentum = 0.0;
    double dampening = 0.0;
    double weight_decay = 0.0;
    bool nesterov = false;
    bool decouple_lr = false;  ///< decoupled decay uses wd * lr / initial_lr (SGDW only)
    double initial_lr = 0.0;
    bool maximize = false;  ///< ascend: the gradient is negated (torch's maximize)
  };

  struct scalars {
    float neg_lr, weight_decay, decay, momentum, one_minus_dampening, inv_grad_scale;
    bool first_step, nesterov, has_momentum;
  };

  static status validate(const hyper& h) {
    FLASHOPTIM_RETURN_IF_ERROR(detail::check_nonnegative(name, "lr", h.lr));
    FLASHOPTIM_RETURN_IF_ERROR(detail::check_nonnegative(name, "momentum", h.momentum));
    FLASHOPTIM_RETURN_IF_ERROR(detail::check_range(name, "dampening", h.dampening, 0.0, 1.0, false));
    FLASHOPTIM_RETURN_IF_ERROR(detail::check_nonnegative(name, "weight_decay", h.weight_decay));
    if (h.nesterov && (h.momentum <= 0.0 || h.dampening != 0.0))
      return status(status_code::invalid_argument, "%s: nesterov needs momentum > 0 and dampening = 0", name);
    if (h.decouple_lr && !Decoupled)
      return status(status_code::invalid_argument, "sgd: decouple_lr applies to decoupled decay (use sgdw)");
    FLASHOPTIM_RETURN_IF_ERROR(detail::check_initial_lr(name, h.decouple_lr, h.initial_lr));
    return detail::scalar_status(name, check_scalars(make_scalars(h, h.lr, 1, 1.0)));  // as the step uses them
  }

  /// Every scalar finite and the gradient multiplier positive, in fp32.
  FLASHOPTIM_HOST_DEVICE static scalar_fault check_scalars(const scalars& s) {
    scalar_fault f;
    f.finite("lr", s.neg_lr).finite("weight_decay", s.weight_decay).finite("momentum", s.momentum);
    f.finite("the decay factor 1 - lr * weight_decay (1 - weight_decay * lr / initial_lr with decouple_lr)", s.decay);
    f.finite("1 - dampening", s.one_minus_dampening);
    return f.nonzero("inv_grad_scale", s.inv_grad_scale);
  }

  FLASHOPTIM_HOST_DEVICE static scalars make_scalars(const hyper& h, double lr, std::int64_t step,
                                                     double inv_grad_scale) {
    scalars s;
    s.neg_lr = static_cast<float>(-lr);
    s.weight_decay = static_cast<float>(h.weight_decay);
    s.decay = decay_factor(lr, h.weight_decay, h.decouple_lr, h.initial_lr);
    s.momentum = static_cast<float>(h.momentum);
    s.one_minus_dampening = static_cast<float>(format::sub_rn(1.0, h.dampening));
    s.inv_grad_scale = detail::signed_grad_scale(inv_grad_scale, h.maximize);
    s.first_step = step == 1;
    s.nesterov = h.nesterov;
    s.has_momentum = h.momentum != 0.0;
    return s;
  }

  /// `Math` bounds every intermediate that can overflow (ieee_math: the
  /// identity; saturating_math: the recomputation of rule/tile.hpp).
  template <class Math = ieee_math>
  FLASHOPTIM_HOST_DEVICE static void apply(const scalars& s, float g, float& p, float (&st)[num_states],
                                           const Math& math = Math{}) {
    float& m = st[0];
    if (Decoupled) {
      p = math.bound(format::mul_rn(p, s.decay));
    } else {
      g = math.bound(format::fma_rn(s.weight_decay, p, g));
    }
    float u = g;
    if (s.has_momentum) {
      m = s.first_step ? g : math.bound(format::fma_rn(s.momentum, m, format::mul_rn(s.one_minus_dampening, g)));
      u = s.nesterov ? math.bound(format::fma_rn(s.momentum, m, g)) : m;
    }
    p = math.bound(format::fma_rn(s.neg_lr, u, p));
  }
};

using sgd = sgd_rule<false>;
using sgdw = sgd_rule<true>;

}  // namespace flashoptim::rule
