// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// cpu::step compiled through nvcc, both vector kernels instantiated: the
// host compiler then sees the kernels as nvcc's front end rewrote them, which
// drops attributes written on lambdas (the target-specific inlining of the
// vector operations failed there once). One configuration per slot count:
// SGD (one state), AdamW (two), AMSGrad (three); and the fp8-code and
// fp16 stochastic-rounding encoders (variable shifts) in one AdamW.
#include "flashoptim/codec/presets.hpp"
#include "flashoptim/cpu/step.hpp"

namespace flashoptim::header_check {
using ulp8 = codec::ulp_correction<bf16, std::int8_t>;
using sgd_one_slot = step_config<rule::sgd, ulp8, bf16, codec::defaults::momentum>;
using adamw_two_slots = step_config<rule::adamw, ulp8, bf16, codec::defaults::momentum, codec::defaults::second_moment>;
using amsgrad_three_slots =
    step_config<rule::adamw_amsgrad, ulp8, bf16, codec::defaults::momentum, codec::defaults::second_moment>;
using adamw_fp8_fp16_sr =
    step_config<rule::adamw, ulp8, bf16, codec::precision::fp8_momentum, codec::precision::fp16_sr>;
static_assert(cpu::is_vectorized<sgd_one_slot> && cpu::is_vectorized<adamw_two_slots> &&
                  cpu::is_vectorized<amsgrad_three_slots> && cpu::is_vectorized<adamw_fp8_fp16_sr>,
              "every configuration here takes the vector kernels");

template <class Config>
status cpu_step(const typename Config::hyper& h, const step_args& a, const tensor_ref<Config>* t, std::size_t n) {
  return cpu::step<Config>(h, a, t, n);
}
template status cpu_step<sgd_one_slot>(const sgd_one_slot::hyper&, const step_args&, const tensor_ref<sgd_one_slot>*,
                                       std::size_t);
template status cpu_step<adamw_two_slots>(const adamw_two_slots::hyper&, const step_args&,
                                          const tensor_ref<adamw_two_slots>*, std::size_t);
template status cpu_step<amsgrad_three_slots>(const amsgrad_three_slots::hyper&, const step_args&,
                                              const tensor_ref<amsgrad_three_slots>*, std::size_t);
template status cpu_step<adamw_fp8_fp16_sr>(const adamw_fp8_fp16_sr::hyper&, const step_args&,
                                            const tensor_ref<adamw_fp8_fp16_sr>*, std::size_t);
}  // namespace flashoptim::header_check
