// Round C8: Lion and SGD momentum with the paper's split at their new default (512 x 16) against 3
// blocks per SM at 256 x 8 (round C1: Lion -3.4% against its old default) and the old default; the
// default AdamW with 4 stages (rounds C1-C3: -0.5% to -1.4%, then within noise) against its default.
#include "ab_policy_common.hpp"
void register_variants(const char* want) {
  const shape f = flat();
  add_s<lion_ulp8>("lion ulp8 default (t512 n16)", f, want);
  add_s<lion_ulp8, pol<3, 3>>("lion ulp8 t256 n8 b3", f, want);
  add_s<lion_ulp8, pol<2, 3>>("lion ulp8 t256 n8 b2 (old default)", f, want);
  add_s<sgd_momentum_ulp8>("sgd ulp8 default (t512 n16)", f, want);
  add_s<sgd_momentum_ulp8, pol<3, 3>>("sgd ulp8 t256 n8 b3", f, want);
  add_s<sgd_momentum_ulp8, pol<2, 3>>("sgd ulp8 t256 n8 b2 (old default)", f, want);
  add_s<adamw_default>("adamw default (s3 r4)", f, want);
  add_s<adamw_default, pol<2, 4, 4>>("adamw s4 r4", f, want);
}
