// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// Sharded steps on one GPU (docs/test-matrix.md C18, GPU side): every rank's shard
// lives in its own device buffers and is stepped by its own
// device::step_plan over layout::shard_views, rank after rank, next to
//   - cpu::step_serial over the same shards on the host (GPU == CPU, any
//     plan: the documented "each piece as its own tensor");
//   - the unsharded tensors stepped by one plan on the GPU and by
//     step_serial on the host (group-aligned plans: all four bit-identical).
// Sizes span several of the kernel's units of work; packed plans put pieces
// at unaligned addresses (the scalar path), padded plans at aligned ones
// (the vector path). Also: per-rank gradient statistics add up to the
// unsharded ones, and the clipping multiplier is the host's, bit for bit.
//
// Stochastically rounded configurations need the kernel to key rounding on
// tensor_ref::index_base; until it does, their case is skipped by default
// (run it with --no-skip; tools/shard_device_round.sh does).
#include <cuda_runtime.h>
#include <doctest/doctest.h>

#include <array>
#include <cmath>
#include <string>
#include <vector>

#include "common/gpu_check.hpp"
#include "common/configs.hpp"
#include "flashoptim/device/shard_stats.cuh"
#include "flashoptim/device/step_plan.cuh"
#include "flashoptim/layout/shard.hpp"
#include "shard/shard_harness.hpp"

using namespace testconfigs;
using namespace shard_test;
namespace fl = flashoptim::layout;


