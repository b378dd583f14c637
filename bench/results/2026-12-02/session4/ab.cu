// Dev A/B harness: every variant keeps its own workspace; rounds interleave
// the variants; per variant the median and min over rounds (not committed).
#define FLASHOPTIM_BENCH_ONLY_DEFAULT 1
#define main bench_step_main
#include "bench_step.cu"
#undef main
#include <cstring>
#include <functional>
#include <memory>

namespace {
struct variant {
  std::string name;
  std::function<void()> step;
  std::int64_t bytes;
  std::vector<double> ms;
  std::shared_ptr<void> keep;
};
std::vector<variant> g_v;

template <class Config, class Policy = default_policy<Config>>
void add_v(const std::string& name, const shape& sh, const char* want) {
  if (want && !std::strstr(name.c_str(), want)) return;
  struct holder {
    workspace<Config> w;
    device::step_plan<Config, Policy> plan;
    std::int64_t step = 1;
    explicit holder(const shape& s) : w(s.sizes) {}
  };
  auto h = std::make_shared<holder>(sh);
  BENCH_OK(h->plan.build(h->w.refs.data(), h->w.refs.size()));
  variant v;
  v.name = name;
  v.bytes = h->w.moved_bytes;
  holder* hp = h.get();
  v.step = [hp] {
    step_args a;
    a.step = hp->step++;
    BENCH_OK(hp->plan.step_async(bench_hyper<Config>(), a, nullptr));
  };
  v.keep = h;
  g_v.push_back(std::move(v));
}
}  // namespace

void register_variants(const char* want);

int main(int argc, char** argv) {
  const char* want = argc > 1 && std::strcmp(argv[1], "all") ? argv[1] : nullptr;
  const int rounds = argc > 2 ? std::atoi(argv[2]) : 7;
  const int launches = argc > 3 ? std::atoi(argv[3]) : 0;
  g_copy_gbps = launches > 0 ? 4244.0 : measure_copy_bandwidth();
  std::printf("copy %.1f GB/s\n", g_copy_gbps);
  register_variants(want);
  if (launches > 0) {
    for (auto& v : g_v)
      for (int i = 0; i < launches; ++i) v.step();
    BENCH_CUDA(cudaDeviceSynchronize());
    return 0;
  }
  cudaEvent_t a, b;
  BENCH_CUDA(cudaEventCreate(&a));
  BENCH_CUDA(cudaEventCreate(&b));
  for (auto& v : g_v)
    for (int i = 0; i < 3; ++i) v.step();
  for (int r = 0; r < rounds; ++r) {
    for (std::size_t k = 0; k < g_v.size(); ++k) {
      auto& v = g_v[(k + r) % g_v.size()];  // rotate the order each round
      v.step();
      BENCH_CUDA(cudaEventRecord(a));
      for (int i = 0; i < 20; ++i) v.step();
      BENCH_CUDA(cudaEventRecord(b));
      BENCH_CUDA(cudaEventSynchronize(b));
      float t = 0;
      BENCH_CUDA(cudaEventElapsedTime(&t, a, b));
      v.ms.push_back(t / 20.0);
    }
  }
  for (auto& v : g_v) {
    std::vector<double> s = v.ms;
    std::sort(s.begin(), s.end());
    const double med = s[s.size() / 2];
    std::printf("%-44s med %7.4f min %7.4f max %7.4f ms  %5.1f%% (med)\n", v.name.c_str(), med, s.front(), s.back(),
                100.0 * static_cast<double>(v.bytes) / (med * 1e-3) / 1e9 / g_copy_gbps);
  }
  return 0;
}
