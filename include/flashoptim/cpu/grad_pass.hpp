// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// The gradient-statistics pass on the CPU: one read of every gradient for
// the non-finite check, the largest magnitude and the sum of squares in the
// fixed order of rule/grad_order.hpp, then (grad_pass) the clip multiplier,
// skip flag and GradScaler update of rule/grad_scale.hpp. OpenMP threads
// split the work by segments, each of which is computed whole by one
// thread in the defined order, and the segments are combined afterwards in
// that order: any thread count gives the bits of any other, and of the GPU
// pass (device/grad_pass.cuh).
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#if defined(_OPENMP)
#include <omp.h>
#endif

#include "flashoptim/format/types.hpp"
#include "flashoptim/rule/grad_order.hpp"
#include "flashoptim/rule/grad_scale.hpp"
#include "flashoptim/status.hpp"

namespace flashoptim::cpu {

/// Optional outputs of a pass (host memory; null: not written).
struct grad_outputs {
  grad_summary* summary = nullptr;
  double* tensor_sum_squares = nullptr;  ///< list.count values: each tensor's sum of g^2 (raw)
  double* tensor_norms = nullptr;        ///< list.count values: sqrt of the above
};

struct grad_pass_options {
  /// OpenMP threads: 0 takes OpenMP's default, 1 runs on the calling thread.
  /// The result does not depend on it. At most 256 and 16 per processor
  /// (cpu::max_threads()'s bound).
  int threads = 0;
};

namespace grad_detail {

inline int thread_bound() {
#if defined(_OPENMP)
  const long procs = omp_get_num_procs();
  long bound = 16 * (procs > 0 ? procs : 1);
  if (bound < 256) bound = 256;
  const int limit = omp_get_thread_limit();
  if (limit > 0 && limit < bound) bound = limit;
  return static_cast<int>(bound);
#else
  return 256;
#endif
}

/// One segment (up to segment_elements elements from `data`) in the defined
/// order: lane sums per chunk, warp_tree over lanes, warp_tree over the 32
/// chunks (absent chunks +0).
template <class T>
inline void segment_stats(const T* data, std::int64_t n, double& sum, std::uint32_t& max_bits) {
  using namespace grad_order;
  double chunk_sums[fan_in];
  std::uint32_t m = 0;
  for (int c = 0; c < fan_in; ++c) {
    const std::int64_t begin = std::int64_t{c} * chunk_elements;
    double acc[lanes] = {};
    if (begin < n) {
      const T* chunk = data + begin;
      const int len = static_cast<int>(std::min<std::int64_t>(chunk_elements, n - begin));
      for (int r = 0; r < rows; ++r) {
        const int row = r * row_elements;
        if (row >= len) break;  // the rest is +0: adding it changes nothing
        for (int l = 0; l < lanes; ++l) {
          for (int k = 0; k < items; ++k) {
            const int i = row + l * items + k;
            if (i >= len) break;
            const float g = format::to_float(chunk[i]);
            const double d = static_cast<double>(g);
            acc[l] = format::add_rn(acc[l], format::mul_rn(d, d));  // d * d is exact in double
            m = std::max(m, magnitude_bits(g));
          }
        }
      }
    }
    chunk_sums[c] = warp_tree(acc);
  }
  sum = warp_tree(chunk_sums);
  max_bits = m;
}

inline void segment_stats(const grad_tensor& t, std::int64_t first, double& sum, std::uint32_t& max_bits) {
  const std::int64_t n = std::min(grad_order::segment_elements, t.size - first);
  switch (t.type) {
    case dtype::bf16: segment_stats(static_cast<const bf16*>(t.data) + first, n, sum, max_bits); break;
    case dtype::f16: segment_stats(static_cast<const fp16*>(t.data) + first, n, sum, max_bits); break;
    default: segment_stats(static_cast<const float*>(t.data) + first, n, sum, max_bits); break;
  }
}

/// The outputs' checks: aligned, no overlap with one another or a gradient.
inline status check_outputs(const grad_list& list, const grad_outputs& out, const grad_control* ctl,
                            const char* who) {
  const std::size_t per_tensor = static_cast<std::size_t>(list.count) * sizeof(double);
  const grad_order::output_span outs[4] = {{"summary", out.summary, sizeof(grad_summary)},
                                           {"tensor_sum_squares", out.tensor_sum_squares, per_tensor},
                                           {"tensor_norms", out.tensor_norms, per_tensor},
                                           {"control", ctl, sizeof(grad_control)}};
  return grad_order::check_outputs(list, outs, 4, who);
}

/// The statistics, after the checks.
inline grad_summary run_stats(const grad_list& list, const grad_outputs& out, int threads) {
  using namespace grad_order;
  std::vector<std::int64_t> seg_begin(static_cast<std::size_t>(list.count) + 1, 0);
  grad_summary s;
  for (std::int64_t t = 0; t < list.count; ++t) {
    seg_begin[t + 1] = seg_begin[t] + segments(list.tensors[t].size);
    s.elements += list.tensors[t].size;
  }
  const std::int64_t total = seg_begin[list.count];
  std::vector<double> sums(static_cast<std::size_t>(total));
  std::vector<std::uint32_t> maxes(static_cast<std::size_t>(total));
  // Each segment is computed whole by one thread: the schedule only decides
  // who computes it, never how.
#if defined(_OPENMP)
#pragma omp parallel for schedule(dynamic, 4) num_threads(threads) if (threads > 1 && total > 1)
#endif
  for (std::int64_t i = 0; i < total; ++i) {
    const std::int64_t t = std::upper_bound(seg_begin.begin(), seg_begin.end() - 1, i) - seg_begin.begin() - 1;
    segment_stats(list.tensors[t], (i - seg_begin[t]) * segment_elements, sums[i], maxes[i]);
  }
  (void)threads;
  std::vector<double> tensor_sums(static_cast<std::size_t>(list.count));
  for (std::int64_t t = 0; t < list.count; ++t) {
    const std::int64_t n = seg_begin[t + 1] - seg_begin[t];
    for (std::int64_t i = seg_begin[t]; i < seg_begin[t + 1]; ++i) s.max_abs_bits = std::max(s.max_abs_bits, maxes[i]);
    tensor_sums[t] = tree_reduce(sums.data() + seg_begin[t], n);
    if (out.tensor_sum_squares) out.tensor_sum_squares[t] = canonical(tensor_sums[t]);
    if (out.tensor_norms) out.tensor_norms[t] = canonical(format::sqrt_rn(tensor_sums[t]));
  }
  s.sum_squares = canonical(tree_reduce(tensor_sums.data(), list.count));
  s.norm = canonical(format::sqrt_rn(s.sum_squares));
  s.non_finite = s.max_abs_bits >= 0x7f800000u ? 1 : 0;
  return s;
}

inline status check_threads(int threads, int& use) {
  if (threads < 0 || threads > thread_bound())
    return status(status_code::invalid_argument, "grad pass: threads = %d is outside [0, %d]", threads,
                  thread_bound());
#if defined(_OPENMP)
  use = threads > 0 ? threads : std::min(omp_get_max_threads(), thread_bound());
#else
  use = 1;
#endif
  return status();
}

}  // namespace grad_detail

/// The statistics of `list` (host memory): writes the optional outputs.
/// Checks everything first; on an error nothing is written.
inline status grad_stats(const grad_list& list, const grad_outputs& out, const grad_pass_options& options = {}) {
  FLASHOPTIM_RETURN_IF_ERROR(grad_order::check_list(list, "cpu::grad_stats"));
  FLASHOPTIM_RETURN_IF_ERROR(grad_detail::check_outputs(list, out, nullptr, "cpu::grad_stats"));
  int threads = 1;
  FLASHOPTIM_RETURN_IF_ERROR(grad_detail::check_threads(options.threads, threads));
  const grad_summary s = grad_detail::run_stats(list, out, threads);
  if (out.summary) *out.summary = s;
  return status();
}

/// The statistics and the step's scalars: reads *control (GradScaler's
/// state: loss_scale, growth_tracker), writes all of it (rule::finalize)
/// and the optional outputs. The step then multiplies the raw gradients by
/// control->multiplier and writes nothing when control->skip is 1.
/// Checks everything first; on an error nothing is written.
inline status grad_pass(const grad_list& list, const grad_pass_config& config, grad_control* control,
                        const grad_outputs& out = {}, const grad_pass_options& options = {}) {
  FLASHOPTIM_RETURN_IF_ERROR(grad_order::check_list(list, "cpu::grad_pass"));
  if (control == nullptr) return status(status_code::null_pointer, "cpu::grad_pass: control is null");
  FLASHOPTIM_RETURN_IF_ERROR(rule::check(config));
  FLASHOPTIM_RETURN_IF_ERROR(grad_detail::check_outputs(list, out, control, "cpu::grad_pass"));
  FLASHOPTIM_RETURN_IF_ERROR(rule::check(*control, config));
  int threads = 1;
  FLASHOPTIM_RETURN_IF_ERROR(grad_detail::check_threads(options.threads, threads));
  const grad_summary s = grad_detail::run_stats(list, out, threads);
  if (out.summary) *out.summary = s;
  rule::finalize(s, config, *control);
  return status();
}

}  // namespace flashoptim::cpu
