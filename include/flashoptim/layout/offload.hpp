// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// Which tensors an off-loaded optimizer keeps in host memory, and what that
// costs. Megatron's rule (--optimizer-offload-fraction): walking the tensor
// list in order, a tensor goes to the host while the elements already sent
// there are fewer than fraction x the total.
#pragma once

#include <cmath>
#include <cstdint>

#include "flashoptim/layout/bytes.hpp"
#include "flashoptim/status.hpp"

namespace flashoptim::layout {

inline status check_offload_fraction(double fraction) {
  if (!(fraction >= 0.0 && fraction <= 1.0))  // NaN fails too
    return status(status_code::hyperparameter_out_of_range, "offload fraction %g is outside [0, 1]", fraction);
  return status();
}

/// Number of leading tensors kept in host memory for `fraction` of the
/// elements (0 for fraction 0, all of them for fraction 1).
inline std::size_t offload_count(const std::int64_t* sizes, std::size_t count, double fraction) {
  std::int64_t total = 0;
  for (std::size_t i = 0; i < count; ++i) total += sizes[i];
  const double threshold = static_cast<double>(total) * fraction;
  std::int64_t sent = 0;
  std::size_t k = 0;
  while (k < count && static_cast<double>(sent) < threshold) sent += sizes[k++];
  return k;
}

/// Host bytes per off-loaded parameter: the parameter's host copy, its
/// correction and its states, exactly layout::bytes' optimizer-resident
/// count without the gradient (gradients pass through fixed-size staging).
template <class Config>
constexpr double host_bytes_per_param() {
  return bytes<Config>::resident_per_param(false);
}

}  // namespace flashoptim::layout
