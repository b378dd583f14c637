// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// The gradient pass of a training step on the GPU, without a host
// synchronization: statistics of every gradient (non-finite check, largest
// magnitude, fixed-order sum of squares), then on the device the clip
// coefficient, the skip flag and the GradScaler update, written into a
// grad_control in device memory that the step reads:
//
//   device::grad_pass_plan plan;
//   plan.build(list, config, {.control = ctl});          // once, not captured
//   plan.reset_control_async(stream);                    // GradScaler's initial state
//   per step (capturable in a CUDA graph):
//     plan.run_async(stream);
//     step.step_async(hyper, args, {.inv_grad_scale = &ctl->multiplier, .skip = &ctl->skip}, stream);
//
// The results are the bits of cpu::grad_pass for any launch shape
// (docs/grad-passes.md).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <utility>
#include <vector>

#include "flashoptim/device/memory_kind.cuh"
#include "flashoptim/kernel/grad_pass_kernel.cuh"
#include "flashoptim/kernel/init_kernels.cuh"
#include "flashoptim/rule/grad_order.hpp"
#include "flashoptim/rule/grad_scale.hpp"
#include "flashoptim/status.hpp"

namespace flashoptim::device {

/// Outputs of a pass (device memory of the plan's device; null: not
/// written). control is read and written (GradScaler's state).
struct grad_pass_outputs {
  grad_control* control = nullptr;
  grad_summary* summary = nullptr;
  double* tensor_sum_squares = nullptr;  ///< list.count values, raw
  double* tensor_norms = nullptr;        ///< list.count values, raw
};

/// Launch shape; the results do not depend on it (tests vary it).
struct grad_pass_launch {
  int threads = 256;   ///< block size of the statistics kernels: a multiple of 32 in [32, 1024]
  int grid = 0;        ///< blocks of the segment kernel; 0: a full device, at most one per segment
  int group_grid = 0;  ///< blocks of the level-1 kernel; 0: enough for its groups, at most a full device
};

/// A built pass: the gradient table and workspace in device memory. Owns
/// them; move-only. The gradients' contents may change between runs, not
/// their addresses or sizes (rebuild for those).
class grad_pass_plan {
 public:
  grad_pass_plan() = default;
  grad_pass_plan(const grad_pass_plan&) = delete;
  grad_pass_plan& operator=(const grad_pass_plan&) = delete;
  grad_pass_plan(grad_pass_plan&& o) noexcept { swap(o); }
  grad_pass_plan& operator=(grad_pass_plan&& o) noexcept {
    if (this != &o) {
      release();
      swap(o);
    }
    return *this;
  }
  ~grad_pass_plan() { release(); }

  bool built() const { return built_; }
  std::int64_t tensor_count() const { return args_.count; }
  std::int64_t segment_count() const { return args_.segments; }
  int grid() const { return grid_; }
  int group_grid() const { return group_grid_; }

