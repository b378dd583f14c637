// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// Part 2 of the CPU tests' step instances (common/cpu_step_instances.hpp).
#include "common/cpu_step_instances.hpp"

FLASHOPTIM_TEST_CONFIGS_PART2(FLASHOPTIM_TEST_DEFINE_STEP)
