// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// flashoptim demo: what the compressed layout saves, what each master-weight
// mode reconstructs, and a small training run where it matters, on the CPU;
// with a GPU present (and a CUDA build), the same step on the GPU checked
// bit for bit against the CPU.
#include <flashoptim/flashoptim.hpp>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#include "demo_gpu.hpp"

using namespace flashoptim;
namespace c = flashoptim::codec;

namespace {

// ---------------------------------------------------------------- 1. memory
template <class Config>
void memory_row(const char* name) {
  using B = layout::bytes<Config>;
  std::printf("  %-44s %6.3g B/param  (%5.3g with gradient release)  step moves %5.3g B/param\n", name,
              B::resident_per_param(true), B::resident_per_param(false), B::moved_per_param);
}

// ---------------------------------------------------------------- 2. weight split
template <class Master>
void split_row(const char* name, const std::vector<float>& x) {
  const auto n = static_cast<std::int64_t>(x.size());
  std::vector<typename Master::param_type> p(x.size());
  std::vector<typename Master::aux_type> a(x.size());
  std::vector<float> y(x.size());
  c::split<Master>(x.data(), n, p.data(), a.data());
  c::reconstruct<Master>(p.data(), a.data(), n, y.data());
  std::int64_t exact = 0;
  double max_rel = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    exact += format::bits_of(x[i]) == format::bits_of(y[i]);
    max_rel = std::max(max_rel, std::fabs(static_cast<double>(y[i]) - x[i]) / std::fabs(x[i]));
  }
  const double bytes = sizeof(typename Master::param_type) + storage_bytes<typename Master::aux_type>;
  std::printf("  %-30s %3.0f B   bit-exact %7.3f%%   max relative error %.3g\n", name, bytes, 100.0 * exact / n, max_rel);
}

// ---------------------------------------------------------------- 3. training
/// Least squares: minimize |X w - y|^2 / (2 m) for a random X (m x d) and a
/// planted w*. The forward and backward passes read the parameters as stored
/// (bf16 for the compressed layouts), as a bf16 model would.
struct problem {
  int m = 1024, d = 256;
  std::vector<float> X, y;
  explicit problem(std::uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::normal_distribution<float> N(0.0f, 1.0f);
    X.resize(static_cast<std::size_t>(m) * d);
    for (auto& v : X) v = N(rng) / std::sqrt(static_cast<float>(d));
    std::vector<float> w(d);
    for (auto& v : w) v = 4.0f + N(rng);  // weights of magnitude ~4: bf16 resolves 1/32 there
    y.assign(m, 0.0f);
    for (int i = 0; i < m; ++i)
      for (int j = 0; j < d; ++j) y[i] += X[static_cast<std::size_t>(i) * d + j] * w[j];
  }
  /// loss and gradient at w
  double loss_grad(const std::vector<float>& w, std::vector<float>& g) const {
    std::vector<double> r(m);
    double loss = 0;
#pragma omp parallel for reduction(+ : loss)
    for (int i = 0; i < m; ++i) {
      double s = -y[i];
      for (int j = 0; j < d; ++j) s += static_cast<double>(X[static_cast<std::size_t>(i) * d + j]) * w[j];
      r[i] = s;
      loss += s * s;
    }
    g.assign(d, 0.0f);
#pragma omp parallel for
    for (int j = 0; j < d; ++j) {
      double s = 0;
      for (int i = 0; i < m; ++i) s += X[static_cast<std::size_t>(i) * d + j] * r[i];
      g[j] = static_cast<float>(s / m);
    }
    return loss / (2.0 * m);
  }
};

