// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// The lr check (optim/lr_check.hpp, docs/lr-check.md). Acceptance: its
// "cannot move" equals "no parameter/correction byte changed" after one real
// step (cpu::step_serial), for every master mode x rule x magnitude band x
// lrs on both sides of the threshold; with weight decay, "cannot move" is
// never wrong. Plus the reported cases: AdamW bf16 + int8 at lr 1e-5 on
// weights in [1, 1.5) (nothing moves in 200 steps), and fp16 + int16, which
// the paper's bit-count check passes while nothing moves.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "lr_check_sweep.hpp"

using namespace lr_check_test;

TEST_CASE("lr check: 'cannot move' == 'no byte changed' at step 1, every master mode x rule x band") {
  tally tl;
  sweep_native_modes(tl);  // native fp32, bf16, fp16; fp32_master bf16, fp16
  sweep_split_modes(tl);   // bf16 + int8, bf16 + int16, fp16 + int8, fp16 + int16, exact_split
  MESSAGE("cases " << tl.cases << ": moved " << tl.moved << ", stuck " << tl.stuck);
  CHECK(tl.moved > tl.cases / 4);  // both outcomes well represented
  CHECK(tl.stuck > tl.cases / 4);
}

TEST_CASE("lr check: with weight decay 'cannot move' is certain (errs toward 'can move')") {
  tally tl;
  sweep_native_modes_decay(tl);  // native fp32, bf16, fp16; fp32_master bf16
  sweep_split_modes_decay(tl);   // bf16 + int8, bf16 + int16, fp16 + int8, fp16 + int16, exact_split
  MESSAGE("decay cases " << tl.cases << ": verdict can move " << tl.moved << ", cannot " << tl.stuck);
  CHECK(tl.stuck > tl.cases / 4);  // not vacuous
}

TEST_CASE("lr check: a maximum that is exactly a power of two (LayerNorm weights of 1) moves down onto the finer grid") {
  auto run = [](auto tag, const char* what) {
    using Config = decltype(tag);
    using M = typename Config::master;
    std::vector<element<Config>> els;
    for (int i = 0; i < 64; ++i) {
      element<Config> e{};
      M::encode(1.0f, e.p, e.a);
      e.g = (i & 1) ? 0.5f : -0.5f;
      els.push_back(e);
    }
    const double max_abs = max_abs_of<Config>(els);
    REQUIRE(max_abs == 1.0);
    typename Config::hyper h;
    double lo = 0, hi = 0;
    threshold<Config>(h, max_abs, 0.5, lo, hi);
    for (const double lr : {lo * 0.5, lo, hi, hi * 2}) {
      const auto hh = with_lr<Config>(h, lr);
      const auto v = optim::lr_check_tensor<Config>(hh, max_abs, 0.5);
      INFO(std::string(what) << " lr " << lr << " update " << v.update);
      CHECK(v.can_move == step_moves<Config>(hh, els));
    }
    // Moving down from 1 the grid is twice as fine: less than the spacing
    // above asks (native and fp32 modes).
    return optim::lr_check_tensor<Config>(with_lr<Config>(h, hi), max_abs, 0.5).update /
           optim::lr_check_tensor<Config>(h, max_abs, 0.5).resolution;
  };
  CHECK(run(step_config<rule::lion, c::native<bf16>, float, dm>{}, "native bf16") < 0.3);
  CHECK(run(step_config<rule::lion, c::native<float>, float, dm>{}, "native fp32") < 0.3);
  CHECK(run(step_config<rule::lion, c::native<fp16>, float, dm>{}, "native fp16") < 0.3);
  run(step_config<rule::lion, ulp8, float, dm>{}, "bf16 + int8");
  run(step_config<rule::lion, hulp8, float, dm>{}, "fp16 + int8");
  run(step_config<rule::lion, c::exact_split, float, dm>{}, "exact_split");
}

