// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// CPU step throughput (Google Benchmark): cpu::step for the important
// configurations on each instruction set and thread count, next to a plain
// fp32 AdamW loop (torch semantics, four fp32 arrays, OpenMP) built with the
// same flags. Counters: params/s, and GB/s from layout::bytes (the minimal
// traffic of a step: every input read once, every output written once).
//
//   bench_cpu_step --benchmark_filter=threads:2     the 2-core figures of docs/cpu.md
//   bench_cpu_step --benchmark_filter=small         threads for small steps (tuning/cpu.hpp)
//   FLASHOPTIM_BENCH_PARAMS=N                       parameters per step (default 2^24)
#include <benchmark/benchmark.h>
#include <omp.h>

#include <cmath>
#include <cstdlib>
#include <memory>
#include <random>
#include <string>
#include <vector>

// configs.hpp: where the tests are built too, this binary links their
// compiled steps (flashoptim_test_instances, bench/cpu/CMakeLists.txt) and
// the header declares them extern; 11 of the 12 configurations below are
// among them, so a build of everything compiles them once, not twice.
#include "common/configs.hpp"
#include "common/typed_tensor.hpp"
#include "flashoptim/cpu/step.hpp"
#include "flashoptim/layout/bytes.hpp"

namespace {

using namespace flashoptim;
namespace c = flashoptim::codec;
using cpu::isa;

std::int64_t bench_params() {
  const char* env = std::getenv("FLASHOPTIM_BENCH_PARAMS");
  return env ? std::atoll(env) : (std::int64_t{1} << 24);
}

/// One tensor's buffers (tests/common's typed_tensor): masters and
/// gradients drawn from N(0, 1) and N(0, 1e-4), states zero.
template <class Config>
struct buffers : testutil::typed_tensor<Config> {
  tensor_ref<Config> ref;