template <class Config>
double train(const char* name, const problem& pb, int steps, double fp32_loss) {
  const std::int64_t n = pb.d;
  std::vector<typename Config::param_type> param(n);
  std::vector<typename Config::aux_type> aux(n);
  std::vector<typename Config::grad_type> grad(n);
  std::vector<typename Config::state0::code_type> m(n);
  std::vector<typename Config::state0::scale_type> ms(c::scale_count<typename Config::state0>(n));
  std::vector<typename Config::state1::code_type> v(n);
  std::vector<typename Config::state1::scale_type> vs(c::scale_count<typename Config::state1>(n));
  for (std::int64_t i = 0; i < n; ++i) Config::master::encode(4.0f, param[i], aux[i]);
  tensor_ref<Config> t{param.data(), Config::has_aux ? aux.data() : nullptr, grad.data(), m.data(), ms.data(),
                       v.data(), vs.data(), n, 1};
  typename Config::hyper h;
  h.weight_decay = 0.0;
  std::vector<float> w(n), g;
  double loss = 0;
  for (int s = 1; s <= steps; ++s) {
    for (std::int64_t i = 0; i < n; ++i) w[i] = format::to_float(param[i]);  // the model sees the stored parameter
    loss = pb.loss_grad(w, g);
    for (std::int64_t i = 0; i < n; ++i) grad[i] = format::from_float<typename Config::grad_type>(g[i]);
    h.lr = 0.5 * 3e-2 * (1 + std::cos(M_PI * (s - 1) / steps));  // cosine schedule
    step_args a;
    a.step = s;
    const status st = cpu::step<Config>(h, a, &t, 1);  // threaded, vectorized; the same bytes as step_serial
    if (!st.ok()) {
      std::printf("step failed: %s\n", st.what());
      return NAN;
    }
  }
  std::printf("  %-52s final loss %.4g", name, loss);
  if (fp32_loss > 0) std::printf("  (%.2fx the fp32 loss)", loss / fp32_loss);
  std::printf("\n");
  return loss;
}

}  // namespace

int main() {
  std::printf("flashoptim %s demo\n\n", version_string);

  std::printf("1. Memory per parameter, AdamW (from layout/, the same numbers the benchmarks count):\n");
  using ulp8 = c::ulp_correction<bf16, std::int8_t>;
  memory_row<step_config<rule::adamw, c::native<float>, float, c::precision::fp32, c::precision::fp32>>(
      "fp32 weights, grads and states (torch)");
  memory_row<step_config<rule::adamw, c::fp32_master<bf16>, bf16, c::precision::fp32, c::precision::fp32>>(
      "bf16 weights + fp32 master + fp32 states");
  memory_row<step_config<rule::adamw, ulp8, bf16, c::reference::momentum, c::reference::second_moment>>(
      "bf16 + int8 correction, paper's 8-bit states");
  memory_row<step_config<rule::adamw, c::rounded_split, bf16, c::defaults::momentum, c::defaults::second_moment>>(
      "bf16 + int8 correction, flashoptim defaults");

  std::printf("\n2. Weight split of 1,000,000 N(0, 1) fp32 weights into a 16-bit parameter + correction:\n");
  std::vector<float> x(1000000);
  std::mt19937_64 rng(1);
  std::normal_distribution<float> N(0.0f, 1.0f);
  for (auto& v : x) v = N(rng);
  split_row<c::native<bf16>>("bf16 alone", x);
  split_row<c::rounded_split>("bf16 + int8 (rounded_split)", x);
  split_row<c::ulp_correction<bf16, std::int8_t>>("bf16 + int8 (ulp_correction)", x);
  split_row<c::ulp_correction<bf16, std::int16_t>>("bf16 + int16 (ulp_correction)", x);
  split_row<c::ulp_correction<fp16, std::int16_t>>("fp16 + int16 (ulp_correction)", x);
  split_row<c::exact_split>("bf16 + 16 bits (exact_split)", x);

  std::printf("\n3. Least squares (1024 x 256, weights ~4), AdamW, 400 steps, cosine lr 3e-2 -> 0, on the CPU (%s):\n",
              to_string(cpu::detected_isa()));
  const problem pb(7);
  const auto t0 = std::chrono::steady_clock::now();
  const double ref_loss =
      train<step_config<rule::adamw, c::native<float>, float, c::precision::fp32, c::precision::fp32>>(
          "fp32 weights and states (16 B/param)", pb, 400, 0.0);
  train<step_config<rule::adamw, c::native<bf16>, bf16, c::precision::bf16, c::precision::bf16>>(
      "bf16 weights and states, no master (8 B/param)", pb, 400, ref_loss);
  train<step_config<rule::adamw, c::rounded_split, bf16, c::defaults::momentum, c::defaults::second_moment>>(
      "flashoptim: bf16 + int8 correction, 8-bit states (7.25)", pb, 400, ref_loss);
  train<step_config<rule::adamw, c::exact_split, bf16, c::defaults::momentum, c::defaults::second_moment>>(
      "flashoptim: lossless bf16 + 16 bits, 8-bit states (8.25)", pb, 400, ref_loss);
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("  (%.1f s)\n", secs);

  std::printf("\n4. GPU:\n");
  return demo_gpu() ? 0 : 1;
}
