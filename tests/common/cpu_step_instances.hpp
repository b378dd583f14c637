// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// The CPU step of every configuration in common/configs.hpp, compiled once
// for the project's CPU tests instead of once per test file: explicit
// instantiation declarations (extern template) of cpu::step_tile_at,
// cpu::step_serial and cpu::step, whose definitions are in the
// flashoptim_test_instances library (cpu_step_instances_<part>.cpp, built
// with the tests' own flags). The scalar tile step alone was about two thirds
// of each CPU test's object code, instantiated in a dozen files; CI builds on
// two cores. configs.hpp includes this header where the target asks for it
// (FLASHOPTIM_TEST_EXTERN_STEPS, set by linking flashoptim_test_instances);
// other builds of the same sources (GPU tests, consumer projects,
// test_cpu_isa_flags' AVX-512 file) instantiate the step themselves, as a
// consumer does. Which file instantiates a function does not change its
// bytes: the arithmetic cannot be contracted (format/bits.hpp), and the
// golden digests and parity tests check it.
#pragma once

#include <cstddef>
#include <cstdint>

#include "common/configs.hpp"
#include "flashoptim/cpu/serial.hpp"
#include "flashoptim/cpu/step.hpp"

// The configurations, in four parts: one library file each, so that two
// cores build them in parallel. Every alias of configs.hpp is in one part
// (a new configuration there goes in the lightest part).
#define FLASHOPTIM_TEST_CONFIGS_PART0(X) \
  X(sgd_plain)                           \
  X(adam_amsgrad_default)                \
  X(adamw_fp32_native)                   \
  X(adamw_fp16_master)                   \
  X(adamw_exact)                         \
  X(adamw_fp32_states)                   \
  X(adamw_fp8_states)                    \
  X(sgd_fp16_master)                     \
  X(adamw_sr_codes)
#define FLASHOPTIM_TEST_CONFIGS_PART1(X) \
  X(sgd_momentum)                        \
  X(adamw_amsgrad_default)               \
  X(adamw_bf16_native)                   \
  X(adamw_ulp16)                         \
  X(adamw_fp32_grad)                     \
  X(adamw_bf16_states)                   \
  X(adamw_mixed_states)                  \
  X(sgdw_exact_fp8)                      \
  X(adamw_default)
#define FLASHOPTIM_TEST_CONFIGS_PART2(X) \
  X(sgdw_momentum)                       \
  X(adamw_amsgrad_fp32_max)              \
  X(adamw_bf16_plain)                    \
  X(adamw_fp16_ulp8)                     \
  X(adamw_reference)                     \
  X(adamw_bf16_sr_states)                \
  X(lion_fp32)                           \
  X(adam_fp16_reference)                 \
  X(adamw_rounded)
#define FLASHOPTIM_TEST_CONFIGS_PART3(X) \
  X(adam_default)                        \
  X(lion_default)                        \
  X(adamw_amsgrad_bf16)                  \
  X(adamw_fp16_native)                   \
  X(adamw_bf16_master)                   \
  X(adamw_fp16_ulp16)                    \
  X(adamw_fp16_states)                   \
  X(adamw_fp16_sr_states)                \
  X(lion_reference)                      \
  X(lion_rounded)

// `extern template` (declaration) or `template` (definition) of the three
// function templates for one configuration.
#define FLASHOPTIM_TEST_STEP_INSTANCES(KEYWORDS, cfg)                                                               \
  namespace flashoptim::cpu {                                                                                      \
  KEYWORDS void step_tile_at<testconfigs::cfg>(const testconfigs::cfg::scalars&,                                   \
                                               const tensor_ref<testconfigs::cfg>&, std::int64_t, std::uint64_t);  \
  KEYWORDS status step_serial<testconfigs::cfg>(const testconfigs::cfg::hyper&, const step_args&,                  \
                                                const tensor_ref<testconfigs::cfg>*, std::size_t);                 \
  KEYWORDS status step<testconfigs::cfg>(const testconfigs::cfg::hyper&, const step_args&,                         \
                                         const tensor_ref<testconfigs::cfg>*, std::size_t, const step_options&);   \
  }
#define FLASHOPTIM_TEST_EXTERN_STEP(cfg) FLASHOPTIM_TEST_STEP_INSTANCES(extern template, cfg)
#define FLASHOPTIM_TEST_DEFINE_STEP(cfg) FLASHOPTIM_TEST_STEP_INSTANCES(template, cfg)

FLASHOPTIM_TEST_CONFIGS_PART0(FLASHOPTIM_TEST_EXTERN_STEP)
FLASHOPTIM_TEST_CONFIGS_PART1(FLASHOPTIM_TEST_EXTERN_STEP)
FLASHOPTIM_TEST_CONFIGS_PART2(FLASHOPTIM_TEST_EXTERN_STEP)
FLASHOPTIM_TEST_CONFIGS_PART3(FLASHOPTIM_TEST_EXTERN_STEP)
