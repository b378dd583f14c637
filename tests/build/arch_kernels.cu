// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// The supported architectures build (README, "GPU architectures"): the step
// kernel (both policies' step_async, grad stats, zeroing) and the init
// kernels of AdamW with the default layout and with fp8 states (fp8 uses the
// hardware conversion at sm_89+ and the software one below it), compiled by
// CMake for 80-real (SASS for A100) and 90-virtual (PTX that the driver
// compiles for Hopper and newer parts). An object library: never linked,
// never run; it fails the build if a kernel stops compiling for sm_80.
#include "common/configs.hpp"
#include "flashoptim/device/state_init.cuh"
#include "flashoptim/device/step_plan.cuh"

template <class C>
struct arch_entries {
  decltype(&flashoptim::device::init_tensor_async<C>) init = &flashoptim::device::init_tensor_async<C>;
};
template class flashoptim::device::step_plan_ref<testconfigs::adamw_default>;
template struct arch_entries<testconfigs::adamw_default>;
template class flashoptim::device::step_plan_ref<testconfigs::adamw_fp8_states>;
template struct arch_entries<testconfigs::adamw_fp8_states>;
