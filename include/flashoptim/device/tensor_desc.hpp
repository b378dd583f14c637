// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// A type-erased description of one tensor's buffers (pointer, dtype and
// element count of each), as bindings hold them (a PyTorch tensor is a
// pointer, a dtype and a numel), and its checked conversion to the typed
// tensor_ref of a step configuration. The conversion is where dtypes, the
// correction's width and every buffer's element count are checked, with a
// message that names the tensor, the buffer and both values. Plain C++:
// it compiles without CUDA and is tested on the CPU.
#pragma once

#include <cinttypes>
#include <cstdint>
#include <string_view>
#include <type_traits>

#include "flashoptim/rule/tensor.hpp"

namespace flashoptim {

/// One buffer: where, of what type, how many elements.
struct buffer_desc {
  const void* data = nullptr;
  dtype type = dtype::none;
  std::int64_t count = 0;
};

/// One tensor. Slots the configuration does not have stay empty.
struct tensor_desc {
  buffer_desc param;
  buffer_desc correction;  ///< ULP correction, exact_split's lower half or the fp32 master
  buffer_desc grad;
  buffer_desc state0, state0_scales;
  buffer_desc state1, state1_scales;
  std::uint64_t seed = 0;
};

namespace detail {
template <class T>
status convert_buffer(std::size_t index, const char* name, const buffer_desc& b, std::int64_t expected_count,
                      T*& out) {
  constexpr dtype want = dtype_v<std::remove_const_t<T>>;
  out = nullptr;
  if (want == dtype::none || expected_count == 0) {
    if (want == dtype::none && (b.data != nullptr || b.count != 0 || b.type != dtype::none))
      return status(status_code::invalid_argument, "tensor %zu: this configuration has no %s, but one was given (%s, %" PRId64 " elements)",
                    index, name, to_string(b.type), b.count);
    if (want != dtype::none && b.count != 0)
      return status(status_code::size_mismatch, "tensor %zu: %s has %" PRId64 " elements, expected %" PRId64, index,
                    name, b.count, expected_count);
    if (want != dtype::none && b.type != dtype::none && b.type != want)
      return status(status_code::dtype_mismatch, "tensor %zu: %s is %s, the configuration expects %s", index, name,
                    to_string(b.type), to_string(want));
    out = static_cast<T*>(const_cast<void*>(b.data));
    return status();
  }
  if (b.type != want) {
    // The correction's width is the mistake worth naming: an int16
    // correction buffer under an int8 configuration (or the reverse).
    const bool width = std::string_view(name) == "correction" && size_of(b.type) != size_of(want) &&
                       (b.type == dtype::i8 || b.type == dtype::i16 || b.type == dtype::u16);
    return status(status_code::dtype_mismatch, "tensor %zu: %s is %s, the configuration expects %s%s", index, name,
                  to_string(b.type), to_string(want), width ? " (wrong correction width)" : "");
  }
  if (b.count != expected_count)
    return status(status_code::size_mismatch, "tensor %zu: %s has %" PRId64 " elements, expected %" PRId64, index,
                  name, b.count, expected_count);
  out = static_cast<T*>(const_cast<void*>(b.data));
  return status();
}
}  // namespace detail

/// The typed view of a description, after checking every buffer's dtype
/// and element count against the configuration (the parameter's count is
/// the tensor's size). Pointers, alignment and overlaps are checked by
/// validate_tensor / validate_tensor_list on the result.
template <class Config>
status to_tensor_ref(std::size_t index, const tensor_desc& d, tensor_ref<Config>& out) {
  using R = tensor_ref<Config>;
  R r;
  const std::int64_t n = d.param.count;
  if (n < 0) return status(status_code::size_mismatch, "tensor %zu: param has negative size %" PRId64, index, n);
  if (d.param.type != dtype_v<typename R::param_type>)
    return status(status_code::dtype_mismatch, "tensor %zu: param is %s, the configuration expects %s", index,
                  to_string(d.param.type), to_string(dtype_v<typename R::param_type>));
  r.param = static_cast<typename R::param_type*>(const_cast<void*>(d.param.data));
  r.size = n;
  r.seed = d.seed;
  using S0 = typename Config::state0;
  using S1 = typename Config::state1;
  FLASHOPTIM_RETURN_IF_ERROR(detail::convert_buffer(index, "correction", d.correction, n, r.aux));
  const typename R::grad_type* grad = nullptr;
  FLASHOPTIM_RETURN_IF_ERROR(detail::convert_buffer(index, "grad", d.grad, n, grad));
  r.grad = grad;
  FLASHOPTIM_RETURN_IF_ERROR(detail::convert_buffer(index, "state0", d.state0, n, r.code0));
  FLASHOPTIM_RETURN_IF_ERROR(
      detail::convert_buffer(index, "state0 scales", d.state0_scales, codec::scale_count<S0>(n), r.scale0));
  FLASHOPTIM_RETURN_IF_ERROR(detail::convert_buffer(index, "state1", d.state1, n, r.code1));
  FLASHOPTIM_RETURN_IF_ERROR(
      detail::convert_buffer(index, "state1 scales", d.state1_scales, codec::scale_count<S1>(n), r.scale1));
  out = r;
  return status();
}

}  // namespace flashoptim
