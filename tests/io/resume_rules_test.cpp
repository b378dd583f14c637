// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// C19 resume, every update rule (with a spread of masters and codecs). The
// configurations of common/configs.hpp come with their CPU step compiled
// (flashoptim_test_instances); the others compile it here.
#include "common/configs.hpp"
#include "resume_check.hpp"

using namespace io_test;
namespace p = flashoptim::codec::precision;
namespace d = flashoptim::codec::defaults;
namespace r = flashoptim::codec::reference;

TEST_CASE("C19 resume is bit-identical: sgd without momentum") {
  check_resume<testconfigs::sgd_plain>(sgd_hyper(0.0));
  check_resume<step_config<rule::sgd, codec::native<float>, float>>(sgd_hyper(0.0));
}

TEST_CASE("C19 resume is bit-identical: sgd with momentum (dampening, nesterov)") {
  check_resume<testconfigs::sgd_momentum>(sgd_hyper(0.9));
  check_resume<step_config<rule::sgd, codec::exact_split, float, r::momentum>>(sgd_hyper(0.9, true));
  check_resume<step_config<rule::sgd, ulp_fp16_i16, float, p::fp32>>(sgd_hyper(0.9));
}

TEST_CASE("C19 resume is bit-identical: sgdw") {
  check_resume<step_config<rule::sgdw, ulp_bf16_i8, float, p::bf16_sr>>(sgdw_hyper());
  check_resume<step_config<rule::sgdw, codec::fp32_master<bf16>, float, d::momentum>>(sgdw_hyper());
}

TEST_CASE("C19 resume is bit-identical: adam") {
  check_resume<testconfigs::adam_default>(adam_hyper());
  check_resume<step_config<rule::adam, codec::native<fp16>, float, p::fp16, p::fp32>>(adam_hyper());
}

TEST_CASE("C19 resume is bit-identical: lion") {
  check_resume<testconfigs::lion_default>(lion_hyper());
  check_resume<step_config<rule::lion, ulp_bf16_i16, float, r::momentum>>(lion_hyper());
  check_resume<step_config<rule::lion, codec::native<float>, float, p::fp8_momentum>>(lion_hyper());
}
