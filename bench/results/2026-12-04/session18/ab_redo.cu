// Eighteenth session, round D2: the range-checked attempt's exact redo (a tile whose checked attempt
// flags a value out of range is loaded again and stepped exactly) inlined into the run loop, as now,
// against the redo in a __noinline__ function (FLASHOPTIM_AB_REDO_NOINLINE: redo_noinline.patch
// here, applied to kernel/step_kernel.cuh for the round and reverted). Round D1's Nsight Compute showed fp16 + int8 at 512 x 16 stalled on
// instruction fetch ("no instruction" 0.75 cycles per issue against 0.08 at 256 x 8). Built twice,
// with and without the macro, the binaries rotated in one lease:
//   nvcc -std=c++17 -O3 -arch=sm_90 --expt-relaxed-constexpr -I include -I bench/gpu
//        -I bench/results/2026-12-02/session4 -I bench/results/2026-12-04/session17
//        bench/results/2026-12-04/session18/ab_redo.cu [-DFLASHOPTIM_AB_REDO_NOINLINE] -o abr_{inl,out}
//        -lbenchmark -Xcompiler -static-libstdc++,-static-libgcc
#include "ab_policy_common.hpp"
void register_variants(const char* want) {
  const shape f = flat();
  add_s<adamw_default>("adamw default", f, want);
  add_s<lion_default>("lion default", f, want);
  add_s<adamw_ulp8>("ulp8 default (t512 n16)", f, want);
  add_s<adamw_fp16_ulp8>("fp16 ulp8 default (t256 n8)", f, want);
  add_s<adamw_fp16_ulp8, pol<1, 3, 1, 512, 16>>("fp16 ulp8 t512 n16", f, want);
  add_s<adamw_reference>("ref default (t512 n16)", f, want);
}
