// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// The device-resident table of tensors a multi-tensor launch walks. It is
// built once (device/step_plan.cuh) and read by every step: one entry per
// tensor (its tensor_ref and whether its buffers take the vector path) and
// the prefix sums of the units of work each tensor is cut into. A unit is
// `unit_elements` consecutive elements of one tensor, starting at a multiple
// of unit_elements within it, so groups of 32 never cross tensors and every
// tensor's groups start at its element 0. Offsets are 64-bit throughout.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "flashoptim/kernel/tile_access.cuh"
#include "flashoptim/rule/tensor.hpp"

namespace flashoptim::kernel {

template <class Config>
struct table_entry {
  tensor_ref<Config> ref;
  /// Every streamed buffer is aligned to its vector width (tile_access).
  std::uint32_t vector_ok = 0;
  /// Parameter group: the index of this tensor's scalars in the launch's
  /// step_params (0 .. groups - 1).
  std::int32_t group = 0;
};

/// What a kernel receives: trivially copyable, device pointers only.
template <class Config>
struct table_view {
  const table_entry<Config>* entries = nullptr;
  /// count + 1 prefix sums: tensor i owns units [unit_begin[i], unit_begin[i+1]).
  const std::int64_t* unit_begin = nullptr;
  std::int64_t count = 0;
  std::int64_t units = 0;
  std::int64_t unit_elements = 0;
};

/// Units a tensor of n elements is cut into.
FLASHOPTIM_HOST_DEVICE constexpr std::int64_t units_for(std::int64_t n, std::int64_t unit_elements) {
  return (n + unit_elements - 1) / unit_elements;
}

/// Whether every streamed buffer of t can take N-element vector accesses.
/// 2-byte group scales must be 4-byte aligned: staged runs copy them as
/// whole 4-byte words (stage_layout::scale_word); a tensor whose are not
/// takes the element path (the same bytes).
template <class Config, int N>
bool vector_aligned(const tensor_ref<Config>& t) {
  using C = Config;
  bool codes = true;
  for_each_slot<C::num_slots>([&](auto s) {
    constexpr int I = decltype(s)::value;
    using S = typename C::template state<I>;
    codes = codes && tile_access<typename S::code_type, N>::vector_aligned(slot_at<I>(t.states).codes);
    if constexpr (storage_bytes<typename S::scale_type> == 2)
      codes = codes && reinterpret_cast<std::uintptr_t>(slot_at<I>(t.states).scales) % 4u == 0;
  });
  return tile_access<typename C::param_type, N>::vector_aligned(t.param) &&
         tile_access<typename C::aux_type, N>::vector_aligned(t.aux) &&
         tile_access<typename C::grad_type, N>::vector_aligned(t.grad) && codes;
}

/// The range of units block `block` of `blocks` steps: contiguous, and the
/// same number (+-1) for every block, so a persistent grid ends together.
struct unit_range {
  std::int64_t begin;
  std::int64_t end;
};
FLASHOPTIM_HOST_DEVICE FLASHOPTIM_INLINE unit_range block_units(std::int64_t units, std::int64_t block,
                                                               std::int64_t blocks) {
  return {units * block / blocks, units * (block + 1) / blocks};
}

/// The tensor that owns unit u: the last i with unit_begin[i] <= u and a
/// nonempty range (binary search; callers then walk forward).
FLASHOPTIM_HOST_DEVICE FLASHOPTIM_INLINE std::int64_t find_tensor(const std::int64_t* unit_begin, std::int64_t count,
                                                                 std::int64_t u) {
  std::int64_t lo = 0, hi = count;  // answer in [lo, hi)
  while (hi - lo > 1) {
    const std::int64_t mid = lo + (hi - lo) / 2;
    if (unit_begin[mid] <= u)
      lo = mid;
    else
      hi = mid;
  }
  return lo;
}

}  // namespace flashoptim::kernel
