// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// The gradient-statistics pass on the GPU, in three stream-ordered launches
// with no host synchronization (capturable in a CUDA graph):
//   segments_kernel   any grid, any block size (a multiple of 32): blocks
//                     take segments in turn, a segment's 32 chunks go to the
//                     block's warps, one warp computes a chunk whole (lane l
//                     sums its 32 elements in order, then a shuffle-down
//                     tree over lanes), and warp 0 combines the 32 chunk
//                     sums by the same tree into the segment's record.
//   groups_kernel     any grid and block size: the tree's first level above
//                     the segments, groups of 32 segment records, one per warp.
//   finalize_kernel   one block: the remaining levels of each tensor's tree,
//                     the tree over tensors, the summary, and
//                     rule::finalize into the control struct.
// Every value is computed by the tree of rule/grad_order.hpp whichever
// warp, block or launch shape computes it, so the bits are the CPU pass's
// (docs/grad-passes.md). Loads are CUB's blocked loads: a row of 128
// elements is one LoadDirectBlockedVectorized (16-byte loads for fp32,
// 8-byte for bf16/fp16, a scalar fallback CUB picks when the row is not
// aligned), a partial row a guarded LoadDirectBlocked; a load decides only
// how the elements arrive, never the order they are added in. The sums use
// no CUB reduction: WarpReduce/BlockReduce do not document their
// combination order, so the shuffle tree is written out here.
#pragma once

#include <cuda_runtime.h>

#include <cub/block/block_load.cuh>
#include <cstdint>

#include "flashoptim/format/types.hpp"
#include "flashoptim/rule/grad_order.hpp"
#include "flashoptim/rule/grad_scale.hpp"

namespace flashoptim::kernel::grad_pass {

/// A tensor as the kernels see it (device memory, built by the plan).
struct entry {
  const void* data;
  std::int64_t size;
  std::int64_t segment_begin;  ///< index of its first segment record
  std::int64_t group_begin;    ///< index of its first level-1 value
  std::int32_t type;           ///< static_cast<int>(dtype)
  std::int32_t reserved;
};

/// A partial result: a sum of squares and the largest magnitude's bits.
struct record {
  double sum;
  std::uint32_t max_bits;
  std::uint32_t reserved;
};

/// Where the launches read and write (device memory).
struct launch_args {
  const entry* entries = nullptr;
  std::int64_t count = 0;           ///< tensors
  std::int64_t segments = 0;        ///< segment records
  std::int64_t groups = 0;          ///< level-1 values
  std::int64_t elements = 0;        ///< elements of all tensors
  record* segment_records = nullptr;  ///< [segments]
  record* group_records = nullptr;    ///< [groups], then the later levels in place
  record* tensor_records = nullptr;   ///< [count], then the tree over tensors in place
  // Outputs (null: not written).
  grad_summary* summary = nullptr;
  double* tensor_sum_squares = nullptr;
  double* tensor_norms = nullptr;
  grad_control* control = nullptr;
  grad_pass_config config{};
};

constexpr unsigned full_mask = 0xffffffffu;

/// warp_tree over the warp's 32 values: lane 0 gets the result.
FLASHOPTIM_DEVICE FLASHOPTIM_INLINE double warp_tree(double v) {
  FLASHOPTIM_UNROLL for (int o = grad_order::fan_in / 2; o > 0; o >>= 1)
    v = format::add_rn(v, __shfl_down_sync(full_mask, v, o));
  return v;
}

template <class T>
struct storage_bits {
  using type = std::uint16_t;
};
template <>
struct storage_bits<float> {
  using type = std::uint32_t;
};

template <class T>
FLASHOPTIM_DEVICE FLASHOPTIM_INLINE float widen(typename storage_bits<T>::type u) {
  if constexpr (sizeof(T) == 4) {
    return format::float_from_bits(u);
  } else {
    return format::to_float(T{u});
  }
}

/// The maximum over the warp (order-free: any combination gives it).
FLASHOPTIM_DEVICE FLASHOPTIM_INLINE std::uint32_t warp_max(std::uint32_t m) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  return __reduce_max_sync(full_mask, m);
#else
  FLASHOPTIM_UNROLL for (int o = 16; o > 0; o >>= 1) {
    const std::uint32_t other = __shfl_xor_sync(full_mask, m, o);
    m = other > m ? other : m;
  }
  return m;
#endif
}

/// Adds the squares of a lane's items, in order, and takes their maximum.
template <class T>
FLASHOPTIM_DEVICE FLASHOPTIM_INLINE void accumulate(const typename storage_bits<T>::type (&v)[grad_order::items],
                                                    double& acc, std::uint32_t& m) {
  FLASHOPTIM_UNROLL for (int k = 0; k < grad_order::items; ++k) {
    const float g = widen<T>(v[k]);
    const double d = static_cast<double>(g);
    acc = format::add_rn(acc, format::mul_rn(d, d));  // d * d is exact in double
    const std::uint32_t b = grad_order::magnitude_bits(g);
    m = b > m ? b : m;
  }
}

