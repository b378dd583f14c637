// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// docs/test-matrix.md C5 (CPU) and C16: the library's CPU step equals R32 bit for bit
// for every rule x master mode x state codec x size x step count in
// tests/common/configs.hpp; the distance to R64 is reported and bounded.
#include <doctest/doctest.h>

#include <cstdio>
#include <type_traits>

#include "common/configs.hpp"
#include "common/harness.hpp"
#include "common/typed_tensor.hpp"

using namespace testconfigs;

namespace {

/// Runs the parity check for the sizes and step counts of C5 on inputs with
/// edge cases (bitwise against R32 after every step), then one run on clean
/// N(0, 1) inputs whose distance to R64, |x - x64| / |x64 - x0| after 10
/// steps, is printed and bounded. `large` adds 278011 elements x 100 steps.
template <class Config>
void check_config(const char* name, const typename Config::hyper& h, double max_distance, bool large = false) {
  struct run { std::int64_t n; int steps; };
  const run runs[] = {{1, 10}, {33, 10}, {1025, 1}, {1025, 10}, {278011, large ? 100 : 2}};
  for (const run& r : runs) {
    const auto res = harness::run_parity<Config>(h, r.n, r.steps, 1000u + static_cast<unsigned>(r.n) + r.steps);
    INFO(name, " n=", r.n, " steps=", r.steps, " first difference at step ", res.failed_step, ": ", res.where);
    CHECK(res.bitwise);
  }
  const auto clean = harness::run_parity<Config>(h, 4096, 10, 4242u, 0.0);
  std::printf("C5 %-28s bitwise=%s  distance to R64 after 10 steps = %.3g (bound %.3g)\n", name,
              clean.bitwise ? "yes" : "NO", clean.rel_distance_r64, max_distance);
  CHECK(clean.bitwise);
  CHECK(clean.rel_distance_r64 <= max_distance);
}

template <class Config>
typename Config::hyper adam_hyper(double wd = 0.01) {
  typename Config::hyper h;
  h.lr = 1e-2;
  h.weight_decay = wd;
  return h;
}

}  // namespace

TEST_CASE("C5: SGD variants equal R32 bitwise") {
  rule::sgd::hyper h;
  h.lr = 1e-2;
  check_config<sgd_plain>("sgd", h, 0.003);
  h.momentum = 0.9;
  check_config<sgd_momentum>("sgd momentum", h, 0.02, true);
  h.dampening = 0.5;
  check_config<sgd_momentum>("sgd dampening 0.5", h, 0.02);
  h.dampening = 0.0;
  h.nesterov = true;
  check_config<sgd_momentum>("sgd nesterov", h, 0.02);
  h.nesterov = false;
  h.weight_decay = 0.1;
  check_config<sgd_momentum>("sgd coupled wd", h, 0.02);
  rule::sgdw::hyper w;
  w.lr = 1e-2;
  w.momentum = 0.9;
  w.weight_decay = 0.1;
  check_config<sgdw_momentum>("sgdw", w, 0.02);
  w.decouple_lr = true;
  w.initial_lr = 2e-2;
  check_config<sgdw_momentum>("sgdw decouple_lr", w, 0.01);
  check_config<sgd_fp16_master>("sgd fp16 master bf16_sr", h, 0.01);
  check_config<sgdw_exact_fp8>("sgdw exact_split fp8", w, 0.03);
}

TEST_CASE("C5: Adam, AdamW and Lion equal R32 bitwise") {
  check_config<adam_default>("adam", adam_hyper<adam_default>(0.1), 0.02);
  check_config<adamw_default>("adamw", adam_hyper<adamw_default>(), 0.02, true);
  auto h = adam_hyper<adamw_default>(0.1);
  h.decouple_lr = true;
  h.initial_lr = 1e-1;
  check_config<adamw_default>("adamw decouple_lr", h, 0.01);
  rule::lion::hyper l;
  l.lr = 1e-3;
  l.weight_decay = 0.1;
  check_config<lion_default>("lion", l, 0.1, true);
  check_config<lion_fp32>("lion fp32", l, 0.001);
  check_config<lion_reference>("lion reference states", l, 0.1);
}

TEST_CASE("C5: AMSGrad equals R32 bitwise (third state, default and own codecs)") {
  static_assert(std::is_same<adamw_amsgrad_default::state<2>, dv>::value, "vmax takes v's codec by default");
  static_assert(adamw_amsgrad_default::num_slots == 3, "three slots");
  check_config<adam_amsgrad_default>("adam amsgrad", adam_hyper<adam_amsgrad_default>(0.1), 0.02);
  check_config<adamw_amsgrad_default>("adamw amsgrad", adam_hyper<adamw_amsgrad_default>(), 0.02, true);
  check_config<adamw_amsgrad_fp32_max>("adamw amsgrad fp32 vmax", adam_hyper<adamw_amsgrad_fp32_max>(), 0.02);
  check_config<adamw_amsgrad_bf16>("adamw amsgrad bf16 native", adam_hyper<adamw_amsgrad_bf16>(), 0.5);  // as adamw bf16 native
}

TEST_CASE("C5: maximize (the gradient negated) equals R32 bitwise for every rule") {
  rule::sgd::hyper s;
  s.lr = 1e-2;
  s.momentum = 0.9;
  s.weight_decay = 0.1;
  s.maximize = true;
  check_config<sgd_momentum>("sgd maximize", s, 0.02);
  auto a = adam_hyper<adam_default>(0.1);
  a.maximize = true;
  check_config<adam_default>("adam maximize", a, 0.02);
  auto w = adam_hyper<adamw_default>();
  w.maximize = true;
  check_config<adamw_default>("adamw maximize", w, 0.02);
  auto am = adam_hyper<adamw_amsgrad_default>();
  am.maximize = true;
  check_config<adamw_amsgrad_default>("adamw amsgrad maximize", am, 0.02);
  rule::lion::hyper l;
  l.lr = 1e-3;
  l.weight_decay = 0.1;
  l.maximize = true;
  check_config<lion_default>("lion maximize", l, 0.1);
}

