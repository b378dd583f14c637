// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// AdamW with the default layout (bf16 + int8 correction, 8-bit states) on
// 2^20 + 5 elements, 20 steps on the GPU in a translation unit built with
// nvcc's defaults (FMA contraction on), against cpu::step_serial in the
// same file (host code contracted by the host compiler's defaults): every
// byte equal. Exit 77 (skipped) without a GPU.
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

#include "common/typed_tensor.hpp"
#include "flashoptim/device/step_plan.cuh"
#include "flashoptim/flashoptim.hpp"

using namespace flashoptim;
using cfg = step_config<rule::adamw, codec::ulp_correction<bf16, std::int8_t>, bf16, codec::defaults::momentum,
                        codec::defaults::second_moment>;

#define CONSUMER_CHECK(x)                                                            \
  do {                                                                               \
    const cudaError_t e_ = (x);                                                      \
    if (e_ != cudaSuccess) {                                                         \
      std::printf("%s: %s\n", #x, cudaGetErrorString(e_));                           \
      return 1;                                                                      \
    }                                                                                \
  } while (0)

template <class T>
struct device_vector {
  T* ptr = nullptr;
  std::size_t n = 0;
  cudaError_t upload(const std::vector<T>& v) {
    n = v.size();
    if (ptr == nullptr) {
      const cudaError_t e = cudaMalloc(&ptr, n * sizeof(T) + 16);
      if (e != cudaSuccess) return e;
    }
    return cudaMemcpy(ptr, v.data(), n * sizeof(T), cudaMemcpyHostToDevice);
  }
  cudaError_t download(std::vector<T>& v) const { return cudaMemcpy(v.data(), ptr, n * sizeof(T), cudaMemcpyDeviceToHost); }
  ~device_vector() { cudaFree(ptr); }
};

template <class T>
bool same(const char* what, const std::vector<T>& a, const std::vector<T>& b) {
  if (std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0) return true;
  std::size_t first = 0;
  while (std::memcmp(&a[first], &b[first], sizeof(T)) == 0) ++first;
  std::printf("%s differs first at element %zu\n", what, first);
  return false;
}

int main() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    std::printf("no GPU: skipped\n");
    return 77;
  }
  const std::int64_t n = (std::int64_t{1} << 20) + 5;
  testutil::typed_tensor<cfg> host(n), back(n);
  std::uint64_t z = 0x5eedull;
  auto next = [&z] {  // SplitMix64
    std::uint64_t r = (z += 0x9e3779b97f4a7c15ull);
    r = (r ^ (r >> 30)) * 0xbf58476d1ce4e5b9ull;
    r = (r ^ (r >> 27)) * 0x94d049bb133111ebull;
    return r ^ (r >> 31);
  };
  auto value = [&next](float scale) { return scale * (static_cast<float>(next() >> 40) * 0x1p-24f - 0.5f); };
  for (std::int64_t i = 0; i < n; ++i) host.set_master(i, value(2.0f));

  device_vector<cfg::param_type> param;
  device_vector<cfg::aux_type> aux;
  device_vector<cfg::grad_type> grad;
  device_vector<typename cfg::state<0>::code_type> code0;
  device_vector<typename cfg::state<0>::scale_type> scale0;
  device_vector<typename cfg::state<1>::code_type> code1;
  device_vector<typename cfg::state<1>::scale_type> scale1;
  CONSUMER_CHECK(param.upload(host.param));
  CONSUMER_CHECK(aux.upload(host.aux));
  CONSUMER_CHECK(grad.upload(host.grad));
  CONSUMER_CHECK(code0.upload(host.code0));
  CONSUMER_CHECK(scale0.upload(host.scale0));
  CONSUMER_CHECK(code1.upload(host.code1));
  CONSUMER_CHECK(scale1.upload(host.scale1));

  tensor_ref<cfg> d;
  d.param = param.ptr;
  d.aux = aux.ptr;
  d.grad = grad.ptr;
  d.state<0>() = {code0.ptr, scale0.ptr};
  d.state<1>() = {code1.ptr, scale1.ptr};
  d.size = n;
  d.seed = 0x1234u;
  tensor_ref<cfg> h = host.view(0x1234u);

  device::step_plan<cfg> plan;
  status s = plan.build(&d, 1);
  if (!s.ok()) {
    std::printf("build: %s\n", s.what());
    return 1;
  }
  cfg::hyper hp;
  hp.lr = 1e-3;
  hp.weight_decay = 1e-2;
  for (int step = 1; step <= 20; ++step) {
    for (std::int64_t i = 0; i < n; ++i) host.set_grad(i, value(0.01f));
    CONSUMER_CHECK(grad.upload(host.grad));
    step_args a;
    a.step = step;
    a.inv_grad_scale = 0.7;
    s = cpu::step_serial<cfg>(hp, a, &h, 1);
    if (s.ok()) s = plan.step_async(hp, a, nullptr);
    if (!s.ok()) {
      std::printf("step %d: %s\n", step, s.what());
      return 1;
    }
    CONSUMER_CHECK(cudaDeviceSynchronize());
  }
  CONSUMER_CHECK(param.download(back.param));
  CONSUMER_CHECK(aux.download(back.aux));
  CONSUMER_CHECK(code0.download(back.code0));
  CONSUMER_CHECK(scale0.download(back.scale0));
  CONSUMER_CHECK(code1.download(back.code1));
  CONSUMER_CHECK(scale1.download(back.scale1));
  const bool ok = same("param", host.param, back.param) & same("correction", host.aux, back.aux) &
                  same("m codes", host.code0, back.code0) & same("m scales", host.scale0, back.scale0) &
                  same("v codes", host.code1, back.code1) & same("v scales", host.scale1, back.scale1);
  std::printf("cuda consumer: %s\n", ok ? "GPU bytes == cpu::step_serial after 20 steps" : "MISMATCH");
  return ok ? 0 : 1;
}
