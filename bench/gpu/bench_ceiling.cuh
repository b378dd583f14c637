// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// A layout's memory-pattern ceiling: a kernel that moves exactly the bytes
// of a fused step of that layout, in the step's pattern, and computes
// nothing. Same grid (2 blocks of 256 threads per SM, each block a
// contiguous range of 2048-element units), same tile (8 consecutive
// elements per thread), every buffer staged through a 3-stage shared-memory
// ring with cp.async as the step stages it, written back in place; a group
// scale is read and written once per group (the lanes of a warp that hold
// its 8 or 16 scale bytes move one 4-byte word each). What it reaches is
// what the layout's buffers allow the step without arithmetic: the gap
// between it and the step is the arithmetic's (BENCHMARKS.md,
// "pattern ceiling" column). Bench code only, not part of the library.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "flashoptim/kernel/tile_access.cuh"

namespace bench_gpu {

namespace detail {

// The step's own copies (kernel/tile_access.cuh): .cg for 16 bytes, .ca below.
template <int Bytes>
__device__ __forceinline__ void cp_async_chunks(std::uint32_t dst, const char* src) {
  if constexpr (Bytes >= 16) {
#pragma unroll
    for (int k = 0; k < Bytes / 16; ++k) flashoptim::kernel::detail::cp_async<16>(dst + 16 * k, src + 16 * k);
  } else {
    flashoptim::kernel::detail::cp_async<Bytes>(dst, src);
  }
}

template <int Bytes>
__device__ __forceinline__ void copy_back(const unsigned char* s, char* g) {
  if constexpr (Bytes >= 16) {
#pragma unroll
    for (int k = 0; k < Bytes / 16; ++k)
      reinterpret_cast<uint4*>(g)[k] = reinterpret_cast<const uint4*>(s)[k];
  } else if constexpr (Bytes == 8) {
    *reinterpret_cast<uint2*>(g) = *reinterpret_cast<const uint2*>(s);
  } else if constexpr (Bytes == 4) {
    *reinterpret_cast<unsigned*>(g) = *reinterpret_cast<const unsigned*>(s);
  }
}

}  // namespace detail

struct pattern_buffers {
  char* param;
  char* aux;
  const char* grad;
  char* code0;
  char* scale0;
  char* code1;
  char* scale1;
};

/// Elementwise bytes per thread tile: 8 x bytes per element (8, 16 or 32);
/// scale bytes per warp: 8 groups x bytes per group (16 or 32, moved by the
/// first 4 or 8 lanes as 4-byte words).
template <int P, int A, int G, int C0, int K0, int C1, int K1>
__global__ void __launch_bounds__(256, 2) pattern_kernel(pattern_buffers b, std::int64_t units) {
  constexpr int Stages = 3;
  constexpr int TP = 8 * P, TA = 8 * A, TG = 8 * G, TC0 = 8 * C0, TC1 = 8 * C1;
  constexpr int W0 = 8 * K0 / 4, W1 = 8 * K1 / 4;  // lanes moving a scale word
  constexpr int off_a = 256 * TP, off_g = off_a + 256 * TA, off_c0 = off_g + 256 * TG, off_k0 = off_c0 + 256 * TC0,
                off_c1 = off_k0 + 256 * 4, off_k1 = off_c1 + 256 * TC1, stage_bytes = off_k1 + 256 * 4;
  extern __shared__ __align__(128) unsigned char ring[];
  const int t = threadIdx.x, lane = t & 31, warp = t >> 5;
  const std::int64_t u0 = units * blockIdx.x / gridDim.x, u1 = units * (blockIdx.x + 1) / gridDim.x;
  const std::uint32_t base = static_cast<std::uint32_t>(__cvta_generic_to_shared(ring));
  auto issue = [&](std::int64_t u, int stage) {
    const std::int64_t e = u * 2048 + t * 8;  // this thread's first element
    const std::int64_t g = u * 64 + warp * 8;  // the warp's first group
    const std::uint32_t s = base + stage * stage_bytes;
    if constexpr (TP) detail::cp_async_chunks<TP>(s + t * TP, b.param + e * P);
    if constexpr (TA) detail::cp_async_chunks<TA>(s + off_a + t * TA, b.aux + e * A);
    if constexpr (TG) detail::cp_async_chunks<TG>(s + off_g + t * TG, b.grad + e * G);
    if constexpr (TC0) detail::cp_async_chunks<TC0>(s + off_c0 + t * TC0, b.code0 + e * C0);
    if constexpr (W0) if (lane < W0) detail::cp_async_chunks<4>(s + off_k0 + t * 4, b.scale0 + g * K0 + lane * 4);
    if constexpr (TC1) detail::cp_async_chunks<TC1>(s + off_c1 + t * TC1, b.code1 + e * C1);
    if constexpr (W1) if (lane < W1) detail::cp_async_chunks<4>(s + off_k1 + t * 4, b.scale1 + g * K1 + lane * 4);
  };
  for (int k = 0; k < Stages - 1; ++k) {
    if (u0 + k < u1) issue(u0 + k, k);
    flashoptim::kernel::detail::cp_async_commit();
  }
  int cur = 0;
  for (std::int64_t u = u0; u < u1; ++u) {
    if (u + Stages - 1 < u1) issue(u + Stages - 1, (cur + Stages - 1) % Stages);
    flashoptim::kernel::detail::cp_async_commit();
    flashoptim::kernel::detail::cp_async_wait<Stages - 1>();
    const std::int64_t e = u * 2048 + t * 8;
    const std::int64_t g = u * 64 + warp * 8;
    const unsigned char* s = ring + cur * stage_bytes;
    if constexpr (TP) detail::copy_back<TP>(s + t * TP, b.param + e * P);
    if constexpr (TA) detail::copy_back<TA>(s + off_a + t * TA, b.aux + e * A);
    if constexpr (TC0) detail::copy_back<TC0>(s + off_c0 + t * TC0, b.code0 + e * C0);
    if constexpr (W0) if (lane < W0) detail::copy_back<4>(s + off_k0 + t * 4, b.scale0 + g * K0 + lane * 4);
    if constexpr (TC1) detail::copy_back<TC1>(s + off_c1 + t * TC1, b.code1 + e * C1);
    if constexpr (W1) if (lane < W1) detail::copy_back<4>(s + off_k1 + t * 4, b.scale1 + g * K1 + lane * 4);
    cur = cur + 1 == Stages ? 0 : cur + 1;
  }
}

template <int P, int A, int G, int C0, int K0, int C1, int K1>
constexpr int pattern_shared_bytes() {
  return 3 * 256 * (8 * (P + A + G + C0 + C1) + 4 + 4);
}

}  // namespace bench_gpu
