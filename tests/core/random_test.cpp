// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// The counter-based random bits of stochastic rounding (format/random.hpp):
// the definition pinned, and the properties stochastic rounding rests on —
// distinct draws within a step, uniform low bits, one element's draws over
// steps uniform and unbiased, the two state slots' draws unrelated. And the
// tests' own inputs (common/data.hpp): the same draws as the standard
// library's distributions they replace.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "common/data.hpp"

#include "flashoptim/format/random.hpp"
#include "flashoptim/format/types.hpp"
#include "flashoptim/rule/tile.hpp"

namespace fmt = flashoptim::format;

namespace {
/// Pearson's statistic of `counts` against a uniform expectation.
double chi_square(const std::vector<double>& counts) {
  double total = 0;
  for (double c : counts) total += c;
  const double expected = total / static_cast<double>(counts.size());
  double x = 0;
  for (double c : counts) x += (c - expected) * (c - expected) / expected;
  return x;
}
}  // namespace

TEST_CASE("random bits: the definition is pinned (checkpointed runs resume with the same draws)") {
  CHECK(fmt::random_bits(1, 2, 3) == 0xdec772b2u);
  CHECK(fmt::random_bits(0x123456789abcdefull, 1000, (5ull << 32) + 7) == 0x8206e09cu);
  CHECK(fmt::random_bits(~0ull, ~0ull, ~0ull) == 0x9713363du);
  // the two stages compose to the whole
  CHECK(fmt::random_bits(77, 5, 123456789012ull) == fmt::random_mix(fmt::random_key(77, 5), 123456789012ull));
}

TEST_CASE("random bits: a step's draws are distinct over 2^20 consecutive elements, across a 2^32 boundary too") {
  for (const std::uint64_t first : {std::uint64_t{0}, (std::uint64_t{3} << 32) - (1u << 19)}) {
    std::vector<std::uint32_t> bits;
    bits.reserve(1u << 20);
    for (std::uint64_t i = 0; i < (1u << 20); ++i) bits.push_back(fmt::random_bits(0xfeedull, 17, first + i));
    std::sort(bits.begin(), bits.end());
    CAPTURE(first);
    CHECK(std::adjacent_find(bits.begin(), bits.end()) == bits.end());
  }
}

TEST_CASE("random bits: uniform low and middle bytes over a step's elements") {
  // 255 degrees of freedom: mean 255, standard deviation 22.6; 400 is
  // beyond 6 standard deviations.
  for (const int shift : {0, 8, 16, 24}) {
    std::vector<double> counts(256, 0.0);
    for (std::uint64_t i = 0; i < (1u << 20); ++i) counts[(fmt::random_bits(42, 9, i) >> shift) & 0xffu] += 1;
    CAPTURE(shift);
    CHECK(chi_square(counts) < 400.0);
  }
}

TEST_CASE("random bits: one element's draws over steps are uniform, and bf16 stochastic rounding is unbiased") {
  // x lies between two bf16 values, 1/1024 of the way from the lower one
  // (bf16 keeps 7 fraction bits): the rounded mean must be x.
  const float x = 1.0f + 0x1p-10f;
  const int steps = 1 << 16;
  for (const std::uint64_t index : {std::uint64_t{0}, std::uint64_t{1}, std::uint64_t{12345}, (std::uint64_t{1} << 40) + 3}) {
    std::vector<double> counts(256, 0.0);
    double sum = 0;
    for (int s = 1; s <= steps; ++s) {
      const std::uint32_t r = fmt::random_bits(7, static_cast<std::uint64_t>(s), index);
      counts[r & 0xffu] += 1;
      sum += fmt::to_float(fmt::from_float<flashoptim::bf16>(x, fmt::rounding::stochastic, r));
    }
    CAPTURE(index);
    CHECK(chi_square(counts) < 400.0);
    // each draw rounds up with p = 1/8 (a step of 2^-7): the mean's
    // standard deviation is 2^-7 * sqrt(p(1-p)/steps) ~ 1.0e-5
    const double mean = sum / steps;
    CHECK(std::fabs(mean - static_cast<double>(x)) < 6 * 1.03e-5);
  }
}

TEST_CASE("random bits: the two state slots' draws for the same element are unrelated") {
  // tile.hpp salts the tensor's seed per slot: the draws of slot 0 and slot 1
  // agree in a given bit half of the time.
  const std::uint64_t seed = 0x51ull;
  const std::uint64_t s0 = seed ^ flashoptim::detail::slot_salt_of(0);
  const std::uint64_t s1 = seed ^ flashoptim::detail::slot_salt_of(1);
  const int n = 1 << 18;
  for (const int bit : {0, 7, 15, 31}) {
    int agree = 0;
    for (int i = 0; i < n; ++i) {
      const std::uint32_t a = fmt::random_bits(s0, 3, static_cast<std::uint64_t>(i));
      const std::uint32_t b = fmt::random_bits(s1, 3, static_cast<std::uint64_t>(i));
      agree += ((a ^ b) >> bit & 1u) == 0;
    }
    CAPTURE(bit);
    // standard deviation of the count: sqrt(n) / 2 = 256
    CHECK(std::abs(agree - n / 2) < 6 * 256);
  }
}

TEST_CASE("test inputs: testdata::generator draws what libstdc++'s distributions draw, bit for bit") {
#if defined(__GLIBCXX__)
  // common/data.hpp writes out std::uniform_real_distribution<double>(0, 1)
  // and std::normal_distribution<float>(0, sigma) over std::mt19937_64 (a
  // fresh distribution per value), so that every test's inputs stay what
  // they were while clang builds them without libm's logl
  for (const std::uint64_t seed : {1ull, 1042ull, 4242ull * 7919ull}) {
    testdata::generator gen(seed);
    std::mt19937_64 rng(seed);
    long long uniform_diff = 0, normal_diff = 0;
    for (int i = 0; i < 100000; ++i) {
      const float sigma = i % 3 == 0 ? 1.0f : (i % 3 == 1 ? 0.25f : 3e-3f);
      const double u = gen.uniform(), u_std = std::uniform_real_distribution<double>(0.0, 1.0)(rng);
      const float n = gen.normal(sigma), n_std = std::normal_distribution<float>(0.0f, sigma)(rng);
      uniform_diff += std::memcmp(&u, &u_std, sizeof u) != 0;
      normal_diff += std::memcmp(&n, &n_std, sizeof n) != 0;
    }
    CAPTURE(seed);
    CHECK(uniform_diff == 0);
    CHECK(normal_diff == 0);
    CHECK(gen.rng() == rng());  // the same number of engine draws
  }
#else
  MESSAGE("not libstdc++: the generator's draws are its own, not compared");
#endif
}
