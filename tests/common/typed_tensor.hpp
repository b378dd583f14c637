// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// One tensor's buffers under a configuration, in typed host vectors, with
// the accessors the CPU tests need (encode/decode a master value, decode a
// state, all bytes for comparisons).
#pragma once

#include <cstdint>
#include <tuple>
#include <type_traits>
#include <vector>

#include "flashoptim/flashoptim.hpp"

namespace testutil {

template <class Config>
struct typed_tensor {
  using S0 = typename Config::template state<0>;
  using S1 = typename Config::template state<1>;
  using S2 = typename Config::template state<2>;  ///< codec::none past the rule's slots
  std::int64_t n;
  std::vector<typename Config::param_type> param;
  std::vector<typename Config::aux_type> aux;
  std::vector<typename Config::grad_type> grad;
  std::vector<typename S0::code_type> code0;
  std::vector<typename S0::scale_type> scale0;
  std::vector<typename S1::code_type> code1;
  std::vector<typename S1::scale_type> scale1;
  std::vector<typename S2::code_type> code2;
  std::vector<typename S2::scale_type> scale2;

  explicit typed_tensor(std::int64_t size)
      : n(size), param(size), aux(size), grad(size), code0(size),
        scale0(flashoptim::codec::scale_count<S0>(size)), code1(size),
        scale1(flashoptim::codec::scale_count<S1>(size)), code2(size),
        scale2(flashoptim::codec::scale_count<S2>(size)) {}

  flashoptim::tensor_ref<Config> view(std::uint64_t seed = 0) {
    flashoptim::tensor_ref<Config> r;
    r.param = param.data();
    r.aux = Config::has_aux ? aux.data() : nullptr;
    r.grad = grad.data();
    static_assert(Config::num_slots <= 3, "typed_tensor holds three state slots");
    flashoptim::for_each_slot<Config::num_slots>([&](auto s) {
      constexpr int I = decltype(s)::value;
      using S = typename Config::template state<I>;
      auto& ref = flashoptim::state_of<I>(r);
      auto& c = std::get<I>(std::tie(code0, code1, code2));
      auto& k = std::get<I>(std::tie(scale0, scale1, scale2));
      ref.codes = S::stores_state ? c.data() : nullptr;
      ref.scales = flashoptim::codec::is_grouped<S>::value ? k.data() : nullptr;
    });
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
    else if (slot == 1) flashoptim::codec::dequantize<S1>(code1.data(), scale1.data(), n, out.data());
    else flashoptim::codec::dequantize<S2>(code2.data(), scale2.data(), n, out.data());
    return out;
  }
  /// Every byte the step writes, for before/after comparisons.
  std::vector<std::uint8_t> bytes() const {
    std::vector<std::uint8_t> b;
    auto add = [&b](const auto& v) {
      // A slot past the rule's holds codec::none's none_t, an empty type
      // whose one byte is padding, never written: not part of the state.
      if constexpr (std::is_empty<std::decay_t<decltype(v[0])>>::value) return;
      const auto* p = reinterpret_cast<const std::uint8_t*>(v.data());
      b.insert(b.end(), p, p + v.size() * sizeof(v[0]));
    };
    add(param), add(aux), add(code0), add(scale0), add(code1), add(scale1), add(code2), add(scale2);
    return b;
  }
};

}  // namespace testutil
