// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// Memory and traffic of a step configuration, as constexpr numbers: bytes
// resident per parameter, bytes a step must move (each input read once, each
// output written once, scales included) and checkpoint bytes. The README
// tables, the benchmarks' byte counters and the tests all read these.
#pragma once

#include <cstdint>
#include <utility>

#include "flashoptim/codec/state.hpp"
#include "flashoptim/format/dtype.hpp"
#include "flashoptim/rule/config.hpp"

namespace flashoptim::layout {

/// Storage of one state slot.
template <class Codec>
struct state_bytes {
  static constexpr std::size_t code = storage_bytes<typename Codec::code_type>;
  static constexpr std::size_t scale = storage_bytes<typename Codec::scale_type>;
  /// Bytes per element, scales amortized over full groups.
  static constexpr double per_element = static_cast<double>(code) + static_cast<double>(scale) / Codec::group_size;
  /// Exact bytes for a tensor of n elements (a partial last group has a full
  /// scale); n in [0, max_elements], where no product overflows.
  static constexpr std::int64_t for_size(std::int64_t n) {
    return n * static_cast<std::int64_t>(code) + codec::scale_count<Codec>(n) * static_cast<std::int64_t>(scale);
  }
};

namespace detail {
template <class Config, class Seq = std::make_integer_sequence<int, Config::num_slots>>
struct all_states;
template <class Config, int... I>
struct all_states<Config, std::integer_sequence<int, I...>> {
  static constexpr double per_element = (0.0 + ... + state_bytes<typename Config::template state<I>>::per_element);
  static constexpr std::int64_t for_size(std::int64_t n) {
    return (std::int64_t{0} + ... + state_bytes<typename Config::template state<I>>::for_size(n));
  }
};
}  // namespace detail

template <class Config>
struct bytes {
  /// Every state slot together.
  using states = detail::all_states<Config>;
  static constexpr std::size_t param = sizeof(typename Config::param_type);
  static constexpr std::size_t aux = storage_bytes<typename Config::aux_type>;
  static constexpr std::size_t grad = sizeof(typename Config::grad_type);

  /// Optimizer-owned state per parameter: correction / master copy and states.
  static constexpr double optimizer_state_per_param = static_cast<double>(aux) + states::per_element;
  /// Resident per parameter: the parameter, its gradient (unless consumed as
  /// soon as it is produced, "gradient release") and the optimizer state.
  static constexpr double resident_per_param(bool with_grad = true) {
    return static_cast<double>(param) + (with_grad ? static_cast<double>(grad) : 0.0) + optimizer_state_per_param;
  }
  /// A checkpoint of the optimizer as stored: parameter + correction + states.
  static constexpr double checkpoint_per_param = static_cast<double>(param) + optimizer_state_per_param;
  /// Minimal traffic of one step per parameter: read param, aux, grad and
  /// states; write param, aux and states.
  static constexpr double moved_per_param =
      2.0 * static_cast<double>(param + aux) + static_cast<double>(grad) + 2.0 * states::per_element;

  /// Exact counts for a tensor of n elements.
  static constexpr std::int64_t state_for_size(std::int64_t n) {
    return n * static_cast<std::int64_t>(aux) + states::for_size(n);
  }
  static constexpr std::int64_t moved_for_size(std::int64_t n) {
    return 2 * n * static_cast<std::int64_t>(param + aux) + n * static_cast<std::int64_t>(grad) +
           2 * states::for_size(n);
  }
};

/// FP8 parameters with block scales (docs/fp8-params.md): the model holds
/// the FP8 copy (1 B per parameter + one fp32 scale per block of
/// `block_elements`, 128 or 16384) instead of Config's param, and Config's
/// param and correction are the optimizer's master. Per parameter, scales
/// amortized over full blocks.
template <class Config>
struct fp8_weight_bytes {
  static constexpr double copy_per_param(int block_elements) { return 1.0 + 4.0 / block_elements; }
  /// The master the step keeps: Config's param and correction.
  static constexpr double master_per_param = static_cast<double>(bytes<Config>::param + bytes<Config>::aux);
  /// Resident: master, FP8 copy, gradient (unless released) and states.
  static constexpr double resident_per_param(int block_elements, bool with_grad = true) {
    return master_per_param + copy_per_param(block_elements) +
           (with_grad ? static_cast<double>(bytes<Config>::grad) : 0.0) + bytes<Config>::states::per_element;
  }
  /// Minimal traffic of the step and the FP8 write after it: the step's, the
  /// master read once more, the copy written.
  static constexpr double moved_per_param(int block_elements) {
    return bytes<Config>::moved_per_param + master_per_param + copy_per_param(block_elements);
  }
};

}  // namespace flashoptim::layout
