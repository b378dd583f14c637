// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// fp32 parameters, no correction (native<float>), fp32 states: torch.optim's
// arithmetic in this library's step (what the tests compare with torch and
// with a numpy reference).
#include "binding.hpp"

namespace flashoptim::python {

void register_fp32(registry& r) {
  using namespace cfg;
  using m = c::native<float>;
  add_cpu<step_config<rule::adamw, m, float, f32, f32>>(r, "adamw/fp32/fp32");
  add_cpu<step_config<rule::adam, m, float, f32, f32>>(r, "adam/fp32/fp32");
  add_cpu<step_config<rule::sgd, m, float, f32>>(r, "sgd/fp32/fp32");
  add_cpu<step_config<rule::sgd, m, float>>(r, "sgd/fp32/none");
  add_cpu<step_config<rule::sgdw, m, float, f32>>(r, "sgdw/fp32/fp32");
  add_cpu<step_config<rule::sgdw, m, float>>(r, "sgdw/fp32/none");
  add_cpu<step_config<rule::lion, m, float, f32>>(r, "lion/fp32/fp32");
}

}  // namespace flashoptim::python
