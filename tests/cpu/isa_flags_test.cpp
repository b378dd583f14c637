// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// The CPU step inside a program built with -march=x86-64-v4 (see
// isa_flags_checks.cpp). This file is built for the baseline: its main
// checks for AVX-512 F/VL/BW first and exits 77 (skipped) without them,
// before anything compiled for AVX-512 runs.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstdio>

#include "cpu/isa_flags_checks.hpp"

int main(int argc, char** argv) {
  __builtin_cpu_init();
  if (!__builtin_cpu_supports("avx512f") || !__builtin_cpu_supports("avx512vl") ||
      !__builtin_cpu_supports("avx512bw")) {
    std::printf("skipped: this CPU lacks AVX-512 F/VL/BW, which this test is compiled for\n");
    return 77;
  }
  doctest::Context context(argc, argv);
  return context.run();
}

TEST_CASE("a -march=x86-64-v4 build: every master and rule on every ISA equals step_serial") {
  const isa_flags::outcome r = isa_flags::run_all();
  INFO(r.detail);
  CHECK(r.checked > 0);
  CHECK(r.failures == 0);
  MESSAGE(r.checked, " runs compared");
}
