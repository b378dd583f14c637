// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// layout/: the byte counts against hand counts of docs/contract.md §7, and
// README.md's table against the generator (so the README cannot drift).
#include <doctest/doctest.h>

#include <fstream>
#include <sstream>

#include "common/layout_table.hpp"

using namespace flashoptim;
namespace c = flashoptim::codec;

TEST_CASE("layout: byte counts match the paper's accounting") {
  using paper = step_config<rule::adamw, c::ulp_correction<bf16, std::int8_t>, bf16, c::reference::momentum,
                            c::reference::second_moment>;
  using B = layout::bytes<paper>;
  CHECK(B::resident_per_param(true) == doctest::Approx(7.125));   // 2 + 1 + 1 + 1 + 2 + 2/32 * 2
  CHECK(B::resident_per_param(false) == doctest::Approx(5.125));  // gradient release
  CHECK(B::moved_per_param == doctest::Approx(12.25));            // docs/performance-method.md: the peer moves 12.25 B
  using torch32 = step_config<rule::adamw, c::native<float>, float, c::precision::fp32, c::precision::fp32>;
  CHECK(layout::bytes<torch32>::moved_per_param == 28.0);
  CHECK(layout::bytes<torch32>::resident_per_param(true) == 16.0);
  using torch16 = step_config<rule::adamw, c::native<bf16>, bf16, c::precision::bf16, c::precision::bf16>;
  CHECK(layout::bytes<torch16>::moved_per_param == 14.0);
  using sgd = step_config<rule::sgd, c::ulp_correction<bf16, std::int8_t>, bf16, c::reference::momentum>;
  CHECK(layout::bytes<sgd>::resident_per_param(true) == doctest::Approx(6.0625));  // 12 B -> 6 B
  // exact counts with partial groups: 33 elements have 2 groups of scales
  using dflt = step_config<rule::adamw, c::ulp_correction<bf16, std::int8_t>, bf16, c::defaults::momentum,
                           c::defaults::second_moment>;
  CHECK(layout::bytes<dflt>::state_for_size(33) == 33 * 1 + 33 + 2 * 4 + 33 + 2 * 4);
  CHECK(layout::bytes<dflt>::moved_for_size(33) == 2 * 33 * 3 + 33 * 2 + 2 * (33 + 8 + 33 + 8));
}

TEST_CASE("README's memory table is the generated one") {
  std::ifstream in(FLASHOPTIM_SOURCE_DIR "/README.md");
  REQUIRE(in.good());
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string readme = ss.str();
  const std::string begin = "<!-- layout-table:begin -->\n", end = "<!-- layout-table:end -->";
  const auto b = readme.find(begin), e = readme.find(end);
  REQUIRE(b != std::string::npos);
  REQUIRE(e != std::string::npos);
  const std::string table = readme.substr(b + begin.size(), e - b - begin.size());
  CHECK_MESSAGE(table == layout_table::markdown(), "README.md is stale: run tools/update_readme_tables.sh");
}
