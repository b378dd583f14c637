// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// The CPU gradient pass (cpu/grad_pass.hpp) and the step scalars
// (rule/grad_scale.hpp): the sum of squares has the bits of the order of
// docs/grad-passes.md (written again in grad_pass_harness.hpp) for every
// thread count; the clip multiplier agrees with an fp64 model of torch's
// clip_grad_norm_; non-finite gradients of every type set the skip flag;
// GradScaler's scale and tracker follow torch's sequence; bad input is
// refused with nothing written.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <vector>

#include <unistd.h>

#include "flashoptim/cpu/grad_pass.hpp"
#include "passes/grad_pass_harness.hpp"

using namespace flashoptim;
using namespace grad_test;

namespace {

constexpr double inf = std::numeric_limits<double>::infinity();

/// Sizes around every boundary of the order: rows (128), chunks (1024),
/// segments (32768), and a tensor with two levels above its segments.
const std::int64_t edge_sizes[] = {0, 1, 3, 127, 128, 129, 1000, 1023, 1024, 1025, 4097, 32767, 32768, 32769,
                                   100003};

std::vector<host_grad> mixed_list(std::uint64_t seed, bool big = false) {
  std::vector<host_grad> gs;
  const dtype types[] = {dtype::f32, dtype::bf16, dtype::f16};
  int i = 0;
  for (std::int64_t n : edge_sizes) {
    const dtype t = types[i % 3];
    host_grad g = make_grad(t, n, i % 4 == 3 ? 1 : 0);  // some tensors not 16-byte aligned
    fill_random(g, seed + static_cast<std::uint64_t>(i), t == dtype::f16 ? 0.25f : 1.0f);
    gs.push_back(std::move(g));
    ++i;
  }
  if (big) {  // 33 segments: a second level above the segments
    host_grad g = make_grad(dtype::f32, 32 * 32768 + 32768 + 5);
    fill_random(g, seed + 99);
    gs.push_back(std::move(g));
  }
  return gs;
}

struct run_result {
  grad_summary summary;
  std::vector<double> sums, norms;
};

run_result stats(const std::vector<host_grad>& gs, int threads) {
  const auto v = views(gs);
  run_result r;
  r.sums.assign(gs.size(), -1.0);
  r.norms.assign(gs.size(), -1.0);
  cpu::grad_outputs out{&r.summary, r.sums.data(), r.norms.data()};
  cpu::grad_pass_options o;
  o.threads = threads;
  const status s = cpu::grad_stats(grad_list{v.data(), static_cast<std::int64_t>(v.size())}, out, o);
  REQUIRE_MESSAGE(s.ok(), s.what());
  return r;
}

void require_same(const run_result& a, const run_result& b) {
  CHECK(bits(a.summary.sum_squares) == bits(b.summary.sum_squares));
  CHECK(bits(a.summary.norm) == bits(b.summary.norm));
  CHECK(a.summary.max_abs_bits == b.summary.max_abs_bits);
  CHECK(a.summary.non_finite == b.summary.non_finite);
  CHECK(a.summary.elements == b.summary.elements);
  for (std::size_t t = 0; t < a.sums.size(); ++t) {
    CHECK(bits(a.sums[t]) == bits(b.sums[t]));
    CHECK(bits(a.norms[t]) == bits(b.norms[t]));
  }
}

status pass(const std::vector<host_grad>& gs, const grad_pass_config& c, grad_control& ctl,
            grad_summary* summary = nullptr, int threads = 0) {
  const auto v = views(gs);
  cpu::grad_outputs out;
  out.summary = summary;
  cpu::grad_pass_options o;
  o.threads = threads;
  return cpu::grad_pass(grad_list{v.data(), static_cast<std::int64_t>(v.size())}, c, &ctl, out, o);
}

}  // namespace

