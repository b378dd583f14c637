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
  using states_type = typename Config::template slot_map<state_ref>;
  static constexpr int num_slots = Config::num_slots;
  template <int I>
  using code_t = typename Config::template state<I>::code_type;
  template <int I>
  using scale_t = typename Config::template state<I>::scale_type;

  param_type* param = nullptr;  ///< n elements, updated in place
  aux_type* aux = nullptr;      ///< n corrections / fp32 masters (null when the mode has none)
  const grad_type* grad = nullptr;
  /// One {codes, scales} per state slot: n codes, ceil(n / 32) scales when
  /// the slot's codec is grouped. Reach slot I as state<I>().
  states_type states{};
  std::int64_t size = 0;
  std::uint64_t seed = 0;  ///< stochastic-rounding stream of this tensor
  /// Index of element 0 within the whole tensor when this view is a shard of
  /// it: stochastic rounding keys on (seed, step, index_base + i), so a
  /// sharded step rounds like the unsharded one.
  std::uint64_t index_base = 0;

  template <int I>
  FLASHOPTIM_HOST_DEVICE FLASHOPTIM_INLINE auto& state() {
    return slot_at<I>(states);
  }
  template <int I>
  FLASHOPTIM_HOST_DEVICE FLASHOPTIM_INLINE const auto& state() const {
    return slot_at<I>(states);
  }
};

/// Slot I of a tensor view (spelled without `.template` in generic code).
template <int I, class Config>
FLASHOPTIM_HOST_DEVICE FLASHOPTIM_INLINE auto& state_of(tensor_ref<Config>& t) {
  return slot_at<I>(t.states);
}
template <int I, class Config>
FLASHOPTIM_HOST_DEVICE FLASHOPTIM_INLINE const auto& state_of(const tensor_ref<Config>& t) {
  return slot_at<I>(t.states);
}

/// Names of a slot's buffers in error messages: "state0", "state0 scales", ...
/// (slots beyond 9 are not expected; the names stay those of slot 9).
inline const char* slot_code_name(int slot) {
  static const char* const names[] = {"state0", "state1", "state2", "state3", "state4",
                                      "state5", "state6", "state7", "state8", "state9"};
  return names[slot < 9 ? slot : 9];
}
inline const char* slot_scale_name(int slot) {
  static const char* const names[] = {"state0 scales", "state1 scales", "state2 scales", "state3 scales",
                                      "state4 scales", "state5 scales", "state6 scales", "state7 scales",
                                      "state8 scales", "state9 scales"};
  return names[slot < 9 ? slot : 9];
}

/// Calls f(name, pointer, bytes, written) for every buffer of t: param,
/// correction, grad, then each slot's codes and scales (sizes in range:
/// call after validate_tensor, or on views it accepted). The one list of a
/// tensor's buffers that memory checks, overlap checks and zeroing loop over.
template <class Config, class F>
void for_each_buffer(const tensor_ref<Config>& t, F&& f) {
  const auto n = static_cast<std::size_t>(t.size);
  f("param", static_cast<const void*>(t.param), n * storage_bytes<typename Config::param_type>, true);
  f("correction", static_cast<const void*>(t.aux), n * storage_bytes<typename Config::aux_type>, true);
  f("grad", static_cast<const void*>(t.grad), n * storage_bytes<typename Config::grad_type>, false);
  for_each_slot<Config::num_slots>([&](auto s) {
    constexpr int I = decltype(s)::value;
    using S = typename Config::template state<I>;
    const auto& r = slot_at<I>(t.states);
    f(slot_code_name(I), static_cast<const void*>(r.codes), n * storage_bytes<typename S::code_type>, true);
    f(slot_scale_name(I), static_cast<const void*>(r.scales),
      static_cast<std::size_t>(codec::scale_count<S>(t.size)) * storage_bytes<typename S::scale_type>, true);
  });
}

namespace detail {
/// One buffer of a tensor list, for check_list_overlaps.
struct list_span {
  std::uintptr_t begin, end;
  std::size_t tensor;
  const char* name;
  bool written;
};

/// No written span overlaps any other span of the list (two read-only ones
/// may): sorted by start, then one sweep keeping the span and the written
/// span that reach furthest. O(k log k); sorts `spans`.
inline status check_list_overlaps(std::vector<list_span>& spans) {
  std::sort(spans.begin(), spans.end(), [](const list_span& a, const list_span& b) { return a.begin < b.begin; });
  const list_span* reach = nullptr;
  const list_span* reach_written = nullptr;
  for (const list_span& s : spans) {
    const list_span* other = s.written ? reach : reach_written;
    if (other != nullptr && other->end > s.begin)
      return status(status_code::aliasing, "tensor %zu %s overlaps tensor %zu %s", other->tensor, other->name, s.tensor,
                    s.name);
    if (reach == nullptr || s.end > reach->end) reach = &s;
    if (s.written && (reach_written == nullptr || s.end > reach_written->end)) reach_written = &s;
  }
  return status();
}

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
  constexpr int count = 3 + 2 * C::num_slots;
  detail::buffer_span spans[count];
  FLASHOPTIM_RETURN_IF_ERROR(detail::check_buffer(index, "param", t.param, n, spans[0], true));
  FLASHOPTIM_RETURN_IF_ERROR(detail::check_buffer(index, "correction", t.aux, n, spans[1], true));
  FLASHOPTIM_RETURN_IF_ERROR(detail::check_buffer(index, "grad", with_grad ? t.grad : nullptr, with_grad ? n : 0,
                                                  spans[2], false));
  status slot_status;
  for_each_slot<C::num_slots>([&](auto s) {
    constexpr int I = decltype(s)::value;
    if (!slot_status.ok()) return;
    const auto& r = slot_at<I>(t.states);
    slot_status = detail::check_buffer(index, slot_code_name(I), r.codes, n, spans[3 + 2 * I], true);
    if (!slot_status.ok()) return;
    slot_status = detail::check_buffer(index, slot_scale_name(I), r.scales,
                                       codec::scale_count<typename C::template state<I>>(n), spans[4 + 2 * I], true);
  });
  FLASHOPTIM_RETURN_IF_ERROR(slot_status);
  for (int i = 0; i < count; ++i) {
    for (int j = i + 1; j < count; ++j) {
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
  std::vector<detail::list_span> spans;
  spans.reserve(count * (3 + 2 * Config::num_slots));
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
    for_each_slot<Config::num_slots>([&](auto s) {
      constexpr int I = decltype(s)::value;
      using S = typename Config::template state<I>;
      const auto& r = slot_at<I>(t.states);
      add(r.codes, static_cast<std::size_t>(n) * storage_bytes<typename S::code_type>, slot_code_name(I), true);
      add(r.scales,
          static_cast<std::size_t>(codec::scale_count<S>(n)) * storage_bytes<typename S::scale_type>,
          slot_scale_name(I), true);
    });
  }
  return detail::check_list_overlaps(spans);
}

}  // namespace flashoptim
