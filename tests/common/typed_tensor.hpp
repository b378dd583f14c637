// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// One tensor's buffers under a configuration, in typed host vectors, with
// the accessors the CPU tests need (encode/decode a master value, decode a
// state, all bytes for comparisons).
#pragma once

#include <cstdint>
#include <vector>

#include "flashoptim/flashoptim.hpp"

namespace testutil {

template <class Config>
struct typed_tensor {
  using S0 = typename Config::state0;
  using S1 = typename Config::state1;
  std::int64_t n;
  std::vector<typename Config::param_type> param;
  std::vector<typename Config::aux_type> aux;
  std::vector<typename Config::grad_type> grad;
  std::vector<typename S0::code_type> code0;
  std::vector<typename S0::scale_type> scale0;
  std::vector<typename S1::code_type> code1;
  std::vector<typename S1::scale_type> scale1;

  explicit typed_tensor(std::int64_t size)
      : n(size), param(size), aux(size), grad(size), code0(size),
        scale0(flashoptim::codec::scale_count<S0>(size)), code1(size),
        scale1(flashoptim::codec::scale_count<S1>(size)) {}

  flashoptim::tensor_ref<Config> view(std::uint64_t seed = 0) {
    flashoptim::tensor_ref<Config> r;
    r.param = param.data();
    r.aux = Config::has_aux ? aux.data() : nullptr;
    r.grad = grad.data();
    r.code0 = S0::stores_state ? code0.data() : nullptr;
    r.scale0 = flashoptim::codec::is_grouped<S0>::value ? scale0.data() : nullptr;
    r.code1 = S1::stores_state ? code1.data() : nullptr;
    r.scale1 = flashoptim::codec::is_grouped<S1>::value ? scale1.data() : nullptr;
    r.size = n;
    r.seed = seed;
    return r;
  }
  void set_master(std::int64_t i, float x) { Config::master::encode(x, param[i], aux[i]); }
  float master(std::int64_t i) const { return Config::master::decode(param[i], aux[i]); }
  void set_grad(std::int64_t i, float g) { grad[i] = flashoptim::format::from_float<typename Config::grad_type>(g); }
  /// Decoded state `slot` (0: m, 1: v) of every element.
  std::vector<float> state(int slot) const {
    std::vector<float> out(static_cast<std::size_t>(n));
    if (slot == 0) flashoptim::codec::dequantize<S0>(code0.data(), scale0.data(), n, out.data());
    else flashoptim::codec::dequantize<S1>(code1.data(), scale1.data(), n, out.data());
    return out;
  }
  /// Every byte the step writes, for before/after comparisons.
  std::vector<std::uint8_t> bytes() const {
    std::vector<std::uint8_t> b;
    auto add = [&b](const auto& v) {
      const auto* p = reinterpret_cast<const std::uint8_t*>(v.data());
      b.insert(b.end(), p, p + v.size() * sizeof(v[0]));
    };
    add(param), add(aux), add(code0), add(scale0), add(code1), add(scale1);
    return b;
  }
};

}  // namespace testutil
