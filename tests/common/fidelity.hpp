// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// The fidelity measurements of docs/contract.md §4 / docs/test-matrix.md C7, C8, C9, C13,
// as functions of a step configuration, so the tests can assert them and
// bench/core/codec_study can tabulate them for docs/codec-defaults.md. Each
// runs the library's CPU step next to R64 on the same gradients.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "flashoptim/flashoptim.hpp"
#include "common/typed_tensor.hpp"
#include "reference/r64.hpp"

namespace fidelity {

using namespace flashoptim;

/// A tensor driven step by step with its own hyperparameters and step count.
template <class Config>
struct run : testutil::typed_tensor<Config> {
  typename Config::hyper hyper;
  std::int64_t t = 0;

  explicit run(std::int64_t size) : testutil::typed_tensor<Config>(size) {}

  void set_master(const std::vector<double>& x) {
    for (std::int64_t i = 0; i < this->n; ++i) testutil::typed_tensor<Config>::set_master(i, static_cast<float>(x[i]));
  }
  std::vector<double> master() const {
    std::vector<double> x(this->n);
    for (std::int64_t i = 0; i < this->n; ++i) x[i] = testutil::typed_tensor<Config>::master(i);
    return x;
  }
  std::vector<double> state(int slot) const {
    const auto s = testutil::typed_tensor<Config>::state(slot);
    return std::vector<double>(s.begin(), s.end());
  }
  /// One step with these gradients (rounded to the gradient type).
  std::vector<double> step(const std::vector<double>& g) {
    for (std::int64_t i = 0; i < this->n; ++i)
      this->grad[i] = format::from_float<typename Config::grad_type>(static_cast<float>(g[i]));
    auto v = this->view(12345);
    step_args a;
    a.step = ++t;
    const status s = cpu::step_serial<Config>(hyper, a, &v, 1);
    if (!s.ok()) throw std::runtime_error(s.what());
    std::vector<double> used(this->n);
    for (std::int64_t i = 0; i < this->n; ++i) used[i] = format::to_float(this->grad[i]);
    return used;
  }
};

inline ref::rule_desc adamw_desc(double lr, double b1, double b2, double eps, double wd) {
  ref::rule_desc r;
  r.kind = ref::rule_kind::adamw;
  r.lr = lr, r.beta1 = b1, r.beta2 = b2, r.eps = eps, r.weight_decay = wd;
  return r;
}

template <class Config>
void set_adamw(run<Config>& r, const ref::rule_desc& d) {
  r.hyper.lr = d.lr, r.hyper.beta1 = d.beta1, r.hyper.beta2 = d.beta2, r.hyper.eps = d.eps, r.hyper.weight_decay = d.weight_decay;
}

/// C7: cosine between the library's and R64's total update after 20 steps of
/// gradients ~ N(0, sigma^2), AdamW, 4096 parameters.
/// AdamW (lr 1e-3, betas 0.9 / 0.999, eps 1e-8, no decay) on n parameters
/// drawn from N(0, 1), beside R64 started from the same (rounded) values;
/// step() feeds both the gradients the library actually used. Gradients
/// are drawn from the same generator after the start values.
template <class Config>
struct adamw_beside_r64 {
  run<Config> r;
  ref::rule_desc d = adamw_desc(1e-3, 0.9, 0.999, 1e-8, 0.0);
  std::mt19937_64 rng;
  std::normal_distribution<double> N{0.0, 1.0};
  ref::r64_state s64;
  int t = 0;

  adamw_beside_r64(std::int64_t n, std::uint64_t seed) : r(n), rng(seed) {
    set_adamw(r, d);
    std::vector<double> x0(n);
    for (auto& x : x0) x = N(rng);
    r.set_master(x0);
    s64.p = r.master();
  }
  void step(const std::vector<double>& g) {
    const auto used = r.step(g);
    ref::r64_step(d, s64, used, ++t);
  }
};

template <class Config>
double small_gradient_cosine(double sigma, std::uint64_t seed = 7) {
  const std::int64_t n = 4096;
  adamw_beside_r64<Config> a64(n, seed);
  const auto p0 = a64.s64.p;
  for (int t = 1; t <= 20; ++t) {
    std::vector<double> g(n);
    for (auto& x : g) x = sigma * a64.N(a64.rng);
    a64.step(g);
  }
  const auto x = a64.r.master();
  const auto& s64 = a64.s64;
  double dot = 0, a = 0, b = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    const double u = x[i] - p0[i], w = s64.p[i] - p0[i];
    dot += u * w, a += u * u, b += w * w;
  }
  return a > 0 && b > 0 ? dot / std::sqrt(a * b) : 0.0;
}

