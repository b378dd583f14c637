// Twentieth session (prepared; not yet run: no device machine was lent): the tiny-tolerant second
// attempt (step_policy's TinyAttempt, kernel/range_checked.cuh) off (T0, the default) and on (T1)
// in one binary: what rows left idle cost (a contiguous quarter of the gradients 0 after 10 dense
// steps, timed after 400 more, when their m has stuck at subnormal values), what the option costs
// on dense gradients and on rows never touched (the second attempt's code grew), for the default
// layout and fp8 states, and Lion (no range check) as the control.
//   nvcc -std=c++17 -O3 -arch=sm_90 --expt-relaxed-constexpr -I include -I bench/gpu
//        -I bench/results/2026-12-02/session4 -I bench/results/2026-12-04/session17
//        bench/results/2026-12-04/session20/ab_tiny.cu -o abt -lbenchmark -Xcompiler -static-libstdc++,-static-libgcc
//   abt all 15   (as session19's ab_zero3: interleaved rounds of every variant)
#include "ab_policy_common.hpp"

namespace {
template <class G>
__global__ void zero_range(G* g, std::int64_t first, std::int64_t last) {
  for (std::int64_t i = first + blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < last;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x)
    g[i] = format::from_float<G>(0.0f);
}

/// A variant over flat(): `dense` steps with the generated gradients, then the first tensor's
/// [first, last) fraction of gradients set to 0 and `idle` more steps before the timing (dense = 0:
/// zero from the start, rows never touched).
template <class Config, class Policy>
void add_idle(const std::string& name, const char* want, double first_frac, double last_frac, int dense, int idle) {
  if (want && !std::strstr(name.c_str(), want)) return;
  struct holder {
    workspace<Config> w;
    flashoptim::device::step_plan<Config, Policy> plan;
    std::int64_t step = 1;
    explicit holder(const shape& s) : w(s.sizes) {}
  };
  auto h = std::make_shared<holder>(flat());
  BENCH_OK(h->plan.build(h->w.refs.data(), h->w.refs.size()));
  auto one = [hp = h.get()] {
    step_args a;
    a.step = hp->step++;
    BENCH_OK(hp->plan.step_async(bench_hyper<Config>(), a, nullptr));
  };
  for (int i = 0; i < dense; ++i) one();
  if (last_frac > first_frac) {
    const std::int64_t n = h->w.refs[0].size;
    using G = typename Config::grad_type;
    zero_range<<<132 * 8, 256>>>(const_cast<G*>(h->w.refs[0].grad), static_cast<std::int64_t>(first_frac * n),
                                 static_cast<std::int64_t>(last_frac * n));
  }
  for (int i = 0; i < idle; ++i) one();
  BENCH_CUDA(cudaDeviceSynchronize());
  variant v;
  v.name = name;
  v.bytes = h->w.moved_bytes;
  v.step = one;
  v.keep = h;
  g_v.push_back(std::move(v));
}
}  // namespace

/// The default's flags with B blocks per SM, S stages, R warp tiles (256 x 8), the zero-tolerant
/// attempt on, and the tiny-tolerant option T.
template <int B, int S, int R, bool T>
using pt = flashoptim::tuning::step_policy<256, 8, B, true, true, true, true, true, false, S, false, R, false, true, T>;

void register_variants(const char* want) {
  add_idle<adamw_default, pt<2, 3, 4, false>>("default T0 dense", want, 0, 0, 0, 0);
  add_idle<adamw_default, pt<2, 3, 4, true>>("default T1 dense", want, 0, 0, 0, 0);
  add_idle<adamw_default, pt<2, 3, 4, false>>("default T0 25% idle rows", want, 0.5, 0.75, 10, 400);
  add_idle<adamw_default, pt<2, 3, 4, true>>("default T1 25% idle rows", want, 0.5, 0.75, 10, 400);
  add_idle<adamw_default, pt<2, 3, 4, false>>("default T0 25% zero rows", want, 0.5, 0.75, 0, 0);
  add_idle<adamw_default, pt<2, 3, 4, true>>("default T1 25% zero rows", want, 0.5, 0.75, 0, 0);
  add_idle<adamw_fp8_states, pt<2, 5, 4, false>>("fp8 T0 dense", want, 0, 0, 0, 0);
  add_idle<adamw_fp8_states, pt<2, 5, 4, true>>("fp8 T1 dense", want, 0, 0, 0, 0);
  add_idle<adamw_fp8_states, pt<2, 5, 4, false>>("fp8 T0 25% idle rows", want, 0.5, 0.75, 10, 400);
  add_idle<adamw_fp8_states, pt<2, 5, 4, true>>("fp8 T1 25% idle rows", want, 0.5, 0.75, 10, 400);
  add_idle<lion_default, flashoptim::tuning::default_step_policy<lion_default>::type>("lion default, dense (control)",
                                                                                       want, 0, 0, 0, 0);
}
