// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// Off-load step time next to its parts (issue 4): the whole step with a
// fraction f of the tensors in host memory, the GPU part alone, the CPU part
// alone (gradients already on the host), and the transfers alone (gradients
// to the host, parameters back, in the pipeline's chunks). Target: the step
// within 1.15x of its largest part, taken as the median of R pairs (the
// whole step, then the CPU part) timed in turn, so that the host's drift
// between runs does not enter the ratio.
//   bench_offload [--params N] [--tensors T] [--fraction f] [--repeats R] [--chunk C]
// Prints a markdown table; tools/bench_report.py pastes it into BENCHMARKS.md.
#include <cuda_runtime.h>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "bench_timing.cuh"
#include "flashoptim/device/offload.cuh"
#include "flashoptim/layout/state_layout.hpp"
#include "flashoptim/flashoptim.hpp"

using namespace flashoptim;
namespace c = flashoptim::codec;
using cfg = step_config<rule::adamw, c::rounded_split, bf16, c::defaults::momentum,
                        c::defaults::second_moment>;

namespace {

double now_ms() {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

template <class F>
double time_ms(F&& f) {
  BENCH_CUDA(cudaDeviceSynchronize());
  const double t0 = now_ms();
  f();
  BENCH_CUDA(cudaDeviceSynchronize());
  return now_ms() - t0;
}

using bench_gpu::median;

template <class F>
double median_ms(int repeats, F&& f) {
  f();  // warm-up
  f();
  std::vector<double> t;
  for (int r = 0; r < repeats; ++r) t.push_back(time_ms(f));
  return median(std::move(t));
}

}  // namespace

int main(int argc, char** argv) {
  std::int64_t params = std::int64_t{1} << 28;
  int tensors = 64;
  double fraction = 0.5;
  int repeats = 5;
  std::int64_t chunk = tuning::offload_chunk_elements;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--params") params = std::atoll(argv[i + 1]);
    else if (a == "--tensors") tensors = std::atoi(argv[i + 1]);
    else if (a == "--fraction") fraction = std::atof(argv[i + 1]);
    else if (a == "--repeats") repeats = std::atoi(argv[i + 1]);
    else if (a == "--chunk") chunk = std::atoll(argv[i + 1]);
  }
  if (repeats < 1 || tensors < 1 || params < tensors || chunk < 32 || chunk % 32 != 0 || !(fraction >= 0 && fraction <= 1)) {
    std::fprintf(stderr, "bench_offload: need --repeats >= 1, --tensors >= 1, --params >= tensors, --chunk a multiple of 32, "
                         "0 <= --fraction <= 1\n");
    return 2;
  }
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("no CUDA device: skipping\n");
    return 77;
  }
  const std::int64_t n = (params / tensors + 31) / 32 * 32;
  // device: every tensor's parameters and gradients, and the states of all
  std::vector<tensor_ref<cfg>> dev(tensors);
  std::vector<void*> allocations;
  for (int i = 0; i < tensors; ++i) {
    void *p, *g, *st;
    const auto l = state_layout<cfg>::for_size(n);
    BENCH_CUDA(cudaMalloc(&p, n * sizeof(bf16)));
    BENCH_CUDA(cudaMalloc(&g, n * sizeof(bf16)));
    BENCH_CUDA(cudaMalloc(&st, l.bytes));
    BENCH_CUDA(cudaMemset(p, 0x3c, n * sizeof(bf16)));  // ~0.0115 in bf16
    BENCH_CUDA(cudaMemset(g, 0x3b, n * sizeof(bf16)));
    BENCH_CUDA(cudaMemset(st, 0, l.bytes));
    dev[i].param = static_cast<bf16*>(p);
    dev[i].grad = static_cast<bf16*>(g);
    l.carve(st, dev[i]);
    dev[i].seed = i;
    allocations.insert(allocations.end(), {p, g, st});
  }
  const std::size_t k = device::offload_plan<cfg>::host_tensor_count(dev.data(), dev.size(), fraction);
  std::vector<tensor_ref<cfg>> host(k);
  std::vector<void*> pinned;
  for (std::size_t i = 0; i < k; ++i) {
    void *p, *st;
    const auto l = state_layout<cfg>::for_size(n);
    BENCH_CUDA(cudaHostAlloc(&p, n * sizeof(bf16), cudaHostAllocDefault));
    BENCH_CUDA(cudaHostAlloc(&st, l.bytes, cudaHostAllocDefault));
    std::memset(st, 0, l.bytes);
    host[i].param = static_cast<bf16*>(p);
    l.carve(st, host[i]);
    pinned.insert(pinned.end(), {p, st});
  }
  device::offload_plan<cfg> plan;
  device::offload_options options;
  options.chunk_elements = chunk;
  BENCH_OK(plan.build(dev.data(), dev.size(), fraction, host.data(), k, options));
  cfg::hyper h;
  h.lr = 1e-4;
  std::int64_t step = 0;
  cudaStream_t stream;
  BENCH_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));

  // 1. the whole off-load step (timed again below, in pairs with the CPU part)
  auto whole_step = [&] {
    step_args a;
    a.step = ++step;
    BENCH_OK(plan.step(h, a, stream));
    BENCH_CUDA(cudaStreamSynchronize(stream));
  };
  // 2. the GPU part alone
  double gpu_part = 0;
  if (plan.gpu_plan().built()) {
    gpu_part = median_ms(repeats, [&] {
      step_args a;
      a.step = ++step;
      BENCH_OK(plan.gpu_plan().step_async(h, a, stream));
      BENCH_CUDA(cudaStreamSynchronize(stream));
    });
  }
  // 3. the CPU part alone, gradients already in pinned host memory: one
  // cpu::step call over every off-loaded tensor (one parallel region, the
  // least overhead the CPU work can have: the part the pipeline is held
  // to), and, beside it, one call per chunk (a parallel region each, as the
  // pipeline stepped before it ran its chunks on one team of threads). The
  // pipeline's gradients arrive by DMA into staging buffers, so they are
  // read from memory, not from cache: these calls read every off-loaded
  // tensor's gradients from a buffer of their full size (cold, as in the
  // pipeline), and once more, per chunk, from one chunk-sized buffer that
  // stays in the last-level cache (hot: a lower bound, reported beside it).
  bf16* host_grad = nullptr;
  const std::int64_t grad_elements = std::max<std::int64_t>(chunk, static_cast<std::int64_t>(k) * n);
  BENCH_CUDA(cudaHostAlloc(&host_grad, grad_elements * sizeof(bf16), cudaHostAllocDefault));
  std::memset(host_grad, 0x3b, grad_elements * sizeof(bf16));
  auto cpu_chunks = [&](bool cold) {
    step_args a;
    a.step = ++step;
    for (std::size_t i = 0; i < k; ++i)
      for (std::int64_t b = 0; b < n; b += chunk) {
        tensor_ref<cfg> v = host[i];
        v.param += b, v.aux += b, flashoptim::slot_at<0>(v.states).codes += b, flashoptim::slot_at<1>(v.states).codes += b, flashoptim::slot_at<0>(v.states).scales += b / 32, flashoptim::slot_at<1>(v.states).scales += b / 32;
        v.size = std::min(chunk, n - b);
        v.grad = cold ? host_grad + static_cast<std::int64_t>(i) * n + b : host_grad;
        BENCH_OK(cpu::step<cfg>(h, a, &v, 1));
      }
  };
  auto cpu_whole = [&] {
    step_args a;
    a.step = ++step;
    std::vector<tensor_ref<cfg>> v(host.begin(), host.end());
    for (std::size_t i = 0; i < k; ++i) v[i].grad = host_grad + static_cast<std::int64_t>(i) * n;
    BENCH_OK(cpu::step<cfg>(h, a, v.data(), v.size()));
  };
  double cpu_per_chunk = 0, cpu_hot = 0;
  if (k > 0) {
    cpu_per_chunk = median_ms(repeats, [&] { cpu_chunks(true); });
    cpu_hot = median_ms(repeats, [&] { cpu_chunks(false); });
  }
  // 4. the transfers alone, chunked, on two streams as in the pipeline
  cudaStream_t d2h, h2d;
  BENCH_CUDA(cudaStreamCreateWithFlags(&d2h, cudaStreamNonBlocking));
  BENCH_CUDA(cudaStreamCreateWithFlags(&h2d, cudaStreamNonBlocking));
  std::vector<bf16*> staging(3);
  for (auto& s : staging) BENCH_CUDA(cudaHostAlloc(&s, chunk * sizeof(bf16), cudaHostAllocDefault));
  auto queue_transfers = [&] {
    int j = 0;
    for (std::size_t i = 0; i < k; ++i)
      for (std::int64_t b = 0; b < n; b += chunk, ++j) {
        const std::size_t bytes = std::min(chunk, n - b) * sizeof(bf16);
        BENCH_CUDA(cudaMemcpyAsync(staging[j % 3], dev[i].grad + b, bytes, cudaMemcpyDeviceToHost, d2h));
        BENCH_CUDA(cudaMemcpyAsync(dev[i].param + b, host[i].param + b, bytes, cudaMemcpyHostToDevice, h2d));
      }
  };
  double transfers = 0, contended = 0;
  if (k > 0) {
    transfers = median_ms(repeats, [&] {
      queue_transfers();
      BENCH_CUDA(cudaStreamSynchronize(d2h));
      BENCH_CUDA(cudaStreamSynchronize(h2d));
    });
    // 5. the CPU part and the transfers at once, without the pipeline's
    // dependencies: what sharing host memory costs them.
    contended = median_ms(repeats, [&] {
      queue_transfers();
      cpu_whole();
      BENCH_CUDA(cudaStreamSynchronize(d2h));
      BENCH_CUDA(cudaStreamSynchronize(h2d));
    });
  }
  // 6. the whole step and the CPU part alone, timed in turn, `repeats`
  // pairs: the host's CPU time drifts by +-10% between runs on a shared
  // machine, so the ratio is taken within each pair (against the larger of
  // that pair's CPU part and the GPU part's and transfers' medians) and its
  // median reported, with the spread of the pairs.
  std::vector<double> wholes, cpus, ratios;
  whole_step();
  whole_step();
  if (k > 0) cpu_whole();
  for (int r = 0; r < repeats; ++r) {
    const double w = time_ms(whole_step);
    const double c = k > 0 ? time_ms(cpu_whole) : 0.0;
    wholes.push_back(w);
    cpus.push_back(c);
    ratios.push_back(w / std::max({gpu_part, c, transfers}));
  }
  const double full = median(wholes), cpu_part = median(cpus), ratio = median(ratios);
  std::sort(ratios.begin(), ratios.end());
  const double ratio_lo = ratios[ratios.size() / 10], ratio_hi = ratios[ratios.size() - 1 - ratios.size() / 10];
  const double largest = std::max({gpu_part, cpu_part, transfers});
  const double off_params = static_cast<double>(k) * n;
  cudaDeviceProp prop{};
  BENCH_CUDA(cudaGetDeviceProperties(&prop, 0));
  std::printf("### Off-load: AdamW, bf16 + int8 correction, default 8-bit states\n\n");
  std::printf("%s; %d CPU threads, %s path; %d tensors of %lld parameters (%.0f M in all), fraction %.2f: %zu tensors "
              "(%.0f M parameters) on the host, %.3g host bytes per off-loaded parameter; chunks of %lld elements. "
              "Median of %d steps.\n\n",
              prop.name, omp_get_max_threads(), to_string(cpu::selected_isa<cfg>()), tensors, (long long)n,
              tensors * static_cast<double>(n) / 1e6, fraction, k, off_params / 1e6, layout::host_bytes_per_param<cfg>(),
              (long long)chunk, repeats);
  std::printf("| part | time ms | notes |\n|---|---|---|\n");
  std::printf("| GPU step of the %zu GPU tensors | %.3f | |\n", tensors - k, gpu_part);
  std::printf("| CPU step of the off-loaded tensors | %.3f | %.2f G params/s, one call over all of them; gradients "
              "read from memory, as the pipeline's arrive by DMA (one call per chunk: %.3f ms) |\n",
              cpu_part, cpu_part > 0 ? off_params / (cpu_part * 1e6) : 0.0, cpu_per_chunk);
  std::printf("| transfers (grads to host, params back) | %.3f | %.1f GB/s each way |\n", transfers,
              transfers > 0 ? off_params * 2 / (transfers * 1e6) : 0.0);
  std::printf("| **whole off-load step** | **%.3f** | **%.2fx the largest part** (target <= 1.15x): the median over %d "
              "pairs of (whole step, CPU part) timed in turn; pairs' 10th-90th percentile %.2fx-%.2fx |\n",
              full, ratio, repeats, ratio_lo, ratio_hi);
  std::printf("\nThe CPU part and the transfers run at once with no dependencies between them: %.3f ms (%.2fx the "
              "CPU part alone), the floor of any pipeline on this host.\n",
              contended, cpu_part > 0 ? contended / cpu_part : 0.0);
  const double largest_hot = std::max({gpu_part, cpu_hot, transfers});
  std::printf("\nWith the CPU part's gradients hot in cache instead (one chunk-sized buffer reused: %.3f ms, %.2f G "
              "params/s), the whole step is %.2fx its largest part.\n",
              cpu_hot, cpu_hot > 0 ? off_params / (cpu_hot * 1e6) : 0.0, largest_hot > 0 ? full / largest_hot : 0.0);
  for (void* p : allocations) cudaFree(p);
  for (void* p : pinned) cudaFreeHost(p);
  for (auto* s : staging) cudaFreeHost(s);
  cudaFreeHost(host_grad);
  return 0;
}