TEST_CASE("lr check: the reported case, AdamW bf16 + int8 on [1, 1.5) at lr 1e-5, moves nothing in 200 steps") {
  using stuck_c = step_config<rule::adamw, ulp8, bf16, dm, dv>;
  using fp32_c = step_config<rule::adamw, c::native<float>, bf16, dm, dv>;
  constexpr std::int64_t n = 4096;
  typed_tensor<stuck_c> t(n);
  typed_tensor<fp32_c> r(n);
  std::mt19937 rng(2024);
  std::uniform_real_distribution<float> w(1.0f, 1.5f), gd(-1.0f, 1.0f);
  for (std::int64_t i = 0; i < n; ++i) {
    const float x = w(rng);
    t.set_master(i, x);
    r.set_master(i, t.master(i));
  }
  typename stuck_c::hyper h;  // AdamW defaults: weight decay 0.01
  h.lr = 1e-5;
  const double max_abs = optim::max_abs_param<stuck_c>(t.param.data(), t.aux.data(), n);
  CHECK(max_abs <= 1.5);
  const auto v = optim::lr_check_tensor<stuck_c>(h, max_abs);
  CHECK_FALSE(v.can_move);
  CHECK_FALSE(v.exact);  // weight decay
  CHECK(v.update == doctest::Approx(1e-5).epsilon(1e-3));
  CHECK(v.resolution == std::ldexp(1.0, -8) / 127);  // half a bf16 ULP in [1, 2) / 127 = 3.08e-5
  typename fp32_c::hyper hr;
  hr.lr = h.lr;
  const auto before = master_bytes(t);
  const auto before_p = t.param;
  const auto before_a = t.aux;
  std::vector<float> before_x(n);
  for (std::int64_t i = 0; i < n; ++i) before_x[i] = t.master(i);
  std::vector<float> x0(n);
  for (std::int64_t i = 0; i < n; ++i) x0[i] = r.master(i);
  for (int s = 1; s <= 200; ++s) {
    for (std::int64_t i = 0; i < n; ++i) {
      const float g = gd(rng);
      t.set_grad(i, g);
      r.set_grad(i, g);
    }
    flashoptim::step_args a;
    a.step = s;
    auto tv = t.view(1);
    auto rv = r.view(1);
    REQUIRE(flashoptim::cpu::step_serial<stuck_c>(h, a, &tv, 1).ok());
    REQUIRE(flashoptim::cpu::step_serial<fp32_c>(hr, a, &rv, 1).ok());
  }
  // Not one weight moved. A few stored bytes change without a value
  // changing: a correction clamped at +-127 (x within 1/254 of a half ULP
  // from lo: lo + h and next(lo) - h are one value with two encodings)
  // flips to the other encoding of the same value when the fp32 value
  // wobbles. Nothing else may change.
  std::int64_t bytes_changed = 0, values_changed = 0, not_clamp_flips = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    const bool changed = t.param[i].bits != before_p[i].bits || t.aux[i] != before_a[i];
    bytes_changed += changed;
    values_changed += t.master(i) != before_x[i];
    const bool clamped = (before_a[i] == 127 || before_a[i] == -127) && (t.aux[i] == 127 || t.aux[i] == -127);
    not_clamp_flips += changed && !clamped;
  }
  MESSAGE("bf16 + int8, 200 steps: values changed " << values_changed << ", bytes changed " << bytes_changed
                                                   << " (clamped corrections flipping encoding)");
  CHECK(values_changed == 0);
  CHECK(not_clamp_flips == 0);
  (void)before;
  double moved = 0;
  for (std::int64_t i = 0; i < n; ++i) moved = std::max(moved, std::fabs(double(r.master(i)) - x0[i]));
  MESSAGE("fp32 master: max |dw| after 200 steps " << moved);
  CHECK(moved > 2e-4);  // an fp32 master moves them
  // The lr the check asks for does move them, at step 1.
  typename stuck_c::hyper h2 = h;
  h2.lr = 2e-5;
  CHECK(optim::lr_check_tensor<stuck_c>(h2, max_abs).can_move);
}

namespace {
/// The paper's check (FlashOptim 0.1.3, _log2_min_expressible_step_size):
/// master bits = max(param bits, master bits), mantissa = bits - 1 -
/// exponent bits + log2(0.49); the step passes when log2(lr) >= floor(log2
/// maxabs) - mantissa.
double paper_min_step(int param_exp_bits, int master_bits, double maxabs) {
  const double mant = master_bits - 1 - param_exp_bits + std::log2(0.49);
  return std::exp2(std::floor(std::log2(maxabs)) - mant);
}
}  // namespace

TEST_CASE("lr check: fp16 + int16 is limited by the fp32 decode; the paper's check passes while nothing moves") {
  using cfg = step_config<rule::adamw, hulp16, fp16, dm, dv>;
  constexpr std::int64_t n = 4096;
  typed_tensor<cfg> t(n);
  std::mt19937 rng(99);
  std::uniform_real_distribution<float> w(1.0f, 1.5f), gd(-1.0f, 1.0f);
  for (std::int64_t i = 0; i < n; ++i) t.set_master(i, w(rng));
  typename cfg::hyper h;
  h.weight_decay = 0.0;
  h.lr = 3.5e-8;
  const double max_abs = optim::max_abs_param<cfg>(t.param.data(), t.aux.data(), n);
  // The paper counts 32 - 1 - 5 = 26 mantissa bits: 2^-26 steps. But the
  // decoded value is fp32 (23 bits): at [1, 2) nothing below 2^-24 moves it.
  CHECK(h.lr >= paper_min_step(5, 32, max_abs));  // the paper's check passes
  const auto v = optim::lr_check_tensor<cfg>(h, max_abs);
  CHECK_FALSE(v.can_move);
  CHECK(v.exact);
  CHECK(v.resolution == std::ldexp(1.0, -23));  // fp32's spacing, not 2^-26
  const auto before = master_bytes(t);
  for (int s = 1; s <= 200; ++s) {
    for (std::int64_t i = 0; i < n; ++i) t.set_grad(i, gd(rng));
    flashoptim::step_args a;
    a.step = s;
    auto tv = t.view(3);
    REQUIRE(flashoptim::cpu::step_serial<cfg>(h, a, &tv, 1).ok());
  }
  CHECK(master_bytes(t) == before);
  // Just above half fp32's spacing it moves.
  h.lr = std::ldexp(1.0, -24) * 1.01;
  CHECK(optim::lr_check_tensor<cfg>(h, max_abs).can_move);
  // The paper's check is sound for bf16 + int16 (23 bits, like fp32) but
  // 4x stricter than needed: it asks for 2.04 fp32 spacings, one half moves.
  CHECK(paper_min_step(8, 32, 1.25) / std::ldexp(1.0, -23) == doctest::Approx(2.0 / 0.98));
}

