// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// The per-call inputs of a step besides the buffers, and their validation.
#pragma once

#include "flashoptim/rule/config.hpp"
#include "flashoptim/rule/scalars.hpp"

namespace flashoptim {

/// What changes from one step to the next. The learning rate lives in the
/// rule's hyperparameters (set it there each step for a schedule).
struct step_args {
  std::int64_t step = 1;         ///< 1-based step count (bias corrections, SGD's first step)
  double inv_grad_scale = 1.0;   ///< gradients are multiplied by this (AMP unscale)
  bool skip = false;             ///< when set, the step writes nothing
};

/// The fp32 scalars of one step (host path).
template <class Config>
typename Config::scalars make_step_scalars(const typename Config::hyper& h, const step_args& a) {
  return Config::rule::make_scalars(h, h.lr, a.step, a.inv_grad_scale);
}

/// Hyperparameters and per-step inputs, checked before anything is written:
/// in double, then as the step uses them, the fp32 scalars of this step
/// (Rule::check_scalars: a value that is finite in double but not in fp32,
/// or an eps or gradient multiplier that rounds to 0, is refused).
template <class Config>
status validate_step_args(const typename Config::hyper& h, const step_args& a) {
  FLASHOPTIM_RETURN_IF_ERROR(Config::rule::validate(h));
  FLASHOPTIM_RETURN_IF_ERROR(rule::validate_step(Config::rule::name, h.lr, a.step, a.inv_grad_scale));
  return rule::detail::scalar_status(Config::rule::name, Config::rule::check_scalars(make_step_scalars<Config>(h, a)));
}

}  // namespace flashoptim