TEST_CASE("global norm: the bits of the documented order, computed independently") {
  for (std::uint64_t seed : {1u, 2u, 3u}) {
    const auto gs = mixed_list(seed, seed == 1);
    const reference_result ref = reference(gs);
    const run_result r = stats(gs, 1);
    CHECK(bits(r.summary.sum_squares) == bits(ref.sum));
    CHECK(bits(r.summary.norm) == bits(std::sqrt(ref.sum)));
    CHECK(r.summary.max_abs_bits == ref.max_bits);
    CHECK(r.summary.elements == ref.elements);
    CHECK(r.summary.non_finite == 0);
    for (std::size_t t = 0; t < gs.size(); ++t) {
      INFO("tensor ", t, " of ", gs[t].size, " elements");
      CHECK(bits(r.sums[t]) == bits(ref.tensor_sums[t]));
      CHECK(bits(r.norms[t]) == bits(std::sqrt(ref.tensor_sums[t])));
    }
  }
}

TEST_CASE("global norm: any thread count gives the same bits") {
  const auto gs = mixed_list(7, true);
  const run_result one = stats(gs, 1);
  for (int threads : {2, 3, 5, 8, 16, 0}) {
    INFO("threads ", threads);
    require_same(one, stats(gs, threads));
  }
}

TEST_CASE("global norm: a different order would give different bits (the test can see the order)") {
  // Summing the same squares sequentially differs from the tree on this
  // data, so the bit equality above checks the order, not just the sum.
  const auto gs = mixed_list(11, true);
  long double seq_check = 0;
  double seq = 0.0;
  for (const auto& g : gs)
    for (std::int64_t i = 0; i < g.size; ++i) {
      const double d = g.get(i);
      seq = format::add_rn(seq, format::mul_rn(d, d));
      seq_check += static_cast<long double>(d) * d;
    }
  const run_result r = stats(gs, 2);
  CHECK(bits(seq) != bits(r.summary.sum_squares));
  // ... and both are close to the exact sum.
  CHECK(std::fabs(static_cast<long double>(r.summary.sum_squares) - seq_check) / seq_check < 1e-13L);
}

TEST_CASE("fp16, bf16 and fp32 gradients holding the same values give the same bits") {
  // Values of 8 significant bits within fp16's range are exact in all three.
  std::vector<host_grad> lists[3];
  const dtype types[] = {dtype::f32, dtype::bf16, dtype::f16};
  for (int k = 0; k < 3; ++k) {
    host_grad g = make_grad(types[k], 40000, k);
    std::mt19937 rng(5);
    for (std::int64_t i = 0; i < g.size; ++i) {
      const int m = static_cast<int>(rng() % 255) - 127;
      g.set(i, std::ldexp(static_cast<float>(m), -static_cast<int>(rng() % 12)));
    }
    lists[k].push_back(std::move(g));
  }
  const run_result a = stats(lists[0], 2), b = stats(lists[1], 2), c = stats(lists[2], 2);
  require_same(a, b);
  require_same(a, c);
  CHECK(bits(a.summary.sum_squares) == bits(reference(lists[0]).sum));
}

TEST_CASE("empty tensors and empty lists") {
  SUBCASE("empty list") {
    grad_summary s;
    s.sum_squares = 5;
    cpu::grad_outputs out{&s, nullptr, nullptr};
    REQUIRE(cpu::grad_stats(grad_list{nullptr, 0}, out).ok());
    CHECK(bits(s.sum_squares) == bits(0.0));
    CHECK(bits(s.norm) == bits(0.0));
    CHECK(s.elements == 0);
    CHECK(s.max_abs_bits == 0);
    CHECK(s.non_finite == 0);
    // The pass still decides: no clipping needed, the scaler counts a good step.
    grad_pass_config c;
    c.max_norm = 1.0;
    grad_control ctl = rule::initial_control(c);
    REQUIRE(cpu::grad_pass(grad_list{nullptr, 0}, c, &ctl).ok());
    CHECK(ctl.skip == 0);
    CHECK(ctl.growth_tracker == 1);
    CHECK(ctl.loss_scale == 65536.0);
    CHECK(ctl.multiplier == 1.0 / 65536.0);
    CHECK(ctl.total_norm == 0.0);
    CHECK(ctl.clip_coef == 1.0);
  }
  SUBCASE("empty tensors among others, null data allowed") {
    std::vector<host_grad> gs;
    gs.push_back(make_grad(dtype::f32, 0));
    host_grad g = make_grad(dtype::bf16, 5000);
    fill_random(g, 3);
    gs.push_back(std::move(g));
    gs.push_back(make_grad(dtype::f16, 0));
    const run_result r = stats(gs, 2);
    CHECK(bits(r.sums[0]) == bits(0.0));
    CHECK(bits(r.sums[2]) == bits(0.0));
    CHECK(bits(r.summary.sum_squares) == bits(reference(gs).sum));
  }
}

