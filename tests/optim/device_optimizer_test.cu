// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// device::optimizer (include/flashoptim/optim/device_optimizer.cuh) against
// cpu::optimizer (which tests/optim/cpu_optimizer_test.cpp holds equal to
// cpu::step_serial by hand): parameter groups in one launch and in several,
// the gradient pass (clip, skip, GradScaler), a CUDA graph replay with the
// device lr changing between replays, gradient release in random order,
// the memory report and refused calls. Every comparison is bitwise over
// params, corrections and states.
#include <cuda_runtime.h>
#include <doctest/doctest.h>

#include <algorithm>
#include <cstring>
#include <numeric>
#include <random>
#include <vector>

#include "common/configs.hpp"
#include "common/data.hpp"
#include "common/gpu_check.hpp"
#include "flashoptim/optim/cpu_optimizer.hpp"
#include "flashoptim/optim/device_optimizer.cuh"
#include "flashoptim/optim/optimizer_set.cuh"
#include "optimizer_bytes.cuh"

using namespace flashoptim;
namespace tc = testconfigs;

namespace {

/// The trainer's side: params and grads of every tensor on the host and on
/// the device, the same bytes.
template <class Config>
struct model {
  using P = typename Config::param_type;
  using G = typename Config::grad_type;
  std::vector<std::int64_t> sizes;
  std::vector<std::vector<P>> hp;
  std::vector<std::vector<G>> hg;
  std::vector<P*> dp;
  std::vector<G*> dg;

  model(std::vector<std::int64_t> n, std::uint64_t seed) : sizes(std::move(n)) {
    testdata::generator gen(seed);
    for (std::int64_t s : sizes) {
      std::vector<P> p(static_cast<std::size_t>(s));
      for (auto& x : p) {
        float v = gen.value(1.0f, 0.02);
        if (!std::isfinite(v) || std::fabs(v) > 1e3f) v = 0.5f;
        x = format::from_float<P>(v);
      }
      hp.push_back(std::move(p));
      hg.emplace_back(static_cast<std::size_t>(s));
      P* d = nullptr;
      G* g = nullptr;
      GPU_CHECK(cudaMalloc(&d, std::max<std::size_t>(1, s * sizeof(P))));
      GPU_CHECK(cudaMalloc(&g, std::max<std::size_t>(1, s * sizeof(G))));
      GPU_CHECK(cudaMemcpy(d, hp.back().data(), s * sizeof(P), cudaMemcpyHostToDevice));
      dp.push_back(d);
      dg.push_back(g);
    }
  }
  ~model() {
    for (auto* p : dp) cudaFree(p);
    for (auto* g : dg) cudaFree(g);
  }
  void new_grads(testdata::generator& gen, bool non_finite = false) {
    for (std::size_t i = 0; i < sizes.size(); ++i) {
      for (auto& g : hg[i]) g = format::from_float<G>(gen.value(1.0f, 0.05, non_finite));
      GPU_CHECK(cudaMemcpy(dg[i], hg[i].data(), hg[i].size() * sizeof(G), cudaMemcpyHostToDevice));
    }
  }
  /// Groups: tensor i in group group_of(i); the host or device pointers.
  std::vector<optim::param_group<Config>> groups(const std::vector<typename Config::hyper>& h,
                                                 const std::vector<int>& group_of, bool device) {
    std::vector<optim::param_group<Config>> out(h.size());
    for (std::size_t g = 0; g < h.size(); ++g) out[g].hyper = h[g];
    for (std::size_t i = 0; i < sizes.size(); ++i) {
      optim::param_spec s;
      s.param = device ? static_cast<void*>(dp[i]) : static_cast<void*>(hp[i].data());
      s.grad = device ? static_cast<const void*>(dg[i]) : static_cast<const void*>(hg[i].data());
      s.size = sizes[i];
      s.name = "t" + std::to_string(i);
      out[static_cast<std::size_t>(group_of[i])].params.push_back(s);
    }
    return out;
  }
};

using optimizer_test::bytes_of;
using optimizer_test::require_same;

const std::vector<std::int64_t> sizes = {4096, 33, 1025, 0, 278011, 64, 8192, 1};

template <class Config>
std::vector<typename Config::hyper> decay_no_decay(int groups) {
  std::vector<typename Config::hyper> h(groups);
  for (int g = 0; g < groups; ++g) {
    h[g].lr = 1e-3 * (1 + g);
    h[g].weight_decay = g % 2 == 0 ? 0.1 : 0.0;
    if constexpr (std::is_same<typename Config::rule, rule::sgd>::value) h[g].momentum = 0.9;
  }
  return h;
}

template <class Config>
void check_against_cpu(int groups, std::uint64_t seed) {
  model<Config> m(sizes, seed);
  std::vector<int> group_of(sizes.size());
  for (std::size_t i = 0; i < sizes.size(); ++i) group_of[i] = static_cast<int>((i * 3) % groups);
  const auto h = decay_no_decay<Config>(groups);
  device::optimizer<Config> dev;
  cpu::optimizer<Config> host;
  optim::optimizer_options o;
  o.seed = seed;
  o.lr_check = optim::lr_check_mode::off;
  STATUS_OK(dev.init(m.groups(h, group_of, true), o));
  STATUS_OK(host.init(m.groups(h, group_of, false), o));
  CHECK(dev.launches() == static_cast<std::size_t>((groups + tuning::max_step_groups - 1) / tuning::max_step_groups));
  require_same<Config>(dev, host, "after init");
  testdata::generator gen(seed + 1);
  for (int s = 1; s <= 5; ++s) {
    m.new_grads(gen);
    if (s == 3) {
      STATUS_OK(dev.set_lr(groups - 1, 7e-4));
      STATUS_OK(host.set_lr(groups - 1, 7e-4));
    }
    STATUS_OK(dev.step_async(nullptr));
    STATUS_OK(host.step());
    require_same<Config>(dev, host, "after a step");
  }
  std::int64_t count = 0;
  STATUS_OK(dev.step_count(count));
  CHECK(count == 5);
  CHECK(host.step_count() == 5);
}

/// A device and a CPU optimizer over the same model: two groups (decay /
/// no decay) alternating over the tensors, the lr check off.
template <class Config>
struct twins {
  device::optimizer<Config> dev;
  cpu::optimizer<Config> host;
  explicit twins(model<Config>& m) {
    const std::vector<int> group_of = {0, 1, 0, 1, 0, 1, 0, 1};
    const auto h = decay_no_decay<Config>(2);
    optim::optimizer_options o;
    o.lr_check = optim::lr_check_mode::off;
    STATUS_OK(dev.init(m.groups(h, group_of, true), o));
    STATUS_OK(host.init(m.groups(h, group_of, false), o));
  }
};

}  // namespace

