// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// Kernels off the step path: zeroing a table's states, splitting fp32
// weights into (param, correction / master) and back on the device (the
// same codec functions codec::split and codec::reconstruct call on the
// host), and advancing a device step counter after a captured step.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "flashoptim/codec/master.hpp"
#include "flashoptim/kernel/tensor_table.cuh"

namespace flashoptim::kernel {

/// Zero codes and scales of every tensor of the table: the state of a fresh
/// optimizer (every codec decodes all-zero bytes as 0).
template <class Config, int Threads>
__global__ void __launch_bounds__(Threads) zero_states_kernel(const table_view<Config> tab) {
  const std::int64_t unit = tab.unit_elements;
  const unit_range range = block_units(tab.units, blockIdx.x, gridDim.x);
  if (range.begin >= range.end) return;
  std::int64_t ti = find_tensor(tab.unit_begin, tab.count, range.begin);
  for (std::int64_t u = range.begin; u < range.end; ++u) {
    while (tab.unit_begin[ti + 1] <= u) ++ti;
    const tensor_ref<Config> t = tab.entries[ti].ref;
    const std::int64_t start = (u - tab.unit_begin[ti]) * unit;
    const std::int64_t left = t.size - start;
    const int count = static_cast<int>(left < unit ? left : unit);
    const int groups = (count + 31) / 32;  // unit starts are multiples of 32
    for_each_slot<Config::num_slots>([&](auto s) {
      constexpr int I = decltype(s)::value;
      using S = typename Config::template state<I>;
      const auto& r = slot_at<I>(t.states);
      if constexpr (S::stores_state)
        for (int i = static_cast<int>(threadIdx.x); i < count; i += Threads) r.codes[start + i] = typename S::code_type{};
      if constexpr (codec::is_grouped<S>::value)
        for (int g = static_cast<int>(threadIdx.x); g < groups; g += Threads)
          r.scales[start / 32 + g] = typename S::scale_type{};
    });
  }
}

/// (param, aux)[i] = Master::encode(x[i]), as codec::split.
template <class Master>
__global__ void split_kernel(const float* x, std::int64_t n, typename Master::param_type* param,
                             typename Master::aux_type* aux) {
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    typename Master::aux_type a{};
    typename Master::param_type p;
    Master::encode(x[i], p, a);
    param[i] = p;
    if constexpr (storage_bytes<typename Master::aux_type> != 0) aux[i] = a;
  }
}

/// out[i] = Master::decode(param[i], aux[i]), as codec::reconstruct.
/// The correction (or fp32 master) a parameter's value has: x = the
/// parameter's value (not decode(param, 0): an fp32 master ignores the
/// parameter when decoding), aux = the correction encode(x) gives. The
/// parameter itself is not written (its bytes stay the trainer's).
template <class Master>
__global__ void resplit_kernel(const typename Master::param_type* param, typename Master::aux_type* aux,
                               std::int64_t n) {
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    typename Master::aux_type a{};
    typename Master::param_type p = param[i];
    Master::encode(format::to_float(p), p, a);
    if constexpr (storage_bytes<typename Master::aux_type> != 0) aux[i] = a;
  }
}

template <class Master>
__global__ void reconstruct_kernel(const typename Master::param_type* param, const typename Master::aux_type* aux,
                                   std::int64_t n, float* out) {
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    typename Master::aux_type a{};
    if constexpr (storage_bytes<typename Master::aux_type> != 0) a = aux[i];
    out[i] = Master::decode(param[i], a);
  }
}

/// *step += 1 unless *skip is set: the counter update that follows a
/// captured step (torch's GradScaler does not count skipped steps). A
/// template only so that the header defines it in every translation unit.
/// *dst = value (a stream-ordered write of a host value, no staging).
template <class T>
__global__ void write_value_kernel(T* dst, T value) {
  if (threadIdx.x == 0 && blockIdx.x == 0) *dst = value;
}

template <int Unused = 0>
__global__ void advance_step_kernel(std::int64_t* step, const std::int32_t* skip) {
  if (threadIdx.x == 0 && blockIdx.x == 0 && (skip == nullptr || *skip == 0)) *step += 1;
}

}  // namespace flashoptim::kernel
