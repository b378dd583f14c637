// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// The tensors of the optimizers' FP8-copy tests (test_cpu_optimizer_fp8,
// test_gpu_optimizer_fp8): one of each form the copy can take.
#pragma once

#include <cstdint>
#include <vector>

#include "flashoptim/format/fp8_blocks.hpp"

namespace fp8_outputs_test {

/// Tensor i: rows x cols (0 x 0: 1-D), its block kind, whether it has a copy.
struct tensor_desc {
  std::int64_t size, rows, cols;
  flashoptim::fp8_block_kind kind;
  bool copy;
};

/// 128 x 128 blocks with partial tiles on both edges; 1 x 128 on rows of
/// 256; a 1-D tensor with a partial last block; a tensor without a copy.
/// The tests put the first two in group 0 and the rest in group 1.
inline const std::vector<tensor_desc> descs = {
    {200 * 300, 200, 300, flashoptim::fp8_block_kind::tile_128x128, true},
    {64 * 256, 64, 256, flashoptim::fp8_block_kind::row_1x128, true},
    {1000, 0, 0, flashoptim::fp8_block_kind::row_1x128, true},
    {77, 0, 0, flashoptim::fp8_block_kind::row_1x128, false}};

inline flashoptim::fp8_block_shape shape_of(const tensor_desc& d) {
  return d.rows > 0 ? flashoptim::fp8_shape_2d(d.rows, d.cols, d.kind) : flashoptim::fp8_shape_1d(d.size);
}

}  // namespace fp8_outputs_test
