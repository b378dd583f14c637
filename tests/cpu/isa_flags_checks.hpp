// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// The interface between isa_flags_test.cpp (baseline code generation: main,
// the CPU check, doctest) and isa_flags_checks.cpp, _b.cpp (-march=x86-64-v4).
#pragma once

#include <string>

namespace isa_flags {

struct outcome {
  int checked = 0;   ///< (configuration, instruction set, thread count) runs
  int failures = 0;  ///< runs that differ from step_serial
  std::string detail;
};

/// Steps every master mode under AdamW, SGD and Lion on every instruction
/// set this machine has, against step_serial. Call only on a CPU with
/// AVX-512 F/VL/BW (the file is compiled for it).
outcome run_all();

/// run_all's two halves, one per file (isa_flags_checks.cpp, _b.cpp): each
/// adds its masters' runs to `out`.
void run_part_a(outcome& out);
void run_part_b(outcome& out);

}  // namespace isa_flags