TEST_CASE("lr check: ULP corrections with 16 bits resolve every fp32 value (the check's int16 window is enough)") {
  // Every non-clamped code, moved by one fp32 spacing either way, decodes to
  // another value: for int16 corrections a change of the fp32 value always
  // changes a byte (and codes decode to distinct values).
  auto run = [](auto tag) {
    using M = decltype(tag);
    using T = typename M::param_type;
    int stay = 0, moves = 0, stay_two = 0;
    for (const float f : {1.25f, 1.3f, 1.75f}) {
      const T lo = flashoptim::format::from_float<T>(f);
      for (int cc = -M::max_code + 1; cc < M::max_code; ++cc) {
        const float x0 = M::decode(lo, static_cast<typename M::aux_type>(cc));
        for (const float dir : {-1.0f, 1.0f}) {
          T p;
          typename M::aux_type a;
          const float x1 = std::nextafter(x0, dir * 4.0f);
          M::encode(x1, p, a);
          (M::decode(p, a) == x0 ? stay : moves)++;
          M::encode(std::nextafter(x1, dir * 4.0f), p, a);
          stay_two += M::decode(p, a) == x0;
        }
      }
    }
    MESSAGE(M::max_code << " codes on " << sizeof(T) * 8 << "-bit T: one fp32 step moves " << moves << ", stays "
                        << stay);
    CHECK(stay_two == 0);  // two fp32 steps always move
    return static_cast<double>(stay) / (stay + moves);
  };
  // fp16 + int16: steps of 2^-26 relative, finer than fp32 (2^-23): every
  // change of the fp32 value moves it.
  CHECK(run(hulp16{}) == 0.0);
  // bf16 + int16: steps of 1.00003 fp32 spacings; one fp32 step rounds back
  // for a few codes (every ~32767th fp32 value has no code, and the fp32
  // product e/h * M blurs the half), never two. For the "can any element
  // move" verdict its threshold is fp32's.
  CHECK(run(ulp16{}) < 0.005);
}

TEST_CASE("lr check: unknown update, zero lr, bad max, resolution per mode") {
  using sgd_c = step_config<rule::sgd, ulp8, bf16>;
  typename sgd_c::hyper hs;
  hs.lr = 1e-12;
  auto v = optim::lr_check_tensor<sgd_c>(hs, 1.0);  // SGD without |g|
  CHECK_FALSE(v.update_known);
  CHECK(v.can_move);
  CHECK(std::isnan(v.update));
  CHECK_FALSE(optim::lr_check_tensor<sgd_c>(hs, 1.0, 1.0).can_move);
  // Adam without |g|: an upper bound of the update, so it errs toward "can move".
  using aw = adamw_default;
  typename aw::hyper ha;
  ha.weight_decay = 0.0;
  for (const double g : {1e-6, 1e-3, 1.0, 1e3, 1e6}) {
    ha.lr = 1e-5;
    CHECK(optim::lr_check_tensor<aw>(ha, 1.25).update >= optim::lr_check_tensor<aw>(ha, 1.25, g).update);
  }
  // lr = 0 asks for no update: never reported.
  ha.lr = 0.0;
  CHECK(optim::lr_check_tensor<aw>(ha, 1.25).can_move);
  // A non-finite maximum says nothing.
  ha.lr = 1e-9;
  v = optim::lr_check_tensor<aw>(ha, std::nan(""));
  CHECK(v.can_move);
  CHECK(std::isnan(v.resolution));
  CHECK(optim::lr_check_tensor<aw>(ha, INFINITY).can_move);
  // Gradients of 0: nothing moves, whatever the lr (weight decay 0).
  ha.lr = 1.0;
  CHECK_FALSE(optim::lr_check_tensor<aw>(ha, 1.25, 0.0).can_move);
  // Resolutions at |p| in [1, 2).
  auto res = [](auto tag) { return optim::lr_check_tensor<decltype(tag)>({}, 1.5, 1.0).resolution; };
  CHECK(res(adamw_fp32_native{}) == std::ldexp(1.0, -23));
  CHECK(res(adamw_bf16_native{}) == std::ldexp(1.0, -7));
  CHECK(res(adamw_fp16_native{}) == std::ldexp(1.0, -10));
  CHECK(res(adamw_bf16_master{}) == std::ldexp(1.0, -23));
  CHECK(res(adamw_default{}) == std::ldexp(1.0, -8) / 127);
  CHECK(res(adamw_ulp16{}) == std::ldexp(1.0, -8) / 32767);
  CHECK(res(adamw_fp16_ulp8{}) == std::ldexp(1.0, -11) / 127);
  CHECK(res(adamw_fp16_ulp16{}) == std::ldexp(1.0, -23));
  CHECK(res(adamw_exact{}) == std::ldexp(1.0, -23));
  CHECK(res(adamw_rounded{}) == std::ldexp(1.0, -15));
  // fp16 subnormals: a fixed spacing of 2^-24.
  CHECK(optim::lr_check_tensor<adamw_fp16_native>({}, 1e-6, 1.0).resolution == std::ldexp(1.0, -24));
  // AMSGrad's step 1 is Adam's.
  typename adamw_amsgrad_default::hyper hm;
  typename adamw_default::hyper hd;
  CHECK(optim::lr_check_tensor<adamw_amsgrad_default>(hm, 1.25, 0.5).update ==
        optim::lr_check_tensor<adamw_default>(hd, 1.25, 0.5).update);
}

