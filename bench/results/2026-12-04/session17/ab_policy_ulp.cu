#include "ab_policy_common.hpp"
void register_variants(const char* want) {
  const shape f = flat();
  add_v<adamw_ulp8>("ulp8 default (b2 s3)", f, want);
  add_v<adamw_ulp8, pol<2, 4>>("ulp8 b2 s4", f, want);
  add_v<adamw_ulp8, pol<2, 5>>("ulp8 b2 s5", f, want);
  add_v<adamw_ulp8, pol<3, 3>>("ulp8 b3 s3", f, want);
  add_v<adamw_ulp8, pol<2, 3, 1, 256, 16>>("ulp8 n16 b2 s3", f, want);
  add_v<adamw_fp16_ulp8>("fp16 ulp8 default (b2 s3)", f, want);
  add_v<adamw_fp16_ulp8, pol<2, 4>>("fp16 ulp8 b2 s4", f, want);
  add_v<adamw_fp16_ulp8, pol<3, 3>>("fp16 ulp8 b3 s3", f, want);
}
