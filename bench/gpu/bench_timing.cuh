// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// What the GPU benchmarks share: exit on a failed CUDA call or status
// (every one of them), and the timing of a call (the stand-alone ones,
// bench_optimizer and bench_fp8_param).
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <utility>
#include <vector>

#include "flashoptim/status.hpp"

#define BENCH_CUDA(expr)                                                                          \
  do {                                                                                            \
    const cudaError_t e_ = (expr);                                                                \
    if (e_ != cudaSuccess) {                                                                      \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #expr, cudaGetErrorString(e_)); \
      std::exit(1);                                                                               \
    }                                                                                             \
  } while (0)
#define BENCH_OK(expr)                                                              \
  do {                                                                              \
    const ::flashoptim::status s_ = (expr);                                         \
    if (!s_.ok()) {                                                                 \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #expr, s_.what()); \
      std::exit(1);                                                                 \
    }                                                                               \
  } while (0)

namespace bench_gpu {

/// The median of t (the upper one of an even count, as tools/bench_report.py
/// takes torch's); t must not be empty.
inline double median(std::vector<double> t) {
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

/// Median over 7 repetitions of the mean time of 20 calls of f on `stream`
/// (after 5 warm-up calls), in ms.
template <class F>
double time_ms(cudaStream_t stream, F&& f) {
  cudaEvent_t a, b;
  BENCH_CUDA(cudaEventCreate(&a));
  BENCH_CUDA(cudaEventCreate(&b));
  for (int i = 0; i < 5; ++i) f();  // warm-up
  std::vector<double> ms;
  for (int r = 0; r < 7; ++r) {
    BENCH_CUDA(cudaEventRecord(a, stream));
    for (int i = 0; i < 20; ++i) f();
    BENCH_CUDA(cudaEventRecord(b, stream));
    BENCH_CUDA(cudaEventSynchronize(b));
    float t = 0;
    BENCH_CUDA(cudaEventElapsedTime(&t, a, b));
    ms.push_back(t / 20.0);
  }
  BENCH_CUDA(cudaEventDestroy(a));
  BENCH_CUDA(cudaEventDestroy(b));
  return median(std::move(ms));
}

}  // namespace bench_gpu
