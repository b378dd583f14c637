// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// Test inputs: fresh random values mixed with the cases that break numeric
// code (docs/test-matrix.md): zeros, subnormals, powers of two and the values just
// below them, huge and tiny magnitudes, and optionally NaN/Inf.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

namespace testdata {

/// A uniform value in [0, 1) from one draw of a 64-bit engine: what
/// libstdc++'s std::generate_canonical<Real, digits> returns for it (one
/// draw, divided by 2^64, kept below 1). Written out because
/// generate_canonical computes log(2^64) in long double on every call,
/// which GCC folds and clang does not: under clang two libm logl calls per
/// draw were 70% of test_step_parity's time (twice GCC's). tests/core/
/// random_test.cpp checks these draws equal libstdc++'s.
template <class Real>
Real canonical(std::mt19937_64& rng) {
  const Real r = static_cast<Real>(rng()) / static_cast<Real>(18446744073709551616.0L);  // 2^64
  return r >= Real(1) ? std::nextafter(Real(1), Real(0)) : r;
}

struct generator {
  std::mt19937_64 rng;
  explicit generator(std::uint64_t seed) : rng(seed) {}

  /// std::uniform_real_distribution<double>(0, 1)(rng) of libstdc++.
  double uniform() { return canonical<double>(rng) * (1.0 - 0.0) + 0.0; }
  /// std::normal_distribution<float>(0, sigma)(rng) of libstdc++, a fresh
  /// distribution each call (so the pair's other value is dropped): the
  /// polar method in the same operations.
  float normal(float sigma = 1.0f) {
    float x, y, r2;
    do {
      x = 2.0f * canonical<float>(rng) - 1.0;
      y = 2.0f * canonical<float>(rng) - 1.0;
      r2 = x * x + y * y;
    } while (r2 > 1.0 || r2 == 0.0);
    const float mult = std::sqrt(-2 * std::log(r2) / r2);
    return y * mult * sigma + 0.0f;
  }
  std::uint32_t u32() { return static_cast<std::uint32_t>(rng()); }

  /// A value of scale ~sigma, or (with probability `special`) an edge case.
  float value(float sigma, double special = 0.05, bool non_finite = false) {
    if (uniform() >= special) return normal(sigma);
    const float s = uniform() < 0.5 ? -1.0f : 1.0f;
    switch (u32() % (non_finite ? 10 : 8)) {
      case 0: return 0.0f * s;
      case 1: return s * std::numeric_limits<float>::denorm_min() * static_cast<float>(1 + u32() % 1000);
      case 2: return s * std::ldexp(1.0f, static_cast<int>(u32() % 40) - 20) * sigma;  // power of two
      case 3: return s * std::nextafter(std::ldexp(1.0f, static_cast<int>(u32() % 40) - 20), 0.0f);
      case 4: return s * sigma * 1e3f;
      case 5: return s * sigma * 1e-6f;
      case 6: return s * std::numeric_limits<float>::min();
      case 7: return s * sigma * 30.0f;
      case 8: return s * std::numeric_limits<float>::infinity();
      default: return std::numeric_limits<float>::quiet_NaN();
    }
  }

  std::vector<float> values(std::size_t n, float sigma, double special = 0.05, bool non_finite = false) {
    std::vector<float> v(n);
    for (auto& x : v) x = value(sigma, special, non_finite);
    return v;
  }
};

}  // namespace testdata