/// C8: one group of 32. For 60 steps element 0 receives a small
/// sign-consistent gradient `small` while its group-mates receive N(0, 1);
/// then element 0 receives g = 0 (an embedding row no longer touched) while
/// its group-mates' gradients grow to N(0, burst^2). Returns max |Δp_0| / lr
/// over all steps. In exact arithmetic |m| / sqrt(v) stays below ~7.3 for
/// beta = (0.9, 0.999); a second-moment code that rounds to zero while the
/// momentum survives makes the step m / eps instead.
template <class Config>
double sparse_gradient_max_step(double small, double burst, std::uint64_t seed = 3) {
  const std::int64_t n = 32;
  run<Config> r(n);
  const double lr = 1e-3;
  set_adamw(r, adamw_desc(lr, 0.9, 0.999, 1e-8, 0.0));
  r.set_master(std::vector<double>(n, 1.0));
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> N(0.0, 1.0);
  double worst = 0;
  for (int t = 1; t <= 80; ++t) {
    std::vector<double> g(n);
    for (auto& x : g) x = (t <= 60 ? 1.0 : burst) * N(rng);
    g[0] = t <= 60 ? small : 0.0;
    const double before = r.master()[0];
    r.step(g);
    worst = std::max(worst, std::fabs(r.master()[0] - before) / lr);
  }
  return worst;
}

/// C8 over a grid of small gradients and bursts: the worst step.
template <class Config>
double sparse_gradient_worst() {
  double worst = 0;
  for (double small : {3e-2, 1e-2, 3e-3, 1e-3})
    for (double burst : {1.0, 10.0, 30.0, 100.0, 300.0, 1000.0}) worst = std::max(worst, sparse_gradient_max_step<Config>(small, burst));
  return worst;
}

struct decay_result {
  double m_ratio;  ///< decoded m after 200 zero-gradient steps / (beta1^200 * m before), summed magnitudes
  double v_ratio;
};

/// C9: 20 steps of N(0, 1) gradients to fill the states, then 200 steps with
/// zero gradients and lr = 0; each state should have decayed by beta^200.
template <class Config>
decay_result ema_decay(double beta1 = 0.9, double beta2 = 0.999, std::uint64_t seed = 5) {
  const std::int64_t n = 4096;
  run<Config> r(n);
  set_adamw(r, adamw_desc(0.0, beta1, beta2, 1e-8, 0.0));
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> N(0.0, 1.0);
  r.set_master(std::vector<double>(n, 1.0));
  for (int t = 0; t < 20; ++t) {
    std::vector<double> g(n);
    for (auto& x : g) x = N(rng);
    r.step(g);
  }
  const auto m0 = r.state(0), v0 = r.state(1);
  for (int t = 0; t < 200; ++t) r.step(std::vector<double>(n, 0.0));
  const auto m1 = r.state(0), v1 = r.state(1);
  double a = 0, b = 0, c = 0, d = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    if (!std::isfinite(m1[i]) || !std::isfinite(v1[i])) return {NAN, NAN};
    a += std::fabs(m1[i]), b += std::fabs(m0[i]), c += v1[i], d += v0[i];
  }
  return {a / (std::pow(beta1, 200) * b), c / (std::pow(beta2, 200) * d)};
}

