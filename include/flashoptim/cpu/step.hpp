// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// The CPU step: cpu::step_serial's result, bit for bit, on OpenMP threads and
// vector units. Groups of 32 elements are the unit of work: each thread takes
// one contiguous run of whole groups over the tensor list (groups never cross
// tensors), and a group's result depends on nothing but its own inputs, so
// neither the thread count nor the instruction set changes a byte.
//
// The instruction set is chosen at run time (AVX-512, AVX2, else portable),
// with nothing to pass to the compiler; `step_options::instruction_set`
// overrides it for tests and benchmarks. Configurations the vector paths do
// not implement (cpu::is_vectorized) run the scalar per-tile step on the same
// threads. Without OpenMP (no -fopenmp) the step runs on the calling thread.
#pragma once

#include <algorithm>
#include <cinttypes>
#include <cstddef>
#include <cstdint>

#if defined(_OPENMP)
#include <omp.h>
#endif

#include "flashoptim/cpu/denormals.hpp"
#include "flashoptim/cpu/detail/kernel_avx2.hpp"
#include "flashoptim/cpu/detail/kernel_avx512.hpp"
#include "flashoptim/cpu/detail/vector_support.hpp"
#include "flashoptim/cpu/isa.hpp"
#include "flashoptim/kernel/path.hpp"
#include "flashoptim/cpu/serial.hpp"
#include "flashoptim/tuning/cpu.hpp"