  explicit buffers(std::int64_t n) : testutil::typed_tensor<Config>(n) {
    std::mt19937 rng(42);
    std::normal_distribution<float> nd(0.0f, 1.0f);
    for (std::int64_t i = 0; i < n; ++i) {
      this->set_master(i, nd(rng));
      this->set_grad(i, nd(rng) * 1e-2f);
    }
    ref = this->view(7);
  }
};

/// The buffers of the last benchmark that ran, kept while the next one steps
/// the same configuration and size: Google Benchmark calls a benchmark's
/// function more than once (a first run sizes its loop), and each thread
/// count is a benchmark of its own, while building the buffers (a random
/// draw and a scalar encode per parameter, on one thread) took several
/// seconds at 2^26 parameters, longer than timing them. One set at a time.
struct buffer_cache {
  std::shared_ptr<void> held;
  const void* tag = nullptr;  ///< which configuration `held` is
  std::int64_t n = -1;
};
buffer_cache& the_buffer_cache() {
  static buffer_cache cache;  // one for all configurations: at most one set alive
  return cache;
}
template <class Config>
buffers<Config>& shared_buffers(std::int64_t n) {
  buffer_cache& cache = the_buffer_cache();
  static const char tag = 0;  // one address per configuration
  if (cache.tag != &tag || cache.n != n) {
    cache.held.reset();  // free the previous set before building this one
    cache.held = std::make_shared<buffers<Config>>(n);
    cache.tag = &tag;
    cache.n = n;
  }
  return *static_cast<buffers<Config>*>(cache.held.get());
}

template <class Config>
typename Config::hyper hyper() {
  typename Config::hyper h;
  h.lr = 1e-3;
  if constexpr (std::is_same<typename Config::rule, rule::sgd>::value) h.momentum = 0.9;
  return h;
}

template <class Config>
void bench_step(benchmark::State& state, isa path, int threads, std::int64_t min_groups_per_thread = 0) {
  const std::int64_t n = state.range(0);
  buffers<Config>& b = shared_buffers<Config>(n);
  const auto h = hyper<Config>();
  cpu::step_options o;
  o.instruction_set = path;
  o.threads = threads;
  if (min_groups_per_thread > 0) o.min_groups_per_thread = min_groups_per_thread;
  step_args a;
  for (int s = 1; s <= 3; ++s) {  // states of a run in progress; warm caches and threads
    a.step = s;
    if (!cpu::step<Config>(h, a, &b.ref, 1, o).ok()) state.SkipWithError("cpu::step failed");
  }
  for (auto _ : state) {
    ++a.step;
    benchmark::DoNotOptimize(cpu::step<Config>(h, a, &b.ref, 1, o));
    benchmark::ClobberMemory();
  }
  const double bytes = static_cast<double>(layout::bytes<Config>::moved_for_size(n));
  state.SetItemsProcessed(state.iterations() * n);
  state.SetBytesProcessed(static_cast<std::int64_t>(bytes * static_cast<double>(state.iterations())));
  state.counters["params/s"] = benchmark::Counter(static_cast<double>(n), benchmark::Counter::kIsIterationInvariantRate);
  state.counters["B/param"] = layout::bytes<Config>::moved_per_param;
}

/// torch.optim.AdamW's update, written plainly over four fp32 arrays, as a
/// user would without this library. Same compiler flags as the rest.
void adamw_fp32_loop(float* p, const float* g, float* m, float* v, std::int64_t n, int step, int threads) {
  const float lr = 1e-3f, beta1 = 0.9f, beta2 = 0.999f, eps = 1e-8f, wd = 1e-2f;
  const float bc1 = 1.0f - std::pow(beta1, static_cast<float>(step));
  const float bc2 = 1.0f - std::pow(beta2, static_cast<float>(step));
  const float step_size = lr / bc1, bc2_sqrt = std::sqrt(bc2);
#pragma omp parallel for num_threads(threads) schedule(static)
  for (std::int64_t i = 0; i < n; ++i) {
    p[i] *= 1.0f - lr * wd;
    m[i] = beta1 * m[i] + (1.0f - beta1) * g[i];
    v[i] = beta2 * v[i] + (1.0f - beta2) * g[i] * g[i];
    p[i] -= step_size * m[i] / (std::sqrt(v[i]) / bc2_sqrt + eps);
  }
}

void bench_plain_adamw(benchmark::State& state, int threads) {
  const std::int64_t n = state.range(0);
  std::vector<float> p(n), g(n), m(n, 0.0f), v(n, 0.0f);
  std::mt19937 rng(42);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  for (std::int64_t i = 0; i < n; ++i) {
    p[i] = nd(rng);
    g[i] = nd(rng) * 1e-2f;
  }
  int step = 1;
  for (; step <= 3; ++step) adamw_fp32_loop(p.data(), g.data(), m.data(), v.data(), n, step, threads);
  for (auto _ : state) {
    adamw_fp32_loop(p.data(), g.data(), m.data(), v.data(), n, step++, threads);
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * n);
  state.SetBytesProcessed(state.iterations() * n * 28);  // read p, g, m, v; write p, m, v
  state.counters["params/s"] = benchmark::Counter(static_cast<double>(n), benchmark::Counter::kIsIterationInvariantRate);
  state.counters["B/param"] = 28;
}

/// The memory ceiling of fp32 AdamW's traffic: the same four arrays read and
/// three written (28 bytes per element) with trivial arithmetic, compiled for
/// AVX-512 (as the library's vector path) so that only memory limits it.
#if FLASHOPTIM_CPU_X86_SIMD
__attribute__((target(FLASHOPTIM_CPU_AVX512_TARGET)))
#endif
void bench_memory_28(benchmark::State& state, int threads) {
  const std::int64_t n = state.range(0);
  std::vector<float> p(n, 1.0f), g(n, 1e-3f), m(n, 0.0f), v(n, 0.0f);
  float* __restrict pp = p.data();
  float* __restrict mp = m.data();
  float* __restrict vp = v.data();
  const float* __restrict gp = g.data();
  for (auto _ : state) {
#pragma omp parallel for num_threads(threads) schedule(static)
    for (std::int64_t i = 0; i < n; ++i) {
      const float gi = gp[i];
      pp[i] = pp[i] * 0.999f + gi;
      mp[i] = mp[i] * 0.9f + gi;
      vp[i] = vp[i] * 0.99f + gi * gi;
    }
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * n);
  state.SetBytesProcessed(state.iterations() * n * 28);
}

using ulp8 = c::ulp_correction<bf16, std::int8_t>;
using ulp16 = c::ulp_correction<bf16, std::int16_t>;
using dm = c::defaults::momentum;
using dv = c::defaults::second_moment;
using rm = c::reference::momentum;
using rv = c::reference::second_moment;
namespace p = c::precision;

template <class Config>
void add(const char* name, std::int64_t n, int max_threads) {
  for (isa path : {isa::avx512, isa::avx2, isa::portable}) {
    if (!cpu::isa_available(path)) continue;
    // the scalar path is ~30x slower: a smaller problem keeps the run short
    const std::int64_t size = path == isa::portable ? n / 16 : n;
    for (int t = 1; t <= max_threads; t *= 2) {
      const std::string label = std::string("cpu_step/") + name + "/" + cpu::to_string(path) + "/threads:" +
                                std::to_string(t);
      benchmark::RegisterBenchmark(label.c_str(), [path, t](benchmark::State& s) { bench_step<Config>(s, path, t); })
          ->Arg(size)
          ->UseRealTime()
          ->Unit(benchmark::kMillisecond);
    }
  }
}

/// Small steps on 1 and 2 threads with no minimum share per thread: where
/// the second thread starts paying (tuning::cpu::min_groups_per_thread).
template <class Config>
void add_small(const char* name) {
  for (std::int64_t n = 1 << 10; n <= (1 << 18); n *= 2)
    for (int t = 1; t <= 2; ++t) {
      const std::string label = std::string("cpu_step_small/") + name + "/threads:" + std::to_string(t);
      benchmark::RegisterBenchmark(label.c_str(), [t](benchmark::State& s) { bench_step<Config>(s, isa::automatic, t, 1); })
          ->Arg(n)
          ->UseRealTime()
          ->Unit(benchmark::kMicrosecond);
    }
}

}  // namespace

