// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// The step that also writes FP8 parameters (docs/fp8-params.md, "Fused
// into the step"): a step_plan whose launches run the step kernel
// instantiated with an FP8 type, which writes each tensor's e4m3 / e5m2
// values and 1 x 128 block scales from the new master it holds in
// registers: no second read of the master. The bytes are those of the
// second pass (kernel::fp8_param_plan, cpu::fp8_param_write_serial) on the
// stepped master; the master, corrections and states those of the plain
// step. 128 x 128 blocks (and rows whose width is not a multiple of 128)
// are refused here: they take the second pass after the step (a tensor
// given no output in this plan can be written by it).
//
//   flashoptim::device::fp8_step_plan<Config, fp8_e4m3> plan;
//   FLASHOPTIM_RETURN_IF_ERROR(plan.build(tensors.data(), outputs.data(), tensors.size()));
//   FLASHOPTIM_RETURN_IF_ERROR(plan.step_async(hyper, {step}, fp8_param_options{}, stream));
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cinttypes>
#include <cstdint>
#include <utility>
#include <vector>

#include "flashoptim/device/fp8_step_outputs.hpp"
#include "flashoptim/device/step_plan.cuh"
#include "flashoptim/kernel/fp8_step_write.cuh"

namespace flashoptim::device {

/// The fused launch with device inputs (graph capture) over a built step
/// plan's table (`ref`, its grid the fused kernel's: step_grid<Config,
/// Policy, F8>) and an FP8 output table of one entry per tensor of it, as
/// step_plan's device-input step checks and launches: a device skip flag or
/// an invalid device value writes nothing, FP8 bytes included.
/// fp8_step_plan runs it; device::optimizer runs it over its own tables.
template <class Config, class Policy, class F8>
status fp8_fused_step_async(const step_plan_ref<Config, Policy>& ref, const kernel::fp8_out_entry<F8>* entries,
                            const typename Config::hyper* h, int groups, const step_args& a, const device_inputs& in,
                            const fp8_param_options& o, cudaStream_t stream) {
  FLASHOPTIM_RETURN_IF_ERROR(detail::check_device_step<Config>(h, groups, a, in));
  if (a.skip || ref.units() == 0) return status();
  kernel::fp8_step_params<Config, F8> p;
  p.table = ref.table();
  for (int g = 0; g < groups; ++g) p.hyper[g] = h[g];
  p.groups = groups;
  p.host_step = a.step;
  p.host_inv_grad_scale = a.inv_grad_scale;
  p.inputs = in;
  p.fp8 = {entries, o.pow2_scales ? 1 : 0};
  return detail::cuda_status(kernel::launch_step<Config, Policy, true, F8>(p, ref.grid(), stream),
                             "fused fp8 step launch");
}

/// Owns a step_plan and the device table of the FP8 outputs; its launches
/// step and write the FP8 copies in one kernel. Move-only.
template <class Config, class F8, class Policy = typename tuning::default_step_policy<Config>::type>
class fp8_step_plan {
 public:
  using hyper = typename Config::hyper;
  using output = fp8_step_output<F8>;
  static_assert(kernel::is_fp8_param_type<F8>::value, "FP8 parameters are fp8_e4m3 or fp8_e5m2");
  static_assert(fp8_block_cols % Policy::elements_per_thread == 0 && 32 * Policy::elements_per_thread >= fp8_block_cols,
                "the fused FP8 write needs 4 <= Policy::elements_per_thread, dividing 128");

  fp8_step_plan() = default;
  fp8_step_plan(const fp8_step_plan&) = delete;
  fp8_step_plan& operator=(const fp8_step_plan&) = delete;
  fp8_step_plan(fp8_step_plan&& o) noexcept { swap(o); }
  fp8_step_plan& operator=(fp8_step_plan&& o) noexcept {
    if (this != &o) {
      release();
      swap(o);
    }
    return *this;
  }
  ~fp8_step_plan() { release(); }

  /// Every check build() runs before it touches the device. Host only.
  static status can_implement(const tensor_ref<Config>* tensors, const output* outputs, std::size_t count,
                              const std::int32_t* tensor_group = nullptr, int groups = 1) {
    using inner = step_plan<Config, Policy>;
    FLASHOPTIM_RETURN_IF_ERROR(inner::can_implement(tensors, count, tensor_group, groups));
    return validate_fp8_step_outputs<Config, F8>(tensors, outputs, count);
  }

  /// Validates, checks that every buffer is memory of the current device,
  /// builds the step plan and uploads the outputs (set-up: allocates and
  /// synchronizes). On error the plan is left as it was.
  status build(const tensor_ref<Config>* tensors, const output* outputs, std::size_t count,
               const std::int32_t* tensor_group = nullptr, int groups = 1) {
    FLASHOPTIM_RETURN_IF_ERROR(can_implement(tensors, outputs, count, tensor_group, groups));
    int dev = 0, sms = 0;
    FLASHOPTIM_RETURN_IF_ERROR(detail::cuda_status(cudaGetDevice(&dev), "cudaGetDevice"));
    std::vector<kernel::fp8_out_entry<F8>> entries(count);
    for (std::size_t i = 0; i < count; ++i) {
      const output& o = outputs[i];
      if (o.values == nullptr && o.scales == nullptr) continue;
      FLASHOPTIM_RETURN_IF_ERROR(
          check_memory_kind(i, "fp8 values", o.values, static_cast<std::size_t>(o.shape.size), memory_need::device, dev));
      FLASHOPTIM_RETURN_IF_ERROR(check_memory_kind(i, "fp8 scales", o.scales,
                                                   static_cast<std::size_t>(o.shape.scale_count()) * sizeof(float),
                                                   memory_need::device, dev));
      entries[i].values = o.values;
      entries[i].scales = o.scales;
      entries[i].vector_ok =
          kernel::tile_access<F8, Policy::elements_per_thread>::vector_aligned(o.values) ? 1u : 0u;
    }
    step_plan<Config, Policy> inner;
    FLASHOPTIM_RETURN_IF_ERROR(inner.build(tensors, count, tensor_group, groups));

    // the fused kernels' own shared-memory opt-in and occupancy (they hold
    // more registers than the plain step's)
    FLASHOPTIM_RETURN_IF_ERROR(
        detail::cuda_status(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev), "cudaDeviceGetAttribute"));
    std::int64_t grid = 0;
    FLASHOPTIM_RETURN_IF_ERROR((detail::step_grid<Config, Policy, F8>(inner.ref().units(), sms, grid)));

