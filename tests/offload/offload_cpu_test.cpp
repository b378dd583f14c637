// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// Which tensors go to the host: Megatron's --optimizer-offload-fraction rule.
#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "flashoptim/flashoptim.hpp"
#include "flashoptim/layout/offload.hpp"

using namespace flashoptim;

TEST_CASE("offload_count: tensors in order while fewer than fraction x total elements went to the host") {
  const std::vector<std::int64_t> sizes = {100, 300, 50, 400, 150};  // total 1000
  auto k = [&](double f) { return layout::offload_count(sizes.data(), sizes.size(), f); };
  CHECK(k(0.0) == 0);
  CHECK(k(0.05) == 1);   // 0 < 50: take 100
  CHECK(k(0.1) == 1);    // 100 < 100 is false: stop
  CHECK(k(0.3) == 2);    // 100 < 300: take 300 (400 >= 300 stops)
  CHECK(k(0.45) == 3);   // 400 < 450: take 50
  CHECK(k(0.5) == 4);    // 450 < 500: take 400
  CHECK(k(0.99) == 5);
  CHECK(k(1.0) == 5);
  CHECK(layout::offload_count(nullptr, 0, 0.5) == 0);
}

TEST_CASE("offload fraction outside [0, 1] is refused") {
  CHECK(layout::check_offload_fraction(0.0).ok());
  CHECK(layout::check_offload_fraction(1.0).ok());
  CHECK(layout::check_offload_fraction(-0.1).code() == status_code::hyperparameter_out_of_range);
  CHECK(layout::check_offload_fraction(1.5).code() == status_code::hyperparameter_out_of_range);
  CHECK(layout::check_offload_fraction(NAN).code() == status_code::hyperparameter_out_of_range);
  CHECK(layout::check_offload_fraction(INFINITY).code() == status_code::hyperparameter_out_of_range);
}

TEST_CASE("host bytes per off-loaded parameter are the layout's, gradient excluded") {
  using cfg = step_config<rule::adamw, codec::ulp_correction<bf16, std::int8_t>, bf16, codec::defaults::momentum,
                          codec::defaults::second_moment>;
  CHECK(layout::host_bytes_per_param<cfg>() == doctest::Approx(5.25));  // 2 + 1 + 1 + 1 + 2 * 4 / 32
}
