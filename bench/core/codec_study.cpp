// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// Measures candidate state layouts against the fidelity rules of docs/contract.md
// §4 (docs/test-matrix.md C3, C7, C8, C9 and its idle rows, C13) and prints the markdown table of
// docs/codec-defaults.md:  build/release/bench/core/flashoptim_codec_study
#include <cmath>
#include <cstdio>

#include "common/fidelity.hpp"

using namespace flashoptim;
namespace c = flashoptim::codec;

namespace {

template <class M, class V>
void row(const char* name) {
  using cfg = step_config<rule::adamw, c::native<float>, float, M, V>;
  const double bytes = layout::state_bytes<M>::per_element + layout::state_bytes<V>::per_element;
  const int c3 = fidelity::scale_range_failures<M>(false) + fidelity::scale_range_failures<V>(true);
  double c7 = 1.0;
  for (double sigma : {1e-4, 1e-5, 1e-6, 1e-7, 1e-8}) c7 = std::min(c7, fidelity::small_gradient_cosine<cfg>(sigma));
  const double c8 = fidelity::sparse_gradient_worst<cfg>();
  const auto c9 = fidelity::ema_decay<cfg>(0.9, 0.999);
  const auto c9s = fidelity::ema_decay<cfg>(0.999, 0.999);
  const double c9i = fidelity::idle_row_late_drift_worst<cfg>();
  const auto c13 = fidelity::non_finite_blast<cfg>(INFINITY);
  const auto c13n = fidelity::non_finite_blast<cfg>(NAN);
  const bool pass = c3 == 0 && c7 >= 0.999 && c8 <= 10 && std::fabs(c9.m_ratio - 1) <= 0.02 &&
                    std::fabs(c9.v_ratio - 1) <= 0.02 && std::fabs(c9s.m_ratio - 1) <= 0.02 &&
                    c9i <= 0.01 && c13.non_finite_params == 1 && c13.bad_state_non_finite && c13n.bad_state_non_finite;
  std::printf("| %s | %.4g | %d | %.4f | %.3g | %.3f / %.3f | %.3f | %.3g | %d (%s) | %s |\n", name, bytes, c3, c7, c8,
              c9.m_ratio, c9.v_ratio, c9s.m_ratio, c9i, c13.non_finite_params,
              c13.bad_state_non_finite && c13n.bad_state_non_finite ? "NaN kept" : "laundered", pass ? "**pass**" : "fail");
}

template <class Code, class Compander, class Scale, c::code_rounding R = c::code_rounding::half_up>
using G = c::grouped<Code, Compander, Scale, R>;
using nz = std::integral_constant<c::code_rounding, c::code_rounding::half_up_nonzero>;

}  // namespace

int main() {
  std::printf(
      "| layout (m / v) | state B/param | C3 fails | C7 min cos | C8 max \\|Δp\\|/lr | C9 m / v vs β^200 | C9 m, β1=0.999 | "
      "C9 idle rows: \\|Δp\\|/lr late | C13 params hit by one inf (state) | rules |\n|---|---|---|---|---|---|---|---|---|---|\n");
  row<c::reference::momentum, c::reference::second_moment>("reference: fp16 scale (paper)");
  row<G<c::int8_code<true>, c::softsign, c::scale_rounded_up<fp16>>,
      G<c::uint8_code<true>, c::sqrt_compander, c::scale_rounded_up<fp16>, nz::value>>("fp16 scale rounded up, stored-scale normalization, sentinels, v>0 code");
  row<G<c::int8_code<true>, c::softsign, c::scale_rounded_up<bf16>>,
      G<c::uint8_code<true>, c::sqrt_compander, c::scale_rounded_up<bf16>, nz::value>>("bf16 scale rounded up, stored-scale normalization, sentinels, v>0 code");
  row<G<c::int8_code<false>, c::softsign, c::scale_fp32>, G<c::uint8_code<false>, c::sqrt_compander, c::scale_fp32>>(
      "fp32 scale only");
  row<G<c::int8_code<true>, c::softsign, c::scale_fp32>, G<c::uint8_code<true>, c::sqrt_compander, c::scale_fp32>>(
      "fp32 scale, sentinels, v rounded half up");
  row<G<c::int8_code<false>, c::softsign, c::scale_fp32>,
      G<c::uint8_code<false>, c::sqrt_compander, c::scale_fp32, nz::value>>("fp32 scale, v>0 code, no sentinels");
  row<c::defaults::momentum, c::defaults::second_moment>("**default**: fp32 scale, sentinels, v>0 code");
  row<c::precision::fp8_momentum, c::precision::fp8_second_moment>("fp8 e4m3 codes, fp32 scale");
  row<c::precision::bf16, c::precision::bf16>("plain bf16");
  row<c::precision::bf16_sr, c::precision::bf16_sr>("plain bf16, stochastic rounding");
  row<c::precision::fp16, c::precision::fp16>("plain fp16");
  row<c::precision::fp16_sr, c::precision::fp16_sr>("plain fp16, stochastic rounding");
  row<c::precision::fp32, c::precision::fp32>("plain fp32");
  return 0;
}
