// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// Compiler and platform switches shared by every header. The numeric core is
// written once as host/device code: under nvcc the macros expand to CUDA
// qualifiers, under a plain C++ compiler they degrade to `inline` so the same
// algebra is tested in host-only translation units.
#pragma once

#include <cstddef>
#include <cstdint>

#if defined(__CUDACC__)
#define FLASHOPTIM_HOST_DEVICE __host__ __device__
#define FLASHOPTIM_DEVICE __device__
#define FLASHOPTIM_INLINE __forceinline__
#else
#define FLASHOPTIM_HOST_DEVICE
#define FLASHOPTIM_DEVICE
#define FLASHOPTIM_INLINE inline __attribute__((always_inline))
#endif

// Before a __host__ __device__ template that calls what it is handed (a
// lambda, a functor): nvcc checks each instantiation's calls and warns
// (#20011, #20014) when host code hands it a host-only body, although no
// device side of that instantiation is ever generated (for_each_slot in the
// checkpoint code: four warnings in a trainer's .cu that saves and loads a
// device::optimizer). nvcc's exec-check pragma turns the check off for the
// next function, as CUB's and Thrust's callable-taking templates do; other
// compilers (clang's CUDA mode included) see nothing.
#if defined(__CUDACC__) && defined(__NVCC__)
#define FLASHOPTIM_EXEC_CHECK_DISABLE _Pragma("nv_exec_check_disable")
#else
#define FLASHOPTIM_EXEC_CHECK_DISABLE
#endif

// True only while compiling device code: the one place intrinsics may be used.
#if defined(__CUDA_ARCH__)
#define FLASHOPTIM_DEVICE_CODE 1
#else
#define FLASHOPTIM_DEVICE_CODE 0
#endif

// Unrolls the per-element loops of the tile step in device code, where the
// tile then lives in registers. Host code leaves them to the compiler: the
// host's tile step is the scalar definition (cpu::step_tile_at, the portable
// path), and the vector paths do not use these loops. Fully unrolled there
// (GCC's "unroll 32" until 2026-12-03) it was 96 KB of code per
// configuration and a third of the CPU test build's compile time (g++ 12
// -O3: one configuration's step 16.7 -> 4.6 s; the release preset's files
// 2508 -> 1588 s in all), and no faster (bench_cpu_step, portable, one
// thread: AdamW 59.4 -> 53.8 ms, fp32 18.6 -> 18.5, Lion 56.3 -> 57.9;
// bench/results/2026-12-03/session11). The bytes do not depend on it: the
// arithmetic is not contracted (format/bits.hpp).
#if defined(__CUDA_ARCH__)
#define FLASHOPTIM_UNROLL _Pragma("unroll")
#else
#define FLASHOPTIM_UNROLL
#endif

// Host loops over whole arrays run on OpenMP threads when the including
// program is built with OpenMP, serially otherwise.
#if defined(_OPENMP)
#define FLASHOPTIM_OMP_PARALLEL_FOR _Pragma("omp parallel for schedule(static)")
#else
#define FLASHOPTIM_OMP_PARALLEL_FOR
#endif

// Bit-identical results between the CPU and GPU paths need IEEE arithmetic
// without contraction; the library's arithmetic cannot be contracted under
// any flags (format/bits.hpp, mul_rn), so it needs none. Fast-math breaks
// the contract outright, so refuse it where the compiler tells us.
#if defined(__FAST_MATH__)
#error "flashoptim needs IEEE arithmetic: do not build it with -ffast-math"
#endif
#if defined(__CUDA_ARCH__) && defined(__USE_FAST_MATH__)
#error "flashoptim needs IEEE arithmetic: do not build it with --use_fast_math"
#endif

namespace flashoptim {

/// Empty storage type for a slot that holds nothing (no correction, no state).
struct none_t {
  FLASHOPTIM_HOST_DEVICE constexpr bool operator==(none_t) const { return true; }
};

}  // namespace flashoptim
