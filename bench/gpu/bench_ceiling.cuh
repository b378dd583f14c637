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
/// first 4 or 8 lanes as 4-byte words). R: the step policy's warp tiles
/// (kernel/step_kernel.cuh, step_staged_run): above 1, a block's units go R at
/// a time, warp w moving the R consecutive tiles at w * R * 256 of them, and
/// 4-byte scales (K = 4) through a per-warp window of the R tiles' R * 8 words,
/// copied when the first of them is staged (one word per lane) and written
/// back after the last of them (one word per lane), as the step does; the
/// units left over (fewer than R) and 2-byte scales as with R = 1.
constexpr int pattern_stages = 3;
template <int K0, int K1, int R>
struct pattern_windows {
  static constexpr bool v0 = R > 1 && K0 == 4, v1 = R > 1 && K1 == 4;  // slots with a window
  static constexpr int entries = (pattern_stages + R - 1) / R + 1;
  static constexpr int warp_words = R * 8, warp_window = warp_words * 4;
  static constexpr int entry_bytes = 8 * warp_window * ((v0 ? 1 : 0) + (v1 ? 1 : 0));
  static constexpr int bytes = entries * entry_bytes;
};
template <int P, int A, int G, int C0, int K0, int C1, int K1, int R = 1>
__global__ void __launch_bounds__(256, 2) pattern_kernel(pattern_buffers b, std::int64_t units) {
  constexpr int Stages = pattern_stages;
  constexpr int TP = 8 * P, TA = 8 * A, TG = 8 * G, TC0 = 8 * C0, TC1 = 8 * C1;
  constexpr int W0 = 8 * K0 / 4, W1 = 8 * K1 / 4;  // lanes moving a scale word
  using PW = pattern_windows<K0, K1, R>;
  constexpr bool V0 = PW::v0, V1 = PW::v1;
  constexpr int off_a = 256 * TP, off_g = off_a + 256 * TA, off_c0 = off_g + 256 * TG, off_k0 = off_c0 + 256 * TC0,
                off_c1 = off_k0 + 256 * 4, off_k1 = off_c1 + 256 * TC1, stage_bytes = off_k1 + 256 * 4;
  constexpr int entries = PW::entries, warp_words = PW::warp_words, warp_window = PW::warp_window;
  constexpr int entry_bytes = PW::entry_bytes;
  constexpr int win1 = V0 ? 8 * warp_window : 0;  // slot 1's windows after slot 0's
  extern __shared__ __align__(128) unsigned char ring[];
  const int t = threadIdx.x, lane = t & 31, warp = t >> 5;
  const std::int64_t u0 = units * blockIdx.x / gridDim.x, u1 = units * (blockIdx.x + 1) / gridDim.x;
  const std::int64_t ug = u0 + (u1 - u0) / R * R;  // units [u0, ug) go R at a time
  const std::uint32_t base = static_cast<std::uint32_t>(__cvta_generic_to_shared(ring));
  const std::uint32_t windows = base + Stages * stage_bytes;
  // this thread's first element in tile u, and the first of its warp's
  const auto element = [&](std::int64_t u) -> std::int64_t {
    if (R > 1 && u < ug) {
      const std::int64_t k = u - u0;
      return (u0 + k / R * R) * 2048 + (warp * R + k % R) * 256 + lane * 8;
    }
    return u * 2048 + t * 8;
  };
  const auto windowed_tile = [&](std::int64_t u) { return R > 1 && u < ug; };
  const auto entry_of = [&](std::int64_t u) -> std::uint32_t {
    return static_cast<std::uint32_t>(((u - u0) / R) % entries) * entry_bytes;
  };
  auto issue = [&](std::int64_t u, int stage) {
    const std::int64_t e = element(u);        // this thread's first element
    const std::int64_t g = (e - lane * 8) / 32;  // the warp's first group
    const std::uint32_t s = base + stage * stage_bytes;
    const bool w = windowed_tile(u), first = w && (u - u0) % R == 0;
    if constexpr (TP) detail::cp_async_chunks<TP>(s + t * TP, b.param + e * P);
    if constexpr (TA) detail::cp_async_chunks<TA>(s + off_a + t * TA, b.aux + e * A);
    if constexpr (TG) detail::cp_async_chunks<TG>(s + off_g + t * TG, b.grad + e * G);
    if constexpr (TC0) detail::cp_async_chunks<TC0>(s + off_c0 + t * TC0, b.code0 + e * C0);
    if constexpr (W0) {
      if (V0 && w) {
        if (first && lane < warp_words)
          detail::cp_async_chunks<4>(windows + entry_of(u) + warp * warp_window + lane * 4, b.scale0 + (g + lane) * 4);
      } else if (lane < W0) {
        detail::cp_async_chunks<4>(s + off_k0 + t * 4, b.scale0 + g * K0 + lane * 4);
      }
    }
    if constexpr (TC1) detail::cp_async_chunks<TC1>(s + off_c1 + t * TC1, b.code1 + e * C1);
    if constexpr (W1) {
      if (V1 && w) {
        if (first && lane < warp_words)
          detail::cp_async_chunks<4>(windows + entry_of(u) + win1 + warp * warp_window + lane * 4,
                                     b.scale1 + (g + lane) * 4);
      } else if (lane < W1) {
        detail::cp_async_chunks<4>(s + off_k1 + t * 4, b.scale1 + g * K1 + lane * 4);
      }
    }
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
    if constexpr (V0 || V1) __syncwarp();
    const std::int64_t e = element(u);
    const std::int64_t g = (e - lane * 8) / 32;
    const unsigned char* s = ring + cur * stage_bytes;
    const bool w = windowed_tile(u);
    const unsigned char* win = ring + Stages * stage_bytes + (w ? entry_of(u) : 0) + warp * warp_window;
    const int j = static_cast<int>((u - u0) % R);
    if constexpr (TP) detail::copy_back<TP>(s + t * TP, b.param + e * P);
    if constexpr (TA) detail::copy_back<TA>(s + off_a + t * TA, b.aux + e * A);
    if constexpr (TC0) detail::copy_back<TC0>(s + off_c0 + t * TC0, b.code0 + e * C0);
    // A windowed slot's scales go back once per R tiles, after the last:
    // the window's R * 8 words, one per lane, to the groups from the
    // first tile's (g - j * 8).
    const bool write_back = w && j == R - 1 && lane < warp_words;
    if constexpr (W0) {
      if (V0 && w) {
        if (write_back) detail::copy_back<4>(win + lane * 4, b.scale0 + (g - j * 8 + lane) * 4);
      } else if (lane < W0) {
        detail::copy_back<4>(s + off_k0 + t * 4, b.scale0 + g * K0 + lane * 4);
      }
    }
    if constexpr (TC1) detail::copy_back<TC1>(s + off_c1 + t * TC1, b.code1 + e * C1);
    if constexpr (W1) {
      if (V1 && w) {
        if (write_back) detail::copy_back<4>(win + win1 + lane * 4, b.scale1 + (g - j * 8 + lane) * 4);
      } else if (lane < W1) {
        detail::copy_back<4>(s + off_k1 + t * 4, b.scale1 + g * K1 + lane * 4);
      }
    }
    cur = cur + 1 == Stages ? 0 : cur + 1;
  }
}

template <int P, int A, int G, int C0, int K0, int C1, int K1, int R = 1>
constexpr int pattern_shared_bytes() {
  return pattern_stages * 256 * (8 * (P + A + G + C0 + C1) + 4 + 4) + pattern_windows<K0, K1, R>::bytes;
}

}  // namespace bench_gpu
