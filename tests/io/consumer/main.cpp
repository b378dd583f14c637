// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// A downstream program using flashoptim::io: save a checkpoint, load it back.
#include <flashoptim/flashoptim.hpp>
#include <flashoptim/io/checkpoint.hpp>

#include <cstdio>
#include <string>
#include <vector>

int main(int argc, char** argv) {
  using namespace flashoptim;
  using cfg = step_config<rule::adamw, codec::ulp_correction<bf16, std::int8_t>, bf16, codec::defaults::momentum,
                          codec::defaults::second_moment>;
  const std::int64_t n = 40;
  std::vector<bf16> param(n);
  std::vector<std::int8_t> correction(n), m(n);
  std::vector<std::uint8_t> v(n);
  std::vector<float> ms(codec::scale_count<cfg::state0>(n)), vs(codec::scale_count<cfg::state1>(n));
  for (std::int64_t i = 0; i < n; ++i) cfg::master::encode(0.25f * static_cast<float>(i), param[i], correction[i]);
  tensor_ref<cfg> t{param.data(), correction.data(), nullptr, m.data(), ms.data(), v.data(), vs.data(), n, 0};
  const std::string name = "w";
  const std::string path = std::string(argc > 1 ? argv[1] : ".") + "/consumer.safetensors";
  cfg::hyper h;
  status s = io::save_checkpoint<cfg>(path, h, 7, &t, &name, 1);
  std::int64_t step = 0;
  param.assign(n, bf16{0});
  if (s.ok()) s = io::load_checkpoint<cfg>(path, h, step, &t, &name, 1);
  std::printf("flashoptim io: %s, step %lld\n", s.what(), static_cast<long long>(step));
  std::remove(path.c_str());
  return s.ok() && step == 7 && format::to_float(param[4]) == 1.0f ? 0 : 1;
}
