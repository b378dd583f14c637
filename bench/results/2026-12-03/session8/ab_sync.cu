// Round U2 (2026-12-03, eighth session): the default step policy against the
// same policy with a block barrier before each staged tile (SyncStages),
// interleaved (session4/ab.cu's harness), every 8-bit layout of issue 16's
// targets and two plain ones.
#include "ab.cu"
template <int S, bool Sync>
using PS = tuning::step_policy<256, 8, 2, true, true, true, true, true, false, S, Sync>;
void register_variants(const char* want) {
  const shape f = flat();
#define ROW(cfg, S)                              \
  add_v<cfg, PS<S, false>>(#cfg "/default", f, want); \
  add_v<cfg, PS<S, true>>(#cfg "/synced", f, want);
  ROW(adamw_default, 3)
  ROW(lion_default, 3)
  ROW(sgd_momentum, 3)
  ROW(adamw_reference, 3)
  ROW(adamw_fp16_ulp8, 3)
  ROW(adamw_bf16_native, 3)
  ROW(adamw_ulp16, 3)
  ROW(adamw_fp8_states, 5)
  ROW(adamw_bf16_states, 3)
  const shape l = llama();
  add_v<adamw_default, PS<3, false>>("adamw_default/llama/default", l, want);
  add_v<adamw_default, PS<3, true>>("adamw_default/llama/synced", l, want);
}