namespace {

struct device_bytes {
  unsigned char* ptr = nullptr;
  std::size_t bytes = 0;
  device_bytes() = default;
  device_bytes(const device_bytes&) = delete;
  device_bytes& operator=(const device_bytes&) = delete;
  ~device_bytes() {
    if (ptr) cudaFree(ptr);
  }
  void assign(const std::vector<unsigned char>& host) {
    if (ptr == nullptr && !host.empty()) {
      GPU_CHECK(cudaMalloc(&ptr, host.size()));
      bytes = host.size();
    }
    REQUIRE(bytes == host.size());
    if (bytes) GPU_CHECK(cudaMemcpy(ptr, host.data(), bytes, cudaMemcpyHostToDevice));
  }
  std::vector<unsigned char> download() const {
    std::vector<unsigned char> out(bytes);
    if (bytes) GPU_CHECK(cudaMemcpy(out.data(), ptr, bytes, cudaMemcpyDeviceToHost));
    return out;
  }
};

/// Device copy of host slot buffers (one entry per tensor or per rank).
struct mirror {
  std::vector<std::array<device_bytes, s_count>> dev;
  void upload(const std::vector<std::array<std::vector<unsigned char>, s_count>>& host, int only_slot = -1) {
    if (dev.size() != host.size()) dev = std::vector<std::array<device_bytes, s_count>>(host.size());
    for (std::size_t i = 0; i < host.size(); ++i)
      for (int k = 0; k < s_count; ++k)
        if (only_slot < 0 || k == only_slot) dev[i][k].assign(host[i][k]);
  }
  /// First byte that differs from `host`, or "".
  std::string compare(const std::vector<std::array<std::vector<unsigned char>, s_count>>& host,
                      const char* what) const {
    for (std::size_t i = 0; i < host.size(); ++i)
      for (int k = 0; k < s_count; ++k) {
        if (k == s_grad) continue;
        const auto d = dev[i][k].download();
        for (std::size_t b = 0; b < d.size(); ++b)
          if (d[b] != host[i][k][b])
            return std::string(what) + " " + std::to_string(i) + " " + slot_name(k) + " byte " + std::to_string(b);
      }
    return "";
  }
  template <class T>
  T* at(std::size_t i, int k) const {
    return reinterpret_cast<T*>(dev[i][k].ptr);
  }
};

template <class Config>
layout::shard_buffers<Config> device_buffers(const mirror& m, int r) {
  using R = tensor_ref<Config>;
  layout::shard_buffers<Config> b;
  const auto i = static_cast<std::size_t>(r);
  b.param = m.at<typename R::param_type>(i, s_param);
  b.aux = m.at<typename R::aux_type>(i, s_aux);
  b.grad = m.at<typename R::grad_type>(i, s_grad);
  flashoptim::slot_at<0>(b.states).codes = m.at<typename R::template code_t<0>>(i, s_code0);
  flashoptim::slot_at<0>(b.states).scales = m.at<typename R::template scale_t<0>>(i, s_scale0);
  if constexpr (Config::num_slots > 1) {  // one-state rules have no slot 1
    flashoptim::slot_at<1>(b.states).codes = m.at<typename R::template code_t<1>>(i, s_code1);
    flashoptim::slot_at<1>(b.states).scales = m.at<typename R::template scale_t<1>>(i, s_scale1);
  }
  return b;
}

template <class Config>
std::vector<tensor_ref<Config>> device_refs(const mirror& m, const unsharded<Config>& u) {
  using R = tensor_ref<Config>;
  std::vector<R> v;
  for (std::size_t i = 0; i < u.sizes.size(); ++i) {
    R r;
    r.param = m.at<typename R::param_type>(i, s_param);
    r.aux = m.at<typename R::aux_type>(i, s_aux);
    r.grad = m.at<typename R::grad_type>(i, s_grad);
    flashoptim::slot_at<0>(r.states).codes = m.at<typename R::template code_t<0>>(i, s_code0);
    flashoptim::slot_at<0>(r.states).scales = m.at<typename R::template scale_t<0>>(i, s_scale0);
    if constexpr (Config::num_slots > 1) {  // one-state rules have no slot 1
      flashoptim::slot_at<1>(r.states).codes = m.at<typename R::template code_t<1>>(i, s_code1);
      flashoptim::slot_at<1>(r.states).scales = m.at<typename R::template scale_t<1>>(i, s_scale1);
    }
    r.size = u.sizes[i];
    r.seed = seed_of(i);
    v.push_back(r);
  }
  return v;
}

const std::vector<std::int64_t> k_sizes = {100003, 1000, 1, 31, 33, 0, 4097, 65, 8192, 2053, 7, 96, 40000};

std::vector<std::pair<std::vector<std::int64_t>, fl::shard_plan>> plans_for_gpu() {
  std::vector<std::pair<std::vector<std::int64_t>, fl::shard_plan>> out;
  fl::shard_plan p;
  for (int R : {2, 3, 5}) {
    REQUIRE(fl::shard_plan::packed(k_sizes.data(), k_sizes.size(), R, p).ok());
    out.emplace_back(k_sizes, p);
    REQUIRE(fl::shard_plan::padded(k_sizes.data(), k_sizes.size(), R, p).ok());
    out.emplace_back(k_sizes, p);
  }
  const std::vector<std::int64_t> one = {1000};
  const std::int64_t c18[] = {0, 7, 33, 500};
  REQUIRE(fl::shard_plan::split_at(one.data(), 1, c18, 4, p).ok());
  out.emplace_back(one, p);
  std::int64_t total = 0;
  for (auto s : k_sizes) total += s;
  const std::int64_t uneven[] = {0, 4099, 70001, 100003 + 517, total - 3};
  REQUIRE(fl::shard_plan::split_at(k_sizes.data(), k_sizes.size(), uneven, 5, p).ok());
  out.emplace_back(k_sizes, p);
  return out;
}

/// Runs every plan: 2 unsharded steps of history where the plan is aligned
/// (a fresh start otherwise), then 3 steps on host and device, sharded and
/// unsharded, compared after each.
/// A few small plans: the case compute-sanitizer runs.
std::vector<std::pair<std::vector<std::int64_t>, fl::shard_plan>> small_plans() {
  std::vector<std::pair<std::vector<std::int64_t>, fl::shard_plan>> out;
  const std::vector<std::int64_t> sizes = {1000, 33, 0, 4097, 7};
  fl::shard_plan p;
  REQUIRE(fl::shard_plan::packed(sizes.data(), sizes.size(), 3, p).ok());
  out.emplace_back(sizes, p);
  REQUIRE(fl::shard_plan::padded(sizes.data(), sizes.size(), 2, p).ok());
  out.emplace_back(sizes, p);
  const std::int64_t c18[] = {0, 7, 33, 500};
  REQUIRE(fl::shard_plan::split_at(sizes.data(), 1, c18, 4, p).ok());
  out.emplace_back(std::vector<std::int64_t>{1000}, p);
  return out;
}

template <class Config>
void run_gpu_plans(const char* name,
                   const std::vector<std::pair<std::vector<std::int64_t>, fl::shard_plan>>& plans = plans_for_gpu()) {
  const auto h = hyper_for<Config>();
  std::uint64_t seed = 77;
  for (const auto& entry : plans) {
    const std::vector<std::int64_t>& sizes = entry.first;
    const fl::shard_plan& plan = entry.second;
    const bool aligned = plan.group_aligned();
    INFO(name, ": ", plan.layout() == fl::flat_layout::padded ? "padded" : "packed", " R=", plan.ranks(),
         aligned ? " aligned" : " unaligned");
    testdata::generator gen(seed++);
    unsharded<Config> u;
    u.allocate(sizes);
    u.init(gen);
    int first = 1;
    if (aligned) {
      for (; first <= 2; ++first) {
        u.fill_grads(gen);
        REQUIRE(u.step(h, first).ok());
      }
    }
    sharded<Config> sh;
    sh.allocate(plan);
    sh.scatter(u, aligned);

    mirror du, dsh;
    du.upload(u.bytes);
    dsh.upload(sh.bytes);
    device::step_plan<Config> whole;
    const auto refs = device_refs<Config>(du, u);
    STATUS_OK(whole.build(refs.data(), refs.size()));
    std::vector<device::step_plan<Config>> ranks(static_cast<std::size_t>(plan.ranks()));
    const auto seeds = sh.seeds();
    for (int r = 0; r < plan.ranks(); ++r) {
      std::vector<tensor_ref<Config>> v;
      STATUS_OK(layout::shard_views<Config>(plan, r, device_buffers<Config>(dsh, r), seeds.data(), v));
      STATUS_OK(ranks[static_cast<std::size_t>(r)].build(v.data(), v.size()));
    }

    for (int s = first; s < first + 3; ++s) {
      u.fill_grads(gen);
      sh.scatter(u, s_grad);
      du.upload(u.bytes, s_grad);
      dsh.upload(sh.bytes, s_grad);
      step_args a;
      a.step = s;
      for (auto& p : ranks) STATUS_OK(p.step_async(h, a, nullptr));
      STATUS_OK(whole.step_async(h, a, nullptr));
      GPU_CHECK(cudaDeviceSynchronize());
      REQUIRE(u.step(h, s).ok());
      REQUIRE(sh.step(h, s).ok());

      const std::string gpu_vs_cpu_shards = dsh.compare(sh.bytes, "rank");
      INFO("step ", s, ", sharded GPU vs sharded CPU: ", gpu_vs_cpu_shards);
      CHECK(gpu_vs_cpu_shards.empty());
      const std::string gpu_vs_cpu_whole = du.compare(u.bytes, "tensor");
      INFO("step ", s, ", unsharded GPU vs unsharded CPU: ", gpu_vs_cpu_whole);
      CHECK(gpu_vs_cpu_whole.empty());
      if (aligned) {
        const std::string sharded_vs_whole = sh.compare(u, {s_param, s_aux, s_code0, s_scale0, s_code1, s_scale1});
        INFO("step ", s, ", sharded vs unsharded: ", sharded_vs_whole);
        CHECK(sharded_vs_whole.empty());
      }
      if (!gpu_vs_cpu_shards.empty() || !gpu_vs_cpu_whole.empty()) return;
    }
  }
}

}  // namespace

