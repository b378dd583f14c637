// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// The user rule and companders of user_types.hpp on the GPU: the device
// plan's bytes equal cpu::step_serial's after every step, on the kernel's
// specialized encoders (a softsign-kind compander) and on its generic one
// (a compander of no kind).
#include "extension/user_types.hpp"
#include "gpu/gpu_harness.hpp"

using namespace gpu_test;

namespace {

template <class Config>
void check_gpu(const typename Config::hyper& h) {
  tensor_set<Config> ts;
  ts.allocate({1, 33, 1025, 4096 + 161});
  testdata::generator gen(4242u);
  ts.init(gen);
  ts.upload();
  device::step_plan<Config> plan;
  const auto refs = ts.refs(true);
  STATUS_OK(plan.build(refs.data(), refs.size()));
  for (int s = 1; s <= 20; ++s) step_and_compare(ts, plan.ref(), h, s, gen);
}

}  // namespace

static_assert(kernel::path_of<user::signum_config>() == kernel::path::specialized);
static_assert(kernel::path_of<user::signum_quadratic>() == kernel::path::generic);

TEST_CASE("extension gpu: user signum with a user softsign == step_serial") {
  check_gpu<user::signum_config>(user::signum_hyper());
  auto h = user::signum_hyper();
  h.maximize = true;
  check_gpu<user::signum_config>(h);
}

TEST_CASE("extension gpu: AdamW with a user softsign == step_serial") {
  rule::adamw::hyper h;
  h.lr = 1e-2;
  h.weight_decay = 0.1;
  check_gpu<user::adamw_user_softsign>(h);
}

TEST_CASE("extension gpu: a compander of no kind (generic encoder) == step_serial") {
  check_gpu<user::signum_quadratic>(user::signum_hyper());
}
