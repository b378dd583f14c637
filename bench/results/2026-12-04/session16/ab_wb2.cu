// Sixteenth session: the warp tiles' scale write-back once per R tiles (session15/writeback.patch, on
// 1eb7293) against 1eb7293 itself, now that the default AdamW runs at 97% of its memory pattern.
//   nvcc -std=c++17 -O3 -arch=sm_90 --expt-relaxed-constexpr -I <tree>/include -I <tree>/bench/gpu
//        -I bench/results/2026-12-02/session4 ab_wb2.cu -o abw2_<tree> -lbenchmark
//        -Xcompiler -static-libstdc++,-static-libgcc
#include "ab.cu"
using adamw_ulp8_bf16_states = step_config<rule::adamw, ulp8, bf16, p::bf16, p::bf16>;
void register_variants(const char* want) {
  const shape f = flat();
  add_v<adamw_default>("adamw_default", f, want);
  add_v<lion_default>("lion_default", f, want);
  add_v<sgd_momentum>("sgd_momentum", f, want);
  add_v<adamw_fp8_states>("adamw_fp8_states", f, want);
  add_v<adamw_ulp8_bf16_states>("control: ulp8 + bf16 states", f, want);
}
