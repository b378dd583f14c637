#include "ab.cu"
template <int S>
using PS = tuning::step_policy<256, 8, 2, true, true, true, true, true, false, S>;
void register_variants(const char* want) {
  const shape f = flat();
  add_v<adamw_default, PS<3>>("adamw_default/s3", f, want);
  add_v<adamw_fp8_states, PS<3>>("adamw_fp8_states/s3", f, want);
  add_v<adamw_fp8_states, PS<4>>("adamw_fp8_states/s4", f, want);
  add_v<adamw_fp8_states, PS<5>>("adamw_fp8_states/s5", f, want);
  add_v<adamw_reference, PS<3>>("adamw_reference/s3", f, want);
  add_v<adamw_reference, PS<4>>("adamw_reference/s4", f, want);
  add_v<adamw_reference, PS<5>>("adamw_reference/s5", f, want);
  add_v<lion_default, PS<3>>("lion_default/s3", f, want);
  add_v<lion_default, PS<5>>("lion_default/s5", f, want);
}
