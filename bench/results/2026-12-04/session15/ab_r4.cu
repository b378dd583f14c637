// Fifteenth session: warp tiles (R = 4) for the paper's split and fp16 + int8, whose kernels the softsign
// change shortened by 3%, against their default (R = 1), in one binary (this tree's headers).
//   nvcc -std=c++17 -O3 -arch=sm_90 --expt-relaxed-constexpr -I include -I bench/gpu
//        -I bench/results/2026-12-02/session4 ab_r4.cu -o abr4 -lbenchmark
//        -Xcompiler -static-libstdc++,-static-libgcc
#include "ab.cu"
using r4 = flashoptim::tuning::step_policy<256, 8, 2, true, true, true, true, true, false, 3, false, 4, false>;
void register_variants(const char* want) {
  const shape f = flat();
  add_v<adamw_ulp8>("adamw_bf16_ulp8 R1", f, want);
  add_v<adamw_ulp8, r4>("adamw_bf16_ulp8 R4", f, want);
  add_v<lion_ulp8>("lion_bf16_ulp8 R1", f, want);
  add_v<lion_ulp8, r4>("lion_bf16_ulp8 R4", f, want);
  add_v<sgd_momentum_ulp8>("sgd_momentum_bf16_ulp8 R1", f, want);
  add_v<sgd_momentum_ulp8, r4>("sgd_momentum_bf16_ulp8 R4", f, want);
  add_v<adamw_fp16_ulp8>("adamw_fp16_ulp8 R1", f, want);
  add_v<adamw_fp16_ulp8, r4>("adamw_fp16_ulp8 R4", f, want);
  add_v<adamw_default>("adamw_default (R4, control)", f, want);
}
