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

/// A model holding FP8 (e4m3) weights with one fp32 scale per block of
/// `block_elements` (docs/fp8-params.md): Config's param and correction are
/// the optimizer's master, "moved" adds the FP8 write after the step, and the
/// checkpoint is master + states (the copy is re-derived on load, not stored).
template <class Config>
std::string fp8_row(const char* name, const char* params, const char* states, int block_elements) {
  using F = layout::fp8_weight_bytes<Config>;
  char buf[512];
  std::snprintf(buf, sizeof buf, "| %s | %s | %s | %.4g | %.4g | %.4g | %.4g |\n", name, params, states,
                F::resident_per_param(block_elements, true), F::resident_per_param(block_elements, false),
                F::moved_per_param(block_elements), layout::bytes<Config>::checkpoint_per_param);
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
  s += row<step_config<rule::adamw, c::rounded_split, bf16, dm, dv>>("**AdamW, flashoptim default**", "bf16 + int8", "int8, uint8, fp32 scales");
  s += row<step_config<rule::adamw, ulp16, bf16, dm, dv>>("AdamW", "bf16 + int16", "int8, uint8, fp32 scales");
  s += row<step_config<rule::adamw, c::exact_split, bf16, dm, dv>>("AdamW, lossless master", "bf16 + 16 bits (`exact_split`)", "int8, uint8, fp32 scales");
  s += row<step_config<rule::adamw, c::ulp_correction<fp16, std::int8_t>, fp16, dm, dv>>("AdamW", "fp16 + int8", "int8, uint8, fp32 scales");
  s += row<step_config<rule::adamw, ulp8, bf16, p::fp8_momentum, p::fp8_second_moment>>("AdamW", "bf16 + int8", "fp8 e4m3, fp8 e4m3");
  s += row<step_config<rule::adamw, ulp8, bf16, p::bf16_sr, p::bf16_sr>>("AdamW", "bf16 + int8", "bf16 (stochastic rounding)");
  // FP8 weights. The peer is TransformerEngine / Megatron-LM's FP8 training
  // (`--fp8-param-gather`, blockwise recipe): e4m3 weights with 128 x 128
  // block scales, fp32 master and fp32 Adam states in the optimizer, the
  // master cast to FP8 after the step. Its gradient is counted as bf16 like
  // every other row here; Megatron's bf16 runs usually accumulate it in fp32
  // (`--accumulate-allreduce-grads-in-fp32`), 2 B/param more.
  constexpr int tile = 128 * 128, row128 = 128;
  s += fp8_row<step_config<rule::adamw, c::native<float>, bf16, p::fp32, p::fp32>>(
      "AdamW, FP8 weights (TransformerEngine / Megatron)", "e4m3, 128 × 128 blocks + fp32 master", "fp32, fp32", tile);
  s += fp8_row<step_config<rule::adamw, c::native<float>, bf16, dm, dv>>(
      "AdamW, FP8 weights", "e4m3, 128 × 128 blocks + fp32 master", "int8, uint8, fp32 scales", tile);
  s += fp8_row<step_config<rule::adamw, ulp8, bf16, dm, dv>>(
      "AdamW, FP8 weights", "e4m3, 128 × 128 blocks + bf16 + int8 master", "int8, uint8, fp32 scales", tile);
  s += fp8_row<step_config<rule::adamw, ulp8, bf16, dm, dv>>(
      "AdamW, FP8 weights", "e4m3, 1 × 128 blocks + bf16 + int8 master", "int8, uint8, fp32 scales", row128);
  s += row<step_config<rule::sgd, c::native<float>, float, p::fp32>>("SGD momentum (torch fp32)", "fp32", "fp32");
  s += row<step_config<rule::sgd, c::rounded_split, bf16, dm>>("**SGD momentum, flashoptim default**", "bf16 + int8", "int8, fp32 scale");
  s += row<step_config<rule::lion, c::rounded_split, bf16, dm>>("**Lion, flashoptim default**", "bf16 + int8", "int8, fp32 scale");
  return s;
}

}  // namespace layout_table
