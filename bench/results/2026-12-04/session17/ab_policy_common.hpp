// Seventeenth session: the step's shape (blocks per SM, stages, threads, elements per thread, warp
// tiles) re-measured for the layouts that miss their targets (the reference states, the paper's
// split), and the default's neighbours, on this tree's kernels. session4's ab.cu harness; three
// binaries (ab_policy_{ref,ulp,rest}.cu), each with its layouts' default policy as the control:
//   nvcc -std=c++17 -O3 -arch=sm_90 --expt-relaxed-constexpr -I include -I bench/gpu
//        -I bench/results/2026-12-02/session4 -I bench/results/2026-12-04/session17 ab_policy_X.cu -o abp_X
//        -lbenchmark -Xcompiler -static-libstdc++,-static-libgcc
#pragma once
#include "ab.cu"
/// add_v, but a variant whose plan or first step fails is reported and left out (a shape whose
/// stages do not fit in shared memory) instead of ending the run.
template <class Config, class Policy = default_policy<Config>>
void add_s(const std::string& name, const shape& sh, const char* want) {
  if (want && !std::strstr(name.c_str(), want)) return;
  auto w = std::make_shared<workspace<Config>>(sh.sizes);
  auto plan = std::make_shared<flashoptim::device::step_plan<Config, Policy>>();
  flashoptim::status st = plan->build(w->refs.data(), w->refs.size());
  if (st.ok()) {
    step_args a;
    a.step = 1;
    st = plan->step_async(bench_hyper<Config>(), a, nullptr);
  }
  if (st.ok()) st = flashoptim::status{};
  const cudaError_t e = cudaDeviceSynchronize();
  if (!st.ok() || e != cudaSuccess) {
    std::printf("skip %s: %s / %s\n", name.c_str(), st.ok() ? "ok" : st.what(), cudaGetErrorString(e));
    cudaGetLastError();
    return;
  }
  w.reset();
  plan.reset();
  add_v<Config, Policy>(name, sh, want);
}

/// The default's flags with B blocks per SM, S stages, R warp tiles, T threads, N elements per thread.
template <int B, int S, int R = 1, int T = 256, int N = 8>
using pol = flashoptim::tuning::step_policy<T, N, B, true, true, true, true, true, false, S, false, R, false>;