TEST_CASE("lr check: the report") {
  using cfg = adamw_default;
  optim::lr_report r;
  CHECK(r.empty());
  CHECK(r.summary().empty());
  typename cfg::hyper h;
  h.lr = 1e-5;
  for (int i = 0; i < 10; ++i) {
    // tensors 0, 4, 8 hold weights up to 1.5 (stuck), the others up to 0.01
    const double m = i % 4 == 0 ? 1.5 : 0.01;
    optim::lr_report_add<cfg>(r, static_cast<std::size_t>(i), i < 5 ? 0 : 1, "w." + std::to_string(i),
                              i % 4 == 0 ? 100 : 150, h, m);
  }
  CHECK_FALSE(r.empty());
  CHECK(r.tensors == 10);
  CHECK(r.parameters == 3 * 100 + 7 * 150);
  REQUIRE(r.cannot_move.size() == 3);
  CHECK(r.cannot_move[0].name == "w.0");
  CHECK(r.cannot_move[1].tensor == 4);
  CHECK(r.cannot_move[2].group == 1);
  CHECK(r.cannot_move[0].mode == "bf16 + int8 correction");
  const std::string s = r.summary();
  MESSAGE(s);
  CHECK(s.find("flashoptim: lr 1e-05 cannot move 3 of 10 tensors (22.2% of parameters)") == 0);
  CHECK(s.find("first 'w.0' |p|max 1.5") != std::string::npos);
  CHECK(s.find("(bf16 + int8 correction); see docs/lr-check.md") != std::string::npos);
  CHECK(s.find('\n') == std::string::npos);
  CHECK(optim::lr_mode_name<adamw_fp16_ulp16>() == "fp16 + int16 correction");
  CHECK(optim::lr_mode_name<adamw_exact>() == "bf16 + 16-bit exact split");
  CHECK(optim::lr_mode_name<adamw_rounded>() == "bf16 + int8 rounded split");
  CHECK(optim::lr_mode_name<adamw_bf16_master>() == "fp32 master (bf16 param)");
  CHECK(optim::lr_mode_name<adamw_fp32_native>() == "native fp32");
}

TEST_CASE("lr check: max_abs_param decodes param + correction") {
  using cfg = adamw_default;
  typed_tensor<cfg> t(5);
  const float xs[] = {0.5f, -1.37f, 1.2f, 0.0f, -0.25f};
  for (int i = 0; i < 5; ++i) t.set_master(i, xs[i]);
  CHECK(optim::max_abs_param<cfg>(t.param.data(), t.aux.data(), 5) == t.master(1) * -1.0);
  CHECK(optim::max_abs_param<cfg>(t.param.data(), t.aux.data(), 0) == 0.0);
  CHECK(std::isnan(optim::max_abs_param<cfg>(nullptr, t.aux.data(), 5)));
  CHECK(std::isnan(optim::max_abs_param<cfg>(t.param.data(), nullptr, 5)));
  std::vector<float> f = {1.0f, -3.0f, NAN};
  CHECK(optim::max_abs_param<adamw_fp32_native>(f.data(), nullptr, 3) == 3.0);
}
