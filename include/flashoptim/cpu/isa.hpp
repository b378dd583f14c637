// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// Instruction sets of the CPU step and the run-time check of which ones this
// machine has. The vector paths are compiled into every program that
// includes the CPU step, through per-function target attributes, so a plain
// `g++ -O2 -fopenmp` build (no -m flags) still runs AVX-512 code on a machine
// that has it; the check below picks the path once per call.
#pragma once

#include "flashoptim/config.hpp"

// x86-64 vector paths need GCC/Clang target attributes and intrinsics (nvcc's
// host pass hands them to its GCC/Clang host compiler, so .cu files get them
// too; its device pass never sees them). Other compilers get the portable
// path. Define FLASHOPTIM_CPU_NO_SIMD to force that everywhere.
#if (defined(__x86_64__) || defined(_M_X64)) && (defined(__GNUC__) || defined(__clang__)) && \
    !defined(__CUDA_ARCH__) && !defined(FLASHOPTIM_CPU_NO_SIMD)
#define FLASHOPTIM_CPU_X86_SIMD 1
#else
#define FLASHOPTIM_CPU_X86_SIMD 0
#endif

// What depends on that switch lives in an inline namespace named after it, so
// a program whose translation units disagree (one built by g++, one by nvcc)
// links two distinct sets of functions instead of breaking the one-definition
// rule; both give the same bytes.
#if FLASHOPTIM_CPU_X86_SIMD
#define FLASHOPTIM_CPU_PATHS x86_simd
#else
#define FLASHOPTIM_CPU_PATHS portable_only
#endif

#if FLASHOPTIM_CPU_X86_SIMD
#include <cpuid.h>
#endif

namespace flashoptim::cpu {

/// A CPU code path. `automatic` is a request only: the best one available.
enum class isa : int {
  automatic = 0,
  portable,  ///< the scalar per-tile step (cpu::step_tile_at), threaded
  avx2,      ///< AVX2 + FMA + F16C, 8 lanes
  avx512,    ///< AVX-512 F/BW/DQ/VL, 16 lanes
};

inline const char* to_string(isa i) {
  switch (i) {
    case isa::automatic: return "automatic";
    case isa::portable: return "portable";
    case isa::avx2: return "avx2";
    case isa::avx512: return "avx512";
  }
  return "unknown";
}

#if FLASHOPTIM_CPU_X86_SIMD
namespace detail {
/// F16C (CPUID.1:ECX bit 29); Clang's __builtin_cpu_supports does not know it.
inline bool has_f16c() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  return __get_cpuid(1, &a, &b, &c, &d) && (c & (1u << 29)) != 0;
}
}  // namespace detail
#endif

inline namespace FLASHOPTIM_CPU_PATHS {

/// Whether this machine (and this build) can run `i`. The compiler's
/// run-time CPU check also confirms that the operating system saves the
/// wider registers (XCR0), so a CPU with AVX-512 under an OS that does not
/// enable it reports false.
inline bool isa_available(isa i) {
  switch (i) {
    case isa::automatic:
    case isa::portable: return true;
#if FLASHOPTIM_CPU_X86_SIMD
    // Asked once per process: has_f16c's cpuid leaves a virtual machine for
    // its hypervisor (about 10 us per call on the development VM, as long as
    // stepping 20 000 fp32 parameters), and cpu::step asks on every call
    // that names its path (docs/cpu.md, 2026-12-01/02).
    case isa::avx2: {
      static const bool available = [] {
        __builtin_cpu_init();
        return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && detail::has_f16c();
      }();
      return available;
    }
    case isa::avx512: {
      static const bool available = [] {
        __builtin_cpu_init();
        return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
               __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl") &&
               __builtin_cpu_supports("fma") && detail::has_f16c();
      }();
      return available;
    }
#else
    case isa::avx2:
    case isa::avx512: return false;
#endif
  }
  return false;
}

/// The widest instruction set this machine and build can run.
inline isa detected_isa() {
  static const isa best = isa_available(isa::avx512) ? isa::avx512 : isa_available(isa::avx2) ? isa::avx2 : isa::portable;
  return best;
}

}  // namespace FLASHOPTIM_CPU_PATHS

}  // namespace flashoptim::cpu
