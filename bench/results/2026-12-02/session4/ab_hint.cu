#include "ab.cu"
void register_variants(const char* want) {
  const shape f = flat();
  add_v<adamw_default>("adamw_default", f, want);
  add_v<adamw_fp8_states>("adamw_fp8_states", f, want);
  add_v<lion_default>("lion_default", f, want);
  add_v<adamw_reference>("adamw_reference", f, want);
  add_v<adamw_bf16_native>("adamw_bf16_native", f, want);
}
