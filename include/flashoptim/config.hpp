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

// True only while compiling device code: the one place intrinsics may be used.
#if defined(__CUDA_ARCH__)
#define FLASHOPTIM_DEVICE_CODE 1
#else
#define FLASHOPTIM_DEVICE_CODE 0
#endif

// nvcc's host pass accepts neither spelling without a warning: no hint there.
#if defined(__CUDA_ARCH__) || (defined(__clang__) && !defined(__CUDACC__))
#define FLASHOPTIM_UNROLL _Pragma("unroll")
#elif defined(__CUDACC__)
#define FLASHOPTIM_UNROLL
#elif defined(__GNUC__)
#define FLASHOPTIM_UNROLL _Pragma("GCC unroll 32")
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
