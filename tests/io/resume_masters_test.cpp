// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// C19 resume, every master-weight mode (AdamW, default codecs).
#include "resume_check.hpp"

using namespace io_test;

TEST_CASE("C19 resume is bit-identical: native bf16 / fp16 / fp32") {
  check_resume<adamw_config<codec::native<bf16>>>(adamw_hyper());
  check_resume<adamw_config<codec::native<fp16>>>(adamw_hyper());
  check_resume<adamw_config<codec::native<float>>>(adamw_hyper());
}

TEST_CASE("C19 resume is bit-identical: fp32_master") {
  check_resume<adamw_config<codec::fp32_master<bf16>>>(adamw_hyper());
  check_resume<adamw_config<codec::fp32_master<fp16>>>(adamw_hyper());
}

TEST_CASE("C19 resume is bit-identical: ulp_correction bf16/fp16 x int8/int16") {
  check_resume<adamw_config<ulp_bf16_i8>>(adamw_hyper());
  check_resume<adamw_config<ulp_bf16_i16>>(adamw_hyper());
  check_resume<adamw_config<ulp_fp16_i8>>(adamw_hyper());
  check_resume<adamw_config<ulp_fp16_i16>>(adamw_hyper());
}

TEST_CASE("C19 resume is bit-identical: exact_split") {
  check_resume<adamw_config<codec::exact_split>>(adamw_hyper());
}
