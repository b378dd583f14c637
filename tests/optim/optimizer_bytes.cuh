// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// The optimizer tests' byte comparison: every parameter, correction and
// state byte of two optimizers over the same tensor list, wherever each
// buffer lives (device, pinned or pageable host memory: cudaMemcpyDefault).
#pragma once

#include <cuda_runtime.h>
#include <doctest/doctest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "common/gpu_check.hpp"
#include "flashoptim/flashoptim.hpp"

namespace optimizer_test {

/// `count` elements of T at p, as bytes.
template <class T>
std::vector<unsigned char> bytes_of(const T* p, std::int64_t count) {
  std::vector<unsigned char> b(static_cast<std::size_t>(count) * flashoptim::storage_bytes<T>);
  if (!b.empty()) GPU_CHECK(cudaMemcpy(b.data(), p, b.size(), cudaMemcpyDefault));
  return b;
}

/// Every param, correction and state byte of a's and b's tensors (the same
/// list in the same order), after the device is idle.
template <class Config, class A, class B>
void require_same(const A& a, const B& b, const char* where) {
  using namespace flashoptim;
  INFO(std::string(where));  // a char pointer would print as an address
  GPU_CHECK(cudaDeviceSynchronize());
  REQUIRE(a.tensor_count() == b.tensor_count());
  for (std::size_t i = 0; i < a.tensor_count(); ++i) {
    const auto& x = a.tensors()[i];
    const auto& y = b.tensors()[i];
    INFO("tensor ", i);
    REQUIRE(x.size == y.size);
    REQUIRE(bytes_of(x.param, x.size) == bytes_of(y.param, y.size));
    if constexpr (Config::has_aux) REQUIRE(bytes_of(x.aux, x.size) == bytes_of(y.aux, y.size));
    for_each_slot<Config::num_slots>([&](auto s) {
      constexpr int I = decltype(s)::value;
      using S = typename Config::template state<I>;
      const auto& xs = slot_at<I>(x.states);
      const auto& ys = slot_at<I>(y.states);
      if constexpr (S::stores_state) REQUIRE(bytes_of(xs.codes, x.size) == bytes_of(ys.codes, y.size));
      if constexpr (codec::is_grouped<S>::value)
        REQUIRE(bytes_of(xs.scales, codec::scale_count<S>(x.size)) == bytes_of(ys.scales, codec::scale_count<S>(y.size)));
    });
  }
}

}  // namespace optimizer_test