namespace flashoptim::cpu {

struct step_options {
  /// Threads to use: 0 takes OpenMP's default team size (OMP_NUM_THREADS or
  /// the core count, capped at cpu::max_threads()), 1 steps on the calling
  /// thread. More than cpu::max_threads() is an invalid_argument error.
  int threads = 0;
  /// automatic picks the widest available; others force that path (an
  /// unavailable one is a not_supported error).
  isa instruction_set = isa::automatic;
  /// Clear FTZ/DAZ on every stepping thread for the call (and restore them
  /// after): the results are then IEEE's, equal to the GPU's, whatever the
  /// caller's mode. false runs in each thread's current mode (docs/cpu.md
  /// lists what flushing changes).
  bool ieee_denormals = true;
  /// Smallest number of groups of 32 worth a thread (tuning/cpu.hpp).
  std::int64_t min_groups_per_thread = tuning::cpu::min_groups_per_thread;
};

/// Smallest bound cpu::max_threads() gives, whatever the processor count.
inline constexpr int min_thread_bound = 256;
/// Threads per processor cpu::max_threads() allows above that floor.
inline constexpr int threads_per_processor_bound = 16;

/// The most threads step_options::threads may request: OpenMP's thread limit
/// (OMP_THREAD_LIMIT), and no more than max(256, 16 x the processors OpenMP
/// sees). Threads beyond the cores only wait for them, and a request of tens
/// of thousands would end the process inside the OpenMP runtime (libgomp
/// aborts when it cannot create them) instead of failing the call. Without
/// OpenMP the step runs on the calling thread and the bound is 256.
inline int max_threads() {
#if defined(_OPENMP)
  const long procs = omp_get_num_procs();
  long bound = threads_per_processor_bound * (procs > 0 ? procs : 1);
  if (bound < min_thread_bound) bound = min_thread_bound;
  const int limit = omp_get_thread_limit();
  if (limit > 0 && limit < bound) bound = limit;
  return static_cast<int>(bound);
#else
  return min_thread_bound;
#endif
}

/// The threads a step of `groups` groups of 32 runs on: the options' threads,
/// or OpenMP's default team (OMP_NUM_THREADS) capped at max_threads() (the
/// environment's setting is capped, not refused: it is not the call's
/// argument), and no more than groups / min_groups_per_thread, at least 1;
/// 1 without OpenMP. cpu::step and the off-load's chunk team
/// (device/chunk_team.cuh) both size their teams with it.
inline int team_size(const step_options& options, std::int64_t groups) {
#if defined(_OPENMP)
  int threads = options.threads > 0 ? options.threads : std::min(omp_get_max_threads(), max_threads());
  const std::int64_t useful = groups / std::max<std::int64_t>(1, options.min_groups_per_thread);
  if (useful < threads) threads = useful > 1 ? static_cast<int>(useful) : 1;
  return threads;
#else
  (void)options, (void)groups;
  return 1;
#endif
}

inline namespace FLASHOPTIM_CPU_PATHS {

/// Whether the vector paths implement Config (else it runs the scalar step
/// on threads). Decided by traits the rule and codecs declare (a rule's
/// `vector_form`, rule/vector_form.hpp; a compander's `kind`,
/// codec/compander.hpp), the same for library and user types.
template <class Config>
inline constexpr bool is_vectorized = detail::vectorized<Config>;

enum class path {
  vector,  ///< the AVX2 / AVX-512 group kernels, where the machine has them
  scalar,  ///< the scalar per-tile step on the same threads
};

/// The CPU path step<Config> takes (on a machine with AVX2 or AVX-512).
template <class Config>
constexpr path path_of() {
  return is_vectorized<Config> ? path::vector : path::scalar;
}

/// The path step<Config> runs with these options: the requested or detected
/// instruction set for vectorized configurations, `portable` for the others.
/// Never `automatic`.
template <class Config>
isa selected_isa(const step_options& options = {}) {
  if (!is_vectorized<Config>) return isa::portable;
  return options.instruction_set == isa::automatic ? detected_isa() : options.instruction_set;
}

/// How step picks and runs a path (the part that depends on the build).
namespace dispatch {

template <class Config>
using groups_fn = void (*)(const typename Config::scalars&, const tensor_ref<Config>&, std::int64_t, std::int64_t,
                           std::uint64_t, detail::scalar_group_fn<Config>);

/// The portable path: the scalar step of every group.
template <class Config>
void portable_groups(const typename Config::scalars& sc, const tensor_ref<Config>& t, std::int64_t group_begin,
                     std::int64_t group_end, std::uint64_t step, detail::scalar_group_fn<Config>) {
  for (std::int64_t g = group_begin; g < group_end; ++g) step_tile_at<Config>(sc, t, g * tile_elements, step);
}

template <class Config>
groups_fn<Config> select_groups_fn(isa path) {
#if FLASHOPTIM_CPU_X86_SIMD
  if constexpr (detail::vectorized<Config>) {
    if (path == isa::avx512) return &detail::avx512::run_groups<Config>;
    if (path == isa::avx2) return &detail::avx2::run_groups<Config>;
  }
#endif
  (void)path;
  return &portable_groups<Config>;
}

/// Groups of a tensor of n elements, n in [0, max_elements] (validate_tensor
/// refuses the others before this runs).
inline std::int64_t group_count(std::int64_t n) { return (n + tile_elements - 1) / tile_elements; }

inline status validate_options(const step_options& o) {
  if (o.threads < 0) return status(status_code::invalid_argument, "cpu::step: threads = %d is negative", o.threads);
  if (o.threads > max_threads())
    return status(status_code::invalid_argument,
                  "cpu::step: threads = %d is above cpu::max_threads() = %d (OMP_THREAD_LIMIT, and at most "
                  "max(256, 16 x the processor count))",
                  o.threads, max_threads());
  if (o.min_groups_per_thread < 1)
    return status(status_code::invalid_argument, "cpu::step: min_groups_per_thread = %" PRId64 " must be >= 1",
                  o.min_groups_per_thread);
  switch (o.instruction_set) {
    case isa::automatic:
    case isa::portable:
    case isa::avx2:
    case isa::avx512: break;
    default:
      return status(status_code::invalid_argument, "cpu::step: instruction set %d is not one of cpu::isa",
                    static_cast<int>(o.instruction_set));
  }
  if (!isa_available(o.instruction_set))
    return status(status_code::not_supported, "cpu::step: this machine or build cannot run the %s path",
                  to_string(o.instruction_set));
  return status();
}

}  // namespace dispatch

/// One optimizer step over `count` tensors, equal bit for bit to
/// cpu::step_serial with the same arguments (and so to the GPU step). Checks
/// everything step_serial checks (validate_tensor_list: sizes, pointers,
/// alignment, no written buffer overlapping another), and the options,
/// before writing anything.
template <class Config>
status step(const typename Config::hyper& h, const step_args& a, const tensor_ref<Config>* tensors, std::size_t count,
            const step_options& options = {}) {
  FLASHOPTIM_RETURN_IF_ERROR(validate_step_args<Config>(h, a));
  FLASHOPTIM_RETURN_IF_ERROR(dispatch::validate_options(options));
  FLASHOPTIM_RETURN_IF_ERROR(validate_tensor_list(tensors, count));
  if (a.skip) return status();
  std::int64_t total = 0;
  for (std::size_t i = 0; i < count; ++i) total += dispatch::group_count(tensors[i].size);
  if (total == 0) return status();

  const bool ieee = options.ieee_denormals;
  // the per-step scalars are double arithmetic, which MXCSR governs too
  const auto sc = [&] {
    if (!ieee) return make_step_scalars<Config>(h, a);
    denormal_scope scope(false);
    return make_step_scalars<Config>(h, a);
  }();
  const auto run = dispatch::select_groups_fn<Config>(selected_isa<Config>(options));
  const auto scalar = &detail::scalar_group<Config>;
  const std::uint64_t step_index = static_cast<std::uint64_t>(a.step);

  // Thread `tid` of `nt` steps groups [begin, end) of the concatenated list:
  // a balanced split of whole groups; any split gives the same bytes.
  auto part = [&](int tid, int nt) {
    const std::int64_t share = total / nt, extra = total % nt;
    const std::int64_t begin = share * tid + (tid < extra ? tid : extra);
    const std::int64_t end = begin + share + (tid < extra ? 1 : 0);
    std::int64_t first = 0;  // global index of tensor i's first group
    for (std::size_t i = 0; i < count && first < end; ++i) {
      const std::int64_t groups = dispatch::group_count(tensors[i].size);
      const std::int64_t lo = begin > first ? begin - first : 0;
      const std::int64_t hi = end - first < groups ? end - first : groups;
      if (lo < hi) run(sc, tensors[i], lo, hi, step_index, scalar);
      first += groups;
    }
  };
  auto body = [&](int tid, int nt) {
    if (ieee) {
      denormal_scope scope(false);
      part(tid, nt);
    } else {
      part(tid, nt);
    }
  };

#if defined(_OPENMP)
  const int threads = team_size(options, total);
  if (threads > 1) {
#pragma omp parallel num_threads(threads)
    body(omp_get_thread_num(), omp_get_num_threads());
    return status();
  }
#endif
  body(0, 1);
  return status();
}

}  // namespace FLASHOPTIM_CPU_PATHS
}  // namespace flashoptim::cpu

/// FLASHOPTIM_REQUIRE_FAST_PATH(Config): fails to compile unless Config runs
/// the CPU vector kernels (cpu::path_of) and the GPU kernel's own encoders
/// for every state slot (kernel::path_of). A user who adds a rule or a
/// compander writes it next to the configuration, so a type that silently
/// falls to a slower path is caught at build time. Variadic: a Config
/// spelled out has commas.
#define FLASHOPTIM_REQUIRE_FAST_PATH(...)                                                              \
  static_assert(::flashoptim::cpu::path_of<__VA_ARGS__>() == ::flashoptim::cpu::path::vector,            \
                "this configuration runs the scalar CPU step: its rule needs a vector_form "             \
                "(rule/vector_form.hpp) and every compander a kind (codec/compander.hpp)");              \
  static_assert(::flashoptim::kernel::path_of<__VA_ARGS__>() == ::flashoptim::kernel::path::specialized, \
                "this configuration runs the GPU's generic encoder: a compander lacks a kind "          \
                "(codec/compander.hpp)")
