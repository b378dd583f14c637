// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// Tuning of the threaded CPU step (cpu/step.hpp), with the measurements that
// chose each value (docs/cpu.md has the commands and the full table).
#pragma once

#include <cstdint>

namespace flashoptim::tuning::cpu {

/// Fewest groups of 32 elements worth a thread of their own: a call with g
/// groups uses at most g / 64 threads. Measured with
/// `bench_cpu_step --benchmark_filter=small` on a 2-core AMD EPYC (Zen 4),
/// libgomp, AVX-512, one thread vs two (time per step):
///   AdamW bf16 + int8 correction + default states: 32 groups 1.65 vs 1.81 us,
///     64 groups 2.92 vs 2.66 us, 128 groups 5.48 vs 4.13 us;
///   AdamW fp32: 64 groups 1.29 vs 1.69 us, 128 groups 2.28 vs 2.29 us,
///     256 groups 4.67 vs 3.36 us.
/// 64 keeps one thread up to 127 groups, where the second does not pay for
/// the fp32 step and gains little for the compressed one.
inline constexpr std::int64_t min_groups_per_thread = 64;

}  // namespace flashoptim::tuning::cpu