  /// Checks everything (gradients and outputs are device memory of the
  /// current device, aligned, not overlapping; the configuration; the
  /// launch shape), then copies the table to the device (synchronously: do
  /// not build while capturing). On an error the plan is unchanged.
  status build(const grad_list& list, const grad_pass_config& config, const grad_pass_outputs& out,
               const grad_pass_launch& launch = {}) {
    const char* who = "device::grad_pass_plan";
    FLASHOPTIM_RETURN_IF_ERROR(grad_order::check_list(list, who));
    FLASHOPTIM_RETURN_IF_ERROR(rule::check(config));
    if (launch.threads < 32 || launch.threads > kernel::grad_pass::max_block_threads || launch.threads % 32 != 0)
      return status(status_code::invalid_argument, "%s: threads %d is not a multiple of 32 in [32, %d]", who,
                    launch.threads, kernel::grad_pass::max_block_threads);
    if (launch.grid < 0 || launch.group_grid < 0)
      return status(status_code::invalid_argument, "%s: grid %d / group_grid %d is negative", who, launch.grid,
                    launch.group_grid);
    const std::size_t per_tensor = static_cast<std::size_t>(list.count) * sizeof(double);
    const grad_order::output_span outs[4] = {{"control", out.control, sizeof(grad_control)},
                                             {"summary", out.summary, sizeof(grad_summary)},
                                             {"tensor_sum_squares", out.tensor_sum_squares, per_tensor},
                                             {"tensor_norms", out.tensor_norms, per_tensor}};
    FLASHOPTIM_RETURN_IF_ERROR(grad_order::check_outputs(list, outs, 4, who));
    int dev = 0;
    FLASHOPTIM_RETURN_IF_ERROR(detail::cuda_status(cudaGetDevice(&dev), "cudaGetDevice"));
    for (std::int64_t t = 0; t < list.count; ++t) {
      const grad_tensor& g = list.tensors[t];
      FLASHOPTIM_RETURN_IF_ERROR(check_memory_kind(static_cast<std::size_t>(t), "grad", g.data,
                                                   static_cast<std::size_t>(g.size) * size_of(g.type),
                                                   memory_need::device, dev));
    }
    for (const auto& o : outs)
      FLASHOPTIM_RETURN_IF_ERROR(check_memory_kind(0, o.name, o.data, o.bytes, memory_need::device, dev));

    // The table: each tensor's first segment record and first level-1 value.
    using kernel::grad_pass::entry;
    using kernel::grad_pass::record;
    std::vector<entry> entries(static_cast<std::size_t>(list.count));
    std::vector<std::int64_t> sizes(static_cast<std::size_t>(list.count));
    std::vector<std::int32_t> types(static_cast<std::size_t>(list.count));
    kernel::grad_pass::launch_args a;
    a.count = list.count;
    for (std::int64_t t = 0; t < list.count; ++t) {
      const grad_tensor& g = list.tensors[t];
      const std::int64_t segs = grad_order::segments(g.size);
      entries[t] = entry{g.data, g.size, a.segments, a.groups, static_cast<std::int32_t>(g.type), 0};
      sizes[t] = g.size;
      types[t] = static_cast<std::int32_t>(g.type);
      a.segments += segs;
      a.groups += segs / grad_order::fan_in + (segs % grad_order::fan_in != 0 ? 1 : 0);
      a.elements += g.size;
    }
    a.summary = out.summary;
    a.tensor_sum_squares = out.tensor_sum_squares;
    a.tensor_norms = out.tensor_norms;
    a.control = out.control;
    a.config = config;

    int sms = 0, per_sm = 0, group_per_sm = 0;
    FLASHOPTIM_RETURN_IF_ERROR(
        detail::cuda_status(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev), "SM count"));
    FLASHOPTIM_RETURN_IF_ERROR(detail::cuda_status(
        cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel::grad_pass::segments_kernel<>, launch.threads, 0),
        "occupancy"));
    FLASHOPTIM_RETURN_IF_ERROR(detail::cuda_status(
        cudaOccupancyMaxActiveBlocksPerMultiprocessor(&group_per_sm, kernel::grad_pass::groups_kernel<>, launch.threads,
                                                      0),
        "occupancy"));
    const std::int64_t full = static_cast<std::int64_t>(sms) * (per_sm > 0 ? per_sm : 1);
    const std::int64_t group_full = static_cast<std::int64_t>(sms) * (group_per_sm > 0 ? group_per_sm : 1);
    const std::int64_t warps = launch.threads / 32;
    std::int64_t grid = launch.grid > 0 ? launch.grid : (a.segments < full ? a.segments : full);
    std::int64_t group_grid = launch.group_grid > 0 ? launch.group_grid : (a.groups + warps - 1) / warps;
    if (launch.group_grid == 0 && group_grid > group_full) group_grid = group_full;
    if (grid > 0x7fffffff) grid = 0x7fffffff;
    if (group_grid > 0x7fffffff) group_grid = 0x7fffffff;

