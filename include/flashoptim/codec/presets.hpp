// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// Named state configurations.
//   reference::  the FlashOptim paper's layout exactly, as its reference
//                implementation computes it (checkpoint interop); fails the
//                fidelity rules listed in docs/codec-defaults.md.
//   defaults::   the library's default: the same codes and companders with an
//                fp32 scale, normalization by the stored scale, a second-moment
//                code that never rounds a positive value to zero, and
//                sentinels for non-finite elements. Chosen by measurement
//                (docs/codec-defaults.md).
#pragma once

#include "flashoptim/codec/state.hpp"

namespace flashoptim::codec {

namespace reference {
using momentum = grouped<int8_code<false>, softsign, scale_fp16_reference, code_rounding::half_up>;
using second_moment = grouped<uint8_code<false>, sqrt_compander, scale_fp16_reference, code_rounding::half_up>;
}  // namespace reference

namespace defaults {
using momentum = grouped<int8_code<true>, softsign, scale_fp32, code_rounding::half_up>;
using second_moment = grouped<uint8_code<true>, sqrt_compander, scale_fp32, code_rounding::half_up_nonzero>;
}  // namespace defaults

/// Precision-aware states (Megatron / TransformerEngine's choices).
namespace precision {
using fp32 = plain<float>;
using bf16 = plain<flashoptim::bf16>;
using fp16 = plain<flashoptim::fp16>;
/// 16-bit states with deterministic stochastic rounding: unbiased, so they
/// follow slow EMA decays that round-to-nearest freezes (docs/test-matrix.md C9).
using bf16_sr = plain<flashoptim::bf16, format::rounding::stochastic>;
using fp16_sr = plain<flashoptim::fp16, format::rounding::stochastic>;
/// fp8 states: e4m3 codes in groups of 32 with an fp32 scale; the second
/// moment through the sqrt compander, as the 8-bit integer layout.
using fp8_momentum = grouped<fp8_code<fp8_e4m3>, identity, scale_fp32, code_rounding::half_up>;
using fp8_second_moment = grouped<fp8_code<fp8_e4m3>, sqrt_compander, scale_fp32, code_rounding::half_up_nonzero>;
}  // namespace precision

}  // namespace flashoptim::codec
