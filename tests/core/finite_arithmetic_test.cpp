// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// The finite-arithmetic rule (docs/finite-arithmetic.md), case by case:
// (a) hyperparameters are validated as the step uses them, after conversion
//     to fp32: values finite in double but not in fp32, or an eps or
//     gradient multiplier that rounds to 0, are refused and nothing is
//     written;
// (b) no finite gradient, state or hyperparameter gives a non-finite
//     parameter or state: overflows saturate, and a finite value beyond a
//     storage format's range is stored as its largest finite value.
// Non-finite inputs still propagate, and the reference layout keeps the
// paper's arithmetic.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <string>

#include "common/configs.hpp"
#include "common/typed_tensor.hpp"
#include "flashoptim/cpu/step.hpp"

namespace {

using namespace flashoptim;
using namespace testconfigs;
using testutil::typed_tensor;

template <class Config>
status step_once(const typename Config::hyper& h, typed_tensor<Config>& t, std::int64_t step = 1,
                 double inv_grad_scale = 1.0) {
  step_args a;
  a.step = step;
  a.inv_grad_scale = inv_grad_scale;
  auto v = t.view(3);
  return cpu::step_serial<Config>(h, a, &v, 1);
}

/// Refused with hyperparameter_out_of_range naming `what`, nothing written;
/// cpu::step refuses alike.
template <class Config>
void expect_refused(const typename Config::hyper& h, const char* what, double inv_grad_scale = 1.0) {
  typed_tensor<Config> t(40);
  for (int i = 0; i < 40; ++i) {
    t.set_master(i, 0.5f);
    t.set_grad(i, i % 3 ? 1.0f : 0.0f);
  }
  const auto before = t.bytes();
  const status s = step_once(h, t, 1, inv_grad_scale);
  INFO(Config::rule::name, ": ", what, " -> ", s.what());
  CHECK(s.code() == status_code::hyperparameter_out_of_range);
  CHECK(std::strstr(s.what(), what) != nullptr);
  CHECK(std::strstr(s.what(), "fp32") != nullptr);
  CHECK(t.bytes() == before);
  step_args a;
  a.inv_grad_scale = inv_grad_scale;
  auto v = t.view(3);
  CHECK(cpu::step<Config>(h, a, &v, 1).code() == status_code::hyperparameter_out_of_range);
  CHECK(t.bytes() == before);
}

bool finite(float x) { return std::isfinite(x); }

template <class Config>
bool all_finite(const typed_tensor<Config>& t) {
  for (std::int64_t i = 0; i < t.n; ++i)
    if (!finite(format::to_float(t.param[i])) || !finite(t.master(i))) return false;
  for (int slot = 0; slot < 2; ++slot) {
    if (slot == 0 && !Config::state0::stores_state) continue;
    if (slot == 1 && !Config::state1::stores_state) continue;
    for (float x : t.state(slot))
      if (!finite(x)) return false;
  }
  return true;
}

}  // namespace

