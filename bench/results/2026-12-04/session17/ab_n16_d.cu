#include "ab_policy_common.hpp"
void register_variants(const char* want) {
  const shape f = flat();
  add_s<adamw_reference>("ref default (n8)", f, want);
  add_s<adamw_reference, pol<2, 3, 1, 256, 16>>("ref n16", f, want);
  add_s<adamw_reference, pol<2, 4, 1, 256, 16>>("ref n16 s4", f, want);
  add_s<adamw_reference, pol<1, 3, 1, 512, 8>>("ref t512 n8", f, want);
  add_s<adamw_reference, pol<1, 3, 1, 512, 16>>("ref t512 n16", f, want);
  add_s<lion_ulp8>("lion ulp8 default (n8)", f, want);
  add_s<lion_ulp8, pol<2, 3, 1, 256, 16>>("lion ulp8 n16", f, want);
  add_s<sgd_momentum_ulp8>("sgd ulp8 default (n8)", f, want);
  add_s<sgd_momentum_ulp8, pol<2, 3, 1, 256, 16>>("sgd ulp8 n16", f, want);
}
