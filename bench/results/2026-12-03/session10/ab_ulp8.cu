// Round C (tenth session; built as ab_warp.cu, README.md): the paper's split (bf16 + int8 ULP correction) with the default states, R = 1 against
// R = 4 (two warp tiles per turn), interleaved (session4/ab.cu's harness).
#include "ab.cu"
template <int S, int R>
using PW = tuning::step_policy<256, 8, 2, true, true, true, true, true, false, S, false, R>;
void register_variants(const char* want) {
  const shape f = flat();
#define ROW(cfg)                                  \
  add_v<cfg, PW<3, 1>>(#cfg "/default", f, want); \
  add_v<cfg, PW<3, 4>>(#cfg "/warp4", f, want);
  ROW(adamw_ulp8)
  ROW(lion_ulp8)
  ROW(sgd_momentum_ulp8)
  ROW(adamw_default)
}
