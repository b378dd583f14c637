// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// The finite-arithmetic guarantee on the GPU (docs/finite-arithmetic.md):
// tests/cpu/finite_property_test.cpp's adversarial inputs (hyperparameters
// at their validated bounds, parameters near their format's largest value,
// gradients up to their format's largest value) stepped 100 times by the
// device plan and by cpu::step_serial on identical bytes; every byte equal
// after every step and every parameter, correction and state finite. Every
// configuration of tests/common/configs.hpp except the reference layout,
// with the default policy (range-checked tiles: a flagged tile is redone
// exactly) and the unchecked previous policy (the recomputation inline);
// and the device-input path's refusal of scalars out of fp32 range.
#include "common/configs.hpp"
#include "common/finite_cases.hpp"
#include "gpu_harness.hpp"

using namespace gpu_test;
namespace tc = testconfigs;

namespace {

template <class Config, class Policy = typename tuning::default_step_policy<Config>::type>
void check_finite(const char* name) {
  INFO("config ", name);
  for (int which = 0; which < 3; ++which) {
    INFO("hyperparameter set ", which);
    const auto h = finite_cases::hyper_set<Config>(which);
    tensor_set<Config> ts;
    // Whole units, a run of several, and partial tiles.
    ts.allocate({1, 33, 1025, 4096 + 161});
    testdata::generator gen(2000u + static_cast<unsigned>(which));
    ts.init(gen);
    for (std::size_t i = 0; i < ts.count(); ++i) finite_cases::init_params<Config>(ts.ref(i, false), gen);
    ts.upload();
    device::step_plan<Config, Policy> plan;
    const auto refs = ts.refs(true);
    STATUS_OK(plan.build(refs.data(), refs.size()));
    for (int s = 1; s <= 100; ++s) {
      for (std::size_t i = 0; i < ts.count(); ++i)
        finite_cases::fill_grads<Config>(ts.template at<typename Config::grad_type>(s_grad, i, false), ts.sizes[i],
                                         gen);
      ts.upload(s_grad);
      step_args a;
      a.step = s;
      a.inv_grad_scale = finite_cases::inv_grad_scale(which);
      STATUS_OK(cpu_step(ts, h, a));
      STATUS_OK(plan.ref().step_async(h, a, nullptr));
      GPU_CHECK(cudaDeviceSynchronize());
      std::string where;
      const bool same = ts.same(where);
      INFO("step ", s, ": ", where);
      REQUIRE(same);
      for (std::size_t i = 0; i < ts.count(); ++i) {
        const bool finite = finite_cases::all_finite<Config>(ts.ref(i, false), where);
        INFO("tensor ", i, ": ", where);
        REQUIRE(finite);
      }
    }
  }
}

}  // namespace

#define FINITE_CASE(cfg) \
  TEST_CASE("finite property " #cfg) { check_finite<tc::cfg>(#cfg); }

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
FINITE_CASE(adamw_amsgrad_default)  // three slots: max_exp_avg_sq in v's codec

TEST_CASE("finite property: the unchecked previous policy (recomputation inline in the tile)") {
  using previous = tuning::previous_step_policy;
  check_finite<tc::adamw_default, previous>("adamw_default, previous policy");
  check_finite<tc::sgd_momentum, previous>("sgd_momentum, previous policy");
  check_finite<tc::lion_default, previous>("lion_default, previous policy");
  check_finite<tc::adamw_fp16_states, previous>("adamw_fp16_states, previous policy");
}

TEST_CASE("finite (a) on the device inputs path: scalars out of fp32 range are refused, nothing written") {
  using C = tc::adamw_default;
  tensor_set<C> ts;
  ts.allocate({1025});
  testdata::generator gen(77);
  ts.init(gen);
  ts.fill_grads(gen);
  ts.upload();
  device::step_plan<C> plan;
  const auto refs = ts.refs(true);
  STATUS_OK(plan.build(refs.data(), refs.size()));
  double* values = nullptr;  // [0] lr, [1] inv_grad_scale
  std::int32_t* error = nullptr;
  GPU_CHECK(cudaMalloc(&values, 2 * sizeof(double)));
  GPU_CHECK(cudaMalloc(&error, sizeof(std::int32_t)));
  auto refused = [&](double lr, double inv, const char* what) {
    INFO(what);
    const double host[2] = {lr, inv};
    const std::int32_t zero = 0;
    GPU_CHECK(cudaMemcpy(values, host, sizeof host, cudaMemcpyHostToDevice));
    GPU_CHECK(cudaMemcpy(error, &zero, sizeof zero, cudaMemcpyHostToDevice));
    device::device_inputs in;
    in.lr = values;
    in.inv_grad_scale = values + 1;
    in.error = error;
    step_args a;
    STATUS_OK(plan.ref().step_async(C::hyper{}, a, in, nullptr));
    std::int32_t flag = 0;
    GPU_CHECK(cudaMemcpy(&flag, error, sizeof flag, cudaMemcpyDeviceToHost));
    CHECK(flag == 1);
    std::string where;
    CHECK(ts.same(where));  // the host copy was not stepped: nothing written
  };
  refused(1e39, 1.0, "lr = 1e39: the step size is inf in fp32");
  refused(1e-3, 1e39, "inv_grad_scale = 1e39");
  refused(1e-3, 1e-50, "inv_grad_scale = 1e-50 rounds to 0");
  // valid values from the device: stepped, equal to the host step
  const double ok[2] = {1e-3, 1.0};
  GPU_CHECK(cudaMemcpy(values, ok, sizeof ok, cudaMemcpyHostToDevice));
  device::device_inputs in;
  in.lr = values;
  in.inv_grad_scale = values + 1;
  in.error = error;
  step_args a;
  STATUS_OK(plan.ref().step_async(C::hyper{}, a, in, nullptr));
  STATUS_OK(cpu_step(ts, C::hyper{}, a));
  GPU_CHECK(cudaDeviceSynchronize());
  std::string where;
  const bool same = ts.same(where);
  INFO(where);
  CHECK(same);
  cudaFree(values);
  cudaFree(error);
}
