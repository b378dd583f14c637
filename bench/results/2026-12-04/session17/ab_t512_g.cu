#include "ab_policy_common.hpp"
void register_variants(const char* want) {
  const shape f = flat();
  add_s<adamw_reference>("ref default (t256 n8)", f, want);
  add_s<adamw_reference, pol<1, 3, 1, 512, 16>>("ref t512 n16", f, want);
  add_s<adamw_fp8_states>("fp8 default (t256 n8 s5 r4)", f, want);
  add_s<adamw_fp8_states, pol<1, 3, 1, 512, 16>>("fp8 t512 n16 s3", f, want);
  add_s<adamw_bf16_native>("native bf16 default (t256 n8)", f, want);
  add_s<adamw_bf16_native, pol<1, 3, 1, 512, 16>>("native bf16 t512 n16", f, want);
  add_s<adamw_ulp16>("ulp16 default (t256 n8 r4)", f, want);
  add_s<adamw_ulp16, pol<1, 3, 1, 512, 16>>("ulp16 t512 n16", f, want);
  add_s<adamw_exact>("exact split default", f, want);
  add_s<adamw_exact, pol<1, 3, 1, 512, 16>>("exact split t512 n16", f, want);
}
