#include "ab_policy_common.hpp"
void register_variants(const char* want) {
  const shape f = flat();
  add_v<adamw_reference>("ref default (b2 s3)", f, want);
  add_v<adamw_reference, pol<2, 4>>("ref b2 s4", f, want);
  add_v<adamw_reference, pol<2, 5>>("ref b2 s5", f, want);
  add_v<adamw_reference, pol<2, 2>>("ref b2 s2", f, want);
  add_v<adamw_reference, pol<3, 3>>("ref b3 s3", f, want);
  add_v<adamw_reference, pol<4, 3, 1, 128>>("ref t128 b4 s3", f, want);
  add_v<adamw_reference, pol<1, 3, 1, 512>>("ref t512 b1 s3", f, want);
  add_v<adamw_reference, pol<2, 3, 1, 256, 16>>("ref n16 b2 s3", f, want);
}
