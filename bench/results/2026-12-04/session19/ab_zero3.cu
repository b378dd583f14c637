// Nineteenth session, round E2: the zero-tolerant second attempt (kernel/range_checked.cuh) on
// (Z1) and off (Z0, the kernel before the change) in one binary, per layout and tile shape: what
// exact zeros in the gradient cost (a contiguous quarter of the gradients 0, one in 8192), what the
// second attempt costs on
// dense gradients (it adds cold code to the kernel), fp16 + int8 (whose gradients hold ~6e-5
// zeros) at 256 x 8 and at the paper's split's 512 x 16, and Lion (no range check) as the control.
//   nvcc -std=c++17 -O3 -arch=sm_90 --expt-relaxed-constexpr -I include -I bench/gpu
//        -I bench/results/2026-12-02/session4 -I bench/results/2026-12-04/session17
//        bench/results/2026-12-04/session19/ab_zero3.cu -o abz3 -lbenchmark -Xcompiler -static-libstdc++,-static-libgcc
#include "ab_policy_common.hpp"

namespace {
template <class G>
__global__ void zero_grads(G* g, std::int64_t n, std::int64_t first, std::int64_t last, std::int64_t every) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const bool hit = (i >= first && i < last) || (every > 0 && hash(static_cast<std::uint64_t>(i) * 7919u) % every == 0);
    if (hit) g[i] = format::from_float<G>(0.0f);
  }
}

/// add_v with the gradients of [first, last) and (every > 0) one element in `every` set to 0.
template <class Config, class Policy = default_policy<Config>>
void add_z(const std::string& name, const shape& sh, const char* want, double first_frac, double last_frac,
           std::int64_t every) {
  if (want && !std::strstr(name.c_str(), want)) return;
  struct holder {
    workspace<Config> w;
    flashoptim::device::step_plan<Config, Policy> plan;
    std::int64_t step = 1;
    explicit holder(const shape& s) : w(s.sizes) {}
  };
  auto h = std::make_shared<holder>(sh);
  const std::int64_t n = h->w.refs[0].size;
  using G = typename Config::grad_type;
  if (last_frac > first_frac || every > 0) {
    zero_grads<<<132 * 8, 256>>>(const_cast<G*>(h->w.refs[0].grad), n, static_cast<std::int64_t>(first_frac * n),
                                 static_cast<std::int64_t>(last_frac * n), every);
    BENCH_CUDA(cudaDeviceSynchronize());
  }
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

/// The default's flags with B blocks per SM, S stages, R warp tiles, T threads, N elements per
/// thread and the zero-tolerant attempt on (Z) or off.
template <int B, int S, int R, int T, int N, bool Z>
using pz = flashoptim::tuning::step_policy<T, N, B, true, true, true, true, true, false, S, false, R, false, Z>;

void register_variants(const char* want) {
  const shape f = flat();
  add_z<adamw_default, pz<2, 3, 4, 256, 8, true>>("default Z1 dense", f, want, 0, 0, 0);
  add_z<adamw_default, pz<2, 3, 4, 256, 8, false>>("default Z0 dense", f, want, 0, 0, 0);
  add_z<adamw_default, pz<2, 3, 4, 256, 8, true>>("default Z1 25% zero rows", f, want, 0.5, 0.75, 0);
  add_z<adamw_default, pz<2, 3, 4, 256, 8, true>>("default Z1 1 in 8192 zero", f, want, 0, 0, 8192);
  add_z<adamw_ulp8, pz<1, 3, 1, 512, 16, true>>("ulp8 t512 Z1 dense", f, want, 0, 0, 0);
  add_z<adamw_ulp8, pz<1, 3, 1, 512, 16, false>>("ulp8 t512 Z0 dense", f, want, 0, 0, 0);
  add_z<adamw_ulp8, pz<2, 3, 1, 256, 8, true>>("ulp8 t256 Z1 dense", f, want, 0, 0, 0);
  add_z<adamw_ulp8, pz<1, 3, 1, 512, 16, true>>("ulp8 t512 Z1 25% zero rows", f, want, 0.5, 0.75, 0);
  add_z<adamw_ulp8, pz<2, 3, 1, 256, 8, true>>("ulp8 t256 Z1 25% zero rows", f, want, 0.5, 0.75, 0);
  add_z<adamw_reference, pz<1, 3, 1, 512, 16, true>>("reference t512 Z1 dense", f, want, 0, 0, 0);
  add_z<adamw_reference, pz<1, 3, 1, 512, 16, false>>("reference t512 Z0 dense", f, want, 0, 0, 0);
  add_z<adamw_reference, pz<2, 3, 1, 256, 8, true>>("reference t256 Z1 dense", f, want, 0, 0, 0);
  add_z<adamw_reference, pz<2, 3, 1, 256, 8, true>>("reference t256 Z1 25% zero rows", f, want, 0.5, 0.75, 0);
  add_z<adamw_fp16_ulp8, pz<2, 3, 1, 256, 8, true>>("fp16 t256 Z1 as generated", f, want, 0, 0, 0);
  add_z<adamw_fp16_ulp8, pz<2, 3, 1, 256, 8, false>>("fp16 t256 Z0 as generated", f, want, 0, 0, 0);
  add_z<adamw_fp16_ulp8, pz<1, 3, 1, 512, 16, true>>("fp16 t512 Z1 as generated", f, want, 0, 0, 0);
  add_z<adamw_fp16_ulp8, pz<1, 3, 1, 512, 16, false>>("fp16 t512 Z0 as generated", f, want, 0, 0, 0);
  add_z<adamw_fp8_states, pz<2, 5, 4, 256, 8, true>>("fp8 Z1 dense", f, want, 0, 0, 0);
  add_z<adamw_fp8_states, pz<2, 5, 4, 256, 8, false>>("fp8 Z0 dense", f, want, 0, 0, 0);
  add_z<adamw_fp8_states, pz<2, 5, 4, 256, 8, true>>("fp8 Z1 25% zero rows", f, want, 0.5, 0.75, 0);
  add_z<lion_default>("lion default, dense (control)", f, want, 0, 0, 0);
}
