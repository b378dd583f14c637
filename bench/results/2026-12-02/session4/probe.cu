// Dev probe: time and profile chosen step configurations (not committed).
#define FLASHOPTIM_BENCH_ONLY_DEFAULT 1
#define main bench_step_main
#include "bench_step.cu"
#undef main
#include <cstring>

namespace {
template <class Config, class Policy = default_policy<Config>>
void probe(const char* name, const shape& sh, const char* want, int launches) {
  if (want && !std::strstr(name, want)) return;
  workspace<Config> w(sh.sizes);
  device::step_plan<Config, Policy> plan;
  BENCH_OK(plan.build(w.refs.data(), w.refs.size()));
  const auto h = bench_hyper<Config>();
  std::int64_t step = 1;
  auto f = [&] {
    step_args a;
    a.step = step++;
    BENCH_OK(plan.step_async(h, a, nullptr));
  };
  if (launches > 0) {  // under ncu: a few launches only
    for (int i = 0; i < launches; ++i) f();
    BENCH_CUDA(cudaDeviceSynchronize());
    std::printf("%-40s launched %d\n", name, launches);
    return;
  }
  const double ms = bench_gpu::time_ms(nullptr, f);
  const double gbps = static_cast<double>(w.moved_bytes) / (ms * 1e-3) / 1e9;
  std::printf("%-40s %8.4f ms %7.1f GB/s %5.1f%% grid %d\n", name, ms, gbps, 100.0 * gbps / g_copy_gbps,
              plan.ref().grid());
}
}  // namespace

int main(int argc, char** argv) {
  const char* want = argc > 1 && std::strcmp(argv[1], "all") ? argv[1] : nullptr;
  const int launches = argc > 2 ? std::atoi(argv[2]) : 0;
  g_copy_gbps = launches > 0 ? 4244.0 : measure_copy_bandwidth();
  std::printf("copy %.1f GB/s\n", g_copy_gbps);
  const shape f = flat();
  for (int rep = 0; rep < (launches > 0 ? 1 : 2); ++rep) {
    probe<adamw_default>("adamw_default", f, want, launches);
    probe<adamw_fp8_states>("adamw_fp8_states", f, want, launches);
    probe<adamw_bf16_states>("adamw_bf16_states", f, want, launches);
    probe<adamw_bf16_native>("adamw_bf16_native", f, want, launches);
    probe<lion_default>("lion_default", f, want, launches);
    probe<sgd_momentum>("sgd_momentum", f, want, launches);
    probe<adamw_reference>("adamw_reference_states", f, want, launches);
    probe<adamw_torch_bf16>("adamw_torch_layout_bf16", f, want, launches);
  }
  return 0;
}
