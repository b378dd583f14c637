// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// C19 resume, every state codec preset (AdamW, bf16 + int8 correction).
#include "resume_check.hpp"

using namespace io_test;
namespace p = flashoptim::codec::precision;

TEST_CASE("C19 resume is bit-identical: defaults and reference codecs") {
  check_resume<adamw_config<ulp_bf16_i8, codec::defaults::momentum, codec::defaults::second_moment>>(adamw_hyper());
  check_resume<adamw_config<ulp_bf16_i8, codec::reference::momentum, codec::reference::second_moment>>(
      adamw_hyper());
}

TEST_CASE("C19 resume is bit-identical: plain fp32 / bf16 / fp16 states") {
  check_resume<adamw_config<ulp_bf16_i8, p::fp32, p::fp32>>(adamw_hyper());
  check_resume<adamw_config<ulp_bf16_i8, p::bf16, p::bf16>>(adamw_hyper());
  check_resume<adamw_config<ulp_bf16_i8, p::fp16, p::fp16>>(adamw_hyper());
}

TEST_CASE("C19 resume is bit-identical: stochastic rounding (seeded per tensor)") {
  check_resume<adamw_config<ulp_bf16_i8, p::bf16_sr, p::bf16_sr>>(adamw_hyper());
  check_resume<adamw_config<ulp_bf16_i8, p::fp16_sr, p::fp16_sr>>(adamw_hyper());
}

TEST_CASE("C19 resume is bit-identical: fp8 presets") {
  check_resume<adamw_config<ulp_bf16_i8, p::fp8_momentum, p::fp8_second_moment>>(adamw_hyper());
}