    // One allocation: table, then the three record arrays (all 8-byte aligned).
    const std::size_t table_bytes = entries.size() * sizeof(entry);
    const std::size_t records = static_cast<std::size_t>(a.segments + a.groups + a.count);
    const std::size_t bytes = table_bytes + records * sizeof(record);
    void* memory = nullptr;
    if (bytes > 0) {
      FLASHOPTIM_RETURN_IF_ERROR(detail::cuda_status(cudaMalloc(&memory, bytes), "grad pass workspace"));
      const cudaError_t e = cudaMemcpy(memory, entries.data(), table_bytes, cudaMemcpyHostToDevice);
      if (e != cudaSuccess) {
        cudaFree(memory);
        return detail::cuda_status(e, "grad pass table copy");
      }
      auto* base = static_cast<unsigned char*>(memory);
      a.entries = reinterpret_cast<const entry*>(base);
      auto* rec = reinterpret_cast<record*>(base + table_bytes);
      a.segment_records = rec;
      a.group_records = rec + a.segments;
      a.tensor_records = rec + a.segments + a.groups;
    }
    release();
    memory_ = memory;
    args_ = a;
    threads_ = launch.threads;
    grid_ = static_cast<int>(grid);
    group_grid_ = static_cast<int>(group_grid);
    initial_ = rule::initial_control(config);
    sizes_ = std::move(sizes);
    types_ = std::move(types);
    built_ = true;
    return status();
  }

  /// Statistics, level 1, finalize: three stream-ordered launches, no host
  /// synchronization, nothing allocated (capturable; a captured graph
  /// replays it with the gradients' contents at replay time).
  status run_async(cudaStream_t stream) const {
    if (!built_) return status(status_code::invalid_argument, "device::grad_pass_plan: run before build");
    namespace k = kernel::grad_pass;
    if (args_.segments > 0) {
      k::segments_kernel<><<<grid_, threads_, 0, stream>>>(args_);
      FLASHOPTIM_RETURN_IF_ERROR(detail::cuda_status(cudaGetLastError(), "grad pass segments launch"));
    }
    if (args_.groups > 0) {
      k::groups_kernel<><<<group_grid_, threads_, 0, stream>>>(args_);
      FLASHOPTIM_RETURN_IF_ERROR(detail::cuda_status(cudaGetLastError(), "grad pass groups launch"));
    }
    k::finalize_kernel<><<<1, k::finalize_threads, 0, stream>>>(args_);
    return detail::cuda_status(cudaGetLastError(), "grad pass finalize launch");
  }

  /// Writes rule::initial_control(config) to the control output
  /// (stream-ordered; capturable).
  status reset_control_async(cudaStream_t stream) const {
    if (!built_) return status(status_code::invalid_argument, "device::grad_pass_plan: reset before build");
    if (args_.control == nullptr)
      return status(status_code::null_pointer, "device::grad_pass_plan: the plan has no control output");
    kernel::grad_pass::set_control_kernel<><<<1, 32, 0, stream>>>(args_.control, initial_);
    return detail::cuda_status(cudaGetLastError(), "grad pass control reset");
  }

  /// Points tensor t's entry at another gradient buffer of the same size
  /// and dtype without rebuilding: a one-thread kernel on `stream` writes
  /// the address (stream-ordered, no host synchronization: legal while
  /// `stream` is captured, a graph replays the write). Checks the index,
  /// null, alignment and that it is device memory of the current device;
  /// overlap with written buffers is the caller's check. On error nothing
  /// is written.
  status rebind_async(std::int64_t t, const void* data, cudaStream_t stream) {
    if (!built_) return status(status_code::invalid_argument, "device::grad_pass_plan: rebind before build");
    if (t < 0 || t >= args_.count)
      return status(status_code::invalid_argument, "device::grad_pass_plan: tensor %lld of %lld",
                    static_cast<long long>(t), static_cast<long long>(args_.count));
    const std::int64_t size = sizes_[static_cast<std::size_t>(t)];
    if (size == 0) return status();
    const dtype type = static_cast<dtype>(types_[static_cast<std::size_t>(t)]);
    if (data == nullptr)
      return status(status_code::null_pointer, "device::grad_pass_plan: tensor %lld: the gradient is null",
                    static_cast<long long>(t));
    if (reinterpret_cast<std::uintptr_t>(data) % size_of(type) != 0)
      return status(status_code::misaligned, "device::grad_pass_plan: tensor %lld: gradient at %p is not %zu-byte aligned",
                    static_cast<long long>(t), data, static_cast<std::size_t>(size_of(type)));
    int dev = 0;
    FLASHOPTIM_RETURN_IF_ERROR(detail::cuda_status(cudaGetDevice(&dev), "cudaGetDevice"));
    FLASHOPTIM_RETURN_IF_ERROR(check_memory_kind(static_cast<std::size_t>(t), "grad", data,
                                                 static_cast<std::size_t>(size) * size_of(type), memory_need::device,
                                                 dev));
    auto* entry = const_cast<kernel::grad_pass::entry*>(args_.entries) + t;
    kernel::write_value_kernel<const void*><<<1, 32, 0, stream>>>(&entry->data, data);
    return detail::cuda_status(cudaGetLastError(), "grad pass rebind launch");
  }

 private:
  void release() {
    if (memory_ != nullptr) cudaFree(memory_);
    memory_ = nullptr;
    built_ = false;
    args_ = {};
    sizes_.clear();
    types_.clear();
  }
  void swap(grad_pass_plan& o) noexcept {
    std::swap(memory_, o.memory_);
    std::swap(args_, o.args_);
    std::swap(threads_, o.threads_);
    std::swap(grid_, o.grid_);
    std::swap(group_grid_, o.group_grid_);
    std::swap(initial_, o.initial_);
    std::swap(built_, o.built_);
    std::swap(sizes_, o.sizes_);
    std::swap(types_, o.types_);
  }

  void* memory_ = nullptr;
  kernel::grad_pass::launch_args args_{};
  int threads_ = 256;
  int grid_ = 0;
  int group_grid_ = 0;
  grad_control initial_{};
  bool built_ = false;
  std::vector<std::int64_t> sizes_;  ///< each tensor's elements and dtype (what rebind_async checks)
  std::vector<std::int32_t> types_;
};

}  // namespace flashoptim::device