/// One chunk of `len` (1..chunk_elements) elements, by one whole warp.
/// Lane 0 returns the chunk's sum; every lane returns its maximum.
template <class T>
FLASHOPTIM_DEVICE FLASHOPTIM_INLINE void chunk_stats(const T* chunk, int len, int lane, double& sum,
                                                     std::uint32_t& max_bits) {
  using namespace grad_order;
  using U = typename storage_bits<T>::type;
  const U* p = reinterpret_cast<const U*>(chunk);
  double acc = 0.0;
  std::uint32_t m = 0;
  if (len == chunk_elements) {
    // Every row's loads are issued before the first add needs one.
    U v[rows][items];
    // CUB reads only: the pointer is const_cast for its non-const signature.
    FLASHOPTIM_UNROLL for (int r = 0; r < rows; ++r)
      cub::LoadDirectBlockedVectorized(lane, const_cast<U*>(p + r * row_elements), v[r]);
    FLASHOPTIM_UNROLL for (int r = 0; r < rows; ++r) accumulate<T>(v[r], acc, m);
  } else {
    for (int r = 0; r < rows; ++r) {
      const int valid = len - r * row_elements;
      if (valid <= 0) break;  // warp-uniform; the rest of the chunk is +0
      U v[items];
      if (valid >= row_elements) cub::LoadDirectBlockedVectorized(lane, const_cast<U*>(p + r * row_elements), v);
      else cub::LoadDirectBlocked(lane, p + r * row_elements, v, valid, U(0));
      accumulate<T>(v, acc, m);
    }
  }
  sum = warp_tree(acc);
  max_bits = warp_max(m);
}

/// The tensor holding index i of a prefix array (the last t with
/// begin(t) <= i; tensors without records share the next one's begin).
template <class Begin>
FLASHOPTIM_DEVICE FLASHOPTIM_INLINE std::int64_t find_tensor(std::int64_t count, std::int64_t i, Begin begin) {
  std::int64_t lo = 0, hi = count;
  while (hi - lo > 1) {
    const std::int64_t mid = lo + (hi - lo) / 2;
    if (begin(mid) <= i) lo = mid;
    else hi = mid;
  }
  return lo;
}

/// The most threads a block of segments_kernel or groups_kernel may have;
/// any multiple of 32 up to it works (blockDim.x is read at run time).
constexpr int max_block_threads = 1024;

/// blockDim.x: a multiple of 32 in [32, max_block_threads]; any grid.
template <int Unused = 0>
__global__ void __launch_bounds__(max_block_threads) segments_kernel(const launch_args a) {
  using namespace grad_order;
  const int warps = static_cast<int>(blockDim.x) / 32;
  __shared__ double chunk_sums[fan_in];
  __shared__ std::uint32_t chunk_max[fan_in];
  const int lane = static_cast<int>(threadIdx.x) % 32;
  const int warp = static_cast<int>(threadIdx.x) / 32;
  for (std::int64_t s = blockIdx.x; s < a.segments; s += gridDim.x) {
    const std::int64_t t = find_tensor(a.count, s, [&](std::int64_t j) { return a.entries[j].segment_begin; });
    const entry e = a.entries[t];
    const std::int64_t first = (s - e.segment_begin) * segment_elements;
    const std::int64_t left = e.size - first;
    const int n = static_cast<int>(left < segment_elements ? left : segment_elements);
    for (int c = warp; c < fan_in; c += warps) {
      double sum = 0.0;
      std::uint32_t m = 0;
      const int begin = c * chunk_elements;
      if (begin < n) {
        const int len = n - begin < chunk_elements ? n - begin : chunk_elements;
        const std::int64_t at = first + begin;
        switch (static_cast<dtype>(e.type)) {
          case dtype::bf16: chunk_stats(static_cast<const bf16*>(e.data) + at, len, lane, sum, m); break;
          case dtype::f16: chunk_stats(static_cast<const fp16*>(e.data) + at, len, lane, sum, m); break;
          default: chunk_stats(static_cast<const float*>(e.data) + at, len, lane, sum, m); break;
        }
      }
      if (lane == 0) {
        chunk_sums[c] = sum;
        chunk_max[c] = m;
      }
    }
    __syncthreads();
    if (warp == 0) {
      const double sum = warp_tree(chunk_sums[lane]);
      const std::uint32_t m = warp_max(chunk_max[lane]);
      if (lane == 0) a.segment_records[s] = record{sum, m, 0};
    }
    __syncthreads();  // chunk_sums is reused by the next segment
  }
}

