// Built: g++ -std=c++17 -O2 -fopenmp -I include -I tests bench/results/2026-12-04/session20/stuck_layouts.cpp -o stuck_layouts
// Run: ./stuck_layouts 1e-3 3000 (output: stuck_layouts.txt)
// Rows whose gradient becomes 0 (untouched embedding rows): after `warm` steps with gradients
// N(0, sigma), zero gradients. Per layout, the first step from which some element's new m or v
// lies outside what the GPU's zero-tolerant attempt accepts (|m| in [2^-60, 2^60] or m = +0;
// v in [2^-100, ...] or v = +0), and whether every m has reached +0 by the last step.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include "common/typed_tensor.hpp"
#include "flashoptim/cpu/step.hpp"
using namespace flashoptim;
namespace c = flashoptim::codec;
namespace p = flashoptim::codec::precision;
template <class Config>
void run(const char* name, double sigma, int warm, int steps) {
  const std::int64_t n = 1024;
  testutil::typed_tensor<Config> t(n);
  std::mt19937 rng(42);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  for (std::int64_t i = 0; i < n; ++i) t.set_master(i, nd(rng) * 0.02f);
  auto ref = t.view(7);
  typename Config::hyper h; h.lr = 1e-3;
  cpu::step_options o; o.threads = 1;
  step_args a;
  int m_out = -1, v_out = -1;
  float last_max_m = 0, last_max_v = 0;
  long long m_pos_zero = 0;
  for (int s = 1; s <= steps; ++s) {
    if (s <= warm + 1)
      for (std::int64_t i = 0; i < n; ++i) t.set_grad(i, s <= warm ? nd(rng) * static_cast<float>(sigma) : 0.0f);
    a.step = s;
    if (!cpu::step<Config>(h, a, &ref, 1, o).ok()) std::abort();
    if (s <= warm) continue;
    const std::vector<float> m = t.state(0), v = t.state(1);
    last_max_m = last_max_v = 0; m_pos_zero = 0;
    for (std::int64_t i = 0; i < n; ++i) {
      const bool mz = m[i] == 0.0f && !std::signbit(m[i]);
      const bool vz = v[i] == 0.0f && !std::signbit(v[i]);
      m_pos_zero += mz;
      if (m_out < 0 && !mz && !(std::fabs(m[i]) >= 0x1p-60f)) m_out = s;
      if (v_out < 0 && !vz && !(v[i] >= 0x1p-100f)) v_out = s;
      last_max_m = std::fmax(last_max_m, std::fabs(m[i]));
      last_max_v = std::fmax(last_max_v, v[i]);
    }
  }
  std::printf("%-34s m leaves the range from idle step %6d, v from %6d (-1: never; %d steps, gradients in the first %d); at the end max|m| %.3g (%lld of %lld +0), max v %.3g\n",
              name, m_out < 0 ? -1 : m_out - warm, v_out < 0 ? -1 : v_out - warm, steps, warm, last_max_m, m_pos_zero, (long long)n, last_max_v);
}
int main(int argc, char** argv) {
  const double sigma = argc > 1 ? std::atof(argv[1]) : 1e-3;
  const int steps = argc > 2 ? std::atoi(argv[2]) : 3000;
  run<step_config<rule::adamw, c::rounded_split, bf16, c::defaults::momentum, c::defaults::second_moment>>("default (8-bit, fp32 scales)", sigma, 10, steps);
  run<step_config<rule::adamw, c::ulp_correction<bf16, std::int8_t>, bf16, c::reference::momentum, c::reference::second_moment>>("reference (8-bit, fp16 scales)", sigma, 10, steps);
  run<step_config<rule::adamw, c::native<float>, float, p::fp32, p::fp32>>("fp32 states", sigma, 10, steps);
  run<step_config<rule::adamw, c::native<bf16>, bf16, p::bf16, p::bf16>>("bf16 states", sigma, 10, steps);
  run<step_config<rule::adamw, c::rounded_split, bf16, p::fp8_momentum, p::fp8_second_moment>>("fp8 states", sigma, 10, steps);
}
