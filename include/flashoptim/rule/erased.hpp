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

/// Run-time typed buffers of one state slot.
struct slot_buffers {
  buffer codes;   ///< n codes
  buffer scales;  ///< one per group of a grouped codec
};

/// Most state slots a run-time typed tensor carries (bind refuses a
/// configuration with more, and buffers given past the configuration's).
inline constexpr int max_state_slots = 4;

/// Every buffer of one tensor, in the slots of a step_config.
struct tensor_buffers {
  buffer param, aux, grad;
  slot_buffers states[max_state_slots];
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
  static_assert(Config::num_slots <= max_state_slots, "tensor_buffers carries at most max_state_slots states");
  status slot_status;
  for_each_slot<Config::num_slots>([&](auto s) {
    constexpr int I = decltype(s)::value;
    if (!slot_status.ok()) return;
    auto& ref = slot_at<I>(r.states);
    slot_status = detail::bind_buffer(index, slot_code_name(I), b.states[I].codes, n, ref.codes);
    if (!slot_status.ok()) return;
    slot_status = detail::bind_buffer(index, slot_scale_name(I), b.states[I].scales,
                                      codec::scale_count<typename Config::template state<I>>(n), ref.scales);
  });
  FLASHOPTIM_RETURN_IF_ERROR(slot_status);
  for (int i = Config::num_slots; i < max_state_slots; ++i) {
    if (b.states[i].codes.data != nullptr || b.states[i].codes.count != 0 || b.states[i].scales.data != nullptr ||
        b.states[i].scales.count != 0)
      return status(status_code::invalid_argument, "tensor %zu: this configuration has %d state slots, but %s was given",
                    index, Config::num_slots, slot_code_name(i));
  }
  FLASHOPTIM_RETURN_IF_ERROR(validate_tensor(index, r));
  out = r;
  return status();
}

}  // namespace flashoptim
