// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// The CPU write of FP8 parameters with block scales (docs/fp8-params.md):
// after a step, each block's values and scale are derived from the new
// master. fp8_param_write_serial is the reference (one block after another,
// fp8_write_block); fp8_param_write splits whole blocks between OpenMP
// threads. A block depends on nothing but its own master values and the
// amax is an exact maximum, so the thread count changes no byte, and the
// GPU kernel (kernel/fp8_param_kernel.cuh) writes the same bytes.
#pragma once

#include <cinttypes>
#include <cstdint>

#if defined(_OPENMP)
#include <omp.h>
#endif

#include "flashoptim/cpu/denormals.hpp"
#include "flashoptim/cpu/step.hpp"
#include "flashoptim/format/fp8_blocks.hpp"

namespace flashoptim::cpu {

namespace detail {
template <class Master, class F8>
void fp8_write_blocks(const fp8_param_ref<Master, F8>& t, std::int64_t begin, std::int64_t end, bool pow2) {
  const std::int64_t sc = t.shape.scale_cols();
  for (std::int64_t b = begin; b < end; ++b) fp8_write_block(t, b / sc, b % sc, pow2);
}
}  // namespace detail

/// The reference: every block of every tensor in order, on the calling
/// thread, with IEEE denormals (a scale near 1 / FLT_MAX is subnormal).
/// Validates the list (validate_fp8_param_list) before writing anything.
template <class Master, class F8>
status fp8_param_write_serial(const fp8_param_ref<Master, F8>* tensors, std::size_t count,
                              const fp8_param_options& options = {}) {
  FLASHOPTIM_RETURN_IF_ERROR(validate_fp8_param_list(tensors, count));
  denormal_scope scope(false);
  for (std::size_t i = 0; i < count; ++i)
    detail::fp8_write_blocks(tensors[i], 0, tensors[i].shape.scale_count(), options.pow2_scales);
  return status();
}

/// The same bytes on `threads` OpenMP threads (0: OpenMP's default team,
/// capped at cpu::max_threads(); 1: the calling thread). Each thread takes a
/// contiguous run of whole blocks of the concatenated list.
template <class Master, class F8>
status fp8_param_write(const fp8_param_ref<Master, F8>* tensors, std::size_t count,
                       const fp8_param_options& options = {}, int threads = 0);

namespace detail {
/// fp8_param_write after its checks: for a list validated once and written
/// every step (cpu::optimizer's FP8 copies), so that a step does not sort
/// and allocate the list's spans again. `threads` in [0, max_threads()].
template <class Master, class F8>
void fp8_param_write_checked(const fp8_param_ref<Master, F8>* tensors, std::size_t count,
                             const fp8_param_options& options, int threads);
}  // namespace detail

template <class Master, class F8>
status fp8_param_write(const fp8_param_ref<Master, F8>* tensors, std::size_t count, const fp8_param_options& options,
                       int threads) {
  if (threads < 0 || threads > max_threads())
    return status(status_code::invalid_argument, "cpu::fp8_param_write: threads = %d outside [0, %d]", threads,
                  max_threads());
  FLASHOPTIM_RETURN_IF_ERROR(validate_fp8_param_list(tensors, count));
  detail::fp8_param_write_checked(tensors, count, options, threads);
  return status();
}

template <class Master, class F8>
void detail::fp8_param_write_checked(const fp8_param_ref<Master, F8>* tensors, std::size_t count,
                                     const fp8_param_options& options, int threads) {
  std::int64_t total = 0;
  for (std::size_t i = 0; i < count; ++i) total += tensors[i].shape.scale_count();
  if (total == 0) return;
  const bool pow2 = options.pow2_scales;
  auto part = [&](int tid, int nt) {
    denormal_scope scope(false);
    const std::int64_t share = total / nt, extra = total % nt;
    const std::int64_t begin = share * tid + (tid < extra ? tid : extra);
    const std::int64_t end = begin + share + (tid < extra ? 1 : 0);
    std::int64_t first = 0;  // global index of tensor i's first block
    for (std::size_t i = 0; i < count && first < end; ++i) {
      const std::int64_t blocks = tensors[i].shape.scale_count();
      const std::int64_t lo = begin > first ? begin - first : 0;
      const std::int64_t hi = end - first < blocks ? end - first : blocks;
      if (lo < hi) detail::fp8_write_blocks(tensors[i], lo, hi, pow2);
      first += blocks;
    }
  };
#if defined(_OPENMP)
  int nt = threads > 0 ? threads : std::min(omp_get_max_threads(), max_threads());
  if (nt > total) nt = static_cast<int>(total);
  if (nt > 1) {
#pragma omp parallel num_threads(nt)
    part(omp_get_thread_num(), omp_get_num_threads());
    return;
  }
#else
  (void)threads;  // one thread without OpenMP
#endif
  part(0, 1);
}

}  // namespace flashoptim::cpu
