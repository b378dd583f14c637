// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// The host-side checks of the GPU API, which need no GPU and run in CI:
// type-erased descriptions (dtype, correction width, element counts),
// list validation (overlaps across tensors) and the state layout.
#include <doctest/doctest.h>

#include <cstring>
#include <string>
#include <vector>

#include "common/configs.hpp"
#include "flashoptim/device/state_layout.hpp"
#include "flashoptim/device/table_validation.hpp"
#include "flashoptim/device/tensor_desc.hpp"

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
    r.param = param.data(), r.aux = aux.data(), r.grad = grad.data(), r.code0 = code0.data();
    r.scale0 = scale0.data(), r.code1 = code1.data(), r.scale1 = scale1.data(), r.size = n;
    return r;
  }
  tensor_desc desc() {
    tensor_desc d;
    d.param = {param.data(), dtype::bf16, n};
    d.correction = {aux.data(), dtype::i8, n};
    d.grad = {grad.data(), dtype::bf16, n};
    d.state0 = {code0.data(), dtype::i8, n};
    d.state0_scales = {scale0.data(), dtype::f32, (n + 31) / 32};
    d.state1 = {code1.data(), dtype::u8, n};
    d.state1_scales = {scale1.data(), dtype::f32, (n + 31) / 32};
    return d;
  }
};
bool mentions(const status& s, const char* text) { return std::string(s.message()).find(text) != std::string::npos; }
}  // namespace

TEST_CASE("tensor_desc: a correct description converts") {
  host_tensor t(100);
  tensor_ref<C> r;
  REQUIRE(to_tensor_ref<C>(0, t.desc(), r).ok());
  CHECK(r.param == t.param.data());
  CHECK(r.size == 100);
  CHECK(r.scale1 == t.scale1.data());
}

TEST_CASE("tensor_desc: dtype, correction width and element counts are checked") {
  host_tensor t(100);
  tensor_ref<C> r;
  auto d = t.desc();
  d.param.type = dtype::f16;
  status s = to_tensor_ref<C>(3, d, r);
  CHECK(s.code() == status_code::dtype_mismatch);
  CHECK(mentions(s, "tensor 3"));
  CHECK(mentions(s, "param is fp16"));

  d = t.desc();
  d.correction.type = dtype::i16;
  s = to_tensor_ref<C>(0, d, r);
  CHECK(s.code() == status_code::dtype_mismatch);
  CHECK(mentions(s, "correction width"));

  d = t.desc();
  d.grad.count = 99;
  s = to_tensor_ref<C>(17, d, r);
  CHECK(s.code() == status_code::size_mismatch);
  CHECK(mentions(s, "tensor 17: grad has 99 elements, expected 100"));

  d = t.desc();
  d.state1_scales.count = 3;  // ceil(100 / 32) = 4
  s = to_tensor_ref<C>(0, d, r);
  CHECK(s.code() == status_code::size_mismatch);
  CHECK(mentions(s, "state1 scales"));

  d = t.desc();
  d.state0.type = dtype::u8;
  CHECK(to_tensor_ref<C>(0, d, r).code() == status_code::dtype_mismatch);

  // A slot the configuration does not have must stay empty.
  using L = testconfigs::lion_default;
  tensor_ref<L> rl;
  d = t.desc();
  s = to_tensor_ref<L>(0, d, rl);
  CHECK(s.code() == status_code::invalid_argument);
  CHECK(mentions(s, "no state1"));
}

TEST_CASE("validate_tensor_list: overlaps across tensors, shared gradients allowed") {
  host_tensor a(1000), b(500);
  std::vector<tensor_ref<C>> list = {a.ref(), b.ref()};
  CHECK(validate_tensor_list(list.data(), list.size()).ok());

  // Both tensors read the same gradient: allowed.
  list[1].grad = list[0].grad;
  CHECK(validate_tensor_list(list.data(), list.size()).ok());

  // One tensor's param written over another's gradient: refused.
  list = {a.ref(), b.ref()};
  list[1].param = reinterpret_cast<bf16*>(const_cast<bf16*>(list[0].grad) + 100);
  status s = validate_tensor_list(list.data(), list.size());
  CHECK(s.code() == status_code::aliasing);
  CHECK(mentions(s, "tensor 0 grad"));
  CHECK(mentions(s, "tensor 1 param"));

  // Two tensors' states overlapping by one byte.
  list = {a.ref(), b.ref()};
  list[1].code0 = list[0].code0 + 999;
  CHECK(validate_tensor_list(list.data(), list.size()).code() == status_code::aliasing);

  // Adjacent but not overlapping: fine.
  host_tensor big(2000);
  list = {a.ref(), a.ref()};
  list[0].size = list[1].size = 500;
  list[1].param = list[0].param + 500;
  list[1].aux = list[0].aux + 500;
  list[1].grad = list[0].grad + 500;
  list[1].code0 = list[0].code0 + 500;
  list[1].code1 = list[0].code1 + 500;
  list[1].scale0 = big.scale0.data();
  list[1].scale1 = big.scale1.data();
  CHECK(validate_tensor_list(list.data(), list.size()).ok());

  // Per-tensor checks still run: null, misaligned, negative size.
  list = {a.ref(), b.ref()};
  list[1].scale0 = nullptr;
  CHECK(validate_tensor_list(list.data(), list.size()).code() == status_code::null_pointer);
  list = {a.ref(), b.ref()};
  list[0].scale1 = reinterpret_cast<float*>(reinterpret_cast<char*>(list[0].scale1) + 2);
  CHECK(validate_tensor_list(list.data(), list.size()).code() == status_code::misaligned);
  CHECK(validate_tensor_list<C>(nullptr, 3).code() == status_code::null_pointer);
  CHECK(validate_tensor_list<C>(nullptr, 0).ok());
}

TEST_CASE("validate_tensor_list: 100,000 tensors") {
  std::vector<host_tensor> ts;
  ts.reserve(100000);
  std::vector<tensor_ref<C>> list;
  for (int i = 0; i < 100000; ++i) {
    ts.emplace_back(1 + i % 37);
    list.push_back(ts.back().ref());
  }
  CHECK(validate_tensor_list(list.data(), list.size()).ok());
  list[77777].code1 = list[12345].code1;
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
      CHECK(reinterpret_cast<std::uintptr_t>(t.code1) % 256 == 0);
      CHECK(validate_tensor(0, t).ok());
    }
  }
}
