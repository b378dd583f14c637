// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// Every kernel the library launches, instantiated for every configuration
// the tests use (tests/common/configs.hpp): the step kernel (host and device
// scalars), grad stats, zeroing, split / reconstruct, advance_step and the
// clip multiplier. tests/build/ptx_identity.cmake compiles this file to PTX
// with nvcc's defaults and with --fmad=false and requires the two to be
// identical: the library's device arithmetic is written with _rn intrinsics,
// which no compiler flag contracts, so a consumer's flags cannot change its
// bytes. Compiled to PTX only (no ptxas), never linked.
#include "common/configs.hpp"
#include "flashoptim/device/grad_pass.cuh"
#include "flashoptim/device/shard_stats.cuh"
#include "flashoptim/device/state_init.cuh"
#include "flashoptim/device/step_plan.cuh"

// Every member of step_plan_ref (both step_async forms, grad stats, zeroing);
// init and reconstruct through their addresses (several configurations share
// one master, which an explicit instantiation would name twice).
template <class C>
struct ptx_entries {
  decltype(&flashoptim::device::init_tensor_async<C>) init = &flashoptim::device::init_tensor_async<C>;
  decltype(&flashoptim::device::reconstruct_async<typename C::master>) reconstruct =
      &flashoptim::device::reconstruct_async<typename C::master>;
};
#define FLASHOPTIM_PTX_CONFIG(C)                                    \
  template class flashoptim::device::step_plan_ref<testconfigs::C>; \
  template struct ptx_entries<testconfigs::C>;

FLASHOPTIM_PTX_CONFIG(sgd_plain)
FLASHOPTIM_PTX_CONFIG(sgd_momentum)
FLASHOPTIM_PTX_CONFIG(sgdw_momentum)
FLASHOPTIM_PTX_CONFIG(adam_default)
FLASHOPTIM_PTX_CONFIG(adamw_default)
FLASHOPTIM_PTX_CONFIG(lion_default)
FLASHOPTIM_PTX_CONFIG(adamw_fp32_native)
FLASHOPTIM_PTX_CONFIG(adamw_bf16_native)
FLASHOPTIM_PTX_CONFIG(adamw_fp16_native)
FLASHOPTIM_PTX_CONFIG(adamw_bf16_master)
FLASHOPTIM_PTX_CONFIG(adamw_fp16_master)
FLASHOPTIM_PTX_CONFIG(adamw_ulp16)
FLASHOPTIM_PTX_CONFIG(adamw_fp16_ulp8)
FLASHOPTIM_PTX_CONFIG(adamw_fp16_ulp16)
FLASHOPTIM_PTX_CONFIG(adamw_exact)
FLASHOPTIM_PTX_CONFIG(adamw_fp32_grad)
FLASHOPTIM_PTX_CONFIG(adamw_reference)
FLASHOPTIM_PTX_CONFIG(adamw_fp32_states)
FLASHOPTIM_PTX_CONFIG(adamw_bf16_states)
FLASHOPTIM_PTX_CONFIG(adamw_bf16_sr_states)
FLASHOPTIM_PTX_CONFIG(adamw_fp16_states)
FLASHOPTIM_PTX_CONFIG(adamw_fp16_sr_states)
FLASHOPTIM_PTX_CONFIG(adamw_fp8_states)
FLASHOPTIM_PTX_CONFIG(adamw_mixed_states)
FLASHOPTIM_PTX_CONFIG(lion_fp32)
FLASHOPTIM_PTX_CONFIG(lion_reference)
FLASHOPTIM_PTX_CONFIG(sgd_fp16_master)
FLASHOPTIM_PTX_CONFIG(sgdw_exact_fp8)
FLASHOPTIM_PTX_CONFIG(adam_fp16_reference)
FLASHOPTIM_PTX_CONFIG(adamw_sr_codes)
// AMSGrad: three state slots
FLASHOPTIM_PTX_CONFIG(adam_amsgrad_default)
FLASHOPTIM_PTX_CONFIG(adamw_amsgrad_default)
FLASHOPTIM_PTX_CONFIG(adamw_amsgrad_fp32_max)
FLASHOPTIM_PTX_CONFIG(adamw_amsgrad_bf16)

// The non-template entry points' kernels.
flashoptim::status flashoptim_ptx_entry(std::int64_t* step, const std::int32_t* skip, const flashoptim::device::grad_stats* s,
                                        double* out) {
  FLASHOPTIM_RETURN_IF_ERROR(flashoptim::device::advance_step_async(step, skip, nullptr));
  return flashoptim::device::clip_grad_multiplier_async(s, 1.0, 1.0, out, nullptr);
}

// The gradient pass's kernels (segments, level 1, finalize, control reset).
flashoptim::status flashoptim_ptx_grad_pass(const flashoptim::device::grad_pass_plan& plan) {
  FLASHOPTIM_RETURN_IF_ERROR(plan.reset_control_async(nullptr));
  return plan.run_async(nullptr);
}
