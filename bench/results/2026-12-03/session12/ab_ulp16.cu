// Twelfth session: AdamW with the bf16 + int16 ULP correction, its decode's RN(c / M) as one
// Newton step from RN(1 / M) (this tree, ab16_new) against __fdiv_rn (built against 5d22b97's
// headers, ab16_old); R = 1 (its default policy) and R = 4 (two warp tiles per turn); the
// default AdamW (no int16 correction) as the control. session4's ab.cu harness:
//   nvcc -std=c++17 -O3 -arch=sm_90 --expt-relaxed-constexpr -I <headers> -I bench/gpu
//        -I bench/results/2026-12-02/session4 ab_ulp16.cu -o ab16_<tree> -lbenchmark
//        -Xcompiler -static-libstdc++,-static-libgcc
#include "ab.cu"
template <int S, int R>
using PW = tuning::step_policy<256, 8, 2, true, true, true, true, true, false, S, false, R>;
void register_variants(const char* want) {
  const shape f = flat();
  add_v<adamw_ulp16>("adamw_bf16_ulp16/default", f, want);
  add_v<adamw_ulp16, PW<3, 4>>("adamw_bf16_ulp16/warp4", f, want);
  add_v<adamw_default>("adamw_default/default", f, want);
}
