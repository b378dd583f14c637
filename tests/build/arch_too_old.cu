// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// Compiled for sm_75 by the test arch_refuses_sm75, which passes only when
// the kernel headers refuse it with their #error (kernel/tile_access.cuh).
#include "flashoptim/device/step_plan.cuh"
