// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// docs/test-matrix.md C5 x C20 on the CPU paths, by state codec, including the ones
// the vector paths leave to the scalar step (fp8 codes, fp16 stochastic).
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
namespace c = flashoptim::codec;
using ulp8 = c::ulp_correction<bf16, std::int8_t>;
// scale formats and companders beyond the presets
using bf16_up_m = c::grouped<c::int8_code<true>, c::softsign, c::scale_rounded_up<bf16>, c::code_rounding::half_up>;
using fp16_up_v = c::grouped<c::uint8_code<true>, c::sqrt_compander, c::scale_rounded_up<fp16>,
                             c::code_rounding::half_up_nonzero>;
using rounded_up_scales = step_config<rule::adamw, ulp8, bf16, bf16_up_m, fp16_up_v>;
using identity_m = c::grouped<c::int8_code<false>, c::identity, c::scale_fp32, c::code_rounding::half_up_nonzero>;
using identity_u8 = c::grouped<c::uint8_code<false>, c::identity, c::scale_fp16_reference, c::code_rounding::stochastic>;
using identity_codes = step_config<rule::adamw, ulp8, bf16, identity_m, identity_u8>;
using sqrt_m = c::grouped<c::int8_code<true>, c::sqrt_compander, c::scale_fp32, c::code_rounding::half_up>;
using sgd_sqrt_state = step_config<rule::sgd, ulp8, bf16, sqrt_m>;
}  // namespace

TEST_CASE("C5/C20: every state codec, every ISA and thread count equal step_serial") {
  check_config<adamw_reference>("adamw reference states", adamw_hyper<adamw_reference>());
  check_config<adamw_fp32_states>("adamw fp32 states", adamw_hyper<adamw_fp32_states>());
  check_config<adamw_bf16_states>("adamw bf16 states", adamw_hyper<adamw_bf16_states>());
  check_config<adamw_bf16_sr_states>("adamw bf16 sr states", adamw_hyper<adamw_bf16_sr_states>(), false);
  check_config<adamw_fp16_states>("adamw fp16 states", adamw_hyper<adamw_fp16_states>(), false);
  check_config<adamw_mixed_states>("adamw int8 m + bf16 sr v", adamw_hyper<adamw_mixed_states>(), false);
  check_config<adam_fp16_reference>("adam fp16 reference", adamw_hyper<adam_fp16_reference>(), false);
  check_config<adamw_sr_codes>("adamw stochastic codes", adamw_hyper<adamw_sr_codes>());
  check_config<rounded_up_scales>("adamw rounded-up 16-bit scales", adamw_hyper<rounded_up_scales>(), false);
  check_config<identity_codes>("adamw identity companders", adamw_hyper<identity_codes>(), false);
  rule::sgd::hyper s;
  s.lr = 1e-2;
  s.momentum = 0.9;
  check_config<sgd_sqrt_state>("sgd momentum through sqrt", s, false);
}

TEST_CASE("C5/C20: codecs without a vector path run the scalar step on threads, bitwise") {
  static_assert(!flashoptim::cpu::is_vectorized<adamw_fp8_states>, "fp8 codes are left to the scalar step");
  static_assert(!flashoptim::cpu::is_vectorized<adamw_fp16_sr_states>, "fp16 stochastic rounding too");
  check_config<adamw_fp8_states>("adamw fp8 states", adamw_hyper<adamw_fp8_states>(), false);
  check_config<adamw_fp16_sr_states>("adamw fp16 sr states", adamw_hyper<adamw_fp16_sr_states>(), false);
  rule::sgdw::hyper w;
  w.lr = 1e-2;
  w.momentum = 0.9;
  check_config<sgdw_exact_fp8>("sgdw exact_split fp8", w, false);
}