TEST_CASE("device optimizer == cpu optimizer, groups in one launch and in several") {
  for (int groups : {1, 2, 3, tuning::max_step_groups, tuning::max_step_groups + 2}) {
    CAPTURE(groups);
    check_against_cpu<tc::adamw_default>(groups, 11);
    check_against_cpu<tc::sgd_momentum>(groups, 12);
  }
  check_against_cpu<tc::lion_default>(2, 13);
  check_against_cpu<tc::adamw_fp32_native>(2, 14);
  check_against_cpu<tc::adamw_bf16_master>(2, 15);
  check_against_cpu<tc::adamw_amsgrad_default>(2, 16);
}

TEST_CASE("device optimizer: the gradient pass (clip, skip, loss scale) == cpu optimizer's") {
  using C = tc::adamw_default;
  model<C> m(sizes, 21);
  twins<C> t(m);
  auto& dev = t.dev;
  auto& host = t.host;
  grad_pass_config cfg;
  cfg.max_norm = 0.5;
  cfg.scaler.enabled = true;
  cfg.scaler.init_scale = 1024.0;
  cfg.scaler.growth_interval = 2;
  STATUS_OK(dev.set_grad_pass(cfg));
  grad_control ctl = rule::initial_control(cfg);
  testdata::generator gen(22);
  for (int s = 1; s <= 6; ++s) {
    m.new_grads(gen, /*non_finite=*/s == 4);
    STATUS_OK(dev.step_async(nullptr));
    STATUS_OK(host.step(cfg, ctl));
    require_same<C>(dev, host, "after a step with the pass");
    device::optimizer_control dc;
    STATUS_OK(dev.read_control(dc));
    CHECK(std::memcmp(&dc.control, &ctl, sizeof(ctl)) == 0);
    std::int64_t count = 0;
    STATUS_OK(dev.step_count(count));
    CHECK(count == host.step_count());
  }
  CHECK(host.step_count() < 6);  // the non-finite step was skipped
}

