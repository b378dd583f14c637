// DeepSpeed 0.16.4 CPU-Adam Step_AVX<8> timing harness (docs/cpu.md's recipe),
// session5's harness with the size and step count as arguments:
//   ds_harness [log2 params = 24] [timed steps = 20]
// Threads: OMP_NUM_THREADS. Prints wall G params/s per layout.
#include "cpu_adam.h"
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>
static std::uint16_t bf16_rne(float f) { std::uint32_t u; std::memcpy(&u, &f, 4); u += 0x7fff + ((u >> 16) & 1); return u >> 16; }
template <class P, class S>
double run(size_t n, int steps) {
  std::mt19937 rng(1);
  std::normal_distribution<float> d1(0.f, 1.f), d2(0.f, 1e-4f);
  std::vector<P> p(n), g(n);
  std::vector<S> m(n), v(n);
  for (size_t i = 0; i < n; ++i) {
    float a = d1(rng), b = d2(rng);
    if constexpr (std::is_same_v<P, float>) { p[i] = a; g[i] = b; } else { p[i].x = bf16_rne(a); g[i].x = bf16_rne(b); }
    if constexpr (std::is_same_v<S, float>) { m[i] = 0; v[i] = 0; } else { m[i].x = 0; v[i].x = 0; }
  }
  Adam_Optimizer opt(1e-3, 0.9, 0.999, 1e-8, 0.01, true);
  size_t step = 0, rounded = 0;
  auto one = [&] { ++step; opt.IncrementStep(step, 0.9, 0.999); opt.update_state(1e-3, 1e-8, 0.01, true);
                   opt.Step_AVX<8>(&rounded, p.data(), g.data(), m.data(), v.data(), n); };
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