/// One warp: warp_tree over values[first .. first + n) (absent: +0), and the
/// maximum. Lane 0 holds the results.
FLASHOPTIM_DEVICE FLASHOPTIM_INLINE record warp_group(const record* values, std::int64_t n, int lane) {
  double v = 0.0;
  std::uint32_t m = 0;
  if (lane < n) {
    v = values[lane].sum;
    m = values[lane].max_bits;
  }
  return record{warp_tree(v), warp_max(m), 0};
}

/// One warp: the tree over v[0 .. n) in place, level after level; the
/// result is v[0] ({+0, 0} for n == 0).
FLASHOPTIM_DEVICE FLASHOPTIM_INLINE record warp_tree_reduce(record* v, std::int64_t n, int lane) {
  using grad_order::fan_in;
  if (n == 0) return record{0.0, 0, 0};
  while (n > 1) {
    const std::int64_t groups = n / fan_in + (n % fan_in != 0 ? 1 : 0);
    for (std::int64_t g = 0; g < groups; ++g) {
      const std::int64_t left = n - g * fan_in;
      const record r = warp_group(v + g * fan_in, left < fan_in ? left : fan_in, lane);
      __syncwarp();  // every lane has read group g before v[g] is overwritten
      if (lane == 0) v[g] = r;
      __syncwarp();
    }
    n = groups;
  }
  return v[0];
}

/// Level 1 of every tensor's tree at once: each warp combines groups of 32
/// segment records into one value (any grid; blockDim.x a multiple of 32).
template <int Unused = 0>
__global__ void __launch_bounds__(max_block_threads) groups_kernel(const launch_args a) {
  using namespace grad_order;
  const int warps = static_cast<int>(blockDim.x) / 32;
  const int lane = static_cast<int>(threadIdx.x) % 32;
  const std::int64_t first = static_cast<std::int64_t>(blockIdx.x) * warps + static_cast<int>(threadIdx.x) / 32;
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * warps;
  for (std::int64_t G = first; G < a.groups; G += stride) {
    const std::int64_t t = find_tensor(a.count, G, [&](std::int64_t j) { return a.entries[j].group_begin; });
    const entry e = a.entries[t];
    const std::int64_t g = G - e.group_begin;
    const std::int64_t left = segments(e.size) - g * fan_in;
    const record r = warp_group(a.segment_records + e.segment_begin + g * fan_in, left < fan_in ? left : fan_in, lane);
    if (lane == 0) a.group_records[G] = r;
  }
}

constexpr int finalize_threads = 512;

/// One block of finalize_threads: the later levels of each tensor's tree (one tensor per warp),
/// the tree over tensors, the summary and the control struct.
template <int Unused = 0>
__global__ void __launch_bounds__(finalize_threads) finalize_kernel(const launch_args a) {
  using namespace grad_order;
  constexpr int warps = finalize_threads / 32;
  const int lane = static_cast<int>(threadIdx.x) % 32;
  const int warp = static_cast<int>(threadIdx.x) / 32;
  // The later levels, one tensor per warp.
  for (std::int64_t t = warp; t < a.count; t += warps) {
    const entry e = a.entries[t];
    const std::int64_t segs = segments(e.size);
    const std::int64_t groups = segs / fan_in + (segs % fan_in != 0 ? 1 : 0);
    const record r = warp_tree_reduce(a.group_records + e.group_begin, groups, lane);
    if (lane == 0) {
      a.tensor_records[t] = r;
      if (a.tensor_sum_squares) a.tensor_sum_squares[t] = canonical(r.sum);
      if (a.tensor_norms) a.tensor_norms[t] = canonical(format::sqrt_rn(r.sum));
    }
  }
  __syncthreads();
  if (warp != 0) return;
  const record total = warp_tree_reduce(a.tensor_records, a.count, lane);
  if (lane != 0) return;
  grad_summary s;
  s.sum_squares = canonical(total.sum);
  s.norm = canonical(format::sqrt_rn(s.sum_squares));
  s.elements = a.elements;
  s.max_abs_bits = total.max_bits;
  s.non_finite = total.max_bits >= 0x7f800000u ? 1 : 0;
  if (a.summary) *a.summary = s;
  if (a.control) {
    grad_control c = *a.control;
    rule::finalize(s, a.config, c);
    *a.control = c;
  }
}

/// Writes `value` to *control (a capturable reset of GradScaler's state).
template <int Unused = 0>
__global__ void set_control_kernel(grad_control* control, grad_control value) {
  if (threadIdx.x == 0 && blockIdx.x == 0) *control = value;
}

}  // namespace flashoptim::kernel::grad_pass
