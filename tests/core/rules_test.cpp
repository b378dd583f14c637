// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// docs/test-matrix.md C6 (known answers) and C14 (bad inputs) on the CPU path, plus
// the type-erased binding's checks.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <type_traits>
#include <vector>

#include "common/configs.hpp"
#include "common/harness.hpp"
#include "common/typed_tensor.hpp"
#include "flashoptim/cpu/step.hpp"

using namespace flashoptim;
using namespace testconfigs;
namespace c = flashoptim::codec;

namespace {

template <class Config>
struct tensor_store : testutil::typed_tensor<Config> {
  using testutil::typed_tensor<Config>::typed_tensor;
  tensor_ref<Config> ref() { return this->view(); }
  float m(std::int64_t i) const { return this->state(0)[static_cast<std::size_t>(i)]; }
};

template <class Config>
status step_once(const typename Config::hyper& h, tensor_store<Config>& t, std::int64_t step = 1) {
  auto r = t.ref();
  step_args a;
  a.step = step;
  return cpu::step_serial<Config>(h, a, &r, 1);
}

}  // namespace

TEST_CASE("C6: the first Adam step moves every parameter by lr * sign(g)") {
  using C = step_config<rule::adamw, c::exact_split, bf16, dm, dv>;
  tensor_store<C> t(40);
  const float lr = std::ldexp(1.0f, -10);
  for (int i = 0; i < 40; ++i) {
    t.set_master(i, 1.0f);
    t.set_grad(i, i % 3 == 0 ? -2.0f : 2.0f);
  }
  C::hyper h;
  h.lr = lr;
  h.beta1 = 0.5;   // with these betas every intermediate is exact:
  h.beta2 = 0.75;  // m = g/2, v = g^2/4, d = |g|, step = 2 lr * (1/2) sign(g)
  h.eps = 1e-30;
  h.weight_decay = 0;
  REQUIRE(step_once(h, t).ok());
  for (int i = 0; i < 40; ++i) {
    const float expect = i % 3 == 0 ? 1.0f + lr : 1.0f - lr;
    CHECK(format::bits_of(t.master(i)) == format::bits_of(expect));
    CHECK(t.m(i) == (i % 3 == 0 ? -1.0f : 1.0f));  // m = g/2, stored exactly (codes ±127, scale 1)
  }
}

TEST_CASE("C6: SGD's first step with dampening uses buffer = g (PyTorch), later steps damp") {
  using C = step_config<rule::sgd, c::native<float>, float, c::precision::fp32>;
  tensor_store<C> t(3);
  C::hyper h;
  h.lr = 0.5;
  h.momentum = 0.9;
  h.dampening = 0.5;
  for (int i = 0; i < 3; ++i) {
    t.set_master(i, 4.0f);
    t.set_grad(i, 1.0f);
  }
  REQUIRE(step_once(h, t, 1).ok());
  CHECK(t.m(0) == 1.0f);       // not (1 - dampening) * g
  CHECK(t.master(0) == 3.5f);  // p - lr * g
  REQUIRE(step_once(h, t, 2).ok());
  CHECK(t.m(0) == 0.9f * 1.0f + 0.5f);  // mu * m + (1 - d) * g, in fp32
  CHECK(t.master(0) == 3.5f - 0.5f * (0.9f * 1.0f + 0.5f));
}

TEST_CASE("C6: Lion moves each parameter by exactly ±lr") {
  using C = step_config<rule::lion, c::exact_split, bf16, dm>;
  tensor_store<C> t(64);
  C::hyper h;
  h.lr = std::ldexp(1.0, -12);
  for (int i = 0; i < 64; ++i) {
    t.set_master(i, 1.5f);
    t.set_grad(i, i % 2 ? 0.25f : -3.0f);
  }
  REQUIRE(step_once(h, t).ok());
  for (int i = 0; i < 64; ++i) CHECK(t.master(i) == 1.5f + (i % 2 ? -1.0f : 1.0f) * std::ldexp(1.0f, -12));
}

