// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// bf16 parameters + int8 correction (master_weight_bits=24: the rounded split)
// with the default 8-bit states: the paper's default configuration's bytes
// per parameter, one per rule.
// One translation unit per master mode so a 2-core build compiles them in
// parallel.
#include "binding.hpp"

namespace flashoptim::python {

void register_bf16_int8(registry& r) {
  using namespace cfg;
  add_cpu<step_config<rule::adamw, split8, bf16, dm, dv>>(r, "adamw/bf16+int8/8bit");
  add_cpu<step_config<rule::adam, split8, bf16, dm, dv>>(r, "adam/bf16+int8/8bit");
  add_cpu<step_config<rule::sgd, split8, bf16, dm>>(r, "sgd/bf16+int8/8bit");
  add_cpu<step_config<rule::sgd, split8, bf16>>(r, "sgd/bf16+int8/none");
  add_cpu<step_config<rule::sgdw, split8, bf16, dm>>(r, "sgdw/bf16+int8/8bit");
  add_cpu<step_config<rule::sgdw, split8, bf16>>(r, "sgdw/bf16+int8/none");
  add_cpu<step_config<rule::lion, split8, bf16, dm>>(r, "lion/bf16+int8/8bit");
}

}  // namespace flashoptim::python
