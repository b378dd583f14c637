// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// The FP8 write fused into the step kernel (docs/fp8-params.md, "Fused
// into the step"): after a tile's new master is stored, the step decodes it
// from the registers it still holds and writes the tile's e4m3 / e5m2
// values and, for each 1 x 128 block, its fp32 scale, with the recipe's
// functions of format/fp8_blocks.hpp, so the bytes are those of the second
// pass (cpu::fp8_param_write_serial). Only blocks that are 128 consecutive
// elements of the tensor starting at a multiple of 128 are fused (the 1-D
// form, and 1 x 128 blocks of rows whose width is a multiple of 128): a
// thread's tile of N elements then lies in one block, and a block is the
// tiles of 128 / N consecutive lanes of one warp, whose amax is reduced by
// shuffles. A 128 x 128 block needs its amax over 128 rows before any of
// its values is written, so it stays with the second pass.
//
// Compiled only into kernels instantiated with an FP8 type
// (step_kernel<..., F8>); the plain step's kernels do not contain it.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

#include "flashoptim/format/fp8_blocks.hpp"
#include "flashoptim/kernel/tile_access.cuh"

namespace flashoptim::kernel {

/// One tensor's FP8 copy as the fused step writes it. Null values (and
/// scales): the tensor has no fused copy and the step writes none.
template <class F8>
struct fp8_out_entry {
  F8* values = nullptr;   ///< size elements, the tensor's order
  float* scales = nullptr;  ///< ceil(size / 128): block b is elements [128 b, 128 b + 128)
  /// values can take the tile's vector store (aligned to its width).
  std::uint32_t vector_ok = 0;
};

/// What a fused launch carries beside step_params: one entry per tensor of
/// the table (same order) and the recipe's option.
template <class F8>
struct fp8_out {
  const fp8_out_entry<F8>* entries = nullptr;
  std::int32_t pow2 = 0;  ///< fp8_param_options::pow2_scales
};

template <class F8>
struct is_fp8_param_type
    : std::integral_constant<bool, std::is_same<F8, fp8_e4m3>::value || std::is_same<F8, fp8_e5m2>::value> {};


/// A lane's part of a block's amax: the recipe's bit-pattern maximum of |x|
/// over x[0 .. count) (fp8_amax_add: finite values only), found as a float
/// maximum (fmaxf drops a NaN, and for non-negative floats the value order
/// is the bit order) unless the maximum is infinite, when the lane redoes it
/// with fp8_amax_add (rare). `has_inf` says which: fp8_encode_lane needs it.
template <int N>
FLASHOPTIM_DEVICE FLASHOPTIM_INLINE std::uint32_t fp8_lane_amax(const float (&x)[N], int count, bool& has_inf) {
  float top = 0.0f;
  FLASHOPTIM_UNROLL for (int i = 0; i < N; ++i) if (i < count) top = fmaxf(top, fabsf(x[i]));
  has_inf = format::bits_of(top) == 0x7f800000u;
  if (!has_inf) return format::bits_of(top);
  std::uint32_t amax = 0;
  FLASHOPTIM_UNROLL for (int i = 0; i < N; ++i) if (i < count) amax = fp8_amax_add(amax, x[i]);
  return amax;
}

/// fp8_encode_scaled<F8>(x[i], q) for every i: without an infinite x, a
/// multiply and half a conversion per value (for a finite or NaN x,
/// fp8(x * q) is the recipe's byte: NaN times q is NaN, which converts to
/// the format's NaN, 0x7f); with one, the recipe's function per value.
template <class F8, int N>
FLASHOPTIM_DEVICE FLASHOPTIM_INLINE void fp8_encode_lane(const float (&x)[N], float q, bool has_inf, F8 (&v)[N]) {
  static_assert(N % 2 == 0, "values convert in pairs");
  if (has_inf) {
    FLASHOPTIM_UNROLL for (int i = 0; i < N; ++i) v[i] = fp8_encode_scaled<F8>(x[i], q);
  } else {
    FLASHOPTIM_UNROLL for (int i = 0; i < N; i += 2)
      format::from_float_pair(format::mul_rn(x[i], q), format::mul_rn(x[i + 1], q), v[i], v[i + 1]);
  }
}

/// Writes the FP8 copy of one stepped tile of N elements whose first
/// element's block starts 128 / N lanes back at most: `param` / `aux` are
/// the tile's new stored master (Master: the step's kernel master, whose
/// decode gives Master::decode's floats), `valid` its elements (N when
/// Full), `values` the tile's first FP8 value, `scale` its block's scale,
/// written by the block's first lane (`owner`). Every lane of the warp calls
/// it together (the amax is reduced by shuffles over aligned groups of
/// 128 / N lanes, one block each); lanes past a tensor's end have valid 0
/// and take no part in the amax.
template <class Master, class F8, int N, bool Full>
FLASHOPTIM_DEVICE FLASHOPTIM_INLINE void fp8_write_stepped_tile(const typename Master::param_type (&param)[N],
                                                                const typename Master::aux_type (&aux)[N], int valid,
                                                                bool pow2, F8* values, bool vector_store,
                                                                float* scale, bool owner) {
  static_assert(fp8_block_cols % N == 0 && 32 * N >= fp8_block_cols,
                "a 1 x 128 block is the tiles of whole lanes of one warp (4 <= N, N divides 128)");
  constexpr int lanes = fp8_block_cols / N;
  float x[N];
  FLASHOPTIM_UNROLL for (int i = 0; i < N; ++i) x[i] = Master::decode(param[i], aux[i]);
  bool has_inf;
  std::uint32_t amax = fp8_lane_amax(x, Full ? N : valid, has_inf);
  // An exact maximum on the bit patterns: any order gives the CPU's amax.
  FLASHOPTIM_UNROLL for (int o = 1; o < lanes; o <<= 1) {
    const std::uint32_t b = __shfl_xor_sync(0xffffffffu, amax, o);
    amax = b > amax ? b : amax;
  }
  const float q = fp8_quant_factor<F8>(amax, pow2);
  F8 v[N];
  fp8_encode_lane(x, q, has_inf, v);
  if (Full && vector_store) tile_access<F8, N>::store(values, v);
  else tile_access<F8, N>::store_partial(values, v, Full ? N : valid);
  if (owner) *scale = fp8_block_scale(q);
}

}  // namespace flashoptim::kernel
