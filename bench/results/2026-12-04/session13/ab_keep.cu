// Thirteenth session: the range-checked attempt encodes the rounded split and native<T> masters without
// master_update's keep select (codec::reencodes_every_pair; this tree, abk_new) against HEAD b867dc1's
// headers (abk_old). Same variants, same default policies in both binaries. session4's ab.cu harness:
//   nvcc -std=c++17 -O3 -arch=sm_90 --expt-relaxed-constexpr -I <headers> -I bench/gpu
//        -I bench/results/2026-12-02/session4 ab_keep.cu -o abk_<tree> -lbenchmark
//        -Xcompiler -static-libstdc++,-static-libgcc
#include "ab.cu"
void register_variants(const char* want) {
  const shape f = flat();
  add_v<adamw_default>("adamw_default", f, want);
  add_v<lion_default>("lion_default", f, want);
  add_v<sgd_momentum>("sgd_momentum", f, want);
  add_v<adamw_bf16_native>("adamw_bf16_native", f, want);
  add_v<adamw_fp8_states>("adamw_fp8_states", f, want);
  add_v<adamw_ulp8>("adamw_bf16_ulp8 (control: ULP split, unchanged)", f, want);
}
