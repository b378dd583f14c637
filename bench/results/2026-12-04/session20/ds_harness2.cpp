// DeepSpeed 0.16.4 CPU-Adam timing harness (docs/cpu.md's recipe), what DeepSpeed's
// ds_adam_step runs: Step_AVX<8>, then Step_1 (Step_AVX<1> and the scalar loop) on the rest.
// On an AVX2 build (-D__AVX256__) Step_AVX returns at once for bf16 parameters or states, so
// the scalar loop (torch's bf16 conversions; the stub's are the same) steps the whole tensor.
// step1_impl.inc is Adam_Optimizer::Step_1 cut from the sdist's csrc/adam/cpu_adam_impl.cpp
// at build time (the recipe), not kept here.
//   ds_harness2 [log2 params = 24] [timed steps = 20]
#include "cpu_adam.h"
#include <chrono>
#include <cstdlib>
#include <random>
#include <vector>
#include "step1_impl.inc"
template <class P, class S>
double run(size_t n, int steps) {
  std::mt19937 rng(1);
  std::normal_distribution<float> d1(0.f, 1.f), d2(0.f, 1e-4f);
  std::vector<P> p(n), g(n);
  std::vector<S> m(n), v(n);
  for (size_t i = 0; i < n; ++i) { p[i] = P(d1(rng)); g[i] = P(d2(rng)); m[i] = S(0.f); v[i] = S(0.f); }
  Adam_Optimizer opt(1e-3, 0.9, 0.999, 1e-8, 0.01, true);
  size_t step = 0;
  auto one = [&] {
    ++step; opt.IncrementStep(step, 0.9, 0.999); opt.update_state(1e-3, 1e-8, 0.01, true);
    size_t rounded = 0;
    opt.Step_AVX<8>(&rounded, p.data(), g.data(), m.data(), v.data(), n);
    if (rounded < n) opt.Step_1(p.data() + rounded, g.data() + rounded, m.data() + rounded, v.data() + rounded, n - rounded);
  };
  one(); one();
  auto t0 = std::chrono::steady_clock::now();
  for (int s = 0; s < steps; ++s) one();
  double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return double(n) * steps / sec / 1e9;
}
int main(int argc, char** argv) {
  size_t n = size_t(1) << (argc > 1 ? std::atoi(argv[1]) : 24);
  int steps = argc > 2 ? std::atoi(argv[2]) : 20;
  std::printf("fp32/fp32 %.3f\n", run<float, float>(n, steps));
  std::printf("bf16/fp32 %.3f\n", run<c10::BFloat16, float>(n, steps));
  std::printf("bf16/bf16 %.3f\n", run<c10::BFloat16, c10::BFloat16>(n, steps));
}
