// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// The README's memory table, generated from layout::bytes. The test
// tests/core/layout_test.cpp fails when README.md and this disagree;
// `flashoptim_layout_table` prints it (tools/update_readme_tables.sh).
#pragma once

#include <cstdio>
#include <string>

#include "flashoptim/flashoptim.hpp"

namespace layout_table {

using namespace flashoptim;
namespace c = flashoptim::codec;

template <class Config>
std::string row(const char* name, const char* params, const char* states) {
  using B = layout::bytes<Config>;
  char buf[512];
  std::snprintf(buf, sizeof buf, "| %s | %s | %s | %.4g | %.4g | %.4g | %.4g |\n", name, params, states,
                B::resident_per_param(true), B::resident_per_param(false), B::moved_per_param, B::checkpoint_per_param);
  return buf;
}

inline std::string markdown() {
  using ulp8 = c::ulp_correction<bf16, std::int8_t>;
  using ulp16 = c::ulp_correction<bf16, std::int16_t>;
  using dm = c::defaults::momentum;
  using dv = c::defaults::second_moment;
  using rm = c::reference::momentum;
  using rv = c::reference::second_moment;
  namespace p = c::precision;
  std::string s =
      "| optimizer | parameter (+ correction) | states | B/param resident | with gradient release | moved per step "
      "| checkpoint |\n|---|---|---|---|---|---|---|\n";
  s += row<step_config<rule::adamw, c::native<float>, float, p::fp32, p::fp32>>("AdamW (torch fp32)", "fp32", "fp32, fp32");
  s += row<step_config<rule::adamw, c::fp32_master<bf16>, bf16, p::fp32, p::fp32>>("AdamW (mixed precision)", "bf16 + fp32 master", "fp32, fp32");
  s += row<step_config<rule::adamw, c::native<bf16>, bf16, p::bf16, p::bf16>>("AdamW (torch bf16)", "bf16", "bf16, bf16");
  s += row<step_config<rule::adamw, ulp8, bf16, rm, rv>>("AdamW, paper layout (`reference`)", "bf16 + int8", "int8, uint8, fp16 scales");
  s += row<step_config<rule::adamw, ulp8, bf16, dm, dv>>("**AdamW, flashoptim default**", "bf16 + int8", "int8, uint8, fp32 scales");
  s += row<step_config<rule::adamw, ulp16, bf16, dm, dv>>("AdamW", "bf16 + int16", "int8, uint8, fp32 scales");
  s += row<step_config<rule::adamw, c::exact_split, bf16, dm, dv>>("AdamW, lossless master", "bf16 + 16 bits (`exact_split`)", "int8, uint8, fp32 scales");
  s += row<step_config<rule::adamw, c::ulp_correction<fp16, std::int8_t>, fp16, dm, dv>>("AdamW", "fp16 + int8", "int8, uint8, fp32 scales");
  s += row<step_config<rule::adamw, ulp8, bf16, p::fp8_momentum, p::fp8_second_moment>>("AdamW", "bf16 + int8", "fp8 e4m3, fp8 e4m3");
  s += row<step_config<rule::adamw, ulp8, bf16, p::bf16_sr, p::bf16_sr>>("AdamW", "bf16 + int8", "bf16 (stochastic rounding)");
  s += row<step_config<rule::sgd, c::native<float>, float, p::fp32>>("SGD momentum (torch fp32)", "fp32", "fp32");
  s += row<step_config<rule::sgd, ulp8, bf16, dm>>("**SGD momentum, flashoptim default**", "bf16 + int8", "int8, fp32 scale");
  s += row<step_config<rule::lion, ulp8, bf16, dm>>("**Lion, flashoptim default**", "bf16 + int8", "int8, fp32 scale");
  return s;
}

}  // namespace layout_table
