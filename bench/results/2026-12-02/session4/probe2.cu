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
  using P = tuning::step_policy<256, 8, 2, true, true, true, true, true, false, 3>;
  using S2 = tuning::step_policy<256, 8, 2, true, true, true, true, true, false, 2>;
  using S4 = tuning::step_policy<256, 8, 2, true, true, true, true, true, false, 4>;
  using S5 = tuning::step_policy<256, 8, 2, true, true, true, true, true, false, 5>;
  using S6 = tuning::step_policy<256, 8, 2, true, true, true, true, true, false, 6>;
  using T128S5 = tuning::step_policy<128, 8, 4, true, true, true, true, true, false, 5>;
  for (int rep = 0; rep < 2; ++rep) {
#define ROW(cfg) \
    probe<cfg, P>(#cfg "/s3", f, want, launches); \
    probe<cfg, S2>(#cfg "/s2", f, want, launches); \
    probe<cfg, S4>(#cfg "/s4", f, want, launches); \
    probe<cfg, S5>(#cfg "/s5", f, want, launches); \
    probe<cfg, S6>(#cfg "/s6", f, want, launches); \
    probe<cfg, T128S5>(#cfg "/t128_b4_s5", f, want, launches);
    ROW(adamw_default)
    ROW(adamw_fp8_states)
    ROW(lion_default)
    ROW(adamw_reference)
  }
  return 0;
}
