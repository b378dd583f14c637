// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// A downstream program: one AdamW step on the CPU through the public headers.
#include <flashoptim/flashoptim.hpp>

#include <cstdio>
#include <vector>

int main() {
  using namespace flashoptim;
  using cfg = step_config<rule::adamw, codec::ulp_correction<bf16, std::int8_t>, bf16, codec::defaults::momentum,
                          codec::defaults::second_moment>;
  const std::int64_t n = 100;
  std::vector<bf16> param(n), grad(n);
  std::vector<std::int8_t> correction(n), m(n);
  std::vector<std::uint8_t> v(n);
  std::vector<float> m_scale(codec::scale_count<cfg::state0>(n)), v_scale(codec::scale_count<cfg::state1>(n));
  for (std::int64_t i = 0; i < n; ++i) {
    cfg::master::encode(0.5f, param[i], correction[i]);
    grad[i] = format::from_float<bf16>(1.0f);
  }
  tensor_ref<cfg> t{param.data(), correction.data(), grad.data(), m.data(), m_scale.data(), v.data(), v_scale.data(), n, 0};
  cfg::hyper h;
  h.lr = 1e-2;
  h.weight_decay = 0.0;
  const status s = cpu::step_serial<cfg>(h, step_args{}, &t, 1);
  const float x = cfg::master::decode(param[0], correction[0]);
  std::printf("flashoptim %s: %s, param 0.5 -> %.6f\n", version_string, s.what(), x);
  // first Adam step moves by lr * sign(g)
  return s.ok() && x > 0.4899f && x < 0.4901f && FLASHOPTIM_VERSION_MAJOR == version_major ? 0 : 1;
}
