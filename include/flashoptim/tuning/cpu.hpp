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

/// How far ahead of the group being stepped the layouts without a grouped
/// state prefetch each of their buffers, in bytes of that buffer (one
/// `__builtin_prefetch` per 64-byte line of the group that far ahead; 0
/// turns it off). Their step is short, and a core streaming from memory ran
/// out of loads in flight before the hardware prefetchers brought the
/// lines. Measured on the 2-core Zen 4 VM of min_groups_per_thread, 2^24
/// parameters, 2 threads, medians of 8 interleaved rounds (G params/s;
/// docs/cpu.md, issue 16's sixth round):
///   prefetch bytes         0      1024   2048   4096
///   AdamW bf16/bf16        1.599  1.934  1.924  1.802
///   AdamW fp32/fp32        1.353  1.399  1.331  1.257
/// The layouts with grouped (8-bit) states are bound by their arithmetic,
/// not by loads, and do not prefetch: a block's 16 groups prefetched 16 to
/// 64 groups ahead made the default layout 5-7% slower on one core (the
/// instructions it adds).
inline constexpr std::int64_t plain_prefetch_bytes = 1024;

}  // namespace flashoptim::tuning::cpu
