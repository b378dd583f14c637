// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// The GPU write of FP8 parameters with block scales (docs/fp8-params.md),
// run after the step: reads the master the step just stored, writes e4m3 /
// e5m2 values and one fp32 scale per block, the same bytes as
// cpu::fp8_param_write (the recipe's functions are format/fp8_blocks.hpp's).
//
// A CUDA block of 512 threads owns a 128 x 128 tile of one tensor (the 1-D
// form is rows of 128): warp w takes rows w, w + 16, ..., lane l columns
// 4l .. 4l + 3, so every row of the tile is one warp's. A 1 x 128 block is
// then one warp's row (a shuffle reduction of the amax, no shared memory);
// a 128 x 128 block is the whole tile. Tiles wholly inside the tensor with
// aligned buffers load and store 4 elements at a time without a check, and
// load all 8 of a warp's rows before the first amax (kept as loaded: 3
// registers per 4 values for bf16 + int8), so 8 loads per thread are in
// flight at once: the pass is bound by memory latency otherwise
// (bench_fp8_param measured the 1 x 128 form at 963 GB/s with one row in
// flight, 1821 GB/s with eight); the amax is a float maximum and values
// convert in pairs (fp8_lane_amax / fp8_encode_lane, shared with the fused
// write); edge tiles check every element with the recipe's functions.
// The master is decoded as the step kernel decodes it (an int8 ULP
// correction's fraction from a 256-entry shared-memory table, exponent-bit
// arithmetic: kernel/proven_codecs.cuh), which gives Master::decode's floats
// for every input (tests/gpu/exhaustive_test.cu) at a fraction of the
// generic decode's division and scaling.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <utility>
#include <vector>

#include "flashoptim/format/fp8_blocks.hpp"
#include "flashoptim/kernel/fp8_step_write.cuh"
#include "flashoptim/kernel/kernel_config.cuh"

