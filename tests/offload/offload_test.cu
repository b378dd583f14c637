// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// Optimizer off-load on a GPU (issue 4): for fractions {0, 0.3, 1} (and
// others), every byte of every tensor after several steps equals the run
// with everything on the GPU (docs/test-matrix.md C5/C21: the off-load pipeline);
// bad buffers, fractions and changed tensors are refused with nothing
// written.
#include <cuda_runtime.h>
#include <doctest/doctest.h>
#include <omp.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "common/gpu_check.hpp"
#include "flashoptim/device/offload.cuh"
#include "flashoptim/device/state_init.cuh"
#include "flashoptim/layout/state_layout.hpp"
#include "flashoptim/flashoptim.hpp"

using namespace flashoptim;
namespace c = flashoptim::codec;


namespace {

/// A list of tensors on the GPU: parameters, gradients, and one state
/// allocation per tensor (correction + states) laid out by state_layout.
template <class Config>
struct gpu_model {
  std::vector<std::int64_t> sizes;
  std::vector<void*> params, grads, states;
  std::vector<state_layout<Config>> layouts;
  std::vector<tensor_ref<Config>> views;

  gpu_model(const std::vector<std::int64_t>& s, std::uint64_t seed) : sizes(s) {
    std::mt19937_64 rng(seed);
    std::normal_distribution<float> N(0.0f, 1.0f);
    for (std::size_t i = 0; i < sizes.size(); ++i) {
      const std::int64_t n = sizes[i];
      void *p = nullptr, *g = nullptr, *st = nullptr;
      GPU_CHECK(cudaMalloc(&p, n * sizeof(typename Config::param_type) + 16));
      GPU_CHECK(cudaMalloc(&g, n * sizeof(typename Config::grad_type) + 16));
      const auto l = state_layout<Config>::for_size(n);
      GPU_CHECK(cudaMalloc(&st, l.bytes + 16));
      GPU_CHECK(cudaMemset(st, 0, l.bytes));
      tensor_ref<Config> t;
      t.param = static_cast<typename Config::param_type*>(p);
      t.grad = static_cast<typename Config::grad_type*>(g);
      l.carve(st, t);
      t.seed = 1000 + i;
      t.index_base = 7 * 32 * i;  // as if each were a shard of a larger tensor
      std::vector<float> x(n);
      for (auto& v : x) v = N(rng);
      float* dx = nullptr;
      GPU_CHECK(cudaMalloc(&dx, n * sizeof(float) + 4));
      GPU_CHECK(cudaMemcpy(dx, x.data(), n * sizeof(float), cudaMemcpyHostToDevice));
      STATUS_OK(device::init_tensor_async<Config>(dx, t, nullptr));
      GPU_CHECK(cudaDeviceSynchronize());
      GPU_CHECK(cudaFree(dx));
      params.push_back(p), grads.push_back(g), states.push_back(st), layouts.push_back(l), views.push_back(t);
    }
  }
  ~gpu_model() {
    for (void* p : params) cudaFree(p);
    for (void* p : grads) cudaFree(p);
    for (void* p : states) cudaFree(p);
  }
  /// Same gradients in every model for the same (seed, step).
  void set_grads(std::uint64_t seed, int step) {
    std::mt19937_64 rng(seed * 1000003u + step);
    std::normal_distribution<float> N(0.0f, 1.0f);
    for (std::size_t i = 0; i < sizes.size(); ++i) {
      std::vector<typename Config::grad_type> g(sizes[i]);
      for (auto& v : g) v = format::from_float<typename Config::grad_type>(N(rng) * (i % 3 == 0 ? 1e-3f : 1.0f));
      GPU_CHECK(cudaMemcpy(grads[i], g.data(), g.size() * sizeof(g[0]), cudaMemcpyHostToDevice));
    }
  }
  std::vector<unsigned char> param_bytes(std::size_t i) const {
    std::vector<unsigned char> b(sizes[i] * sizeof(typename Config::param_type));
    if (!b.empty()) REQUIRE(cudaMemcpy(b.data(), params[i], b.size(), cudaMemcpyDeviceToHost) == cudaSuccess);
    return b;
  }
  std::vector<unsigned char> state_bytes(std::size_t i) const {
    std::vector<unsigned char> b(layouts[i].bytes);
    if (!b.empty()) REQUIRE(cudaMemcpy(b.data(), states[i], b.size(), cudaMemcpyDeviceToHost) == cudaSuccess);
    return b;
  }
};

/// Pinned host state allocations for the off-loaded tensors, filled with the
/// device model's current state bytes (the same starting point).
template <class Config>
struct host_states {
  std::vector<void*> blocks, params;
  std::vector<tensor_ref<Config>> views;
  host_states(const gpu_model<Config>& m, std::size_t k) {
    for (std::size_t i = 0; i < k; ++i) {
      void *st = nullptr, *p = nullptr;
      const auto& l = m.layouts[i];
      REQUIRE(cudaHostAlloc(&st, l.bytes + 16, cudaHostAllocDefault) == cudaSuccess);
      REQUIRE(cudaHostAlloc(&p, m.sizes[i] * sizeof(typename Config::param_type) + 16, cudaHostAllocDefault) == cudaSuccess);
      if (l.bytes) REQUIRE(cudaMemcpy(st, m.states[i], l.bytes, cudaMemcpyDeviceToHost) == cudaSuccess);
      tensor_ref<Config> t;
      t.param = static_cast<typename Config::param_type*>(p);
      l.carve(st, t);
      blocks.push_back(st), params.push_back(p), views.push_back(t);
    }
  }
  ~host_states() {
    for (void* p : blocks) cudaFreeHost(p);
    for (void* p : params) cudaFreeHost(p);
  }
  std::vector<unsigned char> state_bytes(std::size_t i, std::size_t bytes) const {
    const auto* s = static_cast<const unsigned char*>(blocks[i]);
    return std::vector<unsigned char>(s, s + bytes);
  }
};

const std::vector<std::int64_t> tensor_sizes = {1, 100003, 33, 4096, 250000, 0, 5000, 64, 70001, 12};

template <class Config>
typename Config::hyper default_hyper() {
  typename Config::hyper h;
  h.lr = 1e-2;
  return h;
}

/// Steps `steps` times with everything on the GPU and with `fraction`
/// off-loaded; compares every byte.
template <class Config>
void check_fraction(double fraction, const device::offload_options& o, int steps = 4) {
  gpu_model<Config> ref(tensor_sizes, 42), off(tensor_sizes, 42);
  device::step_plan<Config> plan;
  STATUS_OK(plan.build(ref.views.data(), ref.views.size()));
  const std::size_t k = device::offload_plan<Config>::host_tensor_count(off.views.data(), off.views.size(), fraction);
  host_states<Config> host(off, k);
  device::offload_plan<Config> oplan;
  STATUS_OK(oplan.build(off.views.data(), off.views.size(), fraction, host.views.data(), k, o));
  CHECK(oplan.host_tensor_count() == k);
  const auto h = default_hyper<Config>();
  for (int s = 1; s <= steps; ++s) {
    ref.set_grads(9, s);
    off.set_grads(9, s);
    step_args a;
    a.step = s;
    STATUS_OK(plan.step_async(h, a, nullptr));
    STATUS_OK(oplan.step(h, a, off.views.data(), off.views.size(), nullptr));
    GPU_CHECK(cudaDeviceSynchronize());
  }
  int differing = 0;
  for (std::size_t i = 0; i < tensor_sizes.size(); ++i) {
    INFO("fraction ", fraction, " tensor ", i, (i < k ? " (host)" : " (gpu)"));
    CHECK(ref.param_bytes(i) == off.param_bytes(i));
    const auto expect = ref.state_bytes(i);
    const auto got = i < k ? host.state_bytes(i, expect.size()) : off.state_bytes(i);
    const bool same = expect == got;
    differing += !same;
    CHECK(same);
    if (i < k) {  // the host copy of the parameter is the device's
      const auto hp = static_cast<const unsigned char*>(host.params[i]);
      const auto dp = off.param_bytes(i);
      CHECK(std::memcmp(hp, dp.data(), dp.size()) == 0);
    }
  }
  MESSAGE("fraction ", fraction, ": ", k, " of ", tensor_sizes.size(), " tensors on the host, ", oplan.chunk_count(),
          " chunks, tensors differing from the all-GPU run: ", differing);
}

using adamw_default = step_config<rule::adamw, c::ulp_correction<bf16, std::int8_t>, bf16, c::defaults::momentum,
                                  c::defaults::second_moment>;
using adamw_sr = step_config<rule::adamw, c::ulp_correction<bf16, std::int16_t>, bf16, c::precision::bf16_sr,
                             c::precision::fp16_sr>;
using lion_default = step_config<rule::lion, c::exact_split, bf16, c::defaults::momentum>;

}  // namespace

