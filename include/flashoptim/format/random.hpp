// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// Counter-based random bits for stochastic rounding. The bits are a pure
// function of (seed, step, element index), so the CPU path, the GPU path and
// any split of the work among threads or devices round the same way.
#pragma once

#include "flashoptim/config.hpp"

namespace flashoptim::format {

/// SplitMix64's finalizer over a mix of the three keys; 32 well-mixed bits.
FLASHOPTIM_HOST_DEVICE FLASHOPTIM_INLINE std::uint32_t random_bits(std::uint64_t seed, std::uint64_t step,
                                                                   std::uint64_t index) {
  std::uint64_t z = seed ^ (step * 0x9e3779b97f4a7c15ull) ^ (index * 0xd1b54a32d192ed03ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  z ^= z >> 31;
  return static_cast<std::uint32_t>(z >> 32);
}

}  // namespace flashoptim::format