TEST_CASE("non-finite gradients of every type set the flag and skip the step") {
  const dtype types[] = {dtype::f32, dtype::bf16, dtype::f16};
  // inf, -inf, a quiet NaN, a negative NaN with a payload, in each format's bits.
  const std::uint32_t f32_bad[] = {0x7f800000u, 0xff800000u, 0x7fc00000u, 0xffc01234u};
  const std::uint32_t half_bad[] = {0x7f80u, 0xff80u, 0x7fc0u, 0xffc1u};    // bf16
  const std::uint32_t fp16_bad[] = {0x7c00u, 0xfc00u, 0x7e00u, 0xfe01u};  // fp16
  for (int k = 0; k < 3; ++k) {
    for (int b = 0; b < 4; ++b) {
      for (std::int64_t at : {std::int64_t{0}, std::int64_t{1029}, std::int64_t{40000}}) {
        INFO("type ", to_string(types[k]), " bad value ", b, " at ", at);
        std::vector<host_grad> gs = mixed_list(21);
        host_grad g = make_grad(types[k], 40001);
        fill_random(g, 4, 0.25f);
        g.set_bits(at, k == 0 ? f32_bad[b] : (k == 1 ? half_bad[b] : fp16_bad[b]));
        gs.insert(gs.begin() + 5, std::move(g));
        grad_summary s;
        grad_pass_config c;
        c.max_norm = 1.0;
        grad_control ctl = rule::initial_control(c);
        REQUIRE(pass(gs, c, ctl, &s, 2).ok());
        CHECK(s.non_finite == 1);
        CHECK(ctl.skip == 1);
        CHECK(ctl.multiplier == 1.0);           // valid for the step, which writes nothing
        CHECK(ctl.loss_scale == 32768.0);       // backoff
        CHECK(ctl.growth_tracker == 0);
        const bool nan = b >= 2;
        CHECK(s.max_abs_bits == (nan ? 0x7fc00000u : 0x7f800000u));
        if (nan) {
          CHECK(bits(s.sum_squares) == grad_order::canonical_nan_bits);
          CHECK(bits(s.norm) == grad_order::canonical_nan_bits);
          CHECK(bits(ctl.total_norm) == grad_order::canonical_nan_bits);
          CHECK(bits(ctl.clip_coef) == grad_order::canonical_nan_bits);
        } else {
          CHECK(s.sum_squares == inf);
          CHECK(ctl.total_norm == inf);
          CHECK(bits(ctl.clip_coef) == bits(0.0));  // max_norm / inf: what torch would multiply by
        }
      }
    }
  }
  SUBCASE("max_norm = inf with an infinite gradient: inf / inf is a canonical NaN") {
    host_grad g = make_grad(dtype::f32, 10);
    g.set(3, std::numeric_limits<float>::infinity());
    grad_pass_config c;
    c.scaler.enabled = false;
    grad_control ctl = rule::initial_control(c);
    REQUIRE(pass({g}, c, ctl).ok());
    CHECK(ctl.skip == 1);
    CHECK(bits(ctl.clip_coef) == grad_order::canonical_nan_bits);
    CHECK(ctl.loss_scale == 1.0);  // no scaler: nothing to update
  }
}

