#include "ab_policy_common.hpp"
void register_variants(const char* want) {
  const shape f = flat();
  add_s<adamw_ulp8>("ulp8 default (n8 r1)", f, want);
  add_s<adamw_ulp8, pol<2, 3, 1, 256, 16>>("ulp8 n16 r1", f, want);
  add_s<adamw_ulp8, pol<2, 4, 1, 256, 16>>("ulp8 n16 r1 s4", f, want);
  add_s<adamw_ulp8, pol<2, 3, 2, 256, 16>>("ulp8 n16 r2", f, want);
  add_s<adamw_ulp8, pol<1, 3, 1, 512, 16>>("ulp8 n16 t512 b1", f, want);
  add_s<adamw_fp16_ulp8>("fp16 ulp8 default (n8 r1)", f, want);
  add_s<adamw_fp16_ulp8, pol<2, 3, 1, 256, 16>>("fp16 ulp8 n16 r1", f, want);
  add_s<adamw_ulp16>("ulp16 default (n8 r4)", f, want);
  add_s<adamw_ulp16, pol<2, 3, 1, 256, 16>>("ulp16 n16 r1", f, want);
}
