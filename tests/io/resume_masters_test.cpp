// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// C19 resume, every master-weight mode (AdamW, default codecs). The
// configurations are common/configs.hpp's, whose CPU step the test links
// compiled (flashoptim_test_instances): a checkpoint holds no gradient, so
// the gradient type (the parameter's own, or fp32) changes nothing here.
#include "common/configs.hpp"
#include "resume_check.hpp"

using namespace io_test;

TEST_CASE("C19 resume is bit-identical: native bf16 / fp16 / fp32") {
  check_resume<testconfigs::adamw_bf16_native>(adamw_hyper());
  check_resume<testconfigs::adamw_fp16_native>(adamw_hyper());
  check_resume<testconfigs::adamw_fp32_native>(adamw_hyper());
}

TEST_CASE("C19 resume is bit-identical: fp32_master") {
  check_resume<testconfigs::adamw_bf16_master>(adamw_hyper());
  check_resume<testconfigs::adamw_fp16_master>(adamw_hyper());
}

TEST_CASE("C19 resume is bit-identical: ulp_correction bf16/fp16 x int8/int16") {
  check_resume<testconfigs::adamw_fp32_grad>(adamw_hyper());  // bf16 + int8
  check_resume<testconfigs::adamw_ulp16>(adamw_hyper());
  check_resume<testconfigs::adamw_fp16_ulp8>(adamw_hyper());
  check_resume<testconfigs::adamw_fp16_ulp16>(adamw_hyper());
}

TEST_CASE("C19 resume is bit-identical: exact_split and rounded_split") {
  check_resume<testconfigs::adamw_exact>(adamw_hyper());
  check_resume<testconfigs::adamw_rounded>(adamw_hyper());
}