namespace flashoptim::kernel {

inline constexpr int fp8_tile = 128;
inline constexpr int fp8_threads = 512;
inline constexpr int fp8_warps = fp8_threads / 32;
inline constexpr int fp8_rows_per_warp = fp8_tile / fp8_warps;  // 8

template <class Master, class F8>
struct fp8_table_entry {
  fp8_param_ref<Master, F8> ref;
  std::int64_t tile_cols = 0;  ///< ceil(cols / 128)
  bool vec4 = false;           ///< cols % 4 == 0 and every buffer aligned to 4 elements
};

namespace detail {
template <class T>
struct alignas(4 * sizeof(T)) fp8_quad {
  T v[4];
};

/// The master mode as the pass decodes it: the step kernel's wrapper (same
/// floats as Master::decode), whose int8 fractions come from table slot 0.
template <class Master>
using fp8_pass_master = master_select<Master, true, true, true>;

/// Element i's master value, decoded by the kernel's wrapper.
template <class Master, class F8>
__device__ FLASHOPTIM_INLINE float fp8_master_at(const fp8_param_ref<Master, F8>& t, std::int64_t i) {
  using DM = typename fp8_pass_master<Master>::type;
  typename Master::aux_type a{};
  if constexpr (storage_bytes<typename Master::aux_type> != 0) a = t.aux[i];
  return DM::decode(t.master[i], a);
}

/// Four consecutive master values (i .. i + 3 all exist): one vector load
/// per buffer when aligned, else four.
template <class Master, class F8>
__device__ FLASHOPTIM_INLINE void fp8_load4(const fp8_param_ref<Master, F8>& t, std::int64_t i, bool vec, float* x) {
  using P = typename Master::param_type;
  using A = typename Master::aux_type;
  using DM = typename fp8_pass_master<Master>::type;
  if (vec) {
    const fp8_quad<P> p = *reinterpret_cast<const fp8_quad<P>*>(t.master + i);
    fp8_quad<A> a{};
    if constexpr (storage_bytes<A> != 0) a = *reinterpret_cast<const fp8_quad<A>*>(t.aux + i);
#pragma unroll
    for (int j = 0; j < 4; ++j) x[j] = DM::decode(p.v[j], a.v[j]);
  } else {
#pragma unroll
    for (int j = 0; j < 4; ++j) x[j] = fp8_master_at(t, i + j);
  }
}

/// Four consecutive elements' stored master, as loaded (interior tiles
/// keep these rather than the decoded floats: 3 registers instead of 4 for
/// bf16 + int8; a 128 x 128 tile decodes them twice).
template <class Master>
struct fp8_raw4 {
  fp8_quad<typename Master::param_type> p;
  fp8_quad<typename Master::aux_type> a;
};
template <class Master, class F8>
__device__ FLASHOPTIM_INLINE fp8_raw4<Master> fp8_load_raw4(const fp8_param_ref<Master, F8>& t, std::int64_t i) {
  using P = typename Master::param_type;
  using A = typename Master::aux_type;
  fp8_raw4<Master> r{};
  r.p = *reinterpret_cast<const fp8_quad<P>*>(t.master + i);
  if constexpr (storage_bytes<A> != 0) r.a = *reinterpret_cast<const fp8_quad<A>*>(t.aux + i);
  return r;
}
template <class Master>
__device__ FLASHOPTIM_INLINE void fp8_decode4(const fp8_raw4<Master>& r, float* x) {
  using DM = typename fp8_pass_master<Master>::type;
#pragma unroll
  for (int j = 0; j < 4; ++j) x[j] = DM::decode(r.p.v[j], r.a.v[j]);
}

/// The interior store: fp8_encode_lane's bytes, one 32-bit store.
template <class F8>
__device__ FLASHOPTIM_INLINE void fp8_store4_fast(F8* out, const float (&x)[4], float q, bool has_inf) {
  F8 v[4];
  fp8_encode_lane(x, q, has_inf, v);
  *reinterpret_cast<std::uint32_t*>(out) = std::uint32_t{v[0].bits} | (std::uint32_t{v[1].bits} << 8) |
                                           (std::uint32_t{v[2].bits} << 16) | (std::uint32_t{v[3].bits} << 24);
}
template <class F8>
__device__ FLASHOPTIM_INLINE void fp8_store4(F8* out, std::int64_t i, bool vec, const float* x, float q) {
  F8 v[4];
#pragma unroll
  for (int j = 0; j < 4; ++j) v[j] = fp8_encode_scaled<F8>(x[j], q);
  if (vec) {
    *reinterpret_cast<std::uint32_t*>(out + i) = std::uint32_t{v[0].bits} | (std::uint32_t{v[1].bits} << 8) |
                                                 (std::uint32_t{v[2].bits} << 16) | (std::uint32_t{v[3].bits} << 24);
  } else {
#pragma unroll
    for (int j = 0; j < 4; ++j) out[i + j] = v[j];
  }
}

__device__ FLASHOPTIM_INLINE std::uint32_t fp8_warp_max(std::uint32_t a) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    const std::uint32_t b = __shfl_xor_sync(0xffffffffu, a, o);
    a = b > a ? b : a;
  }
  return a;
}

/// A 128 x 128 tile's amax from each thread's part: the warps' maxima
/// through `warp_amax` (shared; the caller synchronizes before reusing it).
__device__ FLASHOPTIM_INLINE std::uint32_t fp8_tile_amax(std::uint32_t amax, std::uint32_t* warp_amax) {
  amax = fp8_warp_max(amax);
  if (threadIdx.x % 32 == 0) warp_amax[threadIdx.x / 32] = amax;
  __syncthreads();
#pragma unroll
  for (int w = 0; w < fp8_warps; ++w) amax = warp_amax[w] > amax ? warp_amax[w] : amax;
  return amax;
}
/// Lane `lane`'s four values of row r of the tile whose columns start at c0
/// (absent elements read as 0, which no amax notices); `full` when all four
/// exist.
template <class Master, class F8>
__device__ FLASHOPTIM_INLINE bool fp8_row_load(const fp8_param_ref<Master, F8>& t, bool vec4, std::int64_t r,
                                               std::int64_t c, float* x, bool& any) {
  const fp8_block_shape& s = t.shape;
  const std::int64_t i = r * s.cols + c;
  const bool full = r < s.rows && c + 3 < s.cols && i + 3 < s.size;
  any = false;
  if (full) {
    fp8_load4(t, i, vec4, x);
    any = true;
    return true;
  }
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    const bool ok = r < s.rows && c + j < s.cols && i + j < s.size;
    x[j] = ok ? fp8_master_at(t, i + j) : 0.0f;
    any = any || ok;
  }
  return false;
}

