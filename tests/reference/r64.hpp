// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// R64 (docs/test-matrix.md): the optimizers in double with fp64 master weights and
// fp64 states, PyTorch semantics, no quantization. The distance of a
// compressed trajectory from this is what the fidelity tests report.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "reference/r32.hpp"

namespace ref {

struct r64_state {
  std::vector<double> p, m, v, vmax;  ///< vmax: AMSGrad's max_exp_avg_sq
};

inline void r64_step(const rule_desc& r, r64_state& s, const std::vector<double>& grad, std::int64_t t,
                     double inv_scale = 1.0) {
  const std::size_t n = s.p.size();
  if (s.m.size() != n) s.m.assign(n, 0.0);
  if (s.v.size() != n) s.v.assign(n, 0.0);
  if (r.amsgrad && s.vmax.size() != n) s.vmax.assign(n, 0.0);
  const double decay = r.decouple_lr ? 1.0 - r.weight_decay * (r.lr / r.initial_lr) : 1.0 - r.lr * r.weight_decay;
  const double bc1 = 1.0 - std::pow(r.beta1, static_cast<double>(t));
  const double bc2 = 1.0 - std::pow(r.beta2, static_cast<double>(t));
  for (std::size_t i = 0; i < n; ++i) {
    double g = grad[i] * inv_scale;
    if (r.maximize) g = -g;
    double& p = s.p[i];
    double& m = s.m[i];
    double& v = s.v[i];
    switch (r.kind) {
      case rule_kind::sgd:
      case rule_kind::sgdw: {
        if (r.kind == rule_kind::sgdw) p *= decay;
        else g += r.weight_decay * p;
        double u = g;
        if (r.momentum != 0.0) {
          m = t == 1 ? g : r.momentum * m + (1.0 - r.dampening) * g;
          u = r.nesterov ? g + r.momentum * m : m;
        }
        p -= r.lr * u;
        break;
      }
      case rule_kind::adam:
      case rule_kind::adamw: {
        if (r.kind == rule_kind::adamw) p *= decay;
        else g += r.weight_decay * p;
        m = r.beta1 * m + (1.0 - r.beta1) * g;
        v = r.beta2 * v + (1.0 - r.beta2) * g * g;
        double vd = v;
        if (r.amsgrad) vd = s.vmax[i] = std::max(s.vmax[i], v);
        p -= (r.lr / bc1) * m / (std::sqrt(vd) / std::sqrt(bc2) + r.eps);
        break;
      }
      case rule_kind::lion: {
        const double c = r.beta1 * m + (1.0 - r.beta1) * g;
        const double u = c > 0 ? 1.0 : (c < 0 ? -1.0 : 0.0);
        p = p * decay - r.lr * u;
        m = r.beta2 * m + (1.0 - r.beta2) * g;
        break;
      }
    }
  }
}

}  // namespace ref
