#include "ab_policy_common.hpp"
/// Warp tiles (R = 4) turning U tiles per loop turn (tuning::tiles_per_turn).
template <int U>
struct r4_turn : pol<2, 3, 4> {
  static constexpr int tiles_per_turn = U;
};
void register_variants(const char* want) {
  const shape f = flat();
  add_v<adamw_ulp8>("ulp8 default (r1)", f, want);
  add_v<adamw_ulp8, r4_turn<1>>("ulp8 r4 u1", f, want);
  add_v<adamw_ulp8, r4_turn<2>>("ulp8 r4 u2", f, want);
  add_v<adamw_fp16_ulp8>("fp16 ulp8 default (r1)", f, want);
  add_v<adamw_fp16_ulp8, r4_turn<1>>("fp16 ulp8 r4 u1", f, want);
  add_v<lion_ulp8>("lion ulp8 default (r1)", f, want);
  add_v<lion_ulp8, r4_turn<1>>("lion ulp8 r4 u1", f, want);
  add_v<sgd_momentum_ulp8>("sgd ulp8 default (r1)", f, want);
  add_v<sgd_momentum_ulp8, r4_turn<1>>("sgd ulp8 r4 u1", f, want);
  add_v<adamw_default>("adamw default (r4 u2)", f, want);
  add_v<adamw_default, r4_turn<1>>("adamw r4 u1", f, want);
}
