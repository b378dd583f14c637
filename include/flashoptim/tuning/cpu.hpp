// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// Tuning of the threaded CPU step (cpu/step.hpp), with the measurements that
// chose each value (docs/cpu.md has the commands).
#pragma once

#include <cstdint>

namespace flashoptim::tuning::cpu {

/// Fewest groups of 32 elements worth a thread of their own: smaller calls use
/// fewer threads (one below twice this). Measured on a 2-core AMD EPYC
/// (Zen 4) with libgomp: see docs/cpu.md, "Threads for small steps".
inline constexpr std::int64_t min_groups_per_thread = 256;

}  // namespace flashoptim::tuning::cpu