TEST_CASE("clip multiplier: within 1 ulp of an fp64 model of torch's clip_grad_norm_") {
  SUBCASE("random gradients, with and without a loss scale, clipping or not") {
    for (std::uint64_t seed = 1; seed <= 12; ++seed) {
      const auto gs = mixed_list(100 + seed, seed == 1);
      for (double max_norm : {1e-3, 0.5, 1.0, 37.0, 1e6, inf}) {
        for (bool scaled : {false, true}) {
          grad_pass_config c;
          c.max_norm = max_norm;
          c.scaler.enabled = scaled;
          c.scaler.init_scale = 1024.0;
          grad_control ctl = rule::initial_control(c);
          REQUIRE(pass(gs, c, ctl).ok());
          const double inv = scaled ? 1.0 / 1024.0 : 1.0;
          double model_norm = 0;
          const double model = torch_model_multiplier(gs, max_norm, inv, &model_norm);
          INFO("seed ", seed, " max_norm ", max_norm, " scaled ", scaled, " ours ", ctl.multiplier, " model ", model);
          CHECK(ctl.skip == 0);
          CHECK(ulp_distance(ctl.multiplier, model) <= 1);
          CHECK(ulp_distance(ctl.total_norm, model_norm) <= 1);
          CHECK(ctl.inv_loss_scale == inv);
        }
      }
    }
  }
  SUBCASE("gradients whose sum of squares is exact: the model's bits") {
    // k * 2^-6 with |k| < 2^10: squares are multiples of 2^-12 below 2^8, so
    // every partial sum is exact in double whatever the order.
    std::vector<host_grad> gs;
    for (int t = 0; t < 3; ++t) {
      host_grad g = make_grad(dtype::f32, 70000 + t);
      std::mt19937 rng(t);
      for (std::int64_t i = 0; i < g.size; ++i)
        g.set(i, std::ldexp(static_cast<float>(static_cast<int>(rng() % 2047) - 1023), -6));
      gs.push_back(std::move(g));
    }
    for (double max_norm : {0.1, 10.0, 1000.0, inf}) {
      grad_pass_config c;
      c.max_norm = max_norm;
      grad_control ctl = rule::initial_control(c);
      REQUIRE(pass(gs, c, ctl).ok());
      CHECK(bits(ctl.multiplier) == bits(torch_model_multiplier(gs, max_norm, 1.0 / 65536.0)));
    }
  }
  SUBCASE("the clip coefficient is torch's formula") {
    CHECK(rule::clip_coef(10.0, 1.0) == 1.0 / (10.0 + 1e-6));
    CHECK(rule::clip_coef(0.5, 1.0) == 1.0);
    CHECK(rule::clip_coef(0.0, 1.0) == 1.0);
    CHECK(rule::clip_coef(0.0, inf) == 1.0);
    CHECK(rule::clip_coef(1e300, inf) == 1.0);
    CHECK(std::isnan(rule::clip_coef(std::nan(""), 1.0)));  // clamp(max=1) keeps a NaN
    CHECK(rule::clip_coef(inf, 1.0) == 0.0);
  }
}

