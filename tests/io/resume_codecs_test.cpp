// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// C19 resume, every state codec preset (AdamW, bf16 + int8 correction). The
// configurations are common/configs.hpp's, whose CPU step the test links
// compiled (flashoptim_test_instances).
#include "common/configs.hpp"
#include "resume_check.hpp"

using namespace io_test;

TEST_CASE("C19 resume is bit-identical: defaults and reference codecs") {
  check_resume<testconfigs::adamw_fp32_grad>(adamw_hyper());
  check_resume<testconfigs::adamw_reference>(adamw_hyper());
}

TEST_CASE("C19 resume is bit-identical: plain fp32 / bf16 / fp16 states") {
  check_resume<testconfigs::adamw_fp32_states>(adamw_hyper());
  check_resume<testconfigs::adamw_bf16_states>(adamw_hyper());
  check_resume<testconfigs::adamw_fp16_states>(adamw_hyper());
}

TEST_CASE("C19 resume is bit-identical: stochastic rounding (seeded per tensor)") {
  check_resume<testconfigs::adamw_bf16_sr_states>(adamw_hyper());
  check_resume<testconfigs::adamw_fp16_sr_states>(adamw_hyper());
  check_resume<testconfigs::adamw_sr_codes>(adamw_hyper());  // grouped codes with stochastic rounding
}

TEST_CASE("C19 resume is bit-identical: fp8 presets") {
  check_resume<testconfigs::adamw_fp8_states>(adamw_hyper());
}
