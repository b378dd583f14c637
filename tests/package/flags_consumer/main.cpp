// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// The golden runs aimed at contraction (tests/golden/golden_steps.hpp, the
// "@large" entries), built with this consumer's own flags: every path's
// digest must equal the checked-in one.
#include <cstdio>

#include "golden/golden_steps.hpp"

int main() {
  const int bad = golden::check_all();
  std::printf("flags consumer: %d golden mismatches\n", bad);
  return bad == 0 ? 0 : 1;
}