    void* mem = nullptr;
    const std::size_t bytes = std::max<std::size_t>(1, count) * sizeof(kernel::fp8_out_entry<F8>);
    FLASHOPTIM_RETURN_IF_ERROR(detail::cuda_status(cudaMalloc(&mem, bytes), "allocating the fp8 output table"));
    status st;
    if (count > 0)
      st = detail::cuda_status(cudaMemcpy(mem, entries.data(), count * sizeof(entries[0]), cudaMemcpyHostToDevice),
                               "uploading the fp8 output table");
    if (st.ok()) st = detail::cuda_status(cudaDeviceSynchronize(), "uploading the fp8 output table");
    if (!st.ok()) {
      cudaFree(mem);
      return st;
    }
    release();
    plan_ = std::move(inner);
    ref_ = plan_.ref().with_grid(static_cast<int>(grid));
    entries_ = static_cast<kernel::fp8_out_entry<F8>*>(mem);
    device_ = dev;
    return status();
  }

  bool built() const { return entries_ != nullptr; }
  /// The plain step plan over the same tensors (grad_stats_async,
  /// zero_states_async, or a step that writes no FP8 copy).
  const step_plan<Config, Policy>& plain() const { return plan_; }
  /// Blocks of the fused launch's persistent grid.
  int grid() const { return ref_.grid(); }
  /// The same launches on another number of blocks (the bytes do not
  /// depend on it; tests show it).
  void set_grid(int blocks) { ref_ = ref_.with_grid(blocks); }

  /// One step with host scalars, writing the FP8 copies. The checks of
  /// step_plan::step_async; with a.skip set nothing is launched, nothing written.
  status step_async(const hyper& h, const step_args& a, const fp8_param_options& o, cudaStream_t stream) const {
    return step_async(&h, 1, a, o, stream);
  }
  status step_async(const hyper* h, int groups, const step_args& a, const fp8_param_options& o,
                    cudaStream_t stream) const {
    FLASHOPTIM_RETURN_IF_ERROR(check(h, groups));
    kernel::fp8_step_params<Config, F8> p;
    for (int g = 0; g < groups; ++g) {
      FLASHOPTIM_RETURN_IF_ERROR(validate_step_args<Config>(h[g], a));
      p.scalars[g] = make_step_scalars<Config>(h[g], a);
    }
    if (a.skip || ref_.units() == 0) return status();
    p.table = ref_.table();
    p.groups = groups;
    p.step = static_cast<std::uint64_t>(a.step);
    p.fp8 = {entries_, o.pow2_scales ? 1 : 0};
    return detail::cuda_status(kernel::launch_step<Config, Policy, false, F8>(p, ref_.grid(), stream),
                               "fused fp8 step launch");
  }

  /// With device inputs (graph capture), as step_plan's: a device skip flag
  /// or an invalid device value writes nothing, FP8 bytes included.
  status step_async(const hyper& h, const step_args& a, const device_inputs& in, const fp8_param_options& o,
                    cudaStream_t stream) const {
    return step_async(&h, 1, a, in, o, stream);
  }
  status step_async(const hyper* h, int groups, const step_args& a, const device_inputs& in,
                    const fp8_param_options& o, cudaStream_t stream) const {
    FLASHOPTIM_RETURN_IF_ERROR(check(h, groups));
    return fp8_fused_step_async<Config, Policy, F8>(ref_, entries_, h, groups, a, in, o, stream);
  }

 private:
  status check(const hyper* h, int groups) const {
    if (!built()) return status(status_code::invalid_argument, "fp8_step_plan used before build() succeeded");
    if (h == nullptr) return status(status_code::null_pointer, "hyperparameters are null");
    if (groups != ref_.groups())
      return status(status_code::invalid_argument, "the plan has %d parameter group%s, the step was given %d",
                    ref_.groups(), ref_.groups() == 1 ? "" : "s", groups);
    return status();
  }
  void release() {
    if (entries_ != nullptr) {
      int prev = 0;
      cudaGetDevice(&prev);
      if (prev != device_) cudaSetDevice(device_);
      cudaFree(entries_);
      if (prev != device_) cudaSetDevice(prev);
    }
    entries_ = nullptr;
    plan_ = step_plan<Config, Policy>{};
    ref_ = step_plan_ref<Config, Policy>{};
  }
  void swap(fp8_step_plan& o) noexcept {
    std::swap(plan_, o.plan_);
    std::swap(ref_, o.ref_);
    std::swap(entries_, o.entries_);
    std::swap(device_, o.device_);
  }

  step_plan<Config, Policy> plan_;
  step_plan_ref<Config, Policy> ref_{};
  kernel::fp8_out_entry<F8>* entries_ = nullptr;
  int device_ = -1;
};

}  // namespace flashoptim::device
