// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// cpu::save / cpu::load (optim/cpu_optimizer_io.hpp): a run saved after some
// steps and loaded into a fresh optimizer continues byte for byte as the
// uninterrupted one, every group's hyperparameters and the step count
// restored; refused loads write nothing.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <unistd.h>
#include <vector>

#include <doctest/doctest.h>

#include "common/configs.hpp"
#include "common/data.hpp"
#include "flashoptim/optim/cpu_optimizer_io.hpp"

using namespace testconfigs;
namespace optim = flashoptim::optim;
using flashoptim::status_code;

namespace {

std::string temp_path(const std::string& leaf) {
  static int counter = 0;
  const char* dir = std::getenv("TMPDIR");
  return std::string(dir ? dir : "/tmp") + "/flashoptim_optim_" + std::to_string(::getpid()) + "_" +
         std::to_string(counter++) + "_" + leaf;
}

/// Params and grads of three tensors (two groups); `from` seeds the weights.
template <class Config>
struct model {
  std::vector<std::int64_t> sizes{100, 33, 2048};
  std::vector<std::vector<typename Config::param_type>> params;
  std::vector<std::vector<typename Config::grad_type>> grads;
  std::vector<std::vector<float>> fp32;
  explicit model(std::uint64_t seed) {
    testdata::generator gen(seed);
    for (auto n : sizes) {
      params.emplace_back(static_cast<std::size_t>(n));
      grads.emplace_back(static_cast<std::size_t>(n));
      fp32.push_back(gen.values(static_cast<std::size_t>(n), 0.5f, 0.0));
    }
  }
  std::vector<optim::param_group<Config>> groups(double lr, bool swap_groups = false) {
    std::vector<optim::param_group<Config>> gs(2);
    gs[0].hyper.lr = lr;
    gs[0].hyper.weight_decay = 0.1;
    gs[1].hyper.lr = lr;
    gs[1].hyper.weight_decay = 0.0;
    for (std::size_t i = 0; i < sizes.size(); ++i) {
      optim::param_spec s;
      s.param = params[i].data();
      s.grad = grads[i].data();
      s.size = sizes[i];
      s.name = "layer" + std::to_string(i);
      s.init_fp32 = fp32[i].data();
      gs[(i == 2) != swap_groups ? 1 : 0].params.push_back(s);
    }
    return gs;
  }
  void set_grads(std::uint64_t seed) {
    testdata::generator gen(seed);
    for (auto& g : grads)
      for (auto& x : g) x = flashoptim::format::from_float<typename Config::grad_type>(gen.normal(1.0f));
  }
};

template <class Config>
std::vector<std::uint8_t> written_bytes(const flashoptim::cpu::optimizer<Config>& o) {
  std::vector<std::uint8_t> out;
  for (const auto& v : o.tensors())
    flashoptim::for_each_buffer(v, [&](const char*, const void* p, std::size_t bytes, bool written) {
      if (!written || p == nullptr) return;
      const auto* b = static_cast<const std::uint8_t*>(p);
      out.insert(out.end(), b, b + bytes);
    });
  return out;
}

}  // namespace

TEST_CASE_TEMPLATE("save, load into a fresh optimizer, continue == the uninterrupted run, bitwise", Config,
                   adamw_default, adamw_sr_codes, lion_default) {
  const std::string path = temp_path("resume.safetensors");
  const optim::optimizer_options oo{11, optim::lr_check_mode::off};
  model<Config> a(1), b(2);  // b starts from other weights
  flashoptim::cpu::optimizer<Config> run, resumed;
  REQUIRE(run.init(a.groups(1e-3), oo).ok());
  REQUIRE(run.set_lr(1, 5e-4).ok());
  for (int s = 1; s <= 3; ++s) {
    a.set_grads(100 + s);
    REQUIRE(run.step().ok());
  }
  REQUIRE(flashoptim::cpu::save(run, path).ok());

  REQUIRE(resumed.init(b.groups(7e-3), oo).ok());
  REQUIRE(flashoptim::cpu::load(resumed, path).ok());
  CHECK(resumed.step_count() == 3);
  CHECK(resumed.hyper(0).lr == 1e-3);
  CHECK(resumed.hyper(1).lr == 5e-4);
  CHECK(written_bytes(resumed) == written_bytes(run));
  for (int s = 4; s <= 6; ++s) {
    a.set_grads(100 + s);
    b.set_grads(100 + s);
    REQUIRE(run.step().ok());
    REQUIRE(resumed.step().ok());
    CHECK(written_bytes(resumed) == written_bytes(run));
  }
  std::remove(path.c_str());
}

TEST_CASE("refused saves and loads write nothing") {
  using Config = adamw_default;
  const std::string path = temp_path("refused.safetensors");
  model<Config> a(1), b(2);
  flashoptim::cpu::optimizer<Config> run;
  REQUIRE(run.init(a.groups(1e-3)).ok());
  a.set_grads(5);
  REQUIRE(run.step().ok());
  REQUIRE(flashoptim::cpu::save(run, path).ok());

  flashoptim::cpu::optimizer<Config> none;
  CHECK(flashoptim::cpu::save(none, path).code() == status_code::invalid_argument);
  CHECK(flashoptim::cpu::load(none, path).code() == status_code::invalid_argument);

  SUBCASE("another group assignment") {
    flashoptim::cpu::optimizer<Config> other;
    REQUIRE(other.init(b.groups(2e-3, true)).ok());
    const auto before = written_bytes(other);
    CHECK(flashoptim::cpu::load(other, path).code() == status_code::config_mismatch);
    CHECK(written_bytes(other) == before);
    CHECK(other.step_count() == 0);
    CHECK(other.hyper(0).lr == 2e-3);
  }
  SUBCASE("another group count") {
    auto gs = b.groups(2e-3);
    gs.emplace_back();  // a third, empty group
    flashoptim::cpu::optimizer<Config> other;
    REQUIRE(other.init(gs).ok());
    const auto before = written_bytes(other);
    CHECK(flashoptim::cpu::load(other, path).code() == status_code::config_mismatch);
    CHECK(written_bytes(other) == before);
    CHECK(other.step_count() == 0);
  }
  SUBCASE("inside a release step") {
    flashoptim::cpu::optimizer<Config> other;
    REQUIRE(other.init(b.groups(2e-3)).ok());
    REQUIRE(other.begin_step().ok());
    REQUIRE(other.step_tensor(0).ok());
    const auto before = written_bytes(other);
    CHECK(flashoptim::cpu::load(other, path).code() == status_code::invalid_argument);
    CHECK(flashoptim::cpu::save(other, temp_path("open.safetensors")).code() == status_code::invalid_argument);
    CHECK(written_bytes(other) == before);
  }
  SUBCASE("a missing file") {
    flashoptim::cpu::optimizer<Config> other;
    REQUIRE(other.init(b.groups(2e-3)).ok());
    const auto before = written_bytes(other);
    CHECK(!flashoptim::cpu::load(other, path + ".missing").ok());
    CHECK(written_bytes(other) == before);
  }
  std::remove(path.c_str());
}
