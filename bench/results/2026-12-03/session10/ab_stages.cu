// Round D (tenth session; built as ab_warp.cu, README.md): the stage count with warp tiles (R = 4, two per turn):
// 2 / 3 / 4 stages (and 5 for fp8 states), R = 1 with the default's stages beside them, interleaved.
#include "ab.cu"
template <int S, int R>
using PW = tuning::step_policy<256, 8, 2, true, true, true, true, true, false, S, false, R>;
void register_variants(const char* want) {
  const shape f = flat();
#define ROW(cfg, S0)                                  \
  add_v<cfg, PW<S0, 1>>(#cfg "/r1_s" #S0, f, want);   \
  add_v<cfg, PW<3, 4>>(#cfg "/r4_s3", f, want);       \
  add_v<cfg, PW<4, 4>>(#cfg "/r4_s4", f, want);       \
  add_v<cfg, PW<2, 4>>(#cfg "/r4_s2", f, want);
  ROW(adamw_default, 3)
  ROW(lion_default, 3)
  ROW(sgd_momentum, 3)
  ROW(adamw_fp8_states, 5)
  add_v<adamw_fp8_states, PW<5, 4>>("adamw_fp8_states/r4_s5", f, want);
}