template <class Master, class F8>
__device__ FLASHOPTIM_INLINE void fp8_row_store(const fp8_param_ref<Master, F8>& t, bool vec4, std::int64_t r,
                                                std::int64_t c, bool full, const float* x, float q) {
  const fp8_block_shape& s = t.shape;
  const std::int64_t i = r * s.cols + c;
  if (full) {
    fp8_store4(t.values, i, vec4, x, q);
    return;
  }
#pragma unroll
  for (int j = 0; j < 4; ++j)
    if (r < s.rows && c + j < s.cols && i + j < s.size) t.values[i + j] = fp8_encode_scaled<F8>(x[j], q);
}
}  // namespace detail

namespace detail {
/// One tile of tensor t: rows r0 .. r0 + 127, this lane's columns c .. c + 3.
/// Interior: every element of the tile exists and the buffers allow vector
/// access, so no element is checked (the edge tiles take the checked path).
template <bool Interior, class Master, class F8>
__device__ FLASHOPTIM_INLINE void fp8_write_tile(const fp8_param_ref<Master, F8>& t, bool vec4, std::int64_t tr,
                                           std::int64_t tc, bool pow2, std::uint32_t* warp_amax) {
  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
  const std::int64_t cols = t.shape.cols;
  const std::int64_t r0 = tr * fp8_tile + warp, c = tc * fp8_tile + 4 * lane;
  const std::int64_t scale_cols = t.shape.scale_cols();
  if constexpr (Interior) {
    // Every row's loads first (they are independent of the stores, which
    // the compiler may not move them past), then the blocks.
    const std::int64_t base = r0 * cols + c, stride = fp8_warps * cols;
    fp8_raw4<Master> raw[fp8_rows_per_warp];
#pragma unroll
    for (int k = 0; k < fp8_rows_per_warp; ++k) raw[k] = fp8_load_raw4(t, base + stride * k);
    F8* out = t.values + base;  // advanced a row at a time: one 64-bit address live
    if (t.shape.block_rows == 1) {  // a block per row
#pragma unroll
      for (int k = 0; k < fp8_rows_per_warp; ++k) {
        float x[4];
        fp8_decode4(raw[k], x);
        bool has_inf;
        std::uint32_t amax = fp8_lane_amax(x, 4, has_inf);
        amax = fp8_warp_max(amax);
        const float q = fp8_quant_factor<F8>(amax, pow2);
        fp8_store4_fast(out, x, q, has_inf);
        out += stride;
        if (lane == 0) t.scales[(r0 + fp8_warps * k) * scale_cols + tc] = fp8_block_scale(q);
      }
      return;
    }
    // 128 x 128: the tile's amax, then its values (decoded twice).
    std::uint32_t amax = 0;
    bool tile_inf = false;  // this lane's values: the encode needs it
#pragma unroll
    for (int k = 0; k < fp8_rows_per_warp; ++k) {
      float x[4];
      fp8_decode4(raw[k], x);
      bool has_inf;
      const std::uint32_t a = fp8_lane_amax(x, 4, has_inf);
      amax = a > amax ? a : amax;
      tile_inf = tile_inf || has_inf;
    }
    const float q = fp8_quant_factor<F8>(fp8_tile_amax(amax, warp_amax), pow2);
#pragma unroll
    for (int k = 0; k < fp8_rows_per_warp; ++k) {
      float x[4];
      fp8_decode4(raw[k], x);
      fp8_store4_fast(out, x, q, tile_inf);
      out += stride;
    }
    if (threadIdx.x == 0) t.scales[tr * scale_cols + tc] = fp8_block_scale(q);
    __syncthreads();  // warp_amax is rewritten by the next tile
    return;
  }
  if (t.shape.block_rows == 1) {
#pragma unroll 2
    for (int k = 0; k < fp8_rows_per_warp; ++k) {
      const std::int64_t r = r0 + fp8_warps * k;
      if (r >= t.shape.rows) break;  // uniform in the warp
      float x[4];
      bool any = true;
      const bool full = fp8_row_load(t, vec4, r, c, x, any);
      std::uint32_t amax = 0;
#pragma unroll
      for (int j = 0; j < 4; ++j) amax = fp8_amax_add(amax, x[j]);
      amax = fp8_warp_max(amax);
      const float q = fp8_quant_factor<F8>(amax, pow2);
      if (any) fp8_row_store(t, vec4, r, c, full, x, q);
      if (lane == 0) t.scales[r * scale_cols + tc] = fp8_block_scale(q);
    }
    return;
  }
  // 128 x 128 edge tiles (few) read the master twice, the second time from
  // cache, so that they need no registers beyond the interior's.
  float x[1][4];
  std::uint32_t amax = 0;
#pragma unroll
  for (int k = 0; k < fp8_rows_per_warp; ++k) {
    const std::int64_t r = r0 + fp8_warps * k;
    bool any;
    fp8_row_load(t, vec4, r, c, x[0], any);
#pragma unroll
    for (int j = 0; j < 4; ++j) amax = fp8_amax_add(amax, x[0][j]);
  }
  const float q = fp8_quant_factor<F8>(fp8_tile_amax(amax, warp_amax), pow2);
#pragma unroll
  for (int k = 0; k < fp8_rows_per_warp; ++k) {
    const std::int64_t r = r0 + fp8_warps * k;
    bool any;
    const bool full = fp8_row_load(t, vec4, r, c, x[0], any);
    if (any) fp8_row_store(t, vec4, r, c, full, x[0], q);
  }
  if (threadIdx.x == 0) t.scales[tr * scale_cols + tc] = fp8_block_scale(q);
  __syncthreads();  // warp_amax is rewritten by the next tile
}
}  // namespace detail

