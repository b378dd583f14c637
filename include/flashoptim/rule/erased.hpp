// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// Type-erased buffers, for callers that hold run-time typed memory (Python
// bindings, a framework's tensors, checkpoints): each buffer carries its
// dtype and element count, and `bind` checks them against a configuration
// before producing the typed tensor_ref the steps take. Wrong dtypes, a
// correction of the wrong width, size and scale-count mismatches are
// reported with the tensor's index and the buffer's name.
#pragma once

#include <cinttypes>

#include "flashoptim/rule/tensor.hpp"

namespace flashoptim {

/// A run-time typed span of memory.
struct buffer {
  void* data = nullptr;
  dtype type = dtype::none;
  std::int64_t count = 0;  ///< elements (scale entries for a scale buffer)
};

/// Every buffer of one tensor, in the slots of a step_config.
struct tensor_buffers {
  buffer param, aux, grad, state0, scale0, state1, scale1;
  std::uint64_t seed = 0;
};

namespace detail {
template <class T>
status bind_buffer(std::size_t index, const char* name, const buffer& b, std::int64_t expected_count, T*& out) {
  out = nullptr;
  constexpr dtype want = dtype_v<T>;
  if (want == dtype::user)
    return status(status_code::not_supported, "tensor %zu: %s has a user-defined type, which run-time typed buffers cannot name",
                  index, name);
  if (want == dtype::none) {
    if (b.data != nullptr || b.count != 0)
      return status(status_code::invalid_argument, "tensor %zu: this configuration has no %s, but a %s buffer was given",
                    index, name, to_string(b.type));
    return status();
  }
  if (b.type != want)
    return status(status_code::dtype_mismatch, "tensor %zu: %s is %s, the configuration expects %s", index, name,
                  to_string(b.type), to_string(want));
  if (b.count != expected_count)
    return status(status_code::size_mismatch, "tensor %zu: %s has %" PRId64 " elements, expected %" PRId64, index, name,
                  b.count, expected_count);
  out = static_cast<T*>(b.data);
  return status();
}
}  // namespace detail

/// Checks run-time typed buffers against Config and produces the typed view
/// (then validated like any tensor_ref: null pointers, alignment, aliasing).
template <class Config>
status bind(std::size_t index, const tensor_buffers& b, tensor_ref<Config>& out) {
  using R = tensor_ref<Config>;
  const std::int64_t n = b.param.count;
  if (n < 0) return status(status_code::size_mismatch, "tensor %zu: negative size %" PRId64, index, n);
  R r;
  r.size = n;
  r.seed = b.seed;
  FLASHOPTIM_RETURN_IF_ERROR(detail::bind_buffer(index, "param", b.param, n, r.param));
  FLASHOPTIM_RETURN_IF_ERROR(detail::bind_buffer(index, "correction", b.aux, n, r.aux));
  typename R::grad_type* grad = nullptr;
  FLASHOPTIM_RETURN_IF_ERROR(detail::bind_buffer(index, "grad", b.grad, n, grad));
  r.grad = grad;
  FLASHOPTIM_RETURN_IF_ERROR(detail::bind_buffer(index, "state0", b.state0, n, r.code0));
  FLASHOPTIM_RETURN_IF_ERROR(
      detail::bind_buffer(index, "state0 scales", b.scale0, codec::scale_count<typename Config::state0>(n), r.scale0));
  FLASHOPTIM_RETURN_IF_ERROR(detail::bind_buffer(index, "state1", b.state1, n, r.code1));
  FLASHOPTIM_RETURN_IF_ERROR(
      detail::bind_buffer(index, "state1 scales", b.scale1, codec::scale_count<typename Config::state1>(n), r.scale1));
  FLASHOPTIM_RETURN_IF_ERROR(validate_tensor(index, r));
  out = r;
  return status();
}

}  // namespace flashoptim
