#include "ab_policy_common.hpp"
void register_variants(const char* want) {
  const shape f = flat();
  add_s<adamw_default>("adamw default (n8 r4)", f, want);
  add_s<adamw_default, pol<2, 3, 1, 256, 16>>("adamw n16 r1", f, want);
  add_s<adamw_default, pol<2, 3, 2, 256, 16>>("adamw n16 r2", f, want);
  add_s<adamw_default, pol<2, 3, 4, 256, 16>>("adamw n16 r4", f, want);
  add_s<adamw_default, pol<2, 4, 4>>("adamw n8 r4 s4", f, want);
  add_s<lion_default>("lion default (n8 r4)", f, want);
  add_s<lion_default, pol<2, 3, 1, 256, 16>>("lion n16 r1", f, want);
  add_s<lion_default, pol<2, 3, 4, 256, 16>>("lion n16 r4", f, want);
}
