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
///   BranchFree         encode ULP corrections and softsign codes without
///                      branches (kernel/code_tables.cuh: same bits, checked
///                      over every input by tests/gpu/exhaustive_test.cu)
template <int Threads, int ElementsPerThread, int MinBlocksPerSm, bool Tabulate = true, bool BranchFree = false>
struct step_policy {
  static constexpr int threads = Threads;
  static constexpr int elements_per_thread = ElementsPerThread;
  static constexpr int min_blocks_per_sm = MinBlocksPerSm;
  static constexpr bool tabulate = Tabulate;
  static constexpr bool branch_free = BranchFree;
  /// Elements one block steps per iteration of its persistent loop: the
  /// unit of work that tensors are cut into (a tensor's last unit may be
  /// partial; units never span two tensors).
  static constexpr long long unit_elements = static_cast<long long>(Threads) * ElementsPerThread;
  static_assert(Threads % 32 == 0, "whole warps");
  static_assert(32 % ElementsPerThread == 0, "a group of 32 spans whole tiles");
};

/// The default step policy for every configuration: 256 threads x 8
/// elements, <= 128 registers (2 blocks per SM), tables, branch-free
/// encoders. A group of 32 spans 4 lanes (two shuffles); bf16 tiles are one
/// 16-byte access, one-byte codes 8 bytes. Measured on an H200 with
/// bench/gpu (AdamW default layout, 268M parameters in one tensor), two
/// runs of the same binary, 2026-11-29:
///   256 x 8,  2 blocks/SM        2.057 / 2.044 ms   <- chosen
///   512 x 16, 1 block/SM         2.089 / 2.081 ms
///   256 x 8,  3 blocks/SM        2.094 / 2.095 ms   (80 registers: spills)
///   128 x 8,  6 blocks/SM        2.173 / 2.156 ms
///   256 x 16, 2 blocks/SM        2.219 / 2.215 ms   (the first default)
///   128 x 16, 4 blocks/SM        2.328 / 2.306 ms
///   256 x 16, 1 block/SM         2.576 / 2.553 ms   (165 registers, 8 warps/SM)
///   256 x 16, 2, BranchFree off  2.668 / 2.650 ms
///   256 x 16, 2, Tabulate off    3.404 / 3.382 ms
/// (Those kernels used a branch-free device sqrt_rn, since reverted to
/// __fsqrt_rn, which measured 2% faster.) Nsight Compute on the 256 x 16
/// kernel: issue-bound, not memory-bound (DRAM 32% busy, issue on 64% of
/// scheduler cycles, 4 warps per scheduler, registers limit occupancy);
/// docs/gpu.md has the analysis.
template <class Config>
struct default_step_policy {
  using type = step_policy<256, 8, 2, true, true>;
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
