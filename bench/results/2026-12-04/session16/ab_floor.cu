// Sixteenth session: the codes' floor as FADD.RM on a biased word (proven::floor_word, F2I off the
// conversion unit) and the rounded split's encode without its NaN select in the range-checked attempt
// (this tree, abf_new) against HEAD b46fb85's headers (abf_old). Same variants in both binaries.
// session4's ab.cu harness:
//   nvcc -std=c++17 -O3 -arch=sm_90 --expt-relaxed-constexpr -I <headers> -I bench/gpu
//        -I bench/results/2026-12-02/session4 ab_floor.cu -o abf_<tree> -lbenchmark
//        -Xcompiler -static-libstdc++,-static-libgcc
#include "ab.cu"
/// The default policy of the rounded split's AdamW with CheckedReencode (no keep select).
using reencode = flashoptim::tuning::step_policy<256, 8, 2, true, true, true, true, true, false, 3, false, 4, true>;
/// No codes and a ULP master: nothing either change touches.
using adamw_ulp8_bf16_states = step_config<rule::adamw, ulp8, bf16, p::bf16, p::bf16>;
void register_variants(const char* want) {
  const shape f = flat();
  add_v<adamw_default>("adamw_default", f, want);
  add_v<adamw_default, reencode>("adamw_default reencode", f, want);
  add_v<lion_default>("lion_default", f, want);
  add_v<sgd_momentum>("sgd_momentum", f, want);
  add_v<adamw_fp8_states>("adamw_fp8_states", f, want);
  add_v<adamw_ulp8>("adamw_bf16_ulp8", f, want);
  add_v<adamw_fp16_ulp8>("adamw_fp16_ulp8", f, want);
  add_v<adamw_reference>("adamw_reference_states", f, want);
  add_v<adamw_ulp8_bf16_states>("control: ulp8 + bf16 states", f, want);
}
