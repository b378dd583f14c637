// Round J (2026-12-02, fifth session): the paper's ULP correction against
// rounded_split, same states and rules, interleaved (session4/ab.cu's harness).
#include "ab.cu"
void register_variants(const char* want) {
  const shape f = flat();
  add_v<adamw_default>("adamw_default (ulp_correction)", f, want);
  add_v<adamw_rounded>("adamw rounded_split", f, want);
  add_v<lion_default>("lion_default (ulp_correction)", f, want);
  add_v<lion_rounded>("lion rounded_split", f, want);
  add_v<sgd_momentum>("sgd_momentum (ulp_correction)", f, want);
  add_v<sgd_momentum_rounded>("sgd_momentum rounded_split", f, want);
}