/// One CUDA block per 128 x 128 tile, grid-stride over the tiles of every
/// tensor (tile_begin: count + 1 prefix sums).
template <class Master, class F8>
__global__ void __launch_bounds__(fp8_threads)
    fp8_param_kernel(const fp8_table_entry<Master, F8>* entries, const std::int64_t* tile_begin, std::int64_t count,
                     bool pow2) {
  __shared__ std::uint32_t warp_amax[fp8_warps];
  if constexpr (detail::fp8_pass_master<Master>::tabulated) {
    float* table = shared_tables();  // slot 0: the int8 correction's fractions
    for (unsigned b = threadIdx.x; b < static_cast<unsigned>(table_entries); b += blockDim.x)
      table[b] = detail::fp8_pass_master<Master>::type::entry(b);
    __syncthreads();
  }
  const std::int64_t tiles = tile_begin[count];
  for (std::int64_t tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
    std::int64_t lo = 0, hi = count - 1;  // the last tensor whose first tile is <= tile
    while (lo < hi) {
      const std::int64_t mid = (lo + hi + 1) / 2;
      if (tile_begin[mid] <= tile) lo = mid;
      else hi = mid - 1;
    }
    const fp8_table_entry<Master, F8>& e = entries[lo];
    const fp8_param_ref<Master, F8> t = e.ref;
    const std::int64_t local = tile - tile_begin[lo];
    const std::int64_t tr = local / e.tile_cols, tc = local % e.tile_cols;
    const bool interior = e.vec4 && (tr + 1) * fp8_tile <= t.shape.rows && (tc + 1) * fp8_tile <= t.shape.cols &&
                          (tr + 1) * fp8_tile * t.shape.cols <= t.shape.size;
    if (interior) detail::fp8_write_tile<true>(t, true, tr, tc, pow2, warp_amax);
    else detail::fp8_write_tile<false>(t, e.vec4, tr, tc, pow2, warp_amax);
  }
}

/// The tensors of one FP8 write, validated and uploaded once; write_async
/// launches the kernel on a stream (no allocation, no host sync), so it can
/// follow the step every iteration or be captured in a CUDA graph. The
/// buffers are device (or managed) memory, not read by the host.
template <class Master, class F8>
class fp8_param_plan {
 public:
  using ref = fp8_param_ref<Master, F8>;
  fp8_param_plan() = default;
  fp8_param_plan(const fp8_param_plan&) = delete;
  fp8_param_plan& operator=(const fp8_param_plan&) = delete;
  fp8_param_plan(fp8_param_plan&& o) noexcept { swap(o); }
  fp8_param_plan& operator=(fp8_param_plan&& o) noexcept {
    swap(o);
    return *this;
  }
  ~fp8_param_plan() { release(); }

