// Round N's experiment (a record, not built by CMake): where the off-load
// pipeline's time goes. 32 tensors of 2^22 parameters on the host, chunks of
// 2^22, 3 staging buffers: the per-chunk pipeline (one cpu::step call per
// chunk, as offload_plan stepped before the chunk team), the CPU chunks
// alone, and a per-thread flow (each thread its share of every chunk, as
// device/chunk_team.cuh now does). Built from the repository root with
//   nvcc -std=c++17 -O3 -arch=sm_90 -Iinclude -Xcompiler -fopenmp \
//     bench/results/2026-12-03/session7/round_n_trace.cu -o offload_trace
#include <cuda_runtime.h>
#include <omp.h>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <thread>
#include <vector>
#include "../../../gpu/bench_timing.cuh"
#include "flashoptim/flashoptim.hpp"
#include "flashoptim/layout/state_layout.hpp"
using namespace flashoptim;
namespace c = flashoptim::codec;
using cfg = step_config<rule::adamw, c::rounded_split, bf16, c::defaults::momentum, c::defaults::second_moment>;
static double now_ms() { return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count(); }
struct acc { double wait = 0, step = 0, issue = 0; };
int main(int argc, char** argv) {
  const int k = 32; const std::int64_t n = 1 << 22, chunk = 1 << 22; const int B = 3;
  std::vector<tensor_ref<cfg>> dev(k), host(k);
  for (int i = 0; i < k; ++i) {
    void *p, *g, *hp, *st;
    const auto l = state_layout<cfg>::for_size(n);
    BENCH_CUDA(cudaMalloc(&p, n * 2)); BENCH_CUDA(cudaMalloc(&g, n * 2));
    BENCH_CUDA(cudaMemset(p, 0x3c, n * 2)); BENCH_CUDA(cudaMemset(g, 0x3b, n * 2));
    dev[i].param = (bf16*)p; dev[i].grad = (bf16*)g;
    BENCH_CUDA(cudaHostAlloc(&hp, n * 2, 0)); BENCH_CUDA(cudaHostAlloc(&st, l.bytes, 0));
    std::memset(hp, 0x3c, n * 2); std::memset(st, 0, l.bytes);
    host[i].param = (bf16*)hp; l.carve(st, host[i]); host[i].seed = i;
  }
  bf16* stage[B]; cudaEvent_t ev[B]; cudaEvent_t ready;
  for (int b = 0; b < B; ++b) { BENCH_CUDA(cudaHostAlloc(&stage[b], chunk * 2, 0)); BENCH_CUDA(cudaEventCreateWithFlags(&ev[b], cudaEventDisableTiming)); }
  BENCH_CUDA(cudaEventCreateWithFlags(&ready, cudaEventDisableTiming));
  cudaStream_t d2h, h2d, s; cudaStreamCreateWithFlags(&d2h, cudaStreamNonBlocking); cudaStreamCreateWithFlags(&h2d, cudaStreamNonBlocking); cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  cfg::hyper h; h.lr = 1e-4; std::int64_t stepno = 0;
  auto view = [&](int i, const bf16* g, std::int64_t b, std::int64_t cnt) {
    tensor_ref<cfg> v = host[i]; v.param += b; v.aux += b;
    slot_at<0>(v.states).codes += b; slot_at<1>(v.states).codes += b; slot_at<0>(v.states).scales += b / 32; slot_at<1>(v.states).scales += b / 32;
    v.grad = g; v.size = cnt; v.index_base += b; return v; };
  auto copy_in = [&](int i) { BENCH_CUDA(cudaMemcpyAsync(stage[i % B], dev[i].grad, chunk * 2, cudaMemcpyDeviceToHost, d2h)); BENCH_CUDA(cudaEventRecord(ev[i % B], d2h)); };
  acc A;
  // A: the plan's loop
  auto pipeline = [&](acc* t) {
    step_args a; a.step = ++stepno;
    BENCH_CUDA(cudaEventRecord(ready, s)); BENCH_CUDA(cudaStreamWaitEvent(d2h, ready, 0));
    for (int i = 0; i < B; ++i) copy_in(i);
    for (int i = 0; i < k; ++i) {
      double t0 = now_ms();
      BENCH_CUDA(cudaEventSynchronize(ev[i % B]));
      double t1 = now_ms();
      auto v = view(i, stage[i % B], 0, n);
      BENCH_OK(cpu::step<cfg>(h, a, &v, 1));
      double t2 = now_ms();
      BENCH_CUDA(cudaMemcpyAsync(dev[i].param, host[i].param, n * 2, cudaMemcpyHostToDevice, h2d));
      if (i + B < k) copy_in(i + B);
      double t3 = now_ms();
      if (t) { t->wait += t1 - t0; t->step += t2 - t1; t->issue += t3 - t2; }
    }
    BENCH_CUDA(cudaStreamSynchronize(h2d));
  };
  // B: the CPU chunks alone (grads from the staging buffers, which stay hot)
  auto cpu_alone = [&] {
    step_args a; a.step = ++stepno;
    for (int i = 0; i < k; ++i) { auto v = view(i, stage[i % B], 0, n); BENCH_OK(cpu::step<cfg>(h, a, &v, 1)); }
  };
  // D: one parallel region, each thread its share of every chunk
  std::vector<std::atomic<int>> done(k);
  std::atomic<int> issued{0};
  auto flow = [&] {
    step_args a; a.step = ++stepno;
    for (auto& d : done) d = 0;
    BENCH_CUDA(cudaEventRecord(ready, s)); BENCH_CUDA(cudaStreamWaitEvent(d2h, ready, 0));
    for (int i = 0; i < B; ++i) copy_in(i);
    issued = B;
    cpu::step_options one; one.threads = 1;
    #pragma omp parallel
    {
      const int t = omp_get_thread_num(), T = omp_get_num_threads();
      const std::int64_t groups = n / 32;
      for (int i = 0; i < k; ++i) {
        while (issued.load(std::memory_order_acquire) <= i) std::this_thread::yield();
        BENCH_CUDA(cudaEventSynchronize(ev[i % B]));
        const std::int64_t g0 = groups * t / T, g1 = groups * (t + 1) / T;
        auto v = view(i, stage[i % B] + g0 * 32, g0 * 32, (g1 - g0) * 32);
        BENCH_OK(cpu::step<cfg>(h, a, &v, 1, one));
        if (done[i].fetch_add(1, std::memory_order_acq_rel) == T - 1) {
          BENCH_CUDA(cudaMemcpyAsync(dev[i].param, host[i].param, n * 2, cudaMemcpyHostToDevice, h2d));
          if (i + B < k) copy_in(i + B);
          issued.fetch_add(1, std::memory_order_release);
        }
      }
    }
    BENCH_CUDA(cudaStreamSynchronize(h2d));
  };
  auto median = [&](auto&& f) { f(); f(); std::vector<double> v; for (int r = 0; r < 9; ++r) { BENCH_CUDA(cudaDeviceSynchronize()); double t0 = now_ms(); f(); BENCH_CUDA(cudaDeviceSynchronize()); v.push_back(now_ms() - t0); } std::sort(v.begin(), v.end()); return v[v.size() / 2]; };
  for (int round = 0; round < 2; ++round) {
    double pa = median([&] { pipeline(nullptr); });
    acc t; pipeline(&t);
    double ca = median(cpu_alone);
    double fl = median(flow);
    std::printf("threads %d: pipeline %.3f ms (one traced run: wait %.3f step %.3f issue %.3f) | cpu chunks alone %.3f | per-thread flow %.3f\n",
                omp_get_max_threads(), pa, t.wait, t.step, t.issue, ca, fl);
  }
  // bytes check: the flow and the plan loop give the same host params after the same steps from the same start? (not here)
  return 0;
}
