// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// The step configurations the parity tests instantiate (docs/test-matrix.md C5):
// every rule with the flagship layout, every master mode and every state
// codec with AdamW, and cross combinations. CPU and GPU tests share the list.
#pragma once

#include <cstdint>

#include "flashoptim/flashoptim.hpp"

namespace testconfigs {
using namespace flashoptim;
namespace c = flashoptim::codec;
using ulp8 = c::ulp_correction<bf16, std::int8_t>;
using ulp16 = c::ulp_correction<bf16, std::int16_t>;
using hulp8 = c::ulp_correction<fp16, std::int8_t>;
using hulp16 = c::ulp_correction<fp16, std::int16_t>;
using dm = c::defaults::momentum;
using dv = c::defaults::second_moment;
using rm = c::reference::momentum;
using rv = c::reference::second_moment;
namespace p = c::precision;

// every rule, flagship layout
using sgd_plain = step_config<rule::sgd, ulp8, bf16>;                   // momentum 0: no state
using sgd_momentum = step_config<rule::sgd, ulp8, bf16, dm>;
using sgdw_momentum = step_config<rule::sgdw, ulp8, bf16, dm>;
using adam_default = step_config<rule::adam, ulp8, bf16, dm, dv>;
using adamw_default = step_config<rule::adamw, ulp8, bf16, dm, dv>;
using lion_default = step_config<rule::lion, ulp8, bf16, dm>;
// AMSGrad: a third state, max_exp_avg_sq; by default the second moment's codec
using adam_amsgrad_default = step_config<rule::adam_amsgrad, ulp8, bf16, dm, dv>;
using adamw_amsgrad_default = step_config<rule::adamw_amsgrad, ulp8, bf16, dm, dv>;
using adamw_amsgrad_fp32_max = step_config<rule::adamw_amsgrad, ulp8, bf16, dm, dv, p::fp32>;
using adamw_amsgrad_bf16 = step_config<rule::adamw_amsgrad, c::native<bf16>, bf16, p::bf16, p::bf16_sr, p::bf16_sr>;
// every master mode / param type (AdamW, default states)
using adamw_fp32_native = step_config<rule::adamw, c::native<float>, float, dm, dv>;
using adamw_bf16_native = step_config<rule::adamw, c::native<bf16>, bf16, dm, dv>;
// naive bf16 (examples/train's `bf16`): its stage buffers are exactly 48 KiB,
// so the kernel's static shared memory tips a launch over the default limit
using adamw_bf16_plain = step_config<rule::adamw, c::native<bf16>, bf16, p::bf16, p::bf16>;
using adamw_fp16_native = step_config<rule::adamw, c::native<fp16>, fp16, dm, dv>;
using adamw_bf16_master = step_config<rule::adamw, c::fp32_master<bf16>, bf16, dm, dv>;
using adamw_fp16_master = step_config<rule::adamw, c::fp32_master<fp16>, fp16, dm, dv>;
using adamw_ulp16 = step_config<rule::adamw, ulp16, bf16, dm, dv>;
using adamw_fp16_ulp8 = step_config<rule::adamw, hulp8, fp16, dm, dv>;
using adamw_fp16_ulp16 = step_config<rule::adamw, hulp16, fp16, dm, dv>;
using adamw_exact = step_config<rule::adamw, c::exact_split, bf16, dm, dv>;
using adamw_rounded = step_config<rule::adamw, c::rounded_split, bf16, dm, dv>;
using adamw_fp32_grad = step_config<rule::adamw, ulp8, float, dm, dv>;
// every state codec (AdamW, bf16 + int8 correction)
using adamw_reference = step_config<rule::adamw, ulp8, bf16, rm, rv>;
using adamw_fp32_states = step_config<rule::adamw, ulp8, bf16, p::fp32, p::fp32>;
using adamw_bf16_states = step_config<rule::adamw, ulp8, bf16, p::bf16, p::bf16>;
using adamw_bf16_sr_states = step_config<rule::adamw, ulp8, bf16, p::bf16_sr, p::bf16_sr>;
using adamw_fp16_states = step_config<rule::adamw, ulp8, bf16, p::fp16, p::fp16>;
using adamw_fp16_sr_states = step_config<rule::adamw, ulp8, bf16, p::fp16_sr, p::fp16_sr>;
using adamw_fp8_states = step_config<rule::adamw, ulp8, bf16, p::fp8_momentum, p::fp8_second_moment>;
using adamw_mixed_states = step_config<rule::adamw, ulp8, bf16, dm, p::bf16_sr>;
// cross combinations
using lion_fp32 = step_config<rule::lion, c::native<float>, float, p::fp32>;
using lion_reference = step_config<rule::lion, ulp8, bf16, rm>;
using sgd_fp16_master = step_config<rule::sgd, c::fp32_master<fp16>, fp16, p::bf16_sr>;
using sgdw_exact_fp8 = step_config<rule::sgdw, c::exact_split, bf16, p::fp8_momentum>;
using lion_rounded = step_config<rule::lion, c::rounded_split, bf16, dm>;
using adam_fp16_reference = step_config<rule::adam, hulp16, fp16, rm, rv>;
using adamw_sr_codes = step_config<rule::adamw, ulp8, bf16,
                                   c::grouped<c::int8_code<true>, c::softsign, c::scale_fp32, c::code_rounding::stochastic>,
                                   c::grouped<c::uint8_code<true>, c::sqrt_compander, c::scale_fp32,
                                              c::code_rounding::stochastic>>;
}  // namespace testconfigs

// The CPU tests link flashoptim_test_instances, which compiles the CPU step
// of every configuration above once (common/cpu_step_instances.hpp).
#if defined(FLASHOPTIM_TEST_EXTERN_STEPS)
#include "common/cpu_step_instances.hpp"
#endif
