// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// The finite-arithmetic guarantee as a property (docs/finite-arithmetic.md):
// on every configuration of tests/common/configs.hpp except those with a
// reference-layout state, finite adversarial inputs (hyperparameters at
// their validated bounds, parameters near their format's largest value,
// gradients up to their format's largest value) for 100 steps leave every
// parameter, correction and state finite, and cpu::step on every
// instruction set equals cpu::step_serial bit for bit after every step.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "common/configs.hpp"
#include "common/finite_cases.hpp"
#include "common/typed_tensor.hpp"
#include "flashoptim/cpu/step.hpp"

namespace {

using namespace flashoptim;
namespace tc = testconfigs;
using testutil::typed_tensor;

template <class Config>
void check_config(const char* name) {
  static_assert(!codec::is_reference_layout<typename Config::state0>::value &&
                    !codec::is_reference_layout<typename Config::state1>::value,
                "the reference layout keeps the paper's failures");
  constexpr std::int64_t n = 161;  // whole groups and a partial one
  std::vector<cpu::isa> paths;
  for (cpu::isa i : {cpu::isa::avx512, cpu::isa::avx2, cpu::isa::portable})
    if (cpu::isa_available(i)) paths.push_back(i);
  for (int which = 0; which < 3; ++which) {
    INFO(name, " hyperparameter set ", which);
    const auto h = finite_cases::hyper_set<Config>(which);
    step_args a;
    a.inv_grad_scale = finite_cases::inv_grad_scale(which);
    {
      const status v = validate_step_args<Config>(h, a);
      INFO(v.what());
      REQUIRE(v.ok());  // the bounds are accepted
    }
    testdata::generator gen(1000u + static_cast<unsigned>(which));
    typed_tensor<Config> serial(n);
    finite_cases::init_params<Config>(serial.view(7), gen);
    std::vector<typed_tensor<Config>> runs(paths.size(), serial);
    for (int s = 1; s <= 100; ++s) {
      a.step = s;
      finite_cases::fill_grads<Config>(serial.grad.data(), n, gen);
      auto sv = serial.view(7);
      REQUIRE(cpu::step_serial<Config>(h, a, &sv, 1).ok());
      std::string where;
      const bool finite = finite_cases::all_finite<Config>(sv, where);
      INFO("step ", s, ": ", where);
      REQUIRE(finite);
      for (std::size_t k = 0; k < paths.size(); ++k) {
        runs[k].grad = serial.grad;
        auto v = runs[k].view(7);
        cpu::step_options o;
        o.instruction_set = paths[k];
        o.threads = 2;
        o.min_groups_per_thread = 1;
        REQUIRE(cpu::step<Config>(h, a, &v, 1, o).ok());
        INFO("path ", cpu::to_string(paths[k]));
        REQUIRE(runs[k].bytes() == serial.bytes());
      }
    }
  }
}

}  // namespace

#define FINITE_CASE(cfg) \
  TEST_CASE("finite property " #cfg) { check_config<tc::cfg>(#cfg); }

FINITE_CASE(sgd_plain)
FINITE_CASE(sgd_momentum)
FINITE_CASE(sgdw_momentum)
FINITE_CASE(adam_default)
FINITE_CASE(adamw_default)
FINITE_CASE(lion_default)
FINITE_CASE(adamw_fp32_native)
FINITE_CASE(adamw_bf16_native)
FINITE_CASE(adamw_fp16_native)
FINITE_CASE(adamw_bf16_master)
FINITE_CASE(adamw_fp16_master)
FINITE_CASE(adamw_ulp16)
FINITE_CASE(adamw_fp16_ulp8)
FINITE_CASE(adamw_fp16_ulp16)
FINITE_CASE(adamw_exact)
FINITE_CASE(adamw_rounded)
FINITE_CASE(adamw_fp32_grad)
FINITE_CASE(adamw_fp32_states)
FINITE_CASE(adamw_bf16_states)
FINITE_CASE(adamw_bf16_sr_states)
FINITE_CASE(adamw_fp16_states)
FINITE_CASE(adamw_fp16_sr_states)
FINITE_CASE(adamw_fp8_states)
FINITE_CASE(adamw_mixed_states)
FINITE_CASE(lion_fp32)
FINITE_CASE(sgd_fp16_master)
FINITE_CASE(sgdw_exact_fp8)
FINITE_CASE(adamw_sr_codes)
// Not here: adamw_reference, lion_reference, adam_fp16_reference (the
// paper's layout keeps its failures; tests/core/finite_arithmetic_test.cpp).
