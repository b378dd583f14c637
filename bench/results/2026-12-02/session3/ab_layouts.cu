// The SR and other layouts' step time (default policy), for A/B builds against another tree.
#define main bench_step_main
#include "bench_step.cu"
#undef main
int main(int argc, char** argv) {
  g_copy_gbps = measure_copy_bandwidth();
  const shape f = flat();
#if defined(AB_S3)
  add<adamw_default>("adamw_default", f);
  add<adamw_fp8_states>("adamw_fp8_states", f);
  add<adamw_reference>("adamw_reference_states", f);
  add<adamw_fp16_ulp8>("adamw_fp16_ulp8", f);
  add<adamw_bf16_native>("adamw_bf16_native", f);
#elif defined(AB_NATIVE)
  add<adamw_default>("adamw_default", f);
  add<adamw_bf16_native>("adamw_bf16_native", f);
  add<adamw_torch_bf16>("adamw_torch_layout_bf16", f);
  add<adamw_bf16_states>("adamw_bf16_states", f);
  add<adamw_bf16_native>("adamw_bf16_native", f);
#else
  add<adamw_default>("adamw_default", f);
  add<adamw_bf16_sr_states>("adamw_bf16_sr_states", f);
  add<adamw_bf16_states>("adamw_bf16_states", f);
  add<adamw_fp8_states>("adamw_fp8_states", f);
  add<lion_default>("lion_default", f);
#endif
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  return 0;
}