int main(int argc, char** argv) {
  const std::int64_t n = bench_params();
  const int max_threads = omp_get_max_threads();
  for (int t = 1; t <= max_threads; t *= 2) {
    const std::string label = "plain_fp32_adamw_loop/threads:" + std::to_string(t);
    benchmark::RegisterBenchmark(label.c_str(), [t](benchmark::State& s) { bench_plain_adamw(s, t); })
        ->Arg(n)
        ->UseRealTime()
        ->Unit(benchmark::kMillisecond);
  }
  for (int t = 1; t <= max_threads; t *= 2) {
    const std::string label = "memory_ceiling_28B/threads:" + std::to_string(t);
    benchmark::RegisterBenchmark(label.c_str(), [t](benchmark::State& s) { bench_memory_28(s, t); })
        ->Arg(n)
        ->UseRealTime()
        ->Unit(benchmark::kMillisecond);
  }
  add<step_config<rule::adamw, ulp8, bf16, dm, dv>>("adamw_bf16_ulp8_default_states", n, max_threads);
  add<step_config<rule::adamw, ulp8, bf16, rm, rv>>("adamw_bf16_ulp8_reference_states", n, max_threads);
  add<step_config<rule::adamw, ulp16, bf16, dm, dv>>("adamw_bf16_ulp16_default_states", n, max_threads);
  add<step_config<rule::adamw, c::exact_split, bf16, dm, dv>>("adamw_exact_split_default_states", n, max_threads);
  add<step_config<rule::adamw, c::rounded_split, bf16, dm, dv>>("adamw_rounded_split_default_states", n, max_threads);
  add<step_config<rule::adamw, c::fp32_master<bf16>, bf16, dm, dv>>("adamw_bf16_fp32_master_default_states", n,
                                                                     max_threads);
  add<step_config<rule::adamw, c::native<float>, float, p::fp32, p::fp32>>("adamw_fp32", n, max_threads);
  add<step_config<rule::adamw, c::native<bf16>, bf16, p::bf16, p::bf16>>("adamw_bf16_bf16_states", n, max_threads);
  add<step_config<rule::adamw, ulp8, bf16, p::fp8_momentum, p::fp8_second_moment>>("adamw_bf16_ulp8_fp8_states", n,
                                                                                  max_threads);
  add<step_config<rule::adamw, ulp8, bf16, p::fp16_sr, p::fp16_sr>>("adamw_bf16_ulp8_fp16_sr_states", n, max_threads);
  add<step_config<rule::adam, ulp8, bf16, dm, dv>>("adam_bf16_ulp8_default_states", n, max_threads);
  add<step_config<rule::lion, ulp8, bf16, dm>>("lion_bf16_ulp8_default_momentum", n, max_threads);
  add<step_config<rule::sgd, ulp8, bf16, dm>>("sgd_momentum_bf16_ulp8_default_momentum", n, max_threads);
  add_small<step_config<rule::adamw, ulp8, bf16, dm, dv>>("adamw_bf16_ulp8_default_states");
  add_small<step_config<rule::adamw, c::native<float>, float, p::fp32, p::fp32>>("adamw_fp32");
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
