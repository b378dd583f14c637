// The default layout (rounded split, 8-bit states), AVX2 path, one thread, 32768 parameters, five timings of
// 2000 steps. Built against two trees:
//   g++ -std=c++17 -O2 -fopenmp -I <tree>/include -I <tree>/tests regression_check.cpp -o t1_<tree>
// (this session: ced2246, and 1f54b3d in a worktree); output: regression_check.txt
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include "common/configs.hpp"
#include "common/typed_tensor.hpp"
#include "flashoptim/cpu/step.hpp"
using namespace flashoptim;
namespace c = flashoptim::codec;
using Config = step_config<rule::adamw, c::rounded_split, bf16, c::defaults::momentum, c::defaults::second_moment>;
int main(int argc, char** argv) {
  const std::int64_t n = argc > 1 ? std::atoll(argv[1]) : 32768;
  const int reps = argc > 2 ? std::atoi(argv[2]) : 3000;
  testutil::typed_tensor<Config> t(n);
  std::mt19937 rng(42);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  for (std::int64_t i = 0; i < n; ++i) { t.set_master(i, nd(rng)); t.set_grad(i, nd(rng) * 1e-2f); }
  auto ref = t.view(7);
  Config::hyper h; h.lr = 1e-3;
  cpu::step_options o; o.instruction_set = cpu::isa::avx2; o.threads = 1;
  step_args a;
  for (int s = 1; s <= 3; ++s) { a.step = s; if (!cpu::step<Config>(h, a, &ref, 1, o).ok()) return 1; }
  for (int r = 0; r < 5; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < reps; ++i) { ++a.step; cpu::step<Config>(h, a, &ref, 1, o); }
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::printf("%.1f M/s\n", double(n) * reps / s / 1e6);
  }
}
