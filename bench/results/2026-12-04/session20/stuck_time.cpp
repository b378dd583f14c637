// Built: g++ -std=c++17 -O2 -fopenmp -I include -I tests bench/results/2026-12-04/session20/stuck_time.cpp -o stuck_time
// Run: ./stuck_time 2 (AVX2 path, one thread; output: stuck_time.txt)
// CPU step time of the default layout on rows whose momentum is stuck at subnormal values
// (zero gradients for 1000 steps after 10 with gradients) against rows with dense gradients.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include "common/typed_tensor.hpp"
#include "flashoptim/cpu/step.hpp"
using namespace flashoptim;
namespace c = flashoptim::codec;
using Config = step_config<rule::adamw, c::rounded_split, bf16, c::defaults::momentum, c::defaults::second_moment>;
int main(int argc, char** argv) {
  const std::int64_t n = 1 << 15;
  cpu::step_options o; o.threads = 1;
  if (argc > 1) o.instruction_set = std::atoi(argv[1]) == 2 ? cpu::isa::avx2 : cpu::isa::portable;
  Config::hyper h; h.lr = 1e-3;
  for (int stuck = 0; stuck < 2; ++stuck) {
    testutil::typed_tensor<Config> t(n);
    std::mt19937 rng(42);
    std::normal_distribution<float> nd(0.0f, 1.0f);
    for (std::int64_t i = 0; i < n; ++i) t.set_master(i, nd(rng) * 0.02f);
    auto ref = t.view(7);
    step_args a;
    int s = 1;
    for (; s <= (stuck ? 1010 : 10); ++s) {
      for (std::int64_t i = 0; i < n; ++i) t.set_grad(i, s <= 10 ? nd(rng) * 1e-3f : 0.0f);
      a.step = s;
      cpu::step<Config>(h, a, &ref, 1, o);
    }
    const int reps = 500;
    auto t0 = std::chrono::steady_clock::now();
    for (int r = 0; r < reps; ++r) { a.step = s++; cpu::step<Config>(h, a, &ref, 1, o); }
    const double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::printf("%s: %.1f M params/s\n", stuck ? "stuck subnormal m, zero gradients" : "dense gradients", n * reps / sec / 1e6);
  }
}