  /// Validates the list (validate_fp8_param_list) and uploads it; on error
  /// the plan is left as it was.
  status build(const ref* tensors, std::size_t count) {
    FLASHOPTIM_RETURN_IF_ERROR(validate_fp8_param_list(tensors, count));
    std::vector<fp8_table_entry<Master, F8>> entries(count);
    std::vector<std::int64_t> begin(count + 1, 0);
    for (std::size_t i = 0; i < count; ++i) {
      const ref& t = tensors[i];
      auto& e = entries[i];
      e.ref = t;
      e.tile_cols = (t.shape.cols + fp8_tile - 1) / fp8_tile;
      const std::int64_t tile_rows = (t.shape.rows + fp8_tile - 1) / fp8_tile;
      auto aligned = [](const void* p, std::size_t bytes) {
        return p == nullptr || reinterpret_cast<std::uintptr_t>(p) % bytes == 0;
      };
      e.vec4 = t.shape.cols % 4 == 0 && aligned(t.master, 4 * sizeof(typename ref::param_type)) &&
               aligned(t.aux, 4 * (storage_bytes<typename ref::aux_type> ? storage_bytes<typename ref::aux_type> : 1)) &&
               aligned(t.values, 4);
      begin[i + 1] = begin[i] + (t.shape.size > 0 ? tile_rows * e.tile_cols : 0);
    }
    void* table = nullptr;
    const std::size_t entry_bytes = count * sizeof(fp8_table_entry<Master, F8>);
    const std::size_t bytes = entry_bytes + (count + 1) * sizeof(std::int64_t) + 16;
    if (cudaMalloc(&table, bytes) != cudaSuccess) {
      cudaGetLastError();
      return status(status_code::cuda_error, "fp8_param_plan: cudaMalloc of %zu bytes failed", bytes);
    }
    auto* prefix = reinterpret_cast<std::int64_t*>(static_cast<char*>(table) + ((entry_bytes + 15) / 16) * 16);
    cudaError_t err = cudaSuccess;
    if (count > 0) err = cudaMemcpy(table, entries.data(), entry_bytes, cudaMemcpyHostToDevice);
    if (err == cudaSuccess)
      err = cudaMemcpy(prefix, begin.data(), (count + 1) * sizeof(std::int64_t), cudaMemcpyHostToDevice);
    if (err != cudaSuccess) {
      cudaFree(table);
      return status(status_code::cuda_error, "fp8_param_plan: upload failed: %s", cudaGetErrorString(err));
    }
    release();
    table_ = table;
    entries_ = static_cast<const fp8_table_entry<Master, F8>*>(table);
    prefix_ = prefix;
    count_ = static_cast<std::int64_t>(count);
    tiles_ = begin[count];
    return status();
  }

  /// Writes every tensor's FP8 values and scales from its master.
  status write_async(const fp8_param_options& options, cudaStream_t stream) const {
    if (table_ == nullptr) return status(status_code::invalid_argument, "fp8_param_plan: write before build");
    if (tiles_ == 0) return status();
    // grid-stride beyond 2^20 blocks (or beyond set_grid's cap)
    const std::int64_t max_grid = grid_cap_ > 0 ? grid_cap_ : std::int64_t{1} << 20;
    const unsigned grid = static_cast<unsigned>(tiles_ < max_grid ? tiles_ : max_grid);
    constexpr std::size_t table_bytes = detail::fp8_pass_master<Master>::tabulated ? table_entries * sizeof(float) : 0;
    fp8_param_kernel<Master, F8>
        <<<grid, fp8_threads, table_bytes, stream>>>(entries_, prefix_, count_, options.pow2_scales);
    const cudaError_t err = cudaGetLastError();
    if (err != cudaSuccess)
      return status(status_code::cuda_error, "fp8_param_kernel launch: %s", cudaGetErrorString(err));
    return status();
  }

  std::int64_t tiles() const { return tiles_; }
  /// At most `blocks` CUDA blocks per launch (0: one per tile up to 2^20),
  /// each then walking several tiles: the bytes do not depend on it (tests
  /// show it on a list mixing both block kinds, so that one CUDA block
  /// writes 1 x 128 and 128 x 128 tiles in turn through its shared memory).
  void set_grid(int blocks) { grid_cap_ = blocks > 0 ? blocks : 0; }

 private:
  void release() {
    if (table_ != nullptr) cudaFree(table_);
    table_ = nullptr;
    entries_ = nullptr;
    prefix_ = nullptr;
    count_ = tiles_ = 0;
  }
  void swap(fp8_param_plan& o) noexcept {
    std::swap(table_, o.table_);
    std::swap(entries_, o.entries_);
    std::swap(prefix_, o.prefix_);
    std::swap(count_, o.count_);
    std::swap(tiles_, o.tiles_);
    std::swap(grid_cap_, o.grid_cap_);
  }
  void* table_ = nullptr;
  const fp8_table_entry<Master, F8>* entries_ = nullptr;
  const std::int64_t* prefix_ = nullptr;
  std::int64_t count_ = 0;
  std::int64_t tiles_ = 0;
  int grid_cap_ = 0;
};

}  // namespace flashoptim::kernel
