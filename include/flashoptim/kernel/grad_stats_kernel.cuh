// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// Gradient statistics over a step table, in one small launch: whether any
// gradient is non-finite (the skip flag of skip-on-overflow) and the sum of
// squares (a global norm for clipping; sharded steps add the ranks' sums).
// Deterministic: each block sums its fixed range of units in a fixed order
// into a workspace slot, and the last block to finish adds the slots in
// block order, so the same table and grid give the same bits every time.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "flashoptim/kernel/tensor_table.cuh"

namespace flashoptim::kernel {

/// What the statistics launch writes (device memory).
struct grad_stats {
  double sum_squares = 0.0;     ///< sum of g^2 over every element, raw (not unscaled)
  std::int32_t non_finite = 0;  ///< 1 when any gradient is NaN or +-inf, else 0
  std::int32_t reserved = 0;
};

/// Per-launch scratch owned by the plan: one slot per block and a counter
/// that the last block resets, so launches can be captured and replayed.
struct grad_stats_workspace {
  double* block_sums = nullptr;
  std::int32_t* block_flags = nullptr;
  unsigned int* done = nullptr;
};

template <class Config, int Threads>
__global__ void __launch_bounds__(Threads) grad_stats_kernel(const table_view<Config> tab, grad_stats_workspace ws,
                                                             grad_stats* out) {
  const std::int64_t unit = tab.unit_elements;
  double sum = 0.0;
  bool bad = false;
  const unit_range range = block_units(tab.units, blockIdx.x, gridDim.x);
  if (range.begin < range.end) {
    std::int64_t ti = find_tensor(tab.unit_begin, tab.count, range.begin);
    for (std::int64_t u = range.begin; u < range.end; ++u) {
      while (tab.unit_begin[ti + 1] <= u) ++ti;
      const auto* grad = tab.entries[ti].ref.grad;
      const std::int64_t start = (u - tab.unit_begin[ti]) * unit;
      const std::int64_t left = tab.entries[ti].ref.size - start;
      const int count = static_cast<int>(left < unit ? left : unit);
      for (int i = static_cast<int>(threadIdx.x); i < count; i += Threads) {
        const float g = format::to_float(grad[start + i]);
        bad |= !format::is_finite(g);
        // float * float is exact in double: the sum's only roundings are the adds.
        sum = format::add_rn(sum, format::mul_rn(static_cast<double>(g), static_cast<double>(g)));
      }
    }
  }
  // Block reduction in a fixed order: warp butterflies, then warp 0.
  __shared__ double warp_sums[Threads / 32];
  __shared__ int warp_bad[Threads / 32];
  FLASHOPTIM_UNROLL for (int o = 16; o > 0; o >>= 1) sum = format::add_rn(sum, __shfl_down_sync(0xffffffffu, sum, o));
  const int any_bad = __any_sync(0xffffffffu, bad);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (lane == 0) {
    warp_sums[warp] = sum;
    warp_bad[warp] = any_bad;
  }
  __syncthreads();
  __shared__ bool last;
  if (threadIdx.x == 0) {
    double s = 0.0;
    int b = 0;
    for (int w = 0; w < Threads / 32; ++w) {
      s = format::add_rn(s, warp_sums[w]);
      b |= warp_bad[w];
    }
    ws.block_sums[blockIdx.x] = s;
    ws.block_flags[blockIdx.x] = b;
    __threadfence();
    last = atomicAdd(ws.done, 1u) == gridDim.x - 1;
  }
  __syncthreads();
  if (!last || threadIdx.x != 0) return;
  __threadfence();
  double total = 0.0;
  int flag = 0;
  for (unsigned int b = 0; b < gridDim.x; ++b) {
    total = format::add_rn(total, *static_cast<volatile double*>(ws.block_sums + b));
    flag |= *static_cast<volatile std::int32_t*>(ws.block_flags + b);
  }
  out->sum_squares = total;
  out->non_finite = flag ? 1 : 0;
  *ws.done = 0;  // ready for the next launch (or graph replay)
}

/// grid >= 1: the last block writes `out` even for an empty table.
template <class Config, int Threads>
cudaError_t launch_grad_stats(const table_view<Config>& tab, const grad_stats_workspace& ws, grad_stats* out,
                              int grid, cudaStream_t stream) {
  if (grid <= 0) return cudaSuccess;
  grad_stats_kernel<Config, Threads><<<grid, Threads, 0, stream>>>(tab, ws, out);
  return cudaGetLastError();
}

}  // namespace flashoptim::kernel