TEST_CASE("C6: zero gradients with zero weight decay leave every byte unchanged") {
  auto check = [](auto tag, const char* name) {
    using C = decltype(tag);
    tensor_store<C> t(1000);
    testdata::generator gen(11);
    for (int i = 0; i < 1000; ++i) t.set_master(i, gen.value(1.0f, 0.1));
    // the ULP-correction case that is not idempotent: c = +M on an odd bf16
    if constexpr (std::is_same<typename C::master, ulp8>::value) {
      t.param[0] = bf16{0x3f81};
      t.aux[0] = 127;
    }
    const auto before = t.bytes();
    typename C::hyper h;
    h.lr = 1e-3;
    h.weight_decay = 0;
    for (int s = 1; s <= 3; ++s) REQUIRE(step_once(h, t, s).ok());
    CHECK_MESSAGE(t.bytes() == before, name);
  };
  check(adamw_default{}, "adamw ulp8");
  check(adamw_reference{}, "adamw reference");
  check(adamw_fp16_master{}, "adamw fp16 master");
  check(adamw_exact{}, "adamw exact_split");
  check(sgd_momentum{}, "sgd momentum");
  check(lion_default{}, "lion");
  check(adamw_bf16_sr_states{}, "adamw bf16 sr states");
}

TEST_CASE("C6/C5: a NaN parameter stored with another payload is re-encoded to its mode's NaN, on every path") {
  // The host keeps a NaN operand's payload through the rule (NaN * 1 is
  // itself), the GPU's arithmetic does not: master_update compares the
  // updated value with its NaN canonical (codec::updated_bits), so the CPU
  // re-encodes such a parameter as the GPU does, and keeps one that decodes
  // to the canonical NaN as the GPU does (test_gpu_step_parity, "every
  // stored parameter pattern"), whether or not the update is zero.
  auto check = [](auto tag, const char* name, auto set_nan, auto check_nan) {
    using C = decltype(tag);
    for (bool vector_path : {false, true}) {
      tensor_store<C> t(256);
      testdata::generator gen(12);
      for (int i = 0; i < 256; ++i) t.set_master(i, gen.value(1.0f, 0.0));
      for (int i : {0, 37, 255}) set_nan(t, i);
      typename C::hyper h;
      h.lr = 0.0;
      h.weight_decay = 0;
      auto r = t.ref();
      step_args a;
      a.step = 1;
      REQUIRE((vector_path ? cpu::step<C>(h, a, &r, 1) : cpu::step_serial<C>(h, a, &r, 1)).ok());
      INFO(name, vector_path ? ", cpu::step" : ", step_serial");
      for (int i : {0, 37, 255}) check_nan(t, i);
      CHECK(t.master(1) == t.master(1));  // the others stay finite
    }
  };
  check(
      adamw_bf16_native{}, "native<bf16>", [](auto& t, int i) { t.param[i] = bf16{0x7fc0}; },
      [](auto& t, int i) { CHECK(t.param[i].bits == 0x7fff); });
  // fp16 decodes every NaN to the canonical one (cvt.f32.f16 does), which the
  // rule's result equals: kept, on both
  check(
      adamw_fp16_native{}, "native<fp16>", [](auto& t, int i) { t.param[i] = fp16{0x7c01}; },
      [](auto& t, int i) { CHECK(t.param[i].bits == 0x7c01); });
  // the paper's split: a NaN parameter decodes to the canonical NaN (the
  // GPU's add makes it): kept, on both
  check(
      adamw_default{}, "ulp_correction<bf16, int8>", [](auto& t, int i) { t.param[i] = bf16{0x7fc0}, t.aux[i] = 3; },
      [](auto& t, int i) { CHECK((t.param[i].bits == 0x7fc0 && t.aux[i] == 3)); });
  check(
      adamw_rounded{}, "rounded_split", [](auto& t, int i) { t.param[i] = bf16{0xffc1}, t.aux[i] = 5; },
      [](auto& t, int i) { CHECK((t.param[i].bits == 0x7fff && t.aux[i] == 0)); });
  check(
      adamw_fp32_native{}, "native<float>", [](auto& t, int i) { t.param[i] = format::float_from_bits(0x7fc00001u); },
      [](auto& t, int i) { CHECK(format::bits_of(t.param[i]) == 0x7fffffffu); });
  check(
      adamw_bf16_master{}, "fp32_master<bf16>",
      [](auto& t, int i) { t.param[i] = bf16{0x7fc0}, t.aux[i] = format::float_from_bits(0xffc00000u); },
      [](auto& t, int i) { CHECK((t.param[i].bits == 0x7fff && format::bits_of(t.aux[i]) == 0x7fffffffu)); });
}

