// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// Shard plans for FP8 parameters with block scales (docs/fp8-params.md,
// Sharding): the packed flat buffer cut so that no FP8 block crosses ranks.
// Every boundary inside a tensor is a multiple of lcm(block-row, 32)
// elements from the tensor's start: a whole number of block-rows (so the
// rank's part is a tensor of the same form, its scales a contiguous slice,
// and the FP8 write runs on it unchanged) and of state groups (so the
// sharded step stays bit-identical to the unsharded one, as
// shard_plan::packed promises).
#pragma once

#include <cinttypes>
#include <cstdint>
#include <vector>

#include "flashoptim/format/fp8_blocks.hpp"
#include "flashoptim/layout/shard.hpp"

namespace flashoptim::layout {

/// The element count boundaries inside a tensor of this shape are multiples
/// of: lcm(fp8_shard_alignment, 32); a tensor no larger than it is never cut.
inline std::int64_t fp8_cut_alignment(const fp8_block_shape& s) {
  const std::int64_t a = fp8_shard_alignment(s);
  if (a <= 0 || a >= s.size) return s.size > 0 ? s.size : 1;
  std::int64_t x = a, y = shard_alignment;  // gcd
  while (y != 0) {
    const std::int64_t t = x % y;
    x = y;
    y = t;
  }
  const std::int64_t l = a / x * shard_alignment;  // a < 2^56: no overflow
  return l < s.size ? l : s.size;
}

/// The tensors back to back (shard_plan::packed's flat buffer), each
/// boundary at the allowed cut (fp8_cut_alignment from its tensor's start,
/// or a tensor's end) nearest to r * total / ranks. Shards are uneven in
/// general, by up to half a cut of the tensor the boundary falls in (128
/// rows of a 2-D weight with 128 x 128 blocks); some may be empty.
inline status fp8_packed_plan(const fp8_block_shape* shapes, std::size_t count, int ranks, shard_plan& out) {
  if (ranks < 1) return status(status_code::invalid_argument, "ranks must be at least 1, got %d", ranks);
  if (count > 0 && shapes == nullptr) return status(status_code::null_pointer, "fp8 shapes are null");
  std::vector<std::int64_t> sizes(count), offsets(count), cuts(count);
  std::int64_t total = 0;
  for (std::size_t i = 0; i < count; ++i) {
    FLASHOPTIM_RETURN_IF_ERROR(validate_fp8_shape(i, shapes[i]));
    sizes[i] = shapes[i].size;
    offsets[i] = total;
    cuts[i] = fp8_cut_alignment(shapes[i]);
    total += sizes[i];
    if (total > max_elements)
      return status(status_code::invalid_argument, "fp8 shard plan: more than 2^56 elements in all");
  }
  std::vector<std::int64_t> starts(static_cast<std::size_t>(ranks), 0);
  std::size_t ti = 0;
  for (int r = 1; r < ranks; ++r) {
    const std::int64_t target = total / ranks * r + total % ranks * r / ranks;
    while (ti < count && offsets[ti] + sizes[ti] <= target) ++ti;
    std::int64_t at = target;
    if (ti < count) {
      const std::int64_t o = offsets[ti], rel = target - o, c = cuts[ti];
      const std::int64_t lo = o + rel / c * c;
      const std::int64_t hi = o + std::min(sizes[ti], (rel + c - 1) / c * c);
      at = (target - lo <= hi - target) ? lo : hi;
    }
    starts[static_cast<std::size_t>(r)] = std::max(at, starts[static_cast<std::size_t>(r) - 1]);
  }
  return shard_plan::split_at(sizes.data(), count, starts.data(), ranks, out);
}

}  // namespace flashoptim::layout
