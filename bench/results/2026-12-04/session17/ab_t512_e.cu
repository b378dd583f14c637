#include "ab_policy_common.hpp"
void register_variants(const char* want) {
  const shape f = flat();
  add_s<adamw_default>("adamw default (t256 n8 r4)", f, want);
  add_s<adamw_default, pol<1, 3, 1, 512, 16>>("adamw t512 n16 r1", f, want);
  add_s<adamw_default, pol<1, 3, 4, 512, 8>>("adamw t512 n8 r4", f, want);
  add_s<adamw_default, pol<2, 4, 4>>("adamw t256 n8 r4 s4", f, want);
  add_s<lion_default>("lion default (t256 n8 r4)", f, want);
  add_s<lion_default, pol<1, 3, 1, 512, 16>>("lion t512 n16 r1", f, want);
  add_s<lion_default, pol<2, 4, 4>>("lion t256 n8 r4 s4", f, want);
  add_s<sgd_momentum>("sgd default (t256 n8 r4)", f, want);
  add_s<sgd_momentum, pol<1, 3, 1, 512, 16>>("sgd t512 n16 r1", f, want);
}
