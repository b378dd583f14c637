// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// Built the way a user might build it by hand: `g++ -O2 -fopenmp`, no -m
// flags, GCC's default -ffp-contract=fast, without the CMake target's
// -ffp-contract=off. The step must still pick the widest vector path this
// machine has and still equal step_serial bit for bit (the vector code keeps
// its products away from contraction itself).
#include "common/configs.hpp"
#include "cpu/cpu_harness.hpp"

using namespace testconfigs;
using flashoptim::cpu::isa;

#if FLASHOPTIM_CPU_X86_SIMD
namespace {
// a * b + c written as separate operations, compiled here with contraction
// on: the vector operations must still round the product.
__attribute__((target(FLASHOPTIM_CPU_AVX512_TARGET), noinline)) void mul_add_avx512(const float* a, const float* b,
                                                                                     const float* c, float* out) {
  using ops = flashoptim::cpu::detail::avx512::ops;
  ops::store(out, ops::add(ops::mul(ops::load(a), ops::load(b)), ops::load(c)));
}
__attribute__((target(FLASHOPTIM_CPU_AVX2_TARGET), noinline)) void mul_add_avx2(const float* a, const float* b,
                                                                                 const float* c, float* out) {
  using ops = flashoptim::cpu::detail::avx2::ops;
  ops::store(out, ops::add(ops::mul(ops::load(a), ops::load(b)), ops::load(c)));
}
}  // namespace

TEST_CASE("vector products are never contracted into a following add") {
  float a[16], c[16], out[16];
  for (int i = 0; i < 16; ++i) {
    a[i] = 1.0f + 0x1p-12f;  // a * a = 1 + 2^-11 + 2^-24: rounding drops 2^-24, an fma keeps it
    c[i] = -1.0f;
  }
  if (flashoptim::cpu::isa_available(isa::avx512)) {
    mul_add_avx512(a, a, c, out);
    CHECK(out[0] == 0x1p-11f);
  }
  if (flashoptim::cpu::isa_available(isa::avx2)) {
    mul_add_avx2(a, a, c, out);
    CHECK(out[0] == 0x1p-11f);
  }
}
#endif

TEST_CASE("a plain -O2 -fopenmp build with contraction on: widest path, bitwise") {
#if defined(__AVX2__) || defined(__AVX512F__) || defined(__FMA__)
  FAIL("this test must be compiled without -m flags");
#endif
#if FLASHOPTIM_CPU_X86_SIMD
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq") &&
      __builtin_cpu_supports("avx512vl"))
    CHECK(flashoptim::cpu::selected_isa<adamw_default>() == isa::avx512);
#endif
  rule::adamw::hyper h;
  h.lr = 1e-2;
  cpuharness::profile pr;
  // large enough that contracting a product into a later sum would show
  auto r = cpuharness::run_variants<adamw_default>(h, {100000, 33}, 3, 7u, pr);
  INFO(r.what);
  CHECK(r.ok);
  r = cpuharness::run_variants<adamw_fp16_ulp16>(h, {100000, 33}, 3, 8u, pr);
  INFO(r.what);
  CHECK(r.ok);
  r = cpuharness::run_variants<adamw_reference>(h, {100000, 33}, 3, 9u, pr);
  INFO(r.what);
  CHECK(r.ok);
  rule::sgd::hyper s;
  s.lr = 1e-2;
  s.momentum = 0.9;
  s.nesterov = true;
  r = cpuharness::run_variants<sgd_momentum>(s, {1025, 33}, 5, 10u, pr);
  INFO(r.what);
  CHECK(r.ok);
}