/// C9, idle rows: how far parameters move while their gradient stays 0
/// (embedding rows no batch touches, idle experts), against R64. AdamW (lr
/// 1e-3, no decay) on 256 parameters from N(0, 1): 10 steps of N(0, sigma^2)
/// gradients, then `idle` zero-gradient steps. In exact arithmetic m decays
/// by beta1^t and sqrt(v) by sqrt(beta2)^t, so the idle steps add a
/// geometric tail (R64: ~7.7 lr in all) that has ended long before step
/// `late` of the idle ones (0.9^2000). A momentum whose scale stops decaying
/// (the reference layout's fp16 scales stick at their smallest subnormals)
/// keeps m / (sqrt(v) + eps) from vanishing, and the row keeps moving.
struct idle_result {
  double library, r64;  ///< max over elements of |p_end - p_10| / lr
  double library_late;  ///< the library's max |p_end - p_(10 + late)| / lr: R64's is 0
};
template <class Config>
idle_result idle_row_drift(double sigma, int idle = 20000, int late = 2000, std::uint64_t seed = 11) {
  const std::int64_t n = 256;
  adamw_beside_r64<Config> a(n, seed);
  for (int t = 1; t <= 10; ++t) {
    std::vector<double> g(n);
    for (auto& x : g) x = sigma * a.N(a.rng);
    a.step(g);
  }
  const auto p_lib = a.r.master();
  const auto p_r64 = a.s64.p;
  const std::vector<double> zero(n, 0.0);
  std::vector<double> p_late;
  for (int t = 1; t <= idle; ++t) {
    a.step(zero);
    if (t == late) p_late = a.r.master();
  }
  const auto q_lib = a.r.master();
  idle_result r{0, 0, 0};
  for (std::int64_t i = 0; i < n; ++i) {
    r.library = std::max(r.library, std::fabs(q_lib[i] - p_lib[i]) / a.d.lr);
    r.r64 = std::max(r.r64, std::fabs(a.s64.p[i] - p_r64[i]) / a.d.lr);
    r.library_late = std::max(r.library_late, std::fabs(q_lib[i] - p_late[i]) / a.d.lr);
  }
  return r;
}

/// idle_row_drift over sigma = 1e-2, 1e-3, 1e-4: the largest late drift
/// (in lr; R64's is 0).
template <class Config>
double idle_row_late_drift_worst() {
  double worst = 0;
  for (double sigma : {1e-2, 1e-3, 1e-4}) worst = std::max(worst, idle_row_drift<Config>(sigma).library_late);
  return worst;
}

struct blast_result {
  int non_finite_params;      ///< after the bad gradient
  bool bad_state_non_finite;  ///< the bad element's states decode to NaN/inf
  double others_max_error;    ///< max |x - x64| / lr over the other elements
};

/// C13: one inf (or NaN) gradient at step 5 of 10, no skip.
template <class Config>
blast_result non_finite_blast(double bad, std::uint64_t seed = 13) {
  const std::int64_t n = 64;
  adamw_beside_r64<Config> a64(n, seed);
  for (int t = 1; t <= 10; ++t) {
    std::vector<double> g(n);
    for (auto& x : g) x = a64.N(a64.rng);
    if (t == 5) g[3] = bad;
    a64.step(g);
  }
  const auto& r = a64.r;
  const auto& s64 = a64.s64;
  const auto& d = a64.d;
  const auto x = r.master();
  blast_result b{0, false, 0.0};
  for (std::int64_t i = 0; i < n; ++i) {
    b.non_finite_params += !std::isfinite(x[i]);
    if (i != 3 && std::isfinite(x[i])) b.others_max_error = std::max(b.others_max_error, std::fabs(x[i] - s64.p[i]) / d.lr);
    if (i != 3 && !std::isfinite(x[i])) b.others_max_error = INFINITY;
  }
  const auto m = r.state(0), v = r.state(1);
  b.bad_state_non_finite = !std::isfinite(m[3]) && !std::isfinite(v[3]);
  return b;
}

/// C3 for one codec: a group whose max is each of the contract's values
/// (0, 1e-45 ... FLT_MAX) decodes finite, nonzero where nonzero, with its max
/// element within 1%. Returns the number of values that fail.
template <class Codec>
int scale_range_failures(bool non_negative) {
  int failures = 0;
  for (float amax : {0.0f, 1e-45f, 1e-12f, 2.9e-8f, 6e-8f, 6.1e-5f, 65504.0f, 65520.0f, 1e30f, 3.4028235e38f}) {
    std::vector<float> x(32);
    for (int i = 0; i < 32; ++i) x[i] = amax * (i == 7 ? 1.0f : static_cast<float>(i) / 40.0f) * (non_negative || i % 2 ? 1.0f : -1.0f);
    std::vector<typename Codec::code_type> q(32);
    std::vector<typename Codec::scale_type> sc(1);
    std::vector<float> y(32);
    codec::quantize<Codec>(x.data(), 32, q.data(), sc.data());
    codec::dequantize<Codec>(q.data(), sc.data(), 32, y.data());
    bool ok = true;
    for (int i = 0; i < 32; ++i) ok = ok && std::isfinite(y[i]);
    ok = ok && (amax == 0.0f ? y[7] == 0.0f : (y[7] != 0.0f && std::fabs(static_cast<double>(y[7]) - amax) <= 0.01 * amax));
    failures += !ok;
  }
  return failures;
}

}  // namespace fidelity