TEST_CASE("maximize ascends: one step moves every parameter against a descending step") {
  for (bool maximize : {false, true}) {
    auto h = adam_hyper<adamw_default>(0.0);
    h.maximize = maximize;
    testutil::typed_tensor<adamw_default> t(64);
    for (int i = 0; i < 64; ++i) t.set_master(i, 1.0f), t.set_grad(i, 1.0f);
    auto v = t.view();
    REQUIRE(cpu::step_serial<adamw_default>(h, step_args{}, &v, 1).ok());
    for (int i = 0; i < 64; ++i) CHECK((maximize ? t.master(i) > 1.0f : t.master(i) < 1.0f));
  }
}

TEST_CASE("C5: every master mode equals R32 bitwise") {
  check_config<adamw_fp32_native>("adamw fp32 native", adam_hyper<adamw_fp32_native>(), 0.02);
  check_config<adamw_bf16_native>("adamw bf16 native", adam_hyper<adamw_bf16_native>(), 0.5);
  check_config<adamw_fp16_native>("adamw fp16 native", adam_hyper<adamw_fp16_native>(), 0.06);
  check_config<adamw_bf16_master>("adamw bf16 fp32_master", adam_hyper<adamw_bf16_master>(), 0.02);
  check_config<adamw_fp16_master>("adamw fp16 fp32_master", adam_hyper<adamw_fp16_master>(), 0.02);
  check_config<adamw_ulp16>("adamw bf16 ulp int16", adam_hyper<adamw_ulp16>(), 0.02, true);
  check_config<adamw_fp16_ulp8>("adamw fp16 ulp int8", adam_hyper<adamw_fp16_ulp8>(), 0.02);
  check_config<adamw_fp16_ulp16>("adamw fp16 ulp int16", adam_hyper<adamw_fp16_ulp16>(), 0.02);
  check_config<adamw_exact>("adamw exact_split", adam_hyper<adamw_exact>(), 0.02, true);
  check_config<adamw_rounded>("adamw rounded_split", adam_hyper<adamw_rounded>(), 0.02, true);
  check_config<adamw_fp32_grad>("adamw fp32 grads", adam_hyper<adamw_fp32_grad>(), 0.02);
}

TEST_CASE("C5: every state codec equals R32 bitwise") {
  check_config<adamw_reference>("adamw reference states", adam_hyper<adamw_reference>(), 0.02, true);
  check_config<adamw_fp32_states>("adamw fp32 states", adam_hyper<adamw_fp32_states>(), 0.002);
  check_config<adamw_bf16_states>("adamw bf16 states", adam_hyper<adamw_bf16_states>(), 0.006);
  check_config<adamw_bf16_sr_states>("adamw bf16 sr states", adam_hyper<adamw_bf16_sr_states>(), 0.008);
  check_config<adamw_fp16_states>("adamw fp16 states", adam_hyper<adamw_fp16_states>(), 0.002);
  check_config<adamw_fp16_sr_states>("adamw fp16 sr states", adam_hyper<adamw_fp16_sr_states>(), 0.002);
  check_config<adamw_fp8_states>("adamw fp8 states", adam_hyper<adamw_fp8_states>(), 0.1);
  check_config<adamw_mixed_states>("adamw int8 m + bf16 sr v", adam_hyper<adamw_mixed_states>(), 0.02);
  check_config<adam_fp16_reference>("adam fp16 reference", adam_hyper<adam_fp16_reference>(0.1), 0.02);
  check_config<adamw_sr_codes>("adamw stochastic codes", adam_hyper<adamw_sr_codes>(), 0.03);
}

TEST_CASE("C5: non-finite gradients stay bitwise equal to R32") {
  auto h = adam_hyper<adamw_default>();
  for (std::int64_t n : {33, 1025}) {
    const auto r = harness::run_parity<adamw_default>(h, n, 10, 77u + n, 0.05, true);
    INFO("n=", n, " ", r.where);
    CHECK(r.bitwise);
    const auto q = harness::run_parity<adamw_reference>(h, n, 10, 77u + n, 0.05, true);
    INFO("reference n=", n, " ", q.where);
    CHECK(q.bitwise);
  }
}

TEST_CASE("C16: empty tensors are no-ops, N = 1 works, an empty tensor may come last") {
  using C = adamw_default;
  auto h = adam_hyper<C>();
  const ref::model md = ref::describe<C>(h);
  testdata::generator gen(5);
  ref::tensor t1, t0, r1;
  t1.allocate(md, 1);
  t0.allocate(md, 0);
  harness::init_params(md, t1, gen);
  harness::fill_grads(md, t1, gen, 1.0f, 0.0, false);
  r1 = t1;
  flashoptim::tensor_ref<C> list[2] = {ref::view<C>(t1), ref::view<C>(t0)};
  flashoptim::step_args a;
  CHECK(flashoptim::cpu::step_serial<C>(h, a, list, 2).ok());
  ref::step(md, r1, 1);
  std::string where;
  CHECK_MESSAGE(harness::same_bytes(t1, r1, where), where);
  // an empty tensor with null pointers is valid
  flashoptim::tensor_ref<C> empty{};
  CHECK(flashoptim::cpu::step_serial<C>(h, a, &empty, 1).ok());
  CHECK(flashoptim::cpu::step_serial<C>(h, a, nullptr, 0).ok());
}
