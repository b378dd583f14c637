#include "ab_policy_common.hpp"
void register_variants(const char* want) {
  const shape f = flat();
  add_s<adamw_ulp8>("ulp8 default (t256 n8)", f, want);
  add_s<adamw_ulp8, pol<1, 3, 1, 512, 16>>("ulp8 t512 n16", f, want);
  add_s<adamw_ulp8, pol<1, 3, 1, 512, 8>>("ulp8 t512 n8", f, want);
  add_s<adamw_fp16_ulp8>("fp16 ulp8 default (t256 n8)", f, want);
  add_s<adamw_fp16_ulp8, pol<1, 3, 1, 512, 16>>("fp16 ulp8 t512 n16", f, want);
  add_s<lion_ulp8>("lion ulp8 default (t256 n8)", f, want);
  add_s<lion_ulp8, pol<1, 3, 1, 512, 16>>("lion ulp8 t512 n16", f, want);
  add_s<sgd_momentum_ulp8>("sgd ulp8 default (t256 n8)", f, want);
  add_s<sgd_momentum_ulp8, pol<1, 3, 1, 512, 16>>("sgd ulp8 t512 n16", f, want);
}
