// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// Adam and AdamW with PyTorch's semantics (torch.optim.Adam / AdamW).
#pragma once

#include "flashoptim/rule/scalars.hpp"

namespace flashoptim::rule {

/// Adam / AdamW. Per-step scalars in double, rounded once to fp32:
///   bc1 = 1 - beta1^t, bc2 = 1 - beta2^t
///   step_size = lr / bc1, inv_sqrt_bc2 = 1 / sqrt(bc2), decay = 1 - lr*wd
/// Canonical order, in fp32:
///   g' = fma(wd, p, g)                        Adam (coupled decay), else g' = g
///   p  = p * decay                            AdamW (decoupled decay)
///   m  = fma(beta1, m, (1 - beta1) * g')
///   v  = fma(beta2, v, ((1 - beta2) * g') * g')
///   d  = fma(sqrt(v), inv_sqrt_bc2, eps)      = sqrt(v) / sqrt(bc2) + eps
///   p  = fma(-step_size, m / d, p)
/// AMSGrad (torch's amsgrad=True) keeps a third state, the running maximum
/// of v, and takes the denominator from it:
///   vmax = max(vmax, v)                       (NaN propagates)
///   d  = fma(sqrt(vmax), inv_sqrt_bc2, eps)
/// maximize (torch's maximize=True): g = -g first, as the gradient
/// multiplier's sign (exact: -(a * b) = (-a) * b).
/// States: 0 = m (exp_avg), 1 = v (exp_avg_sq), 2 = vmax (max_exp_avg_sq).
template <bool Decoupled, bool AMSGrad = false>
struct adam_rule {
  static constexpr const char* name =
      AMSGrad ? (Decoupled ? "adamw_amsgrad" : "adam_amsgrad") : (Decoupled ? "adamw" : "adam");
  static constexpr int num_states = AMSGrad ? 3 : 2;
  using vector_form = adam_rule;  ///< rule/vector_form.hpp
  static constexpr bool decoupled_decay = Decoupled;
  static constexpr bool amsgrad = AMSGrad;
  /// A slot given no codec takes another slot's: vmax that of v (its
  /// values are v's values).
  static constexpr int default_codec_of[3] = {-1, -1, 1};

  struct hyper {
    double lr = 1e-3;
    double beta1 = 0.9;
    double beta2 = 0.999;
    double eps = 1e-8;
    double weight_decay = Decoupled ? 1e-2 : 0.0;
    bool decouple_lr = false;  ///< decoupled decay uses wd * lr / initial_lr (AdamW only)
    double initial_lr = 0.0;
    bool maximize = false;  ///< ascend: the gradient is negated
  };

  struct scalars {
    float beta1, one_minus_beta1, beta2, one_minus_beta2, neg_step_size, inv_sqrt_bc2, eps, weight_decay, decay,
        inv_grad_scale;
  };

  static status validate(const hyper& h) {
    FLASHOPTIM_RETURN_IF_ERROR(detail::check_nonnegative(name, "lr", h.lr));
    FLASHOPTIM_RETURN_IF_ERROR(detail::check_range(name, "beta1", h.beta1, 0.0, 1.0, true));
    FLASHOPTIM_RETURN_IF_ERROR(detail::check_range(name, "beta2", h.beta2, 0.0, 1.0, true));
    FLASHOPTIM_RETURN_IF_ERROR(detail::check_finite(name, "eps", h.eps));
    if (!(h.eps > 0.0)) return status(status_code::hyperparameter_out_of_range, "%s: eps = %g must be positive", name, h.eps);
    FLASHOPTIM_RETURN_IF_ERROR(detail::check_nonnegative(name, "weight_decay", h.weight_decay));
    if (h.decouple_lr && !Decoupled)
      return status(status_code::invalid_argument, "adam: decouple_lr applies to decoupled decay (use adamw)");
    FLASHOPTIM_RETURN_IF_ERROR(detail::check_initial_lr(name, h.decouple_lr, h.initial_lr));
    // As the step uses them: in fp32, at step 1 (the largest bias
    // corrections); validate_step_args checks the step's own.
    return detail::scalar_status(name, check_scalars(make_scalars(h, h.lr, 1, 1.0)));
  }

