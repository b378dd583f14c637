#include "ab.cu"
template <int T, int B, int S = 3>
using PO = tuning::step_policy<T, 8, B, true, true, true, true, true, false, S>;
void register_variants(const char* want) {
  const shape f = flat();
#define ROW(cfg)                                       \
  add_v<cfg, PO<256, 2>>(#cfg "/t256_b2", f, want);    \
  add_v<cfg, PO<192, 3>>(#cfg "/t192_b3", f, want);    \
  add_v<cfg, PO<160, 4>>(#cfg "/t160_b4", f, want);    \
  add_v<cfg, PO<128, 5>>(#cfg "/t128_b5", f, want);    \
  add_v<cfg, PO<224, 3>>(#cfg "/t224_b3", f, want);
  ROW(adamw_default)
  ROW(adamw_fp8_states)
  ROW(lion_default)
  ROW(adamw_bf16_native)
}
