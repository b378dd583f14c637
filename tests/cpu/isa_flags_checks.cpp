// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// The CPU step compiled with -march=x86-64-v4 (this file and
// isa_flags_checks_b.cpp, the other half of the masters): a program
// built for AVX-512 still runs every instruction set the machine has when
// forced, and every one must equal step_serial bit for bit. GCC 12 once
// folded the AVX2 path's select on a complemented mask (blendv(c, s, ~eq))
// wrongly when AVX-512VL/BW were enabled for the whole translation unit,
// and parameters without a master copy silently never moved.
//
// Nothing here runs before main: no namespace-scope object with a dynamic
// initializer, so isa_flags_test.cpp's main (built for the baseline) can
// refuse a CPU without AVX-512 before any of this code executes.
#include "cpu/isa_flags_check_impl.hpp"

namespace isa_flags {

void run_part_a(outcome& out) {
  check_master<c::native<float>, float>("native<float>", out);
  check_master<c::native<bf16>, bf16>("native<bf16>", out);
  check_master<c::native<fp16>, fp16>("native<fp16>", out);
  check_master<c::fp32_master<bf16>, bf16>("fp32_master<bf16>", out);
  check_master<c::fp32_master<fp16>, fp16>("fp32_master<fp16>", out);
}

outcome run_all() {
  outcome out;
  run_part_a(out);
  run_part_b(out);  // isa_flags_checks_b.cpp
  return out;
}

}  // namespace isa_flags