TEST_CASE("GradScaler: found_inf sequences give torch's scale and tracker") {
  // A step with finite gradients and one with an infinite gradient.
  host_grad good = make_grad(dtype::f32, 300);
  fill_random(good, 8);
  host_grad bad = good;
  bad.set(17, -std::numeric_limits<float>::infinity());

  SUBCASE("growth_interval 3, defaults otherwise") {
    grad_pass_config c;
    c.scaler.growth_interval = 3;
    grad_control ctl = rule::initial_control(c);
    CHECK(ctl.loss_scale == 65536.0);
    CHECK(ctl.growth_tracker == 0);
    // _amp_update_scale_: found_inf -> scale * 0.5, tracker 0; else tracker + 1,
    // reaching 3 -> scale * 2, tracker 0. Worked out by hand:
    struct step {
      bool inf;
      double used_scale, scale_after;
      int tracker_after;
    };
    const step seq[] = {
        {false, 65536, 65536, 1}, {false, 65536, 65536, 2}, {false, 65536, 131072, 0}, {true, 131072, 65536, 0},
        {false, 65536, 65536, 1}, {true, 65536, 32768, 0},  {true, 32768, 16384, 0},   {false, 16384, 16384, 1},
        {false, 16384, 16384, 2}, {false, 16384, 32768, 0}, {false, 32768, 32768, 1},  {false, 32768, 32768, 2},
        {true, 32768, 16384, 0},  {false, 16384, 16384, 1},
    };
    int i = 0;
    for (const step& s : seq) {
      INFO("step ", i++);
      REQUIRE(pass({s.inf ? bad : good}, c, ctl).ok());
      CHECK(ctl.skip == (s.inf ? 1 : 0));
      CHECK(ctl.inv_loss_scale == 1.0 / s.used_scale);
      CHECK(ctl.multiplier == (s.inf ? 1.0 : 1.0 / s.used_scale));  // no clipping (max_norm = inf)
      CHECK(ctl.loss_scale == s.scale_after);
      CHECK(ctl.growth_tracker == s.tracker_after);
    }
  }
  SUBCASE("default growth_interval 2000: the scale doubles on the 2000th good step") {
    grad_pass_config c;
    grad_control ctl = rule::initial_control(c);
    for (int k = 1; k < 2000; ++k) rule::finalize(grad_summary{1.0, 1.0, 1, 0x3f800000u, 0}, c, ctl);
    CHECK(ctl.loss_scale == 65536.0);
    CHECK(ctl.growth_tracker == 1999);
    REQUIRE(pass({good}, c, ctl).ok());
    CHECK(ctl.loss_scale == 131072.0);
    CHECK(ctl.growth_tracker == 0);
  }
  SUBCASE("growth stops below fp32 overflow; the tracker still resets") {
    grad_pass_config c;
    c.scaler.init_scale = std::ldexp(1.0, 127);
    c.scaler.growth_interval = 1;
    grad_control ctl = rule::initial_control(c);
    REQUIRE(pass({good}, c, ctl).ok());
    CHECK(ctl.loss_scale == std::ldexp(1.0, 127));  // 2^128 is inf in fp32: not taken
    CHECK(ctl.growth_tracker == 0);
  }
  SUBCASE("backoff rounds to fp32 and can reach 0; then every step is skipped") {
    grad_pass_config c;
    c.scaler.init_scale = std::ldexp(1.0, -148);
    grad_control ctl = rule::initial_control(c);
    REQUIRE(pass({bad}, c, ctl).ok());
    CHECK(ctl.loss_scale == std::ldexp(1.0, -149));
    REQUIRE(pass({bad}, c, ctl).ok());
    CHECK(ctl.loss_scale == 0.0);  // 2^-150 ties to even: 0
    // 1 / 0 = inf: unscaling makes every gradient inf or NaN, as in torch.
    REQUIRE(pass({good}, c, ctl).ok());
    CHECK(ctl.skip == 1);
    CHECK(ctl.inv_loss_scale == inf);
  }
  SUBCASE("factors that are not powers of two: products in double, stored as fp32") {
    grad_pass_config c;
    c.scaler.init_scale = 1000.0;
    c.scaler.growth_factor = 3.0;
    c.scaler.backoff_factor = 0.3;
    c.scaler.growth_interval = 1;
    grad_control ctl = rule::initial_control(c);
    float scale = 1000.0f;  // torch's fp32 scale tensor
    const bool pattern[] = {false, true, true, false, true, false, false};
    for (bool is_inf : pattern) {
      REQUIRE(pass({is_inf ? bad : good}, c, ctl).ok());
      CHECK(ctl.inv_loss_scale == static_cast<double>(static_cast<float>(1.0 / static_cast<double>(scale))));
      scale = static_cast<float>(static_cast<double>(scale) * (is_inf ? 0.3 : 3.0));
      CHECK(ctl.loss_scale == static_cast<double>(scale));
    }
  }
  SUBCASE("unscaling that overflows fp32 is found_inf, as GradScaler's check finds it") {
    grad_pass_config c;
    c.scaler.init_scale = std::ldexp(1.0, -10);  // inv 1024
    grad_control ctl = rule::initial_control(c);
    host_grad g = make_grad(dtype::f32, 3);
    g.set(1, 3.0e35f);  // * 1024 = 3.07e38 < FLT_MAX
    REQUIRE(pass({g}, c, ctl).ok());
    CHECK(ctl.skip == 0);
    CHECK(ctl.growth_tracker == 1);
    g.set(1, -1.0e36f);  // * 1024 overflows
    REQUIRE(pass({g}, c, ctl).ok());
    CHECK(ctl.skip == 1);
    CHECK(ctl.loss_scale == std::ldexp(1.0, -11));
    // Without a scaler the same gradient is finite: no skip.
    c.scaler.enabled = false;
    grad_control plain = rule::initial_control(c);
    REQUIRE(pass({g}, c, plain).ok());
    CHECK(plain.skip == 0);
  }
}

