#include "ab_policy_common.hpp"
void register_variants(const char* want) {
  const shape f = flat();
  add_s<sgd_momentum>("sgd default (n8 r4)", f, want);
  add_s<sgd_momentum, pol<2, 3, 1, 256, 16>>("sgd n16 r1", f, want);
  add_s<sgd_momentum, pol<2, 3, 4, 256, 16>>("sgd n16 r4", f, want);
  add_s<adamw_fp8_states>("fp8 default (n8 s5 r4)", f, want);
  add_s<adamw_fp8_states, pol<2, 3, 1, 256, 16>>("fp8 n16 s3 r1", f, want);
  add_s<adamw_fp8_states, pol<2, 3, 4, 256, 16>>("fp8 n16 s3 r4", f, want);
  add_s<adamw_bf16_native>("native bf16 default (n8)", f, want);
  add_s<adamw_bf16_native, pol<2, 3, 1, 256, 16>>("native bf16 n16", f, want);
}
