// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// Counter-based random bits for stochastic rounding. The bits are a pure
// function of (seed, step, element index), so the CPU path, the GPU path and
// any split of the work among threads or devices round the same way.
//
// Two stages (since the release after 0.2.0, which ran SplitMix64's
// finalizer per element):
// a 64-bit key per (seed, step), the same for every element of a tensor's
// step, then a 32-bit hash per element. The per-element part is 32-bit
// integer arithmetic (two multiplies), which the GPU issues at full rate and
// a vector unit computes 16 lanes at a time; SplitMix64's two 64-bit
// multiplies per element cost ~22 instructions per draw on the GPU (a quarter
// of the stochastic-rounding step's instructions) and 64-bit-lane multiplies
// on the CPU.
#pragma once

#include "flashoptim/config.hpp"

namespace flashoptim::format {

/// The key of one (seed, step): SplitMix64's finalizer over a mix of the two.
FLASHOPTIM_HOST_DEVICE FLASHOPTIM_INLINE std::uint64_t random_key(std::uint64_t seed, std::uint64_t step) {
  std::uint64_t z = seed ^ (step * 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/// The multiplier that folds an index's high word into the hashed word.
inline constexpr std::uint32_t random_fold = 0x9e3779b9u;

/// 32 random bits of element `index` under `key`: the index's low word, xored
/// with the key's, plus (high word xor the key's) * random_fold, then a
/// 32-bit xor-shift-multiply hash (the shifts and multipliers of the
/// "lowbias32" hash found by C. Wellons' hash-prospector search). The hash is
/// a bijection of 32-bit words, so within 2^32 consecutive indices no two
/// elements of a step draw the same bits, and every bit is uniform over them;
/// the key changes every step, so one element's draws over the steps are
/// hashes of unrelated words. tests/core/random_test.cpp checks the
/// stochastic-rounding properties that rest on this.
FLASHOPTIM_HOST_DEVICE FLASHOPTIM_INLINE std::uint32_t random_mix(std::uint64_t key, std::uint64_t index) {
  std::uint32_t x = (static_cast<std::uint32_t>(index) ^ static_cast<std::uint32_t>(key)) +
                    (static_cast<std::uint32_t>(index >> 32) ^ static_cast<std::uint32_t>(key >> 32)) * random_fold;
  // (cpu/detail/group_kernel.inl's random_bits repeats these five steps in vector lanes)
  x ^= x >> 16;
  x *= 0x7feb352du;
  x ^= x >> 15;
  x *= 0x846ca68bu;
  x ^= x >> 16;
  return x;
}

/// The bits element `index` rounds with at (seed, step).
FLASHOPTIM_HOST_DEVICE FLASHOPTIM_INLINE std::uint32_t random_bits(std::uint64_t seed, std::uint64_t step,
                                                                   std::uint64_t index) {
  return random_mix(random_key(seed, step), index);
}

}  // namespace flashoptim::format
