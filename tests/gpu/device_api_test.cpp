// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// The host-side pieces of the GPU API, which need no GPU and run in CI: the
// state layout helpers, and list validation at the sizes plans are built
// for (100,000 tensors).
#include <doctest/doctest.h>

#include <cstring>
#include <string>
#include <vector>

#include "common/configs.hpp"
#include "flashoptim/layout/state_layout.hpp"

using namespace flashoptim;
using C = testconfigs::adamw_default;

namespace {
struct host_tensor {
  std::int64_t n;
  std::vector<bf16> param, grad;
  std::vector<std::int8_t> aux, code0;
  std::vector<std::uint8_t> code1;
  std::vector<float> scale0, scale1;
  explicit host_tensor(std::int64_t size)
      : n(size), param(n), grad(n), aux(n), code0(n), code1(n), scale0((n + 31) / 32), scale1((n + 31) / 32) {}
  tensor_ref<C> ref() {
    tensor_ref<C> r;
    r.param = param.data(), r.aux = aux.data(), r.grad = grad.data(), flashoptim::slot_at<0>(r.states).codes = code0.data();
    flashoptim::slot_at<0>(r.states).scales = scale0.data(), flashoptim::slot_at<1>(r.states).codes = code1.data(), flashoptim::slot_at<1>(r.states).scales = scale1.data(), r.size = n;
    return r;
  }
};
}  // namespace

TEST_CASE("validate_tensor_list: 100,000 tensors") {
  std::vector<host_tensor> ts;
  ts.reserve(100000);
  std::vector<tensor_ref<C>> list;
  for (int i = 0; i < 100000; ++i) {
    ts.emplace_back(1 + i % 37);
    list.push_back(ts.back().ref());
  }
  CHECK(validate_tensor_list(list.data(), list.size()).ok());
  flashoptim::slot_at<1>(list[77777].states).codes = flashoptim::slot_at<1>(list[12345].states).codes;
  CHECK(validate_tensor_list(list.data(), list.size()).code() == status_code::aliasing);
}

TEST_CASE("state_layout: bytes and carving") {
  using L = state_layout<C>;
  for (std::int64_t n : {0, 1, 31, 32, 33, 1000, 278011}) {
    const L l = L::for_size(n);
    CHECK(l.bytes >= state_bytes<C>(n));
    CHECK(state_bytes<C>(n) == n * 3 + 2 * ((n + 31) / 32) * 4);
    std::vector<unsigned char> mem(static_cast<std::size_t>(l.bytes) + 256);
    void* base = reinterpret_cast<void*>((reinterpret_cast<std::uintptr_t>(mem.data()) + 255) / 256 * 256);
    tensor_ref<C> t;
    std::vector<bf16> p(n), g(n);
    t.param = p.data();
    t.grad = g.data();
    l.carve(base, t);
    CHECK(t.size == n);
    if (n > 0) {
      CHECK(reinterpret_cast<std::uintptr_t>(flashoptim::slot_at<1>(t.states).codes) % 256 == 0);
      CHECK(validate_tensor(0, t).ok());
    }
  }
}
