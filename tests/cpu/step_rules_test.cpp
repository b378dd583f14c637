// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// docs/test-matrix.md C5 x C20 on the CPU paths, by rule: cpu::step on every
// instruction set of this machine and 1, 2, 3, 7 threads equals
// cpu::step_serial bit for bit after every step.
#include "common/configs.hpp"
#include "cpu/cpu_harness.hpp"

using namespace testconfigs;
using cpuharness::check_config;

TEST_CASE("C5/C20: SGD variants, every ISA and thread count equal step_serial") {
  rule::sgd::hyper h;
  h.lr = 1e-2;
  check_config<sgd_plain>("sgd", h);
  h.momentum = 0.9;
  check_config<sgd_momentum>("sgd momentum", h);
  h.dampening = 0.5;
  check_config<sgd_momentum>("sgd dampening 0.5", h, false);
  h.dampening = 0.0;
  h.nesterov = true;
  check_config<sgd_momentum>("sgd nesterov", h, false);
  h.nesterov = false;
  h.weight_decay = 0.1;
  check_config<sgd_momentum>("sgd coupled wd", h, false);
  rule::sgdw::hyper w;
  w.lr = 1e-2;
  w.momentum = 0.9;
  w.weight_decay = 0.1;
  check_config<sgdw_momentum>("sgdw", w);
  w.decouple_lr = true;
  w.initial_lr = 2e-2;
  check_config<sgdw_momentum>("sgdw decouple_lr", w, false);
  check_config<sgd_fp16_master>("sgd fp16 master bf16_sr", h);
  using sgd_fp32_state = step_config<rule::sgd, codec::native<float>, float, codec::precision::fp32>;
  check_config<sgd_fp32_state>("sgd fp32", h, false);
}

TEST_CASE("C5/C20: Adam, AdamW and Lion, every ISA and thread count equal step_serial") {
  rule::adam::hyper a;
  a.lr = 1e-2;
  a.weight_decay = 0.1;
  check_config<adam_default>("adam", a);
  rule::adamw::hyper h;
  h.lr = 1e-2;
  check_config<adamw_default>("adamw", h);
  h.weight_decay = 0.1;
  h.decouple_lr = true;
  h.initial_lr = 1e-1;
  check_config<adamw_default>("adamw decouple_lr", h, false);
  rule::lion::hyper l;
  l.lr = 1e-3;
  l.weight_decay = 0.1;
  check_config<lion_default>("lion", l);
  check_config<lion_fp32>("lion fp32", l, false);
  check_config<lion_reference>("lion reference states", l, false);
  using lion_bf16_sr = step_config<rule::lion, codec::native<bf16>, bf16, codec::precision::bf16_sr>;
  check_config<lion_bf16_sr>("lion bf16 sr", l, false);
}

TEST_CASE("C5/C20: AMSGrad and maximize, every ISA and thread count equal step_serial") {
  static_assert(cpu::detail::vectorized<adamw_amsgrad_default>, "AMSGrad takes the SIMD path");
  static_assert(cpu::detail::vectorized<adamw_amsgrad_bf16>, "AMSGrad with plain states takes the SIMD path");
  rule::adamw_amsgrad::hyper h;
  h.lr = 1e-2;
  h.weight_decay = 0.1;
  check_config<adamw_amsgrad_default>("adamw amsgrad", h);
  check_config<adamw_amsgrad_fp32_max>("adamw amsgrad fp32 vmax", h, false);
  check_config<adamw_amsgrad_bf16>("adamw amsgrad bf16 states", h, false);
  rule::adam_amsgrad::hyper a;
  a.lr = 1e-2;
  a.weight_decay = 0.1;
  a.maximize = true;
  check_config<adam_amsgrad_default>("adam amsgrad maximize", a);
  rule::adamw::hyper w;
  w.lr = 1e-2;
  w.maximize = true;
  check_config<adamw_default>("adamw maximize", w, false);
  rule::lion::hyper l;
  l.lr = 1e-3;
  l.maximize = true;
  check_config<lion_default>("lion maximize", l, false);
  rule::sgd::hyper s;
  s.lr = 1e-2;
  s.momentum = 0.9;
  s.maximize = true;
  check_config<sgd_momentum>("sgd maximize", s, false);
}

TEST_CASE("C5/C20: gradient unscaling (inv_grad_scale != 1) on every path") {
  rule::adamw::hyper h;
  h.lr = 1e-2;
  for (double inv : {0.5, 0x1p-16}) {
    cpuharness::profile pr;
    const auto r = cpuharness::run_variants<adamw_default>(h, {1025, 33}, 5, 99u, pr, inv);
    INFO("inv_grad_scale=", inv, ": ", r.what);
    CHECK(r.ok);
  }
}
