// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// device::save / device::load (optim/device_optimizer_io.cuh): a whole
// optimizer with parameter groups resumes bit-identically; a file of other
// groups is refused and nothing is written. And the lr check of the device
// optimizer: the report, the one-line warning, strict mode.
#include <cuda_runtime.h>
#include <doctest/doctest.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "common/configs.hpp"
#include "common/data.hpp"
#include "common/gpu_check.hpp"
#include "flashoptim/optim/device_optimizer_io.cuh"

using namespace flashoptim;
namespace tc = testconfigs;
using C = tc::adamw_default;

namespace {

struct weights {
  std::vector<std::int64_t> sizes{4096, 33, 1025, 64};
  std::vector<bf16*> p;
  std::vector<bf16*> g;
  explicit weights(std::uint64_t seed, float scale = 1.0f) {
    testdata::generator gen(seed);
    for (auto n : sizes) {
      std::vector<bf16> h(static_cast<std::size_t>(n));
      for (auto& x : h) x = format::from_float<bf16>(scale * gen.normal());
      bf16 *dp = nullptr, *dg = nullptr;
      GPU_CHECK(cudaMalloc(&dp, n * sizeof(bf16)));
      GPU_CHECK(cudaMalloc(&dg, n * sizeof(bf16)));
      GPU_CHECK(cudaMemcpy(dp, h.data(), n * sizeof(bf16), cudaMemcpyHostToDevice));
      p.push_back(dp);
      g.push_back(dg);
    }
  }
  ~weights() {
    for (auto* x : p) cudaFree(x);
    for (auto* x : g) cudaFree(x);
  }
  void grads(testdata::generator& gen) {
    for (std::size_t i = 0; i < sizes.size(); ++i) {
      std::vector<bf16> h(static_cast<std::size_t>(sizes[i]));
      for (auto& x : h) x = format::from_float<bf16>(gen.normal());
      GPU_CHECK(cudaMemcpy(g[i], h.data(), h.size() * sizeof(bf16), cudaMemcpyHostToDevice));
    }
  }
  std::vector<optim::param_group<C>> groups(double lr = 1e-3) {
    std::vector<optim::param_group<C>> out(2);
    out[0].hyper.lr = lr;
    out[0].hyper.weight_decay = 0.1;
    out[1].hyper.lr = lr;
    out[1].hyper.weight_decay = 0.0;
    for (std::size_t i = 0; i < sizes.size(); ++i) {
      optim::param_spec s;
      s.param = p[i];
      s.grad = g[i];
      s.size = sizes[i];
      s.name = "layer" + std::to_string(i);
      out[i % 2].params.push_back(s);
    }
    return out;
  }
  std::vector<unsigned char> bytes() const {
    std::vector<unsigned char> all;
    for (std::size_t i = 0; i < sizes.size(); ++i) {
      std::vector<unsigned char> b(static_cast<std::size_t>(sizes[i]) * sizeof(bf16));
      GPU_CHECK(cudaMemcpy(b.data(), p[i], b.size(), cudaMemcpyDeviceToHost));
      all.insert(all.end(), b.begin(), b.end());
    }
    return all;
  }
};

std::vector<unsigned char> state_bytes(const device::optimizer<C>& opt) {
  device::optimizer<C>::host_copy h;
  REQUIRE(opt.copy_to_host(h).ok());
  return h.arena;
}

}  // namespace

TEST_CASE("device optimizer checkpoint: resume is bit-identical, other groups are refused") {
  const std::string path = "device_optimizer_io_test.fo";
  weights a(1), b(1);
  device::optimizer<C> run, resumed;
  optim::optimizer_options o;
  o.seed = 7;
  STATUS_OK(run.init(a.groups(), o));
  testdata::generator ga(2);
  for (int s = 0; s < 3; ++s) {
    a.grads(ga);
    STATUS_OK(run.step_async(nullptr));
  }
  STATUS_OK(run.set_lr(1, 5e-4));
  STATUS_OK(device::save(run, path));
  // A fresh optimizer over other weights of the same shapes loads the file.
  STATUS_OK(resumed.init(b.groups(), o));
  STATUS_OK(device::load(resumed, path));
  CHECK(resumed.hyper(1).lr == 5e-4);
  std::int64_t n = 0;
  STATUS_OK(resumed.step_count(n));
  CHECK(n == 3);
  CHECK(a.bytes() == b.bytes());
  CHECK(state_bytes(run) == state_bytes(resumed));
  testdata::generator g1(3), g2(3);
  for (int s = 0; s < 3; ++s) {
    a.grads(g1);
    b.grads(g2);
    STATUS_OK(run.step_async(nullptr));
    STATUS_OK(resumed.step_async(nullptr));
  }
  CHECK(a.bytes() == b.bytes());
  CHECK(state_bytes(run) == state_bytes(resumed));

  // Other groups (every tensor in group 0): refused, nothing written.
  weights c(4);
  device::optimizer<C> other;
  auto one = c.groups();
  for (auto& s : one[1].params) one[0].params.push_back(s);
  one[1].params.clear();
  STATUS_OK(other.init(one, o));
  const auto before = c.bytes();
  const auto states_before = state_bytes(other);
  CHECK_FALSE(device::load(other, path).ok());
  CHECK(c.bytes() == before);
  CHECK(state_bytes(other) == states_before);
  std::remove(path.c_str());
}

TEST_CASE("device optimizer lr check: report, strict refusal") {
  // Weights in [1, 1.5) (scale 0: every weight 0 -> use a constant): bf16 +
  // int8 correction cannot take lr 1e-5 (docs/lr-check.md).
  weights w(5, 0.0f);
  for (std::size_t i = 0; i < w.sizes.size(); ++i) {
    std::vector<bf16> h(static_cast<std::size_t>(w.sizes[i]), format::from_float<bf16>(1.25f));
    GPU_CHECK(cudaMemcpy(w.p[i], h.data(), h.size() * sizeof(bf16), cudaMemcpyHostToDevice));
  }
  auto groups = w.groups(1e-5);
  for (auto& g : groups) g.hyper.weight_decay = 0.0;  // the update alone decides (docs/lr-check.md)
  device::optimizer<C> opt;
  optim::optimizer_options o;
  o.lr_check = optim::lr_check_mode::report;
  STATUS_OK(opt.init(groups, o));
  CHECK(opt.lr_report().cannot_move.size() == w.sizes.size());
  STATUS_OK(opt.set_lr(0, 1e-2));
  STATUS_OK(opt.set_lr(1, 1e-2));
  CHECK(opt.lr_report().empty());

  o.lr_check = optim::lr_check_mode::strict;
  device::optimizer<C> strict;
  STATUS_OK(strict.init(groups, o));
  testdata::generator gen(6);
  w.grads(gen);
  const auto before = w.bytes();
  CHECK(strict.step_async(nullptr).code() == status_code::hyperparameter_out_of_range);
  GPU_CHECK(cudaDeviceSynchronize());
  CHECK(w.bytes() == before);
  STATUS_OK(strict.set_lr(0, 1e-2));
  STATUS_OK(strict.set_lr(1, 1e-2));
  STATUS_OK(strict.step_async(nullptr));
  GPU_CHECK(cudaDeviceSynchronize());
  CHECK(w.bytes() != before);
}