TEST_CASE("bad input is refused and nothing is written") {
  host_grad g = make_grad(dtype::f32, 100);
  fill_random(g, 1);
  grad_tensor t = g.view();
  grad_pass_config c;
  grad_control ctl = rule::initial_control(c);
  const grad_control before = ctl;
  grad_summary s;
  s.sum_squares = 123.0;
  double sums[2] = {-7.0, -7.0};
  auto untouched = [&] {
    CHECK(s.sum_squares == 123.0);
    CHECK(sums[0] == -7.0);
    CHECK(std::memcmp(&ctl, &before, sizeof ctl) == 0);
  };
  auto expect = [&](grad_list list, const grad_pass_config& cfg, status_code code, int threads = 0) {
    cpu::grad_outputs out{&s, sums, nullptr};
    cpu::grad_pass_options o;
    o.threads = threads;
    const status st = cpu::grad_pass(list, cfg, &ctl, out, o);
    INFO(st.what());
    CHECK(st.code() == code);
    untouched();
  };
  expect(grad_list{nullptr, 2}, c, status_code::null_pointer);
  expect(grad_list{&t, -1}, c, status_code::invalid_argument);
  grad_tensor bad = t;
  bad.size = -1;
  expect(grad_list{&bad, 1}, c, status_code::invalid_argument);
  bad = t;
  bad.data = nullptr;
  expect(grad_list{&bad, 1}, c, status_code::null_pointer);
  bad = t;
  bad.type = dtype::i32;
  expect(grad_list{&bad, 1}, c, status_code::dtype_mismatch);
  bad = t;
  bad.type = dtype::f8_e4m3;
  expect(grad_list{&bad, 1}, c, status_code::dtype_mismatch);
  bad = t;
  bad.data = static_cast<const char*>(t.data) + 2;
  expect(grad_list{&bad, 1}, c, status_code::misaligned);
  bad = t;
  bad.size = max_elements + 1;
  expect(grad_list{&bad, 1}, c, status_code::invalid_argument);
  expect(grad_list{&t, 1}, c, status_code::invalid_argument, -1);
  expect(grad_list{&t, 1}, c, status_code::invalid_argument, 1 << 20);

  for (double m : {std::nan(""), 0.0, -1.0, -inf}) {
    grad_pass_config b = c;
    b.max_norm = m;
    expect(grad_list{&t, 1}, b, status_code::invalid_argument);
  }
  {
    grad_pass_config b = c;
    b.scaler.growth_factor = 1.0;
    expect(grad_list{&t, 1}, b, status_code::invalid_argument);
    b = c;
    b.scaler.growth_factor = inf;
    expect(grad_list{&t, 1}, b, status_code::invalid_argument);
    b = c;
    b.scaler.backoff_factor = 1.0;
    expect(grad_list{&t, 1}, b, status_code::invalid_argument);
    b = c;
    b.scaler.backoff_factor = 0.0;
    expect(grad_list{&t, 1}, b, status_code::invalid_argument);
    b = c;
    b.scaler.growth_interval = 0;
    expect(grad_list{&t, 1}, b, status_code::invalid_argument);
    b = c;
    b.scaler.init_scale = 1e39;  // inf as fp32
    expect(grad_list{&t, 1}, b, status_code::invalid_argument);
    b = c;
    b.scaler.init_scale = 0.0;
    expect(grad_list{&t, 1}, b, status_code::invalid_argument);
  }
  {
    // A control struct the scaler cannot have produced.
    const grad_control good_ctl = ctl;
    for (int k = 0; k < 5; ++k) {
      grad_control b = good_ctl;
      if (k == 0) b.loss_scale = std::nan("");
      if (k == 1) b.loss_scale = -1.0;
      if (k == 2) b.loss_scale = 0.1;  // not an fp32 value
      if (k == 3) b.growth_tracker = -1;
      if (k == 4) b.growth_tracker = c.scaler.growth_interval;
      const grad_control b0 = b;
      CHECK(cpu::grad_pass(grad_list{&t, 1}, c, &b, cpu::grad_outputs{&s, nullptr, nullptr}).code() ==
            status_code::invalid_argument);
      CHECK(std::memcmp(&b, &b0, sizeof b) == 0);
      untouched();
    }
  }
  {
    // Outputs that overlap a gradient or one another.
    cpu::grad_outputs out{reinterpret_cast<grad_summary*>(g.data()), nullptr, nullptr};
    CHECK(cpu::grad_pass(grad_list{&t, 1}, c, &ctl, out).code() == status_code::aliasing);
    double both[3];
    grad_tensor two[2] = {t, t};
    CHECK(cpu::grad_stats(grad_list{two, 2}, cpu::grad_outputs{nullptr, both, both + 1}).code() ==
          status_code::aliasing);
    CHECK(cpu::grad_pass(grad_list{&t, 1}, c, nullptr).code() == status_code::null_pointer);
    untouched();
  }
}

