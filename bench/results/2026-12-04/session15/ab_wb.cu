// Fifteenth session: warp tiles write their group scales back once per R tiles from the scale window
// (this tree, abw_new) against f750d3b's headers (abw_old, each tile's owners store their scales).
// Same variants, same default policies in both binaries. session4's ab.cu harness:
//   nvcc -std=c++17 -O3 -arch=sm_90 --expt-relaxed-constexpr -I <headers> -I bench/gpu
//        -I bench/results/2026-12-02/session4 ab_wb.cu -o abw_<tree> -lbenchmark
//        -Xcompiler -static-libstdc++,-static-libgcc
#include "ab.cu"
void register_variants(const char* want) {
  const shape f = flat();
  add_v<adamw_default>("adamw_default", f, want);
  add_v<adamw_default>("adamw_default_llama", llama(), want);
  add_v<lion_default>("lion_default", f, want);
  add_v<sgd_momentum>("sgd_momentum", f, want);
  add_v<adamw_fp8_states>("adamw_fp8_states", f, want);
  add_v<adamw_ulp16>("adamw_bf16_ulp16", f, want);
  add_v<adamw_bf16_native>("adamw_bf16_native (control: R = 1)", f, want);
  add_v<adamw_ulp8>("adamw_bf16_ulp8 (control: R = 1)", f, want);
}
