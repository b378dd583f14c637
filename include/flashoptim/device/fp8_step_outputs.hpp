// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// The FP8 outputs of the fused step (device/fp8_step_plan.cuh,
// docs/fp8-params.md "Fused into the step") and their validation: plain
// C++, so the checks run (and are tested) without a GPU.
#pragma once

#include <algorithm>
#include <cinttypes>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "flashoptim/format/fp8_blocks.hpp"
#include "flashoptim/rule/tensor.hpp"
#include "flashoptim/status.hpp"

namespace flashoptim::device {

/// One tensor's FP8 copy written by the fused step. values and scales both
/// null: the tensor has none (the step writes no FP8 byte for it). Else
/// shape holds the tensor's size elements with 1 x 128 blocks of 128
/// consecutive elements: fp8_shape_1d(size), or fp8_shape_2d(rows, cols,
/// row_1x128) with cols a multiple of 128; values has size elements, scales
/// shape.scale_count() = ceil(size / 128).
template <class F8>
struct fp8_step_output {
  F8* values = nullptr;
  float* scales = nullptr;
  fp8_block_shape shape{};
};

/// Checks the FP8 outputs of a list of tensors (host only): each shape, its
/// size against the tensor's, the block kind, null pointers, alignment, and
/// that no written buffer (values, scales) overlaps any buffer of the list.
/// The tensors themselves are checked by validate_tensor_list first.
template <class Config, class F8>
status validate_fp8_step_outputs(const tensor_ref<Config>* tensors, const fp8_step_output<F8>* outputs,
                                 std::size_t count) {
  static_assert(std::is_same<F8, fp8_e4m3>::value || std::is_same<F8, fp8_e5m2>::value,
                "FP8 parameters are fp8_e4m3 or fp8_e5m2");
  if (count > 0 && outputs == nullptr) return status(status_code::null_pointer, "fp8 output list is null");
  std::vector<::flashoptim::detail::list_span> spans;
  for (std::size_t i = 0; i < count; ++i) {
    const fp8_step_output<F8>& o = outputs[i];
    for_each_buffer(tensors[i], [&](const char* name, const void* p, std::size_t bytes, bool written) {
      if (p != nullptr && bytes > 0) {
        const auto b = reinterpret_cast<std::uintptr_t>(p);
        spans.push_back({b, b + bytes, i, name, written});
      }
    });
    if (o.values == nullptr && o.scales == nullptr) continue;  // no fused copy
    const fp8_block_shape& s = o.shape;
    FLASHOPTIM_RETURN_IF_ERROR(validate_fp8_shape(i, s));
    if (s.size != tensors[i].size)
      return status(status_code::size_mismatch, "tensor %zu: fp8 shape of %" PRId64 " elements, the tensor has %" PRId64,
                    i, s.size, tensors[i].size);
    if (s.block_rows != 1)
      return status(status_code::invalid_argument,
                    "tensor %zu: 128 x 128 fp8 blocks need their amax over 128 rows before any value is written; the "
                    "fused step writes 1 x 128 blocks only (write these with kernel::fp8_param_plan after the step)",
                    i);
    if (s.cols % fp8_block_cols != 0)
      return status(status_code::invalid_argument,
                    "tensor %zu: rows of %" PRId64
                    " columns: the fused step's 1 x 128 blocks are 128 consecutive elements, so the width must be a "
                    "multiple of 128 (write this tensor with kernel::fp8_param_plan after the step)",
                    i, s.cols);
    ::flashoptim::detail::buffer_span b[2];
    FLASHOPTIM_RETURN_IF_ERROR(::flashoptim::detail::check_buffer(i, "fp8 values", o.values, s.size, b[0], true));
    FLASHOPTIM_RETURN_IF_ERROR(
        ::flashoptim::detail::check_buffer(i, "fp8 scales", o.scales, s.scale_count(), b[1], true));
    for (const auto& x : b)
      if (x.begin != x.end) spans.push_back({x.begin, x.end, i, x.name, true});
  }
  // Sorted sweep (as validate_tensor_list): a written span may overlap no
  // other span; two read-only ones may.
  return ::flashoptim::detail::check_list_overlaps(spans);
}

}  // namespace flashoptim::device
