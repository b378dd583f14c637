// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// The second half of test_cpu_isa_flags' masters, compiled with
// -march=x86-64-v4 like isa_flags_checks.cpp (which says why).
#include "cpu/isa_flags_check_impl.hpp"

namespace isa_flags {

void run_part_b(outcome& out) {
  check_master<c::fp32_master<float>, float>("fp32_master<float>", out);
  check_master<c::ulp_correction<bf16, std::int8_t>, bf16>("ulp_correction<bf16, int8>", out);
  check_master<c::exact_split, bf16>("exact_split", out);
}

}  // namespace isa_flags
