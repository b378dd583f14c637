// Round V2 (2026-12-03, ninth session): the default step policy against the
// same policy with warp tiles (WarpTiles = 4 and 8: each warp steps R
// consecutive tiles of a run, its 4-byte group scales copied once per R tiles
// into a window), interleaved (session4/ab.cu's harness).
#include "ab.cu"
template <int S, int R>
using PW = tuning::step_policy<256, 8, 2, true, true, true, true, true, false, S, false, R>;
void register_variants(const char* want) {
  const shape f = flat();
#define ROW(cfg, S)                                  \
  add_v<cfg, PW<S, 1>>(#cfg "/default", f, want);    \
  add_v<cfg, PW<S, 4>>(#cfg "/warp4", f, want);      \
  if (std::strcmp(#cfg, "adamw_default") == 0 || std::strcmp(#cfg, "lion_default") == 0) \
    add_v<cfg, PW<S, 8>>(#cfg "/warp8", f, want);
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
  add_v<adamw_default, PW<3, 1>>("adamw_default/llama/default", l, want);
  add_v<adamw_default, PW<3, 4>>("adamw_default/llama/warp4", l, want);
}
