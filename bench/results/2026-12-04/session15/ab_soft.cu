// Fifteenth session: the momentum code's softsign quotient corrected once from rcp.approx (two FMAs fewer
// per element) and the range-checked attempt's second-moment code without its sign test (this tree,
// abs_new) against HEAD 8b60ca5's headers (abs_old). Same variants, same default policies in both binaries.
// session4's ab.cu harness:
//   nvcc -std=c++17 -O3 -arch=sm_90 --expt-relaxed-constexpr -I <headers> -I bench/gpu
//        -I bench/results/2026-12-02/session4 ab_soft.cu -o abs_<tree> -lbenchmark
//        -Xcompiler -static-libstdc++,-static-libgcc
#include "ab.cu"
void register_variants(const char* want) {
  const shape f = flat();
  add_v<adamw_default>("adamw_default", f, want);
  add_v<lion_default>("lion_default", f, want);
  add_v<sgd_momentum>("sgd_momentum", f, want);
  add_v<adamw_bf16_native>("adamw_bf16_native", f, want);
  add_v<adamw_ulp8>("adamw_bf16_ulp8", f, want);
  add_v<lion_ulp8>("lion_bf16_ulp8", f, want);
  add_v<sgd_momentum_ulp8>("sgd_momentum_bf16_ulp8", f, want);
  add_v<adamw_fp16_ulp8>("adamw_fp16_ulp8", f, want);
  add_v<adamw_reference>("adamw_reference_states", f, want);
  add_v<adamw_fp8_states>("adamw_fp8_states (control: no int8/uint8 codes)", f, want);
}
