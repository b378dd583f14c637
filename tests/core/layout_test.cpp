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

TEST_CASE("layout: the table's FP8-weight rows are master + FP8 copy + gradient + states") {
  namespace p = c::precision;
  using dm = c::defaults::momentum;
  using dv = c::defaults::second_moment;
  using ulp8 = c::ulp_correction<bf16, std::int8_t>;
  constexpr double tile = 1.0 + 4.0 / 16384, row128 = 1.0 + 4.0 / 128;  // e4m3 + one fp32 scale per block
  constexpr double states8 = 1 + 1 + 2 * 4.0 / 32;                        // int8 + uint8 + two fp32 group scales
  {  // bf16 + int8 master: 2 + 1, bf16 gradient 2
    using F = layout::fp8_weight_bytes<step_config<rule::adamw, ulp8, bf16, dm, dv>>;
    CHECK(F::resident_per_param(16384) == doctest::Approx(2 + 1 + tile + 2 + states8));  // 8.250244
    CHECK(F::resident_per_param(16384, false) == doctest::Approx(2 + 1 + tile + states8));
    CHECK(F::resident_per_param(128) == doctest::Approx(2 + 1 + row128 + 2 + states8));  // 8.28125
    // step: master read + written, gradient read, states read + written; then master read, copy written
    CHECK(F::moved_per_param(16384) == doctest::Approx(2 * 3 + 2 + 2 * states8 + 3 + tile));  // 16.500244
    CHECK(F::moved_per_param(128) == doctest::Approx(2 * 3 + 2 + 2 * states8 + 3 + row128));
  }
  {  // fp32 master
    using F = layout::fp8_weight_bytes<step_config<rule::adamw, c::native<float>, bf16, dm, dv>>;
    CHECK(F::resident_per_param(16384) == doctest::Approx(4 + tile + 2 + states8));
    CHECK(F::moved_per_param(16384) == doctest::Approx(2 * 4 + 2 + 2 * states8 + 4 + tile));
  }
  {  // TransformerEngine / Megatron: FP8 weights, fp32 master, fp32 m and v
    using peer = step_config<rule::adamw, c::native<float>, bf16, p::fp32, p::fp32>;
    using F = layout::fp8_weight_bytes<peer>;
    CHECK(F::resident_per_param(16384) == doctest::Approx(4 + tile + 2 + 8));
    CHECK(F::resident_per_param(16384, false) == doctest::Approx(4 + tile + 8));
    CHECK(F::moved_per_param(16384) == doctest::Approx(2 * 4 + 2 + 2 * 8 + 4 + tile));
    CHECK(layout::bytes<peer>::checkpoint_per_param == 12.0);  // master + states; the copy is re-derived
  }
  // and the table prints them
  const std::string table = layout_table::markdown();
  for (const char* line :
       {"| AdamW, FP8 weights (TransformerEngine / Megatron) | e4m3, 128 × 128 blocks + fp32 master | fp32, fp32 | 15 | 13 "
        "| 31 | 12 |\n",
        "| AdamW, FP8 weights | e4m3, 128 × 128 blocks + fp32 master | int8, uint8, fp32 scales | 9.25 | 7.25 | 19.5 | "
        "6.25 |\n",
        "| AdamW, FP8 weights | e4m3, 128 × 128 blocks + bf16 + int8 master | int8, uint8, fp32 scales | 8.25 | 6.25 | "
        "16.5 | 5.25 |\n",
        "| AdamW, FP8 weights | e4m3, 1 × 128 blocks + bf16 + int8 master | int8, uint8, fp32 scales | 8.281 | 6.281 | "
        "16.53 | 5.25 |\n"})
    CHECK_MESSAGE(table.find(line) != std::string::npos, line);
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
