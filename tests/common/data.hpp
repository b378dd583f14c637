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

struct generator {
  std::mt19937_64 rng;
  explicit generator(std::uint64_t seed) : rng(seed) {}

  double uniform() { return std::uniform_real_distribution<double>(0.0, 1.0)(rng); }
  float normal(float sigma = 1.0f) { return std::normal_distribution<float>(0.0f, sigma)(rng); }
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