TEST_CASE("C18 GPU: shards stepped one by one on the device match the host and, aligned, the unsharded step") {
  run_gpu_plans<adamw_default>("adamw default");
  run_gpu_plans<adamw_reference>("adamw reference");
  run_gpu_plans<lion_default>("lion");
  run_gpu_plans<sgd_momentum>("sgd momentum");
  run_gpu_plans<adamw_fp32_states>("adamw fp32 states");
  run_gpu_plans<adamw_fp8_states>("adamw fp8 states");
  run_gpu_plans<adamw_exact>("adamw exact split");
  run_gpu_plans<adam_fp16_reference>("adam fp16 reference");
}

TEST_CASE("C18 GPU (small): the plans compute-sanitizer runs") {
  run_gpu_plans<adamw_default>("adamw default, small", small_plans());
}

// The kernel keys stochastic rounding on tensor_ref::index_base + i, so
// shards round like the whole tensor (passed on 2x H200, 2026-11-29).
TEST_CASE("C18 GPU: stochastic rounding of shards") {
  run_gpu_plans<adamw_bf16_sr_states>("adamw bf16 stochastic states");
  run_gpu_plans<adamw_sr_codes>("adamw stochastic 8-bit codes");
}

TEST_CASE("GPU: per-rank gradient statistics add up to the unsharded ones; a non-finite gradient flags its rank") {
  using Config = adamw_default;
  fl::shard_plan plan;
  REQUIRE(fl::shard_plan::padded(k_sizes.data(), k_sizes.size(), 3, plan).ok());
  testdata::generator gen(9);
  unsharded<Config> u;
  u.allocate(k_sizes);
  u.init(gen);
  u.fill_grads(gen, 1.0f, 0.0);
  // one inf in tensor 0 at element 50000: owned by the rank holding it
  auto* g = reinterpret_cast<bf16*>(u.bytes[0][s_grad].data());
  g[50000] = format::from_float<bf16>(INFINITY);
  sharded<Config> sh;
  sh.allocate(plan);
  sh.scatter(u, true);
  mirror du, dsh;
  du.upload(u.bytes);
  dsh.upload(sh.bytes);
  device::grad_stats* stats = nullptr;
  GPU_CHECK(cudaMalloc(&stats, sizeof(device::grad_stats) * (plan.ranks() + 1)));
  device::step_plan<Config> whole;
  const auto refs = device_refs<Config>(du, u);
  STATUS_OK(whole.build(refs.data(), refs.size()));
  STATUS_OK(whole.grad_stats_async(stats + plan.ranks(), nullptr));
  std::vector<device::step_plan<Config>> ranks(static_cast<std::size_t>(plan.ranks()));
  int owner = -1;
  for (int r = 0; r < plan.ranks(); ++r) {
    std::vector<tensor_ref<Config>> v;
    STATUS_OK(layout::shard_views<Config>(plan, r, device_buffers<Config>(dsh, r), nullptr, v));
    STATUS_OK(ranks[static_cast<std::size_t>(r)].build(v.data(), v.size()));
    STATUS_OK(ranks[static_cast<std::size_t>(r)].grad_stats_async(stats + r, nullptr));
    if (plan.tensor_offset(0) + 50000 >= plan.shard_begin(r) && plan.tensor_offset(0) + 50000 < plan.shard_end(r))
      owner = r;
  }
  std::vector<device::grad_stats> host(static_cast<std::size_t>(plan.ranks()) + 1);
  GPU_CHECK(cudaMemcpy(host.data(), stats, sizeof(device::grad_stats) * host.size(), cudaMemcpyDeviceToHost));
  for (int r = 0; r < plan.ranks(); ++r) CHECK(host[static_cast<std::size_t>(r)].non_finite == (r == owner ? 1 : 0));
  CHECK(host.back().non_finite == 1);

  // finite gradients: the ranks' sums add up to the unsharded sum (not bit
  // for bit: the additions are grouped differently)
  g[50000] = format::from_float<bf16>(1.0f);
  sh.scatter(u, s_grad);
  du.upload(u.bytes, s_grad);
  dsh.upload(sh.bytes, s_grad);
  STATUS_OK(whole.grad_stats_async(stats + plan.ranks(), nullptr));
  for (int r = 0; r < plan.ranks(); ++r)
    STATUS_OK(ranks[static_cast<std::size_t>(r)].grad_stats_async(stats + r, nullptr));
  GPU_CHECK(cudaMemcpy(host.data(), stats, sizeof(device::grad_stats) * host.size(), cudaMemcpyDeviceToHost));
  double sum = 0.0, exact = 0.0;
  for (int r = 0; r < plan.ranks(); ++r) {
    sum += host[static_cast<std::size_t>(r)].sum_squares;
    CHECK(host[static_cast<std::size_t>(r)].non_finite == 0);
  }
  for (std::size_t i = 0; i < k_sizes.size(); ++i) {
    const auto* gi = reinterpret_cast<const bf16*>(u.bytes[i][s_grad].data());
    for (std::int64_t e = 0; e < k_sizes[i]; ++e)
      exact += static_cast<double>(format::to_float(gi[e])) * format::to_float(gi[e]);
  }
  CHECK(std::fabs(sum - host.back().sum_squares) <= 1e-10 * exact);
  CHECK(std::fabs(sum - exact) <= 1e-10 * exact);

  // the clipping multiplier from these statistics is the host's, bit for bit
  double* mult = nullptr;
  GPU_CHECK(cudaMalloc(&mult, sizeof(double)));
  for (double max_norm : {0.0, 1.0, 1e-3, 1e9, static_cast<double>(INFINITY)}) {
    for (double inv : {1.0, 1.0 / 65536}) {
      STATUS_OK(device::clip_grad_multiplier_async(stats + plan.ranks(), max_norm, inv, mult, nullptr));
      double got = 0.0;
      GPU_CHECK(cudaMemcpy(&got, mult, sizeof got, cudaMemcpyDeviceToHost));
      const double want = device::clip_grad_multiplier(host.back().sum_squares, 0, max_norm, inv);
      CHECK(std::memcmp(&got, &want, sizeof got) == 0);
      if (max_norm > 0 && std::isfinite(max_norm) && max_norm < std::sqrt(exact) * inv) CHECK(want < inv);
    }
  }
  CHECK(device::clip_grad_multiplier_async(nullptr, 1.0, 1.0, mult, nullptr).code() == status_code::null_pointer);
  CHECK(device::clip_grad_multiplier_async(stats, 1.0, 0.0, mult, nullptr).code() == status_code::invalid_argument);
  CHECK(device::clip_grad_multiplier(1.0, 1, 1e-3, 0.5) == 0.5);  // skipped step: a valid multiplier
  GPU_CHECK(cudaFree(mult));
  GPU_CHECK(cudaFree(stats));
}
