// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// Launch shapes of the GPU kernels, apart from the algorithms (CUB-style
// tuning policies). Every number here was chosen by a measurement on an
// H200; the comment next to it names the benchmark and what it showed
// (BENCHMARKS.md and docs/gpu.md have the tables).
#pragma once

#include <cstddef>

namespace flashoptim::tuning {

/// Shape of the fused step kernel.
///   Threads            threads per block
///   ElementsPerThread  consecutive elements of one tensor per thread (a
///                      tile); a group of 32 spans 32 / ElementsPerThread lanes
///   MinBlocksPerSm     __launch_bounds__ occupancy hint (caps registers)
///   Tabulate           decode 1-byte codes and int8 corrections through
///                      256-entry shared-memory tables built by each block
template <int Threads, int ElementsPerThread, int MinBlocksPerSm, bool Tabulate = true>
struct step_policy {
  static constexpr int threads = Threads;
  static constexpr int elements_per_thread = ElementsPerThread;
  static constexpr int min_blocks_per_sm = MinBlocksPerSm;
  static constexpr bool tabulate = Tabulate;
  /// Elements one block steps per iteration of its persistent loop: the
  /// unit of work that tensors are cut into (a tensor's last unit may be
  /// partial; units never span two tensors).
  static constexpr long long unit_elements = static_cast<long long>(Threads) * ElementsPerThread;
  static_assert(Threads % 32 == 0, "whole warps");
  static_assert(32 % ElementsPerThread == 0, "a group of 32 spans whole tiles");
};

/// The default step policy for every configuration.
/// 256 threads x 16 elements: 16 one-byte codes are one 16-byte access, and
/// a group of 32 spans two lanes (one shuffle). Measured on the H200 with
/// bench/gpu (bench_step --benchmark_filter=policy): see docs/gpu.md,
/// "Tuning". MinBlocksPerSm = 2 keeps the compiler at <= 128 registers.
template <class Config>
struct default_step_policy {
  using type = step_policy<256, 16, 2, true>;
};

/// Persistent grid: blocks per multiprocessor actually launched is
/// min(occupancy, this) times the multiprocessor count (and never more than
/// there are units of work).
inline constexpr int step_max_blocks_per_sm = 8;

/// Gradient statistics: a plain grid-stride reduction over the same table.
struct grad_stats_policy {
  static constexpr int threads = 256;
  static constexpr int elements_per_thread = 16;
  static constexpr int blocks_per_sm = 4;
  static constexpr long long unit_elements = static_cast<long long>(threads) * elements_per_thread;
};

/// Elementwise helpers (initialization, split / reconstruct): not on the
/// step path, no measurement needed beyond "fills the GPU".
inline constexpr int elementwise_threads = 256;
inline constexpr int elementwise_blocks_per_sm = 8;

}  // namespace flashoptim::tuning
