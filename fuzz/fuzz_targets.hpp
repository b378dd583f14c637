// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// What the checkpoint fuzzer loads into: three configurations that between
// them use every kind of entry (ulp corrections, exact_split low bits, fp32
// and fp16 group scales, plain stochastic states, an empty tensor), and the
// fixed tensor list the corpus generator saves.
#pragma once

#include <cstring>
#include <string>
#include <vector>

#include <flashoptim/io/checkpoint.hpp>

namespace fuzz {

using namespace flashoptim;

using adamw_cfg = step_config<rule::adamw, codec::ulp_correction<bf16, std::int8_t>, bf16, codec::defaults::momentum,
                              codec::defaults::second_moment>;
using sgd_cfg = step_config<rule::sgd, codec::exact_split, bf16, codec::precision::bf16_sr>;
using lion_cfg = step_config<rule::lion, codec::native<float>, float, codec::reference::momentum>;

inline const std::vector<std::int64_t> sizes = {33, 1, 0};
inline const std::vector<std::string> names = {"w0", "w1", "w2"};
/// Parameter groups of the grouped corpus file and the io::load_optimizer load.
inline const std::vector<std::int32_t> tensor_group = {0, 1, 0};

/// Owned buffers of the tensor list under Config, filled with a pattern.
template <class Config>
struct target {
  std::vector<std::vector<unsigned char>> storage;
  std::vector<tensor_ref<Config>> refs;

  target() {
    for (std::int64_t n : sizes) {
      tensor_ref<Config> t;
      t.size = n;
      t.seed = 7;
      t.param = take<typename Config::param_type>(n);
      if constexpr (Config::has_aux) t.aux = take<typename Config::aux_type>(n);
      for_each_slot<Config::num_slots>([&](auto s) {
        constexpr int I = decltype(s)::value;
        using S = typename Config::template state<I>;
        if constexpr (S::stores_state) t.template state<I>().codes = take<typename S::code_type>(n);
        if constexpr (codec::is_grouped<S>::value)
          t.template state<I>().scales = take<typename S::scale_type>(codec::scale_count<S>(n));
      });
      refs.push_back(t);
    }
    fill();
  }

  template <class T>
  T* take(std::int64_t n) {
    // At least one element so every pointer is valid and distinct.
    storage.emplace_back(static_cast<std::size_t>(n + 1) * sizeof(T));
    return reinterpret_cast<T*>(storage.back().data());
  }
  void fill() {
    for (auto& s : storage) std::memset(s.data(), 0xa5, s.size());
  }
  bool untouched() const {
    for (const auto& s : storage)
      for (unsigned char c : s)
        if (c != 0xa5) return false;
    return true;
  }
};

}  // namespace fuzz
