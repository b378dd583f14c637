// Eighteenth session, round D3: what exact zeros in the gradient cost the step. The range-checked
// attempt (kernel/range_checked.cuh) keeps a warp's tile only if every new Adam m has |m| in
// [2^-60, 2^60] and every new v lies in [2^-100, v_max]; an element whose gradient and states are
// zero has m = v = 0, so its warp steps the tile again exactly. The benchmark's gradients have no
// zeros in bf16 (one value in 2^24); in fp16 (adamw_fp16_ulp8) about 6e-5 of them round to 0.
// Variants: the same layout with its gradients as generated, with a contiguous quarter of them set
// to 0 (an embedding table's rows that no token of the batch touched), and with one element in
// 8192 set to 0 (one per 512-element warp tile on average).
//   nvcc -std=c++17 -O3 -arch=sm_90 --expt-relaxed-constexpr -I include -I bench/gpu
//        -I bench/results/2026-12-02/session4 -I bench/results/2026-12-04/session17
//        bench/results/2026-12-04/session18/ab_zero.cu -o abz -lbenchmark -Xcompiler -static-libstdc++,-static-libgcc
// and again with zero_tolerant.patch (here) applied to the headers and -DFLASHOPTIM_AB_ZERO_TOLERANT
// (abz_tol; the patch was reverted after the round).
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
template <class Config>
void add_z(const std::string& name, const shape& sh, const char* want, double first_frac, double last_frac,
           std::int64_t every) {
  if (want && !std::strstr(name.c_str(), want)) return;
  struct holder {
    workspace<Config> w;
    flashoptim::device::step_plan<Config, default_policy<Config>> plan;
    std::int64_t step = 1;
    explicit holder(const shape& s) : w(s.sizes) {}
  };
  auto h = std::make_shared<holder>(sh);
  const std::int64_t n = h->w.refs[0].size;
  using G = typename Config::grad_type;
  zero_grads<<<132 * 8, 256>>>(const_cast<G*>(h->w.refs[0].grad), n, static_cast<std::int64_t>(first_frac * n),
                               static_cast<std::int64_t>(last_frac * n), every);
  BENCH_CUDA(cudaDeviceSynchronize());
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

void register_variants(const char* want) {
  const shape f = flat();
  add_z<adamw_default>("adamw default, dense", f, want, 0, 0, 0);
  add_z<adamw_default>("adamw default, 25% zero rows", f, want, 0.5, 0.75, 0);
  add_z<adamw_default>("adamw default, 1 in 8192 zero", f, want, 0, 0, 8192);
  add_z<adamw_ulp8>("ulp8 (paper) dense", f, want, 0, 0, 0);
  add_z<adamw_ulp8>("ulp8 (paper) 25% zero rows", f, want, 0.5, 0.75, 0);
  add_z<adamw_fp16_ulp8>("fp16 ulp8 as generated", f, want, 0, 0, 0);
  add_z<lion_default>("lion default, 25% zero rows", f, want, 0.5, 0.75, 0);
  add_z<lion_default>("lion default, dense", f, want, 0, 0, 0);
}