// The tests' before/after comparisons (typed_tensor::bytes()) hold every
// byte a step can write and nothing else: not the storage of the slots past
// the rule's, whose none_t is an empty type (its one byte is padding, never
// written, so two equal tensors could differ there).
TEST_CASE("harness: typed_tensor::bytes() is the stored bytes, without unused slots") {
  using C = adamw_default;  // two slots; the third is codec::none
  static_assert(std::is_empty<typename testutil::typed_tensor<C>::S2::code_type>::value, "an unused slot");
  testutil::typed_tensor<C> a(64), b(64);
  std::memset(static_cast<void*>(a.code2.data()), 0x00, a.code2.size() * sizeof(a.code2[0]));
  std::memset(static_cast<void*>(b.code2.data()), 0xff, b.code2.size() * sizeof(b.code2[0]));
  CHECK(a.bytes() == b.bytes());
  auto size_of = [](const auto& v) { return v.size() * sizeof(v[0]); };
  CHECK(a.bytes().size() ==
        size_of(a.param) + size_of(a.aux) + size_of(a.code0) + size_of(a.scale0) + size_of(a.code1) + size_of(a.scale1));
  reinterpret_cast<unsigned char*>(b.code1.data())[5] ^= 1u;  // a stored byte is seen
  CHECK(a.bytes() != b.bytes());
}

TEST_CASE("C14: bad hyperparameters are refused before anything is written") {
  tensor_store<adamw_default> t(100);
  for (int i = 0; i < 100; ++i) {
    t.set_master(i, 0.5f);
    t.set_grad(i, 1.0f);
  }
  const auto before = t.bytes();
  auto expect_error = [&](adamw_default::hyper h, status_code code, const char* what) {
    const status s = step_once(h, t);
    CHECK_MESSAGE(s.code() == code, what, ": ", s.what());
    CHECK(t.bytes() == before);
  };
  adamw_default::hyper h;
  h.lr = -1e-3;
  expect_error(h, status_code::hyperparameter_out_of_range, "lr < 0");
  h = {};
  h.lr = NAN;
  expect_error(h, status_code::non_finite_hyperparameter, "lr NaN");
  h = {};
  h.beta1 = 1.0;
  expect_error(h, status_code::hyperparameter_out_of_range, "beta1 = 1");
  h = {};
  h.beta2 = -0.1;
  expect_error(h, status_code::hyperparameter_out_of_range, "beta2 < 0");
  h = {};
  h.eps = 0;
  expect_error(h, status_code::hyperparameter_out_of_range, "eps = 0");
  h = {};
  h.weight_decay = INFINITY;
  expect_error(h, status_code::non_finite_hyperparameter, "wd inf");
  h = {};
  h.decouple_lr = true;
  expect_error(h, status_code::hyperparameter_out_of_range, "decouple_lr without initial_lr");
  // step count and gradient scale
  auto r = t.ref();
  step_args a;
  a.step = 0;
  CHECK(cpu::step_serial<adamw_default>({}, a, &r, 1).code() == status_code::invalid_argument);
  a.step = 1;
  a.inv_grad_scale = 0;
  CHECK(cpu::step_serial<adamw_default>({}, a, &r, 1).code() == status_code::hyperparameter_out_of_range);
  CHECK(t.bytes() == before);
  // SGD: nesterov needs momentum and no dampening
  rule::sgd::hyper s;
  s.nesterov = true;
  CHECK(rule::sgd::validate(s).code() == status_code::invalid_argument);
  s.momentum = 0.9;
  s.dampening = 0.1;
  CHECK(rule::sgd::validate(s).code() == status_code::invalid_argument);
  rule::lion::hyper l;
  l.beta2 = 1.5;
  CHECK(rule::lion::validate(l).code() == status_code::hyperparameter_out_of_range);
}

