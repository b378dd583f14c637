// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// A rule and two companders written outside include/, as docs/extending.md
// tells a user to: nothing here is known to the library by name. The rule
// and the softsign-kind compander declare the traits that put them on the
// fast paths; the quadratic compander declares nothing and takes the
// general ones (and says so through cpu::path_of / kernel::path_of).
#pragma once

#include "flashoptim/flashoptim.hpp"

namespace user {

namespace fo = flashoptim;

/// signSGD with momentum (Signum, Bernstein et al. 2018):
///   m = fma(beta, m, (1 - beta) * g);  p = fma(-lr, sign(m), p * decay)
/// which is rule::lion's arithmetic with beta1 = beta2 = beta, so it names
/// lion as its vector form and uses lion's scalars.
struct signum {
  static constexpr const char* name = "user_signum";  ///< the checkpoint's rule name
  static constexpr int num_states = 1;
  static constexpr const char* state_names[1] = {"momentum_buffer"};  ///< checkpoint keys
  using vector_form = fo::rule::lion;                                   ///< rule/vector_form.hpp
  using scalars = fo::rule::lion::scalars;

  struct hyper {
    double lr = 1e-4;
    double beta = 0.9;
    double weight_decay = 0.0;
    bool maximize = false;
  };
  /// Hyperparameters stored in a checkpoint (`maximize` is recorded apart).
  template <class H, class F>
  static void visit_hyper(H& h, F&& f) {
    f("lr", h.lr);
    f("beta", h.beta);
    f("weight_decay", h.weight_decay);
  }

  static fo::status validate(const hyper& h) {
    FLASHOPTIM_RETURN_IF_ERROR(fo::rule::detail::check_nonnegative(name, "lr", h.lr));
    FLASHOPTIM_RETURN_IF_ERROR(fo::rule::detail::check_range(name, "beta", h.beta, 0.0, 1.0, false));
    FLASHOPTIM_RETURN_IF_ERROR(fo::rule::detail::check_nonnegative(name, "weight_decay", h.weight_decay));
    return fo::rule::detail::scalar_status(name, check_scalars(make_scalars(h, h.lr, 1, 1.0)));
  }
  FLASHOPTIM_HOST_DEVICE static fo::rule::scalar_fault check_scalars(const scalars& s) {
    return fo::rule::lion::check_scalars(s);
  }
  FLASHOPTIM_HOST_DEVICE static scalars make_scalars(const hyper& h, double lr, std::int64_t, double inv_grad_scale) {
    scalars s;
    s.neg_lr = static_cast<float>(-lr);
    s.beta1 = s.beta2 = static_cast<float>(h.beta);
    s.one_minus_beta1 = s.one_minus_beta2 = static_cast<float>(fo::format::sub_rn(1.0, h.beta));
    s.decay = fo::rule::decay_factor(lr, h.weight_decay, false, 0.0);
    s.inv_grad_scale = fo::rule::detail::signed_grad_scale(inv_grad_scale, h.maximize);
    return s;
  }
  template <class Math = fo::rule::ieee_math>
  FLASHOPTIM_HOST_DEVICE static void apply(const scalars& s, float g, float& p, float (&st)[num_states],
                                           const Math& math = Math{}) {
    float& m = st[0];
    m = math.bound(fo::format::fma_rn(s.beta1, m, fo::format::mul_rn(s.one_minus_beta1, g)));
    p = math.bound(fo::format::fma_rn(s.neg_lr, fo::rule::lion::sign(m), math.bound(fo::format::mul_rn(p, s.decay))));
  }
};

/// A softsign written by the user, declaring that it computes softsign.
struct my_softsign {
  static constexpr const char* name = "my_softsign";
  static constexpr fo::codec::compander_kind kind = fo::codec::compander_kind::softsign;
  FLASHOPTIM_HOST_DEVICE static float pre(float x) { return x; }
  FLASHOPTIM_HOST_DEVICE static float post(float n) {
    return fo::format::div_rn(fo::format::add_rn(n, n), fo::format::add_rn(1.0f, fo::format::abs_bits(n)));
  }
  FLASHOPTIM_HOST_DEVICE static float post_inverse(float y) {
    return fo::format::div_rn(y, fo::format::sub_rn(2.0f, fo::format::abs_bits(y)));
  }
  FLASHOPTIM_HOST_DEVICE static float pre_inverse(float t) { return t; }
};

/// y = n (2 - |n|): monotone on [-1, 1], twice the resolution near zero
/// (like softsign, another curve). No kind: its own functions run.
struct quadratic_compander {
  static constexpr const char* name = "user_quadratic";
  FLASHOPTIM_HOST_DEVICE static float pre(float x) { return x; }
  FLASHOPTIM_HOST_DEVICE static float post(float n) {
    return fo::format::mul_rn(n, fo::format::sub_rn(2.0f, fo::format::abs_bits(n)));
  }
  /// n = sign(y) (1 - sqrt(1 - |y|))
  FLASHOPTIM_HOST_DEVICE static float post_inverse(float y) {
    const float a = fo::format::sub_rn(1.0f, fo::format::sqrt_rn(fo::format::sub_rn(1.0f, fo::format::abs_bits(y))));
    return y < 0.0f ? -a : a;
  }
  FLASHOPTIM_HOST_DEVICE static float pre_inverse(float t) { return t; }
};

using momentum_codec = fo::codec::grouped<fo::codec::int8_code<true>, my_softsign, fo::codec::scale_fp32,
                                          fo::codec::code_rounding::half_up>;
using quadratic_codec = fo::codec::grouped<fo::codec::int8_code<true>, quadratic_compander, fo::codec::scale_fp32,
                                           fo::codec::code_rounding::half_up>;

/// The user rule and compander on every fast path.
using signum_config = fo::step_config<signum, fo::codec::ulp_correction<fo::bf16, std::int8_t>, fo::bf16, momentum_codec>;
/// The library's AdamW with the user's softsign for m (fast paths too).
using adamw_user_softsign = fo::step_config<fo::rule::adamw, fo::codec::ulp_correction<fo::bf16, std::int8_t>, fo::bf16,
                                            momentum_codec, fo::codec::defaults::second_moment>;
/// The user rule with a compander of no kind: the general paths.
using signum_quadratic = fo::step_config<signum, fo::codec::ulp_correction<fo::bf16, std::int8_t>, fo::bf16, quadratic_codec>;

inline signum::hyper signum_hyper() {
  signum::hyper h;
  h.lr = 1e-2;
  h.beta = 0.9;
  h.weight_decay = 0.1;
  return h;
}

}  // namespace user
