// Eighteenth session, round D4: fp16 + int8 with its gradients as generated (about 6e-5 of them
// round to 0 in fp16, and their elements keep m = v = 0, which the range check sends to the exact
// redo) against the same gradients with each 0 replaced by 2^-14 (fp16's smallest
// normal gradient: m and v then stay in the checked ranges), at 256 x 8 (its
// default) and at 512 x 16 (the paper's split's wide tiles), with the bf16 paper's split as the
// control. Built as ab_zero.cu.
#include "ab_policy_common.hpp"

namespace {
__global__ void replace_zero_grads(fp16* g, std::int64_t n) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x)
    if ((g[i].bits & 0x7fffu) == 0) g[i].bits = 0x0400;  // 2^-14, fp16's smallest normal
}

template <class Config, class Policy = default_policy<Config>>
void add_nz(const std::string& name, const shape& sh, const char* want, bool replace) {
  if (want && !std::strstr(name.c_str(), want)) return;
  struct holder {
    workspace<Config> w;
    flashoptim::device::step_plan<Config, Policy> plan;
    std::int64_t step = 1;
    explicit holder(const shape& s) : w(s.sizes) {}
  };
  auto h = std::make_shared<holder>(sh);
  if constexpr (std::is_same<typename Config::grad_type, fp16>::value) {
    if (replace) {
      replace_zero_grads<<<132 * 8, 256>>>(const_cast<fp16*>(h->w.refs[0].grad), h->w.refs[0].size);
      BENCH_CUDA(cudaDeviceSynchronize());
    }
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

void register_variants(const char* want) {
  const shape f = flat();
  add_nz<adamw_fp16_ulp8>("fp16 t256 n8, as generated", f, want, false);
  add_nz<adamw_fp16_ulp8>("fp16 t256 n8, zeros replaced", f, want, true);
  add_nz<adamw_fp16_ulp8, pol<1, 3, 1, 512, 16>>("fp16 t512 n16, as generated", f, want, false);
  add_nz<adamw_fp16_ulp8, pol<1, 3, 1, 512, 16>>("fp16 t512 n16, zeros replaced", f, want, true);
  add_nz<adamw_ulp8>("bf16 paper t512 n16 (control)", f, want, false);
}