  /// Every scalar finite, eps and the gradient multiplier positive, in fp32.
  FLASHOPTIM_HOST_DEVICE static scalar_fault check_scalars(const scalars& s) {
    scalar_fault f;
    f.finite("beta1", s.beta1).finite("1 - beta1", s.one_minus_beta1).finite("beta2", s.beta2);
    f.finite("1 - beta2", s.one_minus_beta2).finite("the step size lr / (1 - beta1^step)", s.neg_step_size);
    f.finite("1 / sqrt(1 - beta2^step)", s.inv_sqrt_bc2).positive("eps", s.eps).finite("weight_decay", s.weight_decay);
    f.finite("the decay factor 1 - lr * weight_decay (1 - weight_decay * lr / initial_lr with decouple_lr)", s.decay);
    return f.nonzero("inv_grad_scale", s.inv_grad_scale);
  }

  FLASHOPTIM_HOST_DEVICE static scalars make_scalars(const hyper& h, double lr, std::int64_t step,
                                                     double inv_grad_scale) {
    const double bc1 = format::sub_rn(1.0, pow_int(h.beta1, step));
    const double bc2 = format::sub_rn(1.0, pow_int(h.beta2, step));
    scalars s;
    s.beta1 = static_cast<float>(h.beta1);
    s.one_minus_beta1 = static_cast<float>(format::sub_rn(1.0, h.beta1));
    s.beta2 = static_cast<float>(h.beta2);
    s.one_minus_beta2 = static_cast<float>(format::sub_rn(1.0, h.beta2));
    s.neg_step_size = static_cast<float>(-(lr / bc1));
    s.inv_sqrt_bc2 = static_cast<float>(1.0 / format::sqrt_rn(bc2));
    s.eps = static_cast<float>(h.eps);
    s.weight_decay = static_cast<float>(h.weight_decay);
    s.decay = decay_factor(lr, h.weight_decay, h.decouple_lr, h.initial_lr);
    s.inv_grad_scale = detail::signed_grad_scale(inv_grad_scale, h.maximize);
    return s;
  }

  /// The update with IEEE sqrt and division. `Math` lets a caller supply
  /// other implementations of those two that return the same bits where it
  /// uses them (the GPU kernel's range-checked fast paths); it also sees m
  /// and v before they are used, with the parameter the update will land on
  /// (`observe`), and bounds every intermediate that can
  /// overflow (the identity, except in saturating_math's recomputation).
  /// (1 - beta) * g cannot overflow: 1 - beta <= 1.
  template <class Math = ieee_math>
  FLASHOPTIM_HOST_DEVICE static void apply(const scalars& s, float g, float& p, float (&st)[num_states],
                                           const Math& math = Math{}) {
    float& m = st[0];
    float& v = st[1];
    if (Decoupled) {
      p = math.bound(format::mul_rn(p, s.decay));
    } else {
      g = math.bound(format::fma_rn(s.weight_decay, p, g));
    }
    m = math.bound(format::fma_rn(s.beta1, m, format::mul_rn(s.one_minus_beta1, g)));
    v = math.bound(format::fma_rn(s.beta2, v, math.bound(format::mul_rn(format::mul_rn(s.one_minus_beta2, g), g))));
    float vd = v;  // the second moment the denominator uses
    if constexpr (AMSGrad) {
      float& vmax = st[num_states - 1];
      vmax = (v != v || v > vmax) ? v : vmax;  // torch.maximum: a NaN in either propagates
      vd = vmax;
    }
    math.observe(m, vd, p);  // p: the value the update lands on
    const float d = math.bound(format::fma_rn(math.sqrt(vd), s.inv_sqrt_bc2, s.eps));
    p = math.bound(format::fma_rn(s.neg_step_size, math.bound(math.div(m, d)), p));
  }
};

using adam = adam_rule<false>;
using adamw = adam_rule<true>;
/// AMSGrad variants: three states, the third (max_exp_avg_sq) with the
/// second moment's codec unless given its own.
using adam_amsgrad = adam_rule<false, true>;
using adamw_amsgrad = adam_rule<true, true>;

}  // namespace flashoptim::rule
