// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// The off-load pipeline's shape (device/offload.cuh).
#pragma once

#include <cstdint>

namespace flashoptim::tuning {

/// Elements per pipelined chunk of the off-loaded part: a chunk's gradients
/// go to the host, are stepped there and its parameters come back while the
/// next chunks' copies run. 4 Mi elements is 8 MB of bf16 per copy: long
/// enough that a copy's fixed cost (~10 us) is under 1%, short enough that
/// the unoverlapped first copy and last copy back (~0.3 ms each over PCIe
/// Gen5) stay small next to a step of hundreds of millions of parameters.
/// Measured with bench/gpu/bench_offload (BENCHMARKS.md).
inline constexpr std::int64_t offload_chunk_elements = std::int64_t{1} << 22;

/// Staging buffers for gradients in flight (pinned, chunk_elements each):
/// three keep one chunk being stepped, one copying in, one queued.
inline constexpr int offload_staging_buffers = 3;

}  // namespace flashoptim::tuning
