#include "ab.cu"
template <int S>
using PS = tuning::step_policy<256, 8, 2, true, true, true, true, true, false, S>;
void register_variants(const char* want) {
  const shape f = flat();
#define ROW(cfg)                                      \
  add_v<cfg, PS<3>>(#cfg "/s3", f, want);             \
  add_v<cfg, PS<4>>(#cfg "/s4", f, want);             \
  add_v<cfg, PS<5>>(#cfg "/s5", f, want);             \
  add_v<cfg, PS<6>>(#cfg "/s6", f, want);
  ROW(adamw_default)
  ROW(adamw_fp8_states)
  ROW(lion_default)
  ROW(sgd_momentum)
  ROW(adamw_reference)
  ROW(adamw_bf16_native)
  ROW(adamw_fp16_ulp8)
}
