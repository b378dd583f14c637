// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// bf16 parameters + an fp32 master copy (master_weight_bits=32) with the
// default 8-bit states.
#include "binding.hpp"

namespace flashoptim::python {

void register_bf16_fp32_master(registry& r) {
  using namespace cfg;
  using m = c::fp32_master<bf16>;
  add_cpu<step_config<rule::adamw, m, bf16, dm, dv>>(r, "adamw/bf16+fp32/8bit");
  add_cpu<step_config<rule::adam, m, bf16, dm, dv>>(r, "adam/bf16+fp32/8bit");
  add_cpu<step_config<rule::sgd, m, bf16, dm>>(r, "sgd/bf16+fp32/8bit");
  add_cpu<step_config<rule::sgd, m, bf16>>(r, "sgd/bf16+fp32/none");
  add_cpu<step_config<rule::sgdw, m, bf16, dm>>(r, "sgdw/bf16+fp32/8bit");
  add_cpu<step_config<rule::sgdw, m, bf16>>(r, "sgdw/bf16+fp32/none");
  add_cpu<step_config<rule::lion, m, bf16, dm>>(r, "lion/bf16+fp32/8bit");
}

}  // namespace flashoptim::python
