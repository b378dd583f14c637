#include "ab_policy_common.hpp"
void register_variants(const char* want) {
  const shape f = flat();
  add_v<lion_ulp8>("lion ulp8 default (b2 s3)", f, want);
  add_v<lion_ulp8, pol<2, 4>>("lion ulp8 b2 s4", f, want);
  add_v<lion_ulp8, pol<3, 3>>("lion ulp8 b3 s3", f, want);
  add_v<sgd_momentum_ulp8>("sgd ulp8 default (b2 s3)", f, want);
  add_v<sgd_momentum_ulp8, pol<2, 4>>("sgd ulp8 b2 s4", f, want);
  add_v<sgd_momentum_ulp8, pol<3, 3>>("sgd ulp8 b3 s3", f, want);
  add_v<adamw_default>("adamw default (b2 s3 r4)", f, want);
  add_v<adamw_default, pol<2, 4, 4>>("adamw b2 s4 r4", f, want);
  add_v<adamw_default, pol<3, 3, 4>>("adamw b3 s3 r4", f, want);
  add_v<adamw_default, pol<2, 3, 8>>("adamw b2 s3 r8", f, want);
  add_v<lion_default>("lion default", f, want);
  add_v<lion_default, pol<3, 3, 4>>("lion b3 s3 r4", f, want);
}
