// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// Drives R32, R64 and the library through the same steps on the same bytes.
#pragma once

#include <doctest/doctest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "common/data.hpp"
#include "reference/describe.hpp"
#include "reference/r64.hpp"

namespace harness {

/// Fills a fresh R32 tensor: master values ~N(0, 1) with edge cases.
inline void init_params(const ref::model& md, ref::tensor& t, testdata::generator& gen, double special = 0.05) {
  const std::size_t pb = flashoptim::size_of(md.master.param), ab = flashoptim::size_of(md.master.aux);
  for (std::int64_t i = 0; i < t.n; ++i) {
    float x = gen.value(1.0f, special);
    if (!std::isfinite(x) || std::fabs(x) > 1e4f) x = 1.0f;
    ref::master_encode(md.master, x, t.param.data() + i * pb, t.aux.data() + i * ab);
  }
}

inline void fill_grads(const ref::model& md, ref::tensor& t, testdata::generator& gen, float sigma, double special,
                       bool non_finite) {
  const std::size_t gb = flashoptim::size_of(md.grad);
  for (std::int64_t i = 0; i < t.n; ++i) ref::store_float(md.grad, t.grad.data() + i * gb, gen.value(sigma, special, non_finite));
}

/// Index of the first differing byte, or -1.
inline long long first_difference(const std::vector<std::uint8_t>& a, const std::vector<std::uint8_t>& b) {
  if (a.size() != b.size()) return 0;
  // memcmp first: the byte loop (an early exit, which GCC does not
  // vectorize) was 9% of test_cpu_step_rules' time; it runs on a difference
  if (a.empty() || std::memcmp(a.data(), b.data(), a.size()) == 0) return -1;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (a[i] != b[i]) return static_cast<long long>(i);
  return -1;
}

/// Every buffer of two tensors byte for byte; names the first difference.
inline bool same_bytes(const ref::tensor& a, const ref::tensor& b, std::string& where) {
  const std::vector<std::uint8_t>* bufs_a[] = {&a.param, &a.aux, &a.code[0], &a.scale[0], &a.code[1], &a.scale[1]};
  const std::vector<std::uint8_t>* bufs_b[] = {&b.param, &b.aux, &b.code[0], &b.scale[0], &b.code[1], &b.scale[1]};
  const char* names[] = {"param", "aux", "code0", "scale0", "code1", "scale1"};
  for (int k = 0; k < 6; ++k) {
    const long long d = first_difference(*bufs_a[k], *bufs_b[k]);
    if (d >= 0) {
      where = std::string(names[k]) + " byte " + std::to_string(d);
      return false;
    }
  }
  return true;
}

/// Decoded fp32 master values of an R32 tensor.
inline std::vector<double> masters(const ref::model& md, const ref::tensor& t) {
  std::vector<double> x(static_cast<std::size_t>(t.n));
  const std::size_t pb = flashoptim::size_of(md.master.param), ab = flashoptim::size_of(md.master.aux);
  for (std::int64_t i = 0; i < t.n; ++i) x[i] = ref::master_decode(md.master, t.param.data() + i * pb, t.aux.data() + i * ab);
  return x;
}

struct parity_result {
  bool bitwise = true;
  std::string where;
  int failed_step = 0;
  double rel_distance_r64 = 0;  ///< ||x - p64|| / ||p64 - p0|| over finite elements
};

/// Steps R32 and the library's CPU serial path side by side for `steps`
/// steps on identical bytes; compares every buffer after every step, and the
/// trajectory to R64.
template <class Config>
parity_result run_parity(const typename Config::hyper& h, std::int64_t n, int steps, std::uint64_t seed,
                         double special = 0.05, bool non_finite = false, float grad_sigma = 1.0f) {
  const ref::model md = ref::describe<Config>(h);
  testdata::generator gen(seed);
  ref::tensor a;
  a.allocate(md, n);
  a.seed = seed * 7919u;
  init_params(md, a, gen, special);
  ref::tensor b = a;
  ref::r64_state s64;
  s64.p = masters(md, a);
  const std::vector<double> p0 = s64.p;
  parity_result r;
  for (int s = 1; s <= steps; ++s) {
    fill_grads(md, a, gen, grad_sigma, special, non_finite);
    b.grad = a.grad;
    std::vector<double> g64(static_cast<std::size_t>(n));
    for (std::int64_t i = 0; i < n; ++i) g64[i] = ref::load_float(md.grad, a.grad.data() + i * flashoptim::size_of(md.grad));
    ref::step(md, a, s);
    ref::r64_step(md.rule, s64, g64, s);
    auto view = ref::view<Config>(b);
    flashoptim::step_args args;
    args.step = s;
    const flashoptim::status st = flashoptim::cpu::step_serial<Config>(h, args, &view, 1);
    REQUIRE_MESSAGE(st.ok(), st.what());
    if (r.bitwise && !same_bytes(a, b, r.where)) {
      r.bitwise = false;
      r.failed_step = s;
    }
  }
  const std::vector<double> x = masters(md, a);
  double num = 0, den = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    if (!std::isfinite(x[i]) || !std::isfinite(s64.p[i])) continue;
    num += (x[i] - s64.p[i]) * (x[i] - s64.p[i]);
    den += (s64.p[i] - p0[i]) * (s64.p[i] - p0[i]);
  }
  r.rel_distance_r64 = den > 0 ? std::sqrt(num / den) : 0.0;
  return r;
}

}  // namespace harness
