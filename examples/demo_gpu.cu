// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// The demo's GPU part: the same steps on the GPU and on the CPU (threaded,
// vectorized), compared byte for byte, and the GPU step's speed.
#include <cuda_runtime.h>

#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

#include <flashoptim/cpu/step.hpp>
#include <flashoptim/device/step_plan.cuh>
#include <flashoptim/flashoptim.hpp>

#include "demo_gpu.hpp"

namespace {

using namespace flashoptim;
using cfg = step_config<rule::adamw, codec::rounded_split, bf16, codec::defaults::momentum,
                        codec::defaults::second_moment>;

/// One tensor's buffers as a byte block, host or device: param, correction,
/// grad, codes and scales back to back (each 256-byte aligned).
struct block_layout {
  std::int64_t n;
  std::size_t off[7], bytes[7], total;
  explicit block_layout(std::int64_t size) : n(size) {
    const std::int64_t g = codec::scale_count<cfg::state0>(n);
    const auto e = static_cast<std::size_t>(n), s = static_cast<std::size_t>(g);
    const std::size_t b[7] = {e * sizeof(bf16), e, e * sizeof(bf16), e, s * 4, e, s * 4};
    total = 0;
    for (int k = 0; k < 7; ++k) {
      off[k] = total;
      bytes[k] = b[k];
      total += (b[k] + 255) / 256 * 256;
    }
  }
  tensor_ref<cfg> view(unsigned char* base, std::uint64_t seed) const {
    tensor_ref<cfg> t;
    t.param = reinterpret_cast<bf16*>(base + off[0]);
    t.aux = reinterpret_cast<std::int8_t*>(base + off[1]);
    t.grad = reinterpret_cast<bf16*>(base + off[2]);
    flashoptim::slot_at<0>(t.states).codes = reinterpret_cast<std::int8_t*>(base + off[3]);
    flashoptim::slot_at<0>(t.states).scales = reinterpret_cast<float*>(base + off[4]);
    flashoptim::slot_at<1>(t.states).codes = reinterpret_cast<std::uint8_t*>(base + off[5]);
    flashoptim::slot_at<1>(t.states).scales = reinterpret_cast<float*>(base + off[6]);
    t.size = n;
    t.seed = seed;
    return t;
  }
};

bool ok(cudaError_t e, const char* what) {
  if (e != cudaSuccess) std::printf("  %s: %s\n", what, cudaGetErrorString(e));
  return e == cudaSuccess;
}

}  // namespace

bool demo_gpu() {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("  skipped: no CUDA device here (the CPU path above is the same library, bit for bit)\n");
    return true;
  }
  cudaDeviceProp prop{};
  cudaGetDeviceProperties(&prop, 0);
  std::printf("  device: %s\n", prop.name);

  // three tensors of awkward sizes, the same bytes on the host and the device
  const std::vector<std::int64_t> sizes = {1 << 20, 33, 4096 + 5};
  std::vector<block_layout> layouts;
  std::vector<std::vector<unsigned char>> host;
  std::vector<unsigned char*> dev;
  std::vector<tensor_ref<cfg>> hviews, dviews;
  std::mt19937_64 rng(3);
  std::normal_distribution<float> N(0.0f, 1.0f);
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    layouts.emplace_back(sizes[i]);
    host.emplace_back(layouts[i].total, 0);
    hviews.push_back(layouts[i].view(host[i].data(), i));
    std::vector<float> x(sizes[i]);
    for (auto& v : x) v = N(rng);
    codec::split<cfg::master>(x.data(), sizes[i], hviews[i].param, hviews[i].aux);
    unsigned char* d = nullptr;
    if (!ok(cudaMalloc(&d, layouts[i].total), "cudaMalloc")) return false;
    dev.push_back(d);
    dviews.push_back(layouts[i].view(d, i));
  }
  device::step_plan<cfg> plan;
  if (status s = plan.build(dviews.data(), dviews.size()); !s.ok()) {
    std::printf("  plan: %s\n", s.what());
    return false;
  }
  cfg::hyper h;
  h.lr = 1e-3;
  for (int step = 1; step <= 20; ++step) {
    for (std::size_t i = 0; i < sizes.size(); ++i) {
      bf16* g = const_cast<bf16*>(hviews[i].grad);
      for (std::int64_t j = 0; j < sizes[i]; ++j) g[j] = format::from_float<bf16>(N(rng));
      if (step == 1 && !ok(cudaMemcpy(dev[i], host[i].data(), layouts[i].total, cudaMemcpyHostToDevice), "copy")) return false;
      if (step > 1 && !ok(cudaMemcpy(dev[i] + layouts[i].off[2], g, layouts[i].bytes[2], cudaMemcpyHostToDevice), "copy"))
        return false;
    }
    step_args a;
    a.step = step;
    if (status s = cpu::step<cfg>(h, a, hviews.data(), hviews.size()); !s.ok()) return std::printf("  cpu: %s\n", s.what()), false;
    if (status s = plan.step_async(h, a, nullptr); !s.ok()) return std::printf("  gpu: %s\n", s.what()), false;
  }
  if (!ok(cudaDeviceSynchronize(), "step")) return false;
  std::size_t differing = 0, compared = 0;
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    std::vector<unsigned char> back(layouts[i].total);
    if (!ok(cudaMemcpy(back.data(), dev[i], back.size(), cudaMemcpyDeviceToHost), "copy back")) return false;
    for (int k = 0; k < 7; ++k) {
      if (k == 2) continue;  // gradients
      compared += layouts[i].bytes[k];
      for (std::size_t b = 0; b < layouts[i].bytes[k]; ++b)
        differing += back[layouts[i].off[k] + b] != host[i][layouts[i].off[k] + b];
    }
  }
  std::printf("  20 AdamW steps of 3 tensors (%lld parameters) on the GPU and on the CPU (%s, threads): "
              "%zu of %zu bytes differ\n",
              static_cast<long long>(sizes[0] + sizes[1] + sizes[2]), to_string(cpu::selected_isa<cfg>()), differing,
              compared);

  // speed: one tensor of 256 Mi parameters
  const std::int64_t n = std::int64_t{1} << 28;
  const block_layout big(n);
  unsigned char* d = nullptr;
  if (cudaMalloc(&d, big.total) == cudaSuccess) {
    cudaMemset(d, 0, big.total);
    tensor_ref<cfg> t = big.view(d, 9);
    device::step_plan<cfg> p2;
    cudaEvent_t e0, e1;
    cudaEventCreate(&e0);
    cudaEventCreate(&e1);
    if (p2.build(&t, 1).ok()) {
      step_args a;
      for (int s = 1; s <= 3; ++s) a.step = s, (void)p2.step_async(h, a, nullptr);
      cudaEventRecord(e0);
      for (int s = 4; s <= 23; ++s) a.step = s, (void)p2.step_async(h, a, nullptr);
      cudaEventRecord(e1);
      cudaEventSynchronize(e1);
      float ms = 0;
      cudaEventElapsedTime(&ms, e0, e1);
      ms /= 20;
      const double bytes = static_cast<double>(layout::bytes<cfg>::moved_for_size(n));
      std::printf("  AdamW step over %lld parameters: %.3f ms, %.0f GB/s of the minimal %.1f B/param traffic "
                  "(see BENCHMARKS.md)\n",
                  static_cast<long long>(n), ms, bytes / (ms * 1e6), layout::bytes<cfg>::moved_per_param);
    }
    cudaFree(d);
  }
  for (auto* p : dev) cudaFree(p);
  return differing == 0;
}
