// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// The denormal modes of the calling thread (x86 MXCSR: FTZ flushes denormal
// results to zero, DAZ reads denormal operands as zero). The CPU step is
// bit-identical to the GPU only with both off; frameworks and some runtimes
// switch them on (torch.set_flush_denormal, code built with -ffast-math's
// crtfastmath.o), so the step clears them on its own threads for the call and
// restores them after. The modes are per thread: each worker sets its own.
#pragma once

#include "flashoptim/config.hpp"

#if defined(__x86_64__) || defined(_M_X64) || defined(__i386__)
#include <xmmintrin.h>
#define FLASHOPTIM_CPU_HAS_MXCSR 1
#else
#define FLASHOPTIM_CPU_HAS_MXCSR 0
#endif

namespace flashoptim::cpu {

/// MXCSR bits: flush-to-zero (bit 15) and denormals-are-zero (bit 6).
inline constexpr unsigned mxcsr_ftz = 0x8000u;
inline constexpr unsigned mxcsr_daz = 0x0040u;

/// Whether the calling thread flushes denormals (FTZ or DAZ set). Always false
/// where the library cannot see the mode (non-x86 builds).
inline bool denormals_flushed() {
#if FLASHOPTIM_CPU_HAS_MXCSR
  return (_mm_getcsr() & (mxcsr_ftz | mxcsr_daz)) != 0;
#else
  return false;
#endif
}

/// Sets FTZ and DAZ of the calling thread to `flush` for the scope's
/// lifetime, then restores the previous modes. Does nothing on builds
/// without MXCSR (there the platform's default, IEEE denormals, applies).
class denormal_scope {
 public:
  explicit denormal_scope(bool flush) {
#if FLASHOPTIM_CPU_HAS_MXCSR
    saved_ = _mm_getcsr();
    const unsigned want = flush ? (saved_ | mxcsr_ftz | mxcsr_daz) : (saved_ & ~(mxcsr_ftz | mxcsr_daz));
    if (want != saved_) {
      _mm_setcsr(want);
      changed_ = true;
    }
#else
    (void)flush;
#endif
  }
  ~denormal_scope() {
#if FLASHOPTIM_CPU_HAS_MXCSR
    if (changed_) _mm_setcsr(saved_);
#endif
  }
  denormal_scope(const denormal_scope&) = delete;
  denormal_scope& operator=(const denormal_scope&) = delete;

 private:
  unsigned saved_ = 0;
  bool changed_ = false;
};

}  // namespace flashoptim::cpu