TEST_CASE("off-load: every fraction gives the all-GPU bytes (AdamW, default layout)") {
  device::offload_options small;
  small.chunk_elements = 4096;  // many chunks: the pipeline wraps its staging buffers
  small.staging_buffers = 2;
  for (double f : {0.0, 0.3, 1.0}) check_fraction<adamw_default>(f, small);
  check_fraction<adamw_default>(0.5, device::offload_options{});
}

TEST_CASE("off-load: stochastic rounding and other rules stay bit-identical") {
  device::offload_options o;
  o.chunk_elements = 32 * 1000;
  for (double f : {0.3, 1.0}) {
    check_fraction<adamw_sr>(f, o, 3);
    check_fraction<lion_default>(f, o, 3);
  }
  o.cpu.threads = 1;
  o.cpu.instruction_set = cpu::isa::portable;
  check_fraction<adamw_default>(0.7, o, 2);
}

TEST_CASE("off-load: the chunk team splits each chunk into whole groups, whatever the team's size") {
  // device/chunk_team.cuh: thread t of T steps groups [g t / T, g (t+1) / T)
  // of every chunk's g groups. 7 groups per chunk give the team of 5 uneven
  // shares and leave 9 threads of the team of 16 without one; the last chunk
  // of a tensor of 100003 elements ends in a partial group. Stochastic
  // rounding keys on the element index, so a share stepped at the wrong
  // offset changes bytes.
  device::offload_options o;
  o.chunk_elements = 32 * 7;
  o.staging_buffers = 3;
  for (int t : {1, 2, 5, 16}) {
    INFO("team of ", t);
    o.cpu.threads = t;
    check_fraction<adamw_sr>(0.5, o, 2);
  }
}