TEST_CASE("finite (a): hyperparameters are validated as the fp32 scalars the step uses") {
  {
    adamw_default::hyper h;
    h.eps = 1e-46;  // > 0 in double, 0 in fp32: 0 / 0 where g = m = v = 0
    expect_refused<adamw_default>(h, "eps");
    CHECK(rule::adamw::validate(h).code() == status_code::hyperparameter_out_of_range);  // the loaders' check
    h.eps = 1e-45;  // the smallest fp32 subnormal: accepted
    CHECK(rule::adamw::validate(h).ok());
  }
  {
    adamw_default::hyper h;
    h.lr = 1e39;
    expect_refused<adamw_default>(h, "step size");
  }
  {
    adamw_default::hyper h;
    h.weight_decay = 1e39;
    expect_refused<adamw_default>(h, "weight_decay");
  }
  {
    adam_default::hyper h;
    h.weight_decay = 1e39;
    expect_refused<adam_default>(h, "weight_decay");
  }
  {
    adamw_default::hyper h;
    h.weight_decay = 1.0;
    h.decouple_lr = true;
    h.initial_lr = 1e-300;  // wd * lr / initial_lr = 1e297: the decay factor is -inf in fp32
    expect_refused<adamw_default>(h, "decay factor");
  }
  expect_refused<adamw_default>(adamw_default::hyper{}, "inv_grad_scale", 1e39);   // out of range
  expect_refused<adamw_default>(adamw_default::hyper{}, "inv_grad_scale", 1e-50);  // rounds to 0
  {
    sgd_momentum::hyper h;
    h.momentum = 1e39;
    expect_refused<sgd_momentum>(h, "momentum");
    h.momentum = 0.9;
    h.lr = 1e39;
    expect_refused<sgd_momentum>(h, "lr");
    h.lr = 1e-3;
    h.weight_decay = 1e39;
    expect_refused<sgd_momentum>(h, "weight_decay");
  }
  {
    sgdw_momentum::hyper h;
    h.momentum = 0.9;
    h.weight_decay = 0.1;
    h.decouple_lr = true;
    h.initial_lr = 1e-300;
    expect_refused<sgdw_momentum>(h, "decay factor");
  }
  {
    lion_default::hyper h;
    h.lr = 1e39;
    expect_refused<lion_default>(h, "lr");
    h.lr = 1e-4;
    h.weight_decay = 0.1;
    h.decouple_lr = true;
    h.initial_lr = 1e-300;
    expect_refused<lion_default>(h, "decay factor");
  }
  // The largest values that are finite in fp32 pass.
  {
    adamw_default::hyper h;
    h.lr = 1e30;
    h.weight_decay = 1e6;
    h.eps = 1e-45;
    step_args a;
    a.inv_grad_scale = 1e38;
    CHECK(validate_step_args<adamw_default>(h, a).ok());
  }
}

TEST_CASE("finite (a): the scalar check is one host-device function per rule") {
  adamw_default::hyper h;
  h.eps = 1e-46;
  const auto s = rule::adamw::make_scalars(h, h.lr, 1, 1.0);
  const rule::scalar_fault f = rule::adamw::check_scalars(s);
  REQUIRE(static_cast<bool>(f));
  CHECK(std::string(f.what) == "eps");
  CHECK(f.rounds_to_zero);
  CHECK_FALSE(static_cast<bool>(rule::adamw::check_scalars(rule::adamw::make_scalars(adamw_default::hyper{}, 1e-3, 1, 1.0))));
}

TEST_CASE("finite (b): one AdamW gradient of 1e21 (finite in bf16) keeps the parameter finite") {
  // v = g^2 = 1e42 overflows fp32; stored as the non-finite marker it made
  // the parameter NaN from the next step. It saturates at FLT_MAX now (torch
  // keeps v = inf and freezes the element; this one keeps moving by a
  // bounded step).
  typed_tensor<adamw_default> t(64);
  for (int i = 0; i < 64; ++i) {
    t.set_master(i, 0.5f);
    t.set_grad(i, i == 5 ? 1e21f : 0.01f);
  }
  adamw_default::hyper h;
  for (int s = 1; s <= 3; ++s) {
    REQUIRE(step_once(h, t, s).ok());
    CHECK(all_finite(t));
    for (int i = 0; i < 64; ++i) t.set_grad(i, 0.01f);
  }
  CHECK(t.state(1)[5] > 1e38f);  // v saturated near FLT_MAX, not inf
  CHECK(t.master(5) < 0.5f);     // the element moved (by at most the step size)
  CHECK(t.master(5) > 0.4f);
}

