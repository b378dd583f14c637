// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// The group step compiled for AVX-512 (cpu::detail::avx512::run_groups).
// The kernel file includes nothing: what it uses comes from the headers
// below, compiled as usual; only the kernel's own functions get the target.
#pragma once

#include <type_traits>

#include "flashoptim/cpu/detail/simd_avx512.hpp"
#include "flashoptim/cpu/detail/vector_support.hpp"
#include "flashoptim/tuning/cpu.hpp"

#if FLASHOPTIM_CPU_X86_SIMD
namespace flashoptim::cpu::detail::avx512 {
#define FLASHOPTIM_CPU_FN FLASHOPTIM_CPU_AVX512_FN
#define FLASHOPTIM_CPU_ENTRY __attribute__((target(FLASHOPTIM_CPU_AVX512_TARGET)))
#include "flashoptim/cpu/detail/group_kernel.inl"
#undef FLASHOPTIM_CPU_ENTRY
#undef FLASHOPTIM_CPU_FN
}  // namespace flashoptim::cpu::detail::avx512
#endif