TEST_CASE("off-load: the chunk team is sized as cpu::step sizes its own (cpu::team_size)") {
  // the options' threads, and no more than groups / min_groups_per_thread
  // (at least 1): a small off-loaded part does not wake the whole team
  cpu::step_options o;
  o.threads = 8;
  o.min_groups_per_thread = 64;
  CHECK(cpu::team_size(o, 0) == 1);
  CHECK(cpu::team_size(o, 127) == 1);
  CHECK(cpu::team_size(o, 128) == 2);
  CHECK(cpu::team_size(o, 64 * 8 - 1) == 7);
  CHECK(cpu::team_size(o, 64 * 8) == 8);
  CHECK(cpu::team_size(o, std::int64_t{1} << 40) == 8);
  o.min_groups_per_thread = 1;
  CHECK(cpu::team_size(o, 5) == 5);
  o.threads = 0;  // OpenMP's default team, capped
  const int default_team = std::min(omp_get_max_threads(), cpu::max_threads());
  CHECK(cpu::team_size(o, std::int64_t{1} << 40) == default_team);
}

TEST_CASE("off-load: bad inputs are refused before anything is written") {
  using C = adamw_default;
  gpu_model<C> m(tensor_sizes, 5);
  const std::size_t k = device::offload_plan<C>::host_tensor_count(m.views.data(), m.views.size(), 0.3);
  REQUIRE(k >= 2);
  host_states<C> host(m, k);
  const auto before = host.state_bytes(1, m.layouts[1].bytes);
  device::offload_plan<C> p;
  auto expect = [&](status s, status_code code, const char* what) {
    CHECK_MESSAGE(s.code() == code, what, ": ", s.what());
    CHECK(!p.built());
    CHECK(host.state_bytes(1, m.layouts[1].bytes) == before);
  };
  expect(p.build(m.views.data(), m.views.size(), 1.5, host.views.data(), k), status_code::hyperparameter_out_of_range,
         "fraction 1.5");
  expect(p.build(m.views.data(), m.views.size(), NAN, host.views.data(), k), status_code::hyperparameter_out_of_range,
         "fraction NaN");
  expect(p.build(m.views.data(), m.views.size(), 0.3, host.views.data(), k - 1), status_code::size_mismatch,
         "too few host views");
  // unpinned host memory
  std::vector<unsigned char> pageable(m.layouts[1].bytes + 64);
  auto bad = host.views;
  m.layouts[1].carve(pageable.data() + (256 - reinterpret_cast<std::uintptr_t>(pageable.data()) % 256) % 256, bad[1]);
  {
    const status s = p.build(m.views.data(), m.views.size(), 0.3, bad.data(), k);
    CHECK_MESSAGE(s.code() == status_code::invalid_argument, s.what());
    CHECK(std::string(s.message()).find("not pinned") != std::string::npos);
    CHECK(!p.built());
  }
  // misaligned host buffer
  bad = host.views;
  flashoptim::slot_at<0>(bad[1].states).scales = reinterpret_cast<float*>(reinterpret_cast<char*>(flashoptim::slot_at<0>(bad[1].states).scales) + 2);
  expect(p.build(m.views.data(), m.views.size(), 0.3, bad.data(), k), status_code::misaligned, "misaligned scales");
  // a host view that overlaps another
  bad = host.views;
  flashoptim::slot_at<0>(bad[1].states).codes = reinterpret_cast<std::int8_t*>(flashoptim::slot_at<1>(host.views[0].states).codes);
  expect(p.build(m.views.data(), m.views.size(), 0.3, bad.data(), k), status_code::aliasing, "overlapping host views");
  // a device parameter that is host memory
  auto dev = m.views;
  dev[0].param = host.views[0].param;
  expect(p.build(dev.data(), dev.size(), 0.3, host.views.data(), k), status_code::invalid_argument,
         "host memory as a device parameter");
  device::offload_options o;
  o.chunk_elements = 1000;
  expect(p.build(m.views.data(), m.views.size(), 0.3, host.views.data(), k, o), status_code::invalid_argument,
         "chunk not a multiple of 32");
}