TEST_CASE("finite (b): finite values beyond a storage format's range saturate to its largest value") {
  SUBCASE("fp16 states of 1e5") {
    typed_tensor<adamw_fp16_states> t(33);
    for (int i = 0; i < 33; ++i) {
      t.set_master(i, 1.0f);
      t.set_grad(i, 1e6f);  // m = 0.1 * g = 1e5 > 65504; v = 1e9
    }
    REQUIRE(step_once(adamw_fp16_states::hyper{}, t).ok());
    CHECK(all_finite(t));
    CHECK(t.state(0)[0] == 65504.0f);
    CHECK(t.state(1)[0] == 65504.0f);
  }
  SUBCASE("fp16 stochastic states") {
    typed_tensor<adamw_fp16_sr_states> t(33);
    for (int i = 0; i < 33; ++i) {
      t.set_master(i, 1.0f);
      t.set_grad(i, 1e6f);
    }
    REQUIRE(step_once(adamw_fp16_sr_states::hyper{}, t).ok());
    CHECK(all_finite(t));
  }
  SUBCASE("bf16 parameters near the largest bf16") {
    typed_tensor<adamw_bf16_native> t(33);
    for (int i = 0; i < 33; ++i) {
      t.set_master(i, -3.3e38f);
      t.set_grad(i, 1.0f);  // the update pushes further out
    }
    adamw_bf16_native::hyper h;
    h.lr = 1e37;
    h.weight_decay = 0;
    REQUIRE(step_once(h, t).ok());
    CHECK(all_finite(t));
    CHECK(format::to_float(t.param[0]) == -format::to_float(bf16{0x7f7f}));
  }
  SUBCASE("fp16 ULP-corrected parameters near 65504") {
    typed_tensor<adamw_fp16_ulp8> t(33);
    for (int i = 0; i < 33; ++i) {
      t.set_master(i, 65000.0f);
      t.set_grad(i, -1.0f);
    }
    adamw_fp16_ulp8::hyper h;
    h.lr = 1e4;
    h.weight_decay = 0;
    REQUIRE(step_once(h, t).ok());
    CHECK(all_finite(t));
    CHECK(format::to_float(t.param[0]) == 65504.0f);
  }
  SUBCASE("exact_split near FLT_MAX") {
    typed_tensor<adamw_exact> t(33);
    for (int i = 0; i < 33; ++i) {
      t.set_master(i, 3.39e38f);
      t.set_grad(i, -1.0f);
    }
    adamw_exact::hyper h;
    h.lr = 1e37;
    h.weight_decay = 0;
    REQUIRE(step_once(h, t).ok());
    CHECK(all_finite(t));
  }
  SUBCASE("a grouped second moment whose scale is near sqrt(FLT_MAX)") {
    // r = 1 * 2e19 decodes to r^2 = 4e38: inf from a finite stored state.
    typed_tensor<adamw_default> t(32);
    for (int i = 0; i < 32; ++i) {
      t.set_master(i, 1.0f);
      t.set_grad(i, 1.0f);
      t.code1[i] = 254;
    }
    t.scale1[0] = 2e19f;
    REQUIRE(step_once(adamw_default::hyper{}, t, 5).ok());
    CHECK(all_finite(t));
  }
  SUBCASE("the gradient multiplier overflows a finite gradient") {
    typed_tensor<sgd_momentum> t(40);
    for (int i = 0; i < 40; ++i) {
      t.set_master(i, 1.0f);
      t.set_grad(i, 1e30f);
    }
    sgd_momentum::hyper h;
    h.momentum = 0.9;
    REQUIRE(step_once(h, t, 1, 1e30).ok());  // g = 1e60 in fp32 is inf
    CHECK(all_finite(t));
  }
}

TEST_CASE("finite (b): non-finite inputs still propagate, one element wide") {
  typed_tensor<adamw_bf16_states> t(33);
  for (int i = 0; i < 33; ++i) {
    t.set_master(i, 1.0f);
    t.set_grad(i, i == 3 ? 1e21f : 1.0f);
  }
  t.grad[7] = format::from_float<bf16>(std::nanf(""));
  REQUIRE(step_once(adamw_bf16_states::hyper{}, t).ok());
  CHECK(std::isnan(t.master(7)));
  CHECK(finite(t.master(3)));
  CHECK(finite(t.state(1)[3]));
  for (int i = 0; i < 33; ++i)
    if (i != 7) CHECK(finite(t.master(i)));
}

TEST_CASE("finite (b): the reference layout keeps the paper's arithmetic") {
  // v overflows to inf as in the reference implementation: its group's
  // fp16 scale is inf (docs/codec-defaults.md lists the layout's failures).
  typed_tensor<adamw_reference> t(32);
  for (int i = 0; i < 32; ++i) {
    t.set_master(i, 0.5f);
    t.set_grad(i, i == 0 ? 1e21f : 0.01f);
  }
  REQUIRE(step_once(adamw_reference::hyper{}, t).ok());
  CHECK_FALSE(finite(format::to_float(t.scale1[0])));
}