TEST_CASE("C14: null, misaligned, aliasing and mismatched buffers are refused before anything is written") {
  tensor_store<adamw_default> t(100), u(100);
  for (int i = 0; i < 100; ++i) {
    t.set_master(i, 0.5f);
    t.set_grad(i, 1.0f);
  }
  const auto before = t.bytes();
  adamw_default::hyper h;
  step_args a;
  auto expect = [&](tensor_ref<adamw_default> r, status_code code, const char* what) {
    const status s = cpu::step_serial<adamw_default>(h, a, &r, 1);
    CHECK_MESSAGE(s.code() == code, what, ": ", s.what());
    CHECK(t.bytes() == before);
  };
  auto r = t.ref();
  r.grad = nullptr;
  expect(r, status_code::null_pointer, "null grad");
  r = t.ref();
  flashoptim::state_of<1>(r).scales = nullptr;
  expect(r, status_code::null_pointer, "null scales");
  r = t.ref();
  r.param = reinterpret_cast<bf16*>(reinterpret_cast<char*>(t.param.data()) + 1);
  expect(r, status_code::misaligned, "param offset by one byte");
  r = t.ref();
  flashoptim::state_of<0>(r).scales = reinterpret_cast<float*>(reinterpret_cast<char*>(t.scale0.data()) + 2);
  expect(r, status_code::misaligned, "scales offset by two bytes");
  r = t.ref();
  flashoptim::state_of<1>(r).codes = reinterpret_cast<std::uint8_t*>(t.code0.data());
  expect(r, status_code::aliasing, "state1 aliases state0");
  r = t.ref();
  r.size = -5;
  expect(r, status_code::size_mismatch, "negative size");
  // across tensors: two tensors writing the same parameters
  tensor_ref<adamw_default> list[2] = {t.ref(), u.ref()};
  list[1].param = t.param.data() + 50;
  list[1].size = 50;
  CHECK(cpu::step_serial<adamw_default>(h, a, list, 2).code() == status_code::aliasing);
  CHECK(t.bytes() == before);
  // grads may be shared (read only)
  list[1] = u.ref();
  list[1].grad = t.grad.data();
  CHECK(cpu::step_serial<adamw_default>(h, a, list, 2).ok());
}

TEST_CASE("C14: type-erased buffers: dtype, correction width and counts are checked") {
  tensor_store<adamw_default> t(100);
  tensor_buffers b;
  b.param = {t.param.data(), dtype::bf16, 100};
  b.aux = {t.aux.data(), dtype::i8, 100};
  b.grad = {t.grad.data(), dtype::bf16, 100};
  b.states[0].codes = {t.code0.data(), dtype::i8, 100};
  b.states[0].scales = {t.scale0.data(), dtype::f32, 4};
  b.states[1].codes = {t.code1.data(), dtype::u8, 100};
  b.states[1].scales = {t.scale1.data(), dtype::f32, 4};
  tensor_ref<adamw_default> r;
  CHECK(bind(0, b, r).ok());
  CHECK(r.state<1>().codes == t.code1.data());
  auto bad = b;
  bad.aux.type = dtype::i16;
  status s = bind(3, bad, r);
  CHECK(s.code() == status_code::dtype_mismatch);
  CHECK(std::string(s.message()) == "tensor 3: correction is int16, the configuration expects int8");
  bad = b;
  bad.grad.type = dtype::f32;
  CHECK(bind(0, bad, r).code() == status_code::dtype_mismatch);
  bad = b;
  bad.states[1].scales.count = 3;  // a truncated scale buffer
  CHECK(bind(0, bad, r).code() == status_code::size_mismatch);
  bad = b;
  bad.grad.count = 99;
  CHECK(bind(0, bad, r).code() == status_code::size_mismatch);
  tensor_buffers n = b;
  n.aux = {t.aux.data(), dtype::i8, 100};
  tensor_ref<adamw_fp32_native> rn;
  n.param.type = dtype::f32;
  n.grad.type = dtype::f32;
  CHECK(bind(0, n, rn).code() == status_code::invalid_argument);  // native mode has no correction
}