TEST_CASE("off-load: changed tensors between steps, and skip, write nothing") {
  using C = adamw_default;
  gpu_model<C> m(tensor_sizes, 6);
  const std::size_t k = device::offload_plan<C>::host_tensor_count(m.views.data(), m.views.size(), 0.5);
  host_states<C> host(m, k);
  device::offload_plan<C> p;
  STATUS_OK(p.build(m.views.data(), m.views.size(), 0.5, host.views.data(), k));
  m.set_grads(1, 1);
  const auto params_before = m.param_bytes(1);
  const auto host_before = host.state_bytes(1, m.layouts[1].bytes);
  const auto gpu_before = m.state_bytes(k);
  auto changed = m.views;
  changed[1].param = reinterpret_cast<bf16*>(m.params[2]);
  const auto h = default_hyper<C>();
  step_args a;
  status s = p.step(h, a, changed.data(), changed.size(), nullptr);
  CHECK_MESSAGE(s.code() == status_code::state_changed, s.what());
  changed = m.views;
  changed.pop_back();
  CHECK(p.step(h, a, changed.data(), changed.size(), nullptr).code() == status_code::state_changed);
  a.skip = true;
  STATUS_OK(p.step(h, a, m.views.data(), m.views.size(), nullptr));
  a.skip = false;
  a.step = 0;
  CHECK(p.step(h, a, nullptr).code() == status_code::invalid_argument);
  GPU_CHECK(cudaDeviceSynchronize());
  CHECK(m.param_bytes(1) == params_before);
  CHECK(host.state_bytes(1, m.layouts[1].bytes) == host_before);
  CHECK(m.state_bytes(k) == gpu_before);
  // and a proper step does change them
  a.step = 1;
  STATUS_OK(p.step(h, a, m.views.data(), m.views.size(), nullptr));
  GPU_CHECK(cudaDeviceSynchronize());
  CHECK(m.param_bytes(1) != params_before);
  CHECK(host.state_bytes(1, m.layouts[1].bytes) != host_before);
}