TEST_CASE("finite: format::finite_limit is the largest value that converts finite") {
  auto check = [](auto tag, format::rounding mode) {
    using T = decltype(tag);
    const float limit = format::finite_limit<T>(mode);
    const float above = std::nextafter(limit, INFINITY);
    for (std::uint32_t r : {0u, 0xffffffffu, 0x80000000u}) {
      CHECK(finite(format::to_float(format::from_float<T>(limit, mode, r))));
      CHECK(finite(format::to_float(format::from_float<T>(-limit, mode, r))));
    }
    if (finite(above)) {
      const std::uint32_t r = mode == format::rounding::stochastic ? 0xffffffffu : 0u;
      CHECK_FALSE(finite(format::to_float(format::from_float<T>(above, mode, r))));
    }
  };
  for (auto mode : {format::rounding::nearest_even, format::rounding::stochastic}) {
    check(bf16{}, mode);
    check(fp16{}, mode);
    check(float{}, mode);
  }
  check(fp8_e4m3{}, format::rounding::nearest_even);  // saturating formats: FLT_MAX
  check(fp8_e5m2{}, format::rounding::nearest_even);
  CHECK(format::bits_of(format::finite_limit<bf16>()) == 0x7f7f7fffu);
  CHECK(format::finite_limit<fp16>() == std::nextafter(65520.0f, 0.0f));
  CHECK(format::finite_limit<fp16>(format::rounding::stochastic) == 65504.0f);
}

namespace {
/// A rule whose own range checks bound every state (as the GPU's
/// range-checked Adam declares, kernel/range_checked.cuh).
struct adamw_with_state_bounds : rule::adamw {
  static constexpr bool checks_state_bounds = true;
};
}  // namespace

TEST_CASE("finite: a rule that bounds its states leaves the guard only the compares its bounds do not imply") {
  namespace c = codec;
  using plain_cfg = step_config<rule::adamw, c::ulp_correction<bf16, std::int8_t>, bf16, c::defaults::momentum,
                                c::defaults::second_moment>;
  using bounded_cfg = step_config<adamw_with_state_bounds, c::ulp_correction<bf16, std::int8_t>, bf16,
                                  c::defaults::momentum, c::defaults::second_moment>;
  using bounded_fp16 = step_config<adamw_with_state_bounds, c::ulp_correction<bf16, std::int8_t>, bf16,
                                   c::precision::fp16, c::precision::fp16>;
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  // grouped states (limit FLT_MAX): the plain rule's guard flags a
  // non-finite m or v, the bounded rule's leaves them to its own checks
  for (const float bad : {inf, -inf, nan}) {
    const float m_bad[2] = {bad, 1.0f}, v_bad[2] = {1.0f, bad};
    CHECK(finite_guard<plain_cfg>::flagged(0.5f, m_bad));
    CHECK(finite_guard<plain_cfg>::flagged(0.5f, v_bad));
    CHECK_FALSE(finite_guard<bounded_cfg>::flagged(0.5f, m_bad));
    CHECK_FALSE(finite_guard<bounded_cfg>::flagged(0.5f, v_bad));
  }
  // the parameter's compare stays, and so does a state whose limit is its
  // format's (fp16: 65504), which no bound far below FLT_MAX implies
  const float fine[2] = {1.0f, 1.0f};
  CHECK(finite_guard<bounded_cfg>::flagged(inf, fine));
  CHECK(finite_guard<bounded_cfg>::flagged(3.4e38f, fine));  // finite, but beyond what bf16 stores finite
  CHECK_FALSE(finite_guard<bounded_cfg>::flagged(0.5f, fine));
  const float m_big[2] = {1e5f, 1.0f}, v_big[2] = {1.0f, 7e4f};
  CHECK(finite_guard<bounded_fp16>::flagged(0.5f, m_big));
  CHECK(finite_guard<bounded_fp16>::flagged(0.5f, v_big));
  CHECK_FALSE(finite_guard<bounded_fp16>::flagged(0.5f, fine));
}