TEST_CASE("device optimizer: a CUDA graph of the whole step replays with the device lr") {
  using C = tc::adamw_default;
  model<C> m(sizes, 31);
  twins<C> t(m);
  auto& dev = t.dev;
  auto& host = t.host;
  grad_pass_config cfg;
  cfg.max_norm = 1.0;
  cfg.scaler.enabled = false;  // clipping only
  STATUS_OK(dev.set_grad_pass(cfg));
  grad_control ctl = rule::initial_control(cfg);
  cudaStream_t stream;
  GPU_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  cudaGraph_t graph;
  GPU_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
  const status captured = dev.step_async(stream);
  GPU_CHECK(cudaStreamEndCapture(stream, &graph));
  STATUS_OK(captured);
  cudaGraphExec_t exec;
  GPU_CHECK(cudaGraphInstantiate(&exec, graph, 0));
  testdata::generator gen(32);
  for (int s = 1; s <= 5; ++s) {
    m.new_grads(gen);
    const double lr = 1e-3 * (1.0 + 0.5 * s);  // a schedule: the device value changes between replays
    STATUS_OK(dev.set_lr(0, lr, stream));
    STATUS_OK(host.set_lr(0, lr));
    GPU_CHECK(cudaGraphLaunch(exec, stream));
    GPU_CHECK(cudaStreamSynchronize(stream));
    STATUS_OK(host.step(cfg, ctl));
    require_same<C>(dev, host, "after a replay");
  }
  GPU_CHECK(cudaGraphExecDestroy(exec));
  GPU_CHECK(cudaGraphDestroy(graph));
  GPU_CHECK(cudaStreamDestroy(stream));
}

TEST_CASE("device optimizer: gradient release in random order == the whole step") {
  using C = tc::adamw_default;
  model<C> a(sizes, 41), b(sizes, 41);
  const std::vector<int> group_of = {0, 1, 0, 1, 0, 1, 0, 1};
  const auto h = decay_no_decay<C>(2);
  device::optimizer<C> whole, released;
  optim::optimizer_options o;
  o.lr_check = optim::lr_check_mode::off;
  STATUS_OK(whole.init(a.groups(h, group_of, true), o));
  STATUS_OK(released.init(b.groups(h, group_of, true), o));
  STATUS_OK(released.enable_release());
  testdata::generator ga(42), gb(42);
  std::mt19937 rng(43);
  for (int s = 1; s <= 4; ++s) {
    a.new_grads(ga);
    b.new_grads(gb);
    STATUS_OK(whole.step_async(nullptr));
    std::vector<std::size_t> order(sizes.size());
    std::iota(order.begin(), order.end(), 0);
    std::shuffle(order.begin(), order.end(), rng);
    STATUS_OK(released.begin_step());
    for (std::size_t i : order) STATUS_OK(released.step_tensor_async(i, nullptr));
    STATUS_OK(released.end_step_async(nullptr));
    GPU_CHECK(cudaDeviceSynchronize());
    for (std::size_t i = 0; i < sizes.size(); ++i) {
      const auto& x = whole.tensors()[i];
      const auto& y = released.tensors()[i];
      REQUIRE(bytes_of(x.param, x.size) == bytes_of(y.param, y.size));
      REQUIRE(bytes_of(x.aux, x.size) == bytes_of(y.aux, y.size));
      REQUIRE(bytes_of(slot_at<0>(x.states).codes, x.size) == bytes_of(slot_at<0>(y.states).codes, y.size));
      REQUIRE(bytes_of(slot_at<1>(x.states).codes, x.size) == bytes_of(slot_at<1>(y.states).codes, y.size));
    }
  }
  // Misuse is refused and writes nothing.
  CHECK_FALSE(released.step_tensor_async(0, nullptr).ok());  // no step open
  STATUS_OK(released.begin_step());
  STATUS_OK(released.step_tensor_async(2, nullptr));
  CHECK_FALSE(released.step_tensor_async(2, nullptr).ok());  // twice
  CHECK_FALSE(released.end_step_async(nullptr).ok());        // others missing
  CHECK_FALSE(released.step_async(nullptr).ok());            // a whole step inside a release step
  CHECK_FALSE(released.set_lr(0, 1e-4).ok());                // hyperparameters change only between steps
  grad_pass_config cfg;
  CHECK_FALSE(released.set_grad_pass(cfg).ok());
}