TEST_CASE("one tensor past 2^31 elements (host: skipped without 6 GiB free)") {
  const std::int64_t n = (std::int64_t{1} << 31) + 40000;
  const long pages = sysconf(_SC_AVPHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page <= 0 || static_cast<double>(pages) * page < 6.0 * (1 << 30) ||
      std::getenv("FLASHOPTIM_SKIP_HUGE") != nullptr) {
    MESSAGE("skipped: not enough free memory for a 4 GiB tensor");
    return;
  }
  // Zeros (exact) and a few values past 2^31: the sum is exact, so an index
  // that wrapped at 2^31 would show.
  std::vector<bf16> data(static_cast<std::size_t>(n), bf16{0});
  const std::int64_t at[] = {5, (std::int64_t{1} << 31) - 1, std::int64_t{1} << 31, (std::int64_t{1} << 31) + 33333,
                             n - 1};
  const float vals[] = {1.0f, 2.0f, 3.0f, 4.0f, 5.0f};
  for (int k = 0; k < 5; ++k) data[at[k]] = format::from_float<bf16>(vals[k]);
  grad_tensor t{data.data(), dtype::bf16, n};
  grad_summary s;
  double sum = 0, norm = 0;
  REQUIRE(cpu::grad_stats(grad_list{&t, 1}, cpu::grad_outputs{&s, &sum, &norm}).ok());
  CHECK(s.sum_squares == 55.0);
  CHECK(sum == 55.0);
  CHECK(s.elements == n);
  CHECK(s.max_abs_bits == format::bits_of(5.0f));
  data[(std::int64_t{1} << 31) + 7] = bf16{0x7fc0};
  REQUIRE(cpu::grad_stats(grad_list{&t, 1}, cpu::grad_outputs{&s, nullptr, nullptr}).ok());
  CHECK(s.non_finite == 1);
}
