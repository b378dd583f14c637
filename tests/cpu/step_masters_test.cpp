// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// docs/test-matrix.md C5 x C20 on the CPU paths, by master mode and parameter type.
#include "common/configs.hpp"
#include "cpu/cpu_harness.hpp"

using namespace testconfigs;
using cpuharness::check_config;

namespace {
template <class Config>
typename Config::hyper adamw_hyper() {
  typename Config::hyper h;
  h.lr = 1e-2;
  return h;
}
}  // namespace

TEST_CASE("C5/C20: every master mode, every ISA and thread count equal step_serial") {
  check_config<adamw_fp32_native>("adamw fp32 native", adamw_hyper<adamw_fp32_native>());
  check_config<adamw_bf16_native>("adamw bf16 native", adamw_hyper<adamw_bf16_native>());
  check_config<adamw_fp16_native>("adamw fp16 native", adamw_hyper<adamw_fp16_native>(), false);
  check_config<adamw_bf16_master>("adamw bf16 fp32_master", adamw_hyper<adamw_bf16_master>());
  check_config<adamw_fp16_master>("adamw fp16 fp32_master", adamw_hyper<adamw_fp16_master>(), false);
  check_config<adamw_ulp16>("adamw bf16 ulp int16", adamw_hyper<adamw_ulp16>());
  check_config<adamw_fp16_ulp8>("adamw fp16 ulp int8", adamw_hyper<adamw_fp16_ulp8>(), false);
  check_config<adamw_fp16_ulp16>("adamw fp16 ulp int16", adamw_hyper<adamw_fp16_ulp16>(), false);
  check_config<adamw_exact>("adamw exact_split", adamw_hyper<adamw_exact>());
  check_config<adamw_rounded>("adamw rounded_split", adamw_hyper<adamw_rounded>());
  check_config<adamw_fp32_grad>("adamw fp32 grads", adamw_hyper<adamw_fp32_grad>(), false);
  using fp16_grads = step_config<rule::adamw, ulp8, fp16, dm, dv>;
  check_config<fp16_grads>("adamw fp16 grads", adamw_hyper<fp16_grads>(), false);
  using fp32_master_f32 = step_config<rule::adamw, codec::fp32_master<float>, float, dm, dv>;
  check_config<fp32_master_f32>("adamw fp32 fp32_master", adamw_hyper<fp32_master_f32>(), false);
}