TEST_CASE("device optimizer: memory report and refused inputs") {
  using C = tc::adamw_default;
  const std::vector<std::int64_t> whole_groups = {4096, 32 * 1000, 64};
  model<C> m(whole_groups, 51);
  device::optimizer<C> dev;
  optim::optimizer_options o;
  o.lr_check = optim::lr_check_mode::off;
  const auto h = decay_no_decay<C>(1);
  STATUS_OK(dev.init(m.groups(h, {0, 0, 0}, true), o));
  const optim::memory_report r = dev.memory();
  CHECK(r.elements == 4096 + 32000 + 64);
  CHECK(r.bytes_per_param(false) == doctest::Approx(5.25));  // bf16 + int8 correction + 8-bit states
  CHECK(r.bytes_per_param(true) == doctest::Approx(7.25));
  CHECK(r.table_bytes > 0);
  CHECK(r.arena_bytes >= r.correction_bytes + r.state_code_bytes + r.state_scale_bytes);

  // Host memory is refused (the device optimizer needs device memory).
  std::vector<bf16> host_param(64), host_grad(64);
  std::vector<optim::param_group<C>> bad(1);
  bad[0].hyper = h[0];
  optim::param_spec s;
  s.param = host_param.data();
  s.grad = host_grad.data();
  s.size = 64;
  bad[0].params.push_back(s);
  device::optimizer<C> other;
  CHECK_FALSE(other.init(bad, o).ok());
  CHECK_FALSE(other.initialized());
  // A gradient over a parameter, an invalid hyper, a second init that fails: the first stays.
  // (A null gradient is not an error: the tensor starts unbound, test_gpu_optimizer_offload.)
  auto g = m.groups(h, {0, 0, 0}, true);
  g[0].params[1].grad = g[0].params[1].param;
  CHECK(dev.init(g, o).code() == status_code::aliasing);
  CHECK(dev.initialized());
  CHECK(dev.tensor_count() == 3);
  auto g2 = m.groups(h, {0, 0, 0}, true);
  g2[0].hyper.lr = -1.0;
  CHECK_FALSE(dev.init(g2, o).ok());
  CHECK_FALSE(dev.set_lr(0, -1.0).ok());
  CHECK_FALSE(dev.set_lr(5, 1e-3).ok());
  CHECK(dev.hyper(0).lr == h[0].lr);
}

// Two configurations (bf16 + int8 correction for matrices, fp32 for norms)
// with one shared gradient pass: the set's step == a CPU pass over every
// gradient of both and each CPU optimizer stepped with its multiplier.
TEST_CASE("optimizer_set: two configurations, one gradient pass") {
  using A = tc::adamw_default;
  using B = tc::adamw_fp32_native;
  model<A> ma({4096, 278011, 1025}, 61);
  model<B> mb({2048, 33, 64}, 62);
  const auto ha = decay_no_decay<A>(2);
  auto hb = decay_no_decay<B>(1);
  hb[0].weight_decay = 0.0;
  device::optimizer<A> da;
  device::optimizer<B> db;
  cpu::optimizer<A> ca;
  cpu::optimizer<B> cb;
  optim::optimizer_options o;
  o.lr_check = optim::lr_check_mode::off;
  STATUS_OK(da.init(ma.groups(ha, {0, 0, 1}, true), o));
  STATUS_OK(db.init(mb.groups(hb, {0, 0, 0}, true), o));
  STATUS_OK(ca.init(ma.groups(ha, {0, 0, 1}, false), o));
  STATUS_OK(cb.init(mb.groups(hb, {0, 0, 0}, false), o));
  device::optimizer_set<device::optimizer<A>, device::optimizer<B>> set(da, db);
  grad_pass_config cfg;
  cfg.max_norm = 0.25;
  cfg.scaler.init_scale = 256.0;
  cfg.scaler.growth_interval = 2;
  STATUS_OK(set.set_grad_pass(cfg));
  grad_control ctl = rule::initial_control(cfg);
  testdata::generator ga(63), gb(64);
  for (int s = 1; s <= 5; ++s) {
    ma.new_grads(ga, s == 3);
    mb.new_grads(gb);
    STATUS_OK(set.step_async(nullptr));
    // CPU: one pass over both gradient lists, then each optimizer.
    std::vector<grad_tensor> grads;
    for (const auto& t : ca.tensors()) grads.push_back(grad_tensor{t.grad, dtype::bf16, t.size});
    for (const auto& t : cb.tensors()) grads.push_back(grad_tensor{t.grad, dtype::f32, t.size});
    STATUS_OK(cpu::grad_pass(grad_list{grads.data(), static_cast<std::int64_t>(grads.size())}, cfg, &ctl));
    if (!ctl.skip) {
      STATUS_OK(ca.begin_step(ctl.multiplier));
      for (std::size_t i = 0; i < ca.tensor_count(); ++i) STATUS_OK(ca.step_tensor(i));
      STATUS_OK(ca.end_step());
      STATUS_OK(cb.begin_step(ctl.multiplier));
      for (std::size_t i = 0; i < cb.tensor_count(); ++i) STATUS_OK(cb.step_tensor(i));
      STATUS_OK(cb.end_step());
    }
    require_same<A>(da, ca, "bf16 member");
    require_same<B>(db, cb, "fp32 member");
    grad_control dc;
    STATUS_OK(set.read_control(dc));
    CHECK(std::memcmp(&dc, &ctl, sizeof(ctl)) == 0);
  }
  std::int64_t n = 0;
  STATUS_OK(da.step_count(n));
  CHECK(n == ca.step_count());
  CHECK(n == 4);  // step 3 overflowed and was skipped
}
