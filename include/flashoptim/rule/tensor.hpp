// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// A non-owning, trivially copyable view of one tensor's buffers under a step
// configuration, and the checks every entry point runs on it before writing
// anything. The same view is passed to the CPU path and (copied into a
// device table) to the GPU kernel.
#pragma once

#include <algorithm>
#include <cinttypes>
#include <vector>

#include "flashoptim/codec/state.hpp"
#include "flashoptim/format/dtype.hpp"
#include "flashoptim/rule/config.hpp"
#include "flashoptim/status.hpp"

namespace flashoptim {

template <class Config>
struct tensor_ref {
  using param_type = typename Config::param_type;
  using aux_type = typename Config::aux_type;
  using grad_type = typename Config::grad_type;
  using code0_type = typename Config::state0::code_type;
  using scale0_type = typename Config::state0::scale_type;
  using code1_type = typename Config::state1::code_type;
  using scale1_type = typename Config::state1::scale_type;

  param_type* param = nullptr;  ///< n elements, updated in place
  aux_type* aux = nullptr;      ///< n corrections / fp32 masters (null when the mode has none)
  const grad_type* grad = nullptr;
  code0_type* code0 = nullptr;  ///< state 0: n codes
  scale0_type* scale0 = nullptr;  ///< state 0: ceil(n / 32) scales when grouped
  code1_type* code1 = nullptr;
  scale1_type* scale1 = nullptr;
  std::int64_t size = 0;
  std::uint64_t seed = 0;  ///< stochastic-rounding stream of this tensor
  /// Index of element 0 within the whole tensor when this view is a shard of
  /// it: stochastic rounding keys on (seed, step, index_base + i), so a
  /// sharded step rounds like the unsharded one.
  std::uint64_t index_base = 0;
};

namespace detail {
struct buffer_span {
  const char* name;
  std::uintptr_t begin;
  std::uintptr_t end;
  bool written;
};

template <class T>
status check_buffer(std::size_t index, const char* name, const T* p, std::int64_t count, buffer_span& span,
                     bool written) {
  span = {name, 0, 0, written};
  if (count < 0 || count > max_elements)  // before any byte count is formed
    return status(status_code::invalid_argument,
                  "tensor %zu: %s has %" PRId64 " elements, outside [0, 2^56] (flashoptim::max_elements)", index, name,
                  count);
  if (storage_bytes<T> == 0 || count == 0) return status();
  if (p == nullptr)
    return status(status_code::null_pointer, "tensor %zu: %s is null for %" PRId64 " elements", index, name, count);
  const auto addr = reinterpret_cast<std::uintptr_t>(p);
  if (addr % alignof(T) != 0)
    return status(status_code::misaligned, "tensor %zu: %s at %p is not aligned to its %zu-byte %s elements", index,
                  name, static_cast<const void*>(p), alignof(T), to_string(dtype_v<T>));
  if (!::flashoptim::detail::within_address_space(p, count, sizeof(T)))
    return status(status_code::invalid_argument,
                  "tensor %zu: %s at %p with %" PRId64 " %zu-byte elements runs past the end of the address space",
                  index, name, static_cast<const void*>(p), count, sizeof(T));
  span = {name, addr, addr + static_cast<std::uintptr_t>(count) * sizeof(T), written};
  return status();
}
}  // namespace detail

/// Checks one tensor's view: sizes (at most max_elements, every buffer
/// ending below the top of the address space), null pointers, alignment to
/// the element types, and that no two buffers overlap where one of them is
/// written.
/// `with_grad = false` skips the gradient (checkpoint I/O never touches it).
template <class Config>
status validate_tensor(std::size_t index, const tensor_ref<Config>& t, bool with_grad = true) {
  using C = Config;
  if (t.size < 0) return status(status_code::size_mismatch, "tensor %zu: negative size %" PRId64, index, t.size);
  // scale counts and byte extents below are formed only for sizes in range
  if (t.size > max_elements)
    return status(status_code::invalid_argument,
                  "tensor %zu: size %" PRId64 " is above the largest supported, 2^56 elements (flashoptim::max_elements)",
                  index, t.size);
  const std::int64_t n = t.size;
  detail::buffer_span spans[7];
  FLASHOPTIM_RETURN_IF_ERROR(detail::check_buffer(index, "param", t.param, n, spans[0], true));
  FLASHOPTIM_RETURN_IF_ERROR(detail::check_buffer(index, "correction", t.aux, n, spans[1], true));
  FLASHOPTIM_RETURN_IF_ERROR(detail::check_buffer(index, "grad", with_grad ? t.grad : nullptr, with_grad ? n : 0,
                                                  spans[2], false));
  FLASHOPTIM_RETURN_IF_ERROR(detail::check_buffer(index, "state0", t.code0, n, spans[3], true));
  FLASHOPTIM_RETURN_IF_ERROR(
      detail::check_buffer(index, "state0 scales", t.scale0, codec::scale_count<typename C::state0>(n), spans[4], true));
  FLASHOPTIM_RETURN_IF_ERROR(detail::check_buffer(index, "state1", t.code1, n, spans[5], true));
  FLASHOPTIM_RETURN_IF_ERROR(
      detail::check_buffer(index, "state1 scales", t.scale1, codec::scale_count<typename C::state1>(n), spans[6], true));
  for (int i = 0; i < 7; ++i) {
    for (int j = i + 1; j < 7; ++j) {
      const auto& a = spans[i];
      const auto& b = spans[j];
      if (a.begin == a.end || b.begin == b.end || !(a.written || b.written)) continue;
      if (a.begin < b.end && b.begin < a.end)
        return status(status_code::aliasing, "tensor %zu: %s and %s overlap", index, a.name, b.name);
    }
  }
  return status();
}

/// Checks every tensor of a list, then that no buffer written by the step
/// overlaps any other buffer of the list (O(k log k) in the number of
/// buffers; allocates, so plans run it once, not per step).
template <class Config>
status validate_tensor_list(const tensor_ref<Config>* tensors, std::size_t count, bool with_grad = true) {
  if (count > 0 && tensors == nullptr) return status(status_code::null_pointer, "tensor list is null");
  struct span {
    std::uintptr_t begin, end;
    std::size_t tensor;
    const char* name;
    bool written;
  };
  std::vector<span> spans;
  spans.reserve(count * 7);
  for (std::size_t i = 0; i < count; ++i) {
    const auto& t = tensors[i];
    FLASHOPTIM_RETURN_IF_ERROR(validate_tensor(i, t, with_grad));
    const std::int64_t n = t.size;
    auto add = [&](const void* p, std::size_t bytes, const char* name, bool written) {
      if (p != nullptr && bytes > 0) {
        const auto b = reinterpret_cast<std::uintptr_t>(p);
        spans.push_back({b, b + bytes, i, name, written});
      }
    };
    using R = tensor_ref<Config>;
    add(t.param, static_cast<std::size_t>(n) * sizeof(typename R::param_type), "param", true);
    add(t.aux, static_cast<std::size_t>(n) * storage_bytes<typename R::aux_type>, "correction", true);
    if (with_grad) add(t.grad, static_cast<std::size_t>(n) * sizeof(typename R::grad_type), "grad", false);
    add(t.code0, static_cast<std::size_t>(n) * storage_bytes<typename R::code0_type>, "state0", true);
    add(t.scale0, static_cast<std::size_t>(codec::scale_count<typename Config::state0>(n)) *
                      storage_bytes<typename R::scale0_type>, "state0 scales", true);
    add(t.code1, static_cast<std::size_t>(n) * storage_bytes<typename R::code1_type>, "state1", true);
    add(t.scale1, static_cast<std::size_t>(codec::scale_count<typename Config::state1>(n)) *
                      storage_bytes<typename R::scale1_type>, "state1 scales", true);
  }
  std::sort(spans.begin(), spans.end(), [](const span& a, const span& b) { return a.begin < b.begin; });
  // sweep: keep the written span reaching furthest and the span reaching furthest
  const span* reach = nullptr;
  const span* reach_written = nullptr;
  for (const span& s : spans) {
    const span* other = s.written ? reach : reach_written;
    if (other != nullptr && other->end > s.begin)
      return status(status_code::aliasing, "tensor %zu %s overlaps tensor %zu %s", other->tensor, other->name, s.tensor,
                    s.name);
    if (reach == nullptr || s.end > reach->end) reach = &s;
    if (s.written && (reach_written == nullptr || s.end > reach_written->end)) reach_written = &s;
  }
  return status();
}

}  // namespace flashoptim
