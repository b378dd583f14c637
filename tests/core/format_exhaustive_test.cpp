// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// docs/test-matrix.md C4: fp32 -> bf16 / fp16 / fp8 e4m3 / e5m2 rounding, ties and
// saturation on all 2^32 inputs against R64: an independent model that lists
// every finite value of the target format in double and walks the fp32
// inputs in increasing order, rounding to the nearer neighbour (ties to the
// even bit pattern). Where the CUDA headers are available, also against
// CUDA's own conversion functions (their host implementations).
#include <doctest/doctest.h>

#include <cmath>
#include <cstdio>
#include <type_traits>
#include <utility>
#include <vector>

#include "flashoptim/format/types.hpp"

#if defined(FLASHOPTIM_TEST_CUDA_HEADERS)
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#endif

using namespace flashoptim;
using namespace flashoptim::format;

namespace {

/// R64 decode of a bit pattern from its fields, in double.
template <class Spec>
double r64_decode(std::uint32_t b) {
  const int M = Spec::mant_bits, E = Spec::exp_bits;
  const std::uint32_t mant = b & ((1u << M) - 1u);
  const std::uint32_t field = (b >> M) & ((1u << E) - 1u);
  const double sign = (b & Spec::sign_bit) ? -1.0 : 1.0;
  if (field == 0) return sign * std::ldexp(static_cast<double>(mant), Spec::emin - M);
  return sign * std::ldexp(static_cast<double>(mant | (1u << M)), static_cast<int>(field) - Spec::bias - M);
}

struct counts {
  unsigned long long wrong = 0, first_bad = ~0ull;
};

/// Expected RNE result for a non-negative finite x, given the sorted
/// non-negative finite values of the format.
template <class Spec>
std::uint32_t r64_round(double x, const std::vector<double>& v, std::size_t& k) {
  while (k + 1 < v.size() && v[k + 1] <= x) ++k;
  if (x == v[k]) return static_cast<std::uint32_t>(k);
  if (k + 1 == v.size()) {
    // above max finite: the next step up would be one more ulp of the top binade
    const double ulp = v[k] - v[k - 1];
    const double threshold = v[k] + ulp / 2;
    const bool up = x > threshold || (x == threshold && (k & 1u));
    if (!up) return static_cast<std::uint32_t>(k);
    return Spec::overflow == overflow_rule::saturate ? Spec::max_finite_bits
           : Spec::overflow == overflow_rule::to_infinity ? Spec::inf_bits
                                                           : Spec::nan_bits;
  }
  const double mid = (v[k] + v[k + 1]) / 2;  // exact: adjacent values of a narrow format
  if (x < mid) return static_cast<std::uint32_t>(k);
  if (x > mid) return static_cast<std::uint32_t>(k + 1);
  return static_cast<std::uint32_t>((k & 1u) ? k + 1 : k);
}

/// CUDA's conversions, when the toolkit's headers are found: compared with
/// from_float on every input inside the sweeps below, which compute
/// from_float anyway (a sweep of its own computed it again: the test took
/// 99 s of CPU instead of 81 on one thread), counted per format in the order
/// the CUDA case prints them.
unsigned long long cuda_wrong[4] = {0, 0, 0, 0}, cuda_checked[4] = {0, 0, 0, 0};
#if defined(FLASHOPTIM_TEST_CUDA_HEADERS)
inline std::uint32_t cuda_bits(fp16, float x) { return __half_as_ushort(__float2half_rn(x)); }
inline std::uint32_t cuda_bits(bf16, float x) { return __bfloat16_as_ushort(__float2bfloat16_rn(x)); }
inline std::uint32_t cuda_bits(fp8_e4m3, float x) { return __nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E4M3); }
inline std::uint32_t cuda_bits(fp8_e5m2, float x) { return __nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E5M2); }
#endif
template <class T>
constexpr int cuda_slot() {
  return std::is_same<T, fp16>::value ? 0 : std::is_same<T, bf16>::value ? 1 : std::is_same<T, fp8_e4m3>::value ? 2 : 3;
}

/// All 2^32 inputs: library encode (generic and the traits' fast path) vs R64
/// (and from_float vs CUDA's conversion, above).
template <class T>
void check_all_inputs(const char* name) {
  using Spec = typename format_traits<T>::spec;
  std::vector<double> v;
  for (std::uint32_t b = 0; b <= Spec::max_finite_bits; ++b) v.push_back(r64_decode<Spec>(b));
  for (std::size_t i = 1; i < v.size(); ++i) REQUIRE(v[i] > v[i - 1]);
  unsigned long long wrong = 0, checked = 0, cuda_w = 0, cuda_n = 0;
  const long long chunks = 256;
#pragma omp parallel for reduction(+ : wrong, checked, cuda_w, cuda_n) schedule(dynamic)
  for (long long c = 0; c < chunks; ++c) {
    const std::uint64_t lo = 0x7f800001ull * c / chunks, hi = 0x7f800001ull * (c + 1) / chunks;
    std::size_t k = 0;
    for (std::uint64_t u = lo; u < hi; ++u) {
      const float x = float_from_bits(static_cast<std::uint32_t>(u));
      std::uint32_t expect = u == 0x7f800000u ? (Spec::has_inf && Spec::overflow == overflow_rule::to_infinity
                                                     ? Spec::inf_bits
                                                     : (Spec::overflow == overflow_rule::saturate ? Spec::max_finite_bits
                                                                                                  : Spec::nan_bits))
                                              : r64_round<Spec>(static_cast<double>(x), v, k);
      const std::uint32_t neg_expect = expect == Spec::nan_bits ? expect : expect | Spec::sign_bit;
      const std::uint32_t got = encode_small_float<Spec>(x);
      const std::uint32_t got_neg = encode_small_float<Spec>(-x);
      const std::uint32_t fast = from_float<T>(x).bits, fast_neg = from_float<T>(-x).bits;
      wrong += (got != expect) + (got_neg != neg_expect) + (fast != expect) + (fast_neg != neg_expect);
      checked += 4;
#if defined(FLASHOPTIM_TEST_CUDA_HEADERS)
      cuda_w += (cuda_bits(T{}, x) != fast) + (cuda_bits(T{}, -x) != fast_neg);
      cuda_n += 2;
#endif
    }
  }
  // NaNs: every NaN pattern maps to the canonical NaN
  unsigned long long nan_wrong = 0;
#pragma omp parallel for reduction(+ : nan_wrong, cuda_w, cuda_n)
  for (long long u = 0x7f800001ll; u <= 0x7fffffffll; ++u) {
    const float x = float_from_bits(static_cast<std::uint32_t>(u));
    const std::uint32_t fast = from_float<T>(x).bits, fast_neg = from_float<T>(-x).bits;
    nan_wrong += (fast != Spec::nan_bits) + (fast_neg != Spec::nan_bits);
#if defined(FLASHOPTIM_TEST_CUDA_HEADERS)
    cuda_w += (cuda_bits(T{}, x) != fast) + (cuda_bits(T{}, -x) != fast_neg);
    cuda_n += 2;
#endif
  }
  // every bit pattern once: [+0, +inf] and its negation, the NaNs and theirs
  cuda_wrong[cuda_slot<T>()] = cuda_w;
  cuda_checked[cuda_slot<T>()] = cuda_n;
  std::printf("C4 %-9s %llu conversions checked against R64, %llu wrong; NaN inputs wrong: %llu\n", name, checked,
              wrong, nan_wrong);
  CHECK(wrong == 0);
  CHECK(nan_wrong == 0);
}

/// Every bit pattern decodes to its R64 value (NaN to NaN).
template <class T>
void check_decode(const char* name) {
  using Spec = typename format_traits<T>::spec;
  unsigned long long wrong = 0;
  for (std::uint32_t b = 0; b < (1u << Spec::total_bits); ++b) {
    const float got = to_float(T{static_cast<decltype(T{}.bits)>(b)});
    const std::uint32_t mag = b & (Spec::sign_bit - 1u);
    const bool is_nan = Spec::has_inf ? ((mag >> Spec::mant_bits) == (1u << Spec::exp_bits) - 1u && (mag & ((1u << Spec::mant_bits) - 1u)))
                                      : mag > Spec::max_finite_bits;
    const bool is_inf = Spec::has_inf && mag == Spec::inf_bits;
    if (is_nan) wrong += !std::isnan(got);
    else if (is_inf) wrong += !(std::isinf(got) && std::signbit(got) == static_cast<bool>(b & Spec::sign_bit));
    else wrong += static_cast<double>(got) != r64_decode<Spec>(b) || std::signbit(got) != static_cast<bool>(b & Spec::sign_bit);
  }
  std::printf("C4 %-9s decode of all %u patterns: %llu wrong\n", name, 1u << Spec::total_bits, wrong);
  CHECK(wrong == 0);
}

}  // namespace

TEST_CASE("C4: bf16 rounding on all 2^32 inputs") {
  check_all_inputs<bf16>("bf16");
  check_decode<bf16>("bf16");
}
TEST_CASE("C4: fp16 rounding on all 2^32 inputs") {
  check_all_inputs<fp16>("fp16");
  check_decode<fp16>("fp16");
}
TEST_CASE("C4: fp8 e4m3 and e5m2 (saturating) on all 2^32 inputs") {
  check_all_inputs<fp8_e4m3>("fp8_e4m3");
  check_decode<fp8_e4m3>("fp8_e4m3");
  check_all_inputs<fp8_e5m2>("fp8_e5m2");
  check_decode<fp8_e5m2>("fp8_e5m2");
}

TEST_CASE("C4: known ties and saturation") {
  // ties to even: 1 + 2^-8 is halfway between bf16 1 and 1 + 2^-7
  CHECK(from_float<bf16>(1.0f + std::ldexp(1.0f, -8)).bits == 0x3f80);
  CHECK(from_float<bf16>(1.0f + 3 * std::ldexp(1.0f, -8)).bits == 0x3f82);
  CHECK(from_float<fp16>(65504.0f).bits == 0x7bff);
  CHECK(from_float<fp16>(65519.996f).bits == 0x7bff);
  CHECK(from_float<fp16>(65520.0f).bits == 0x7c00);  // the tie overflows to inf
  CHECK(from_float<fp8_e4m3>(464.0f).bits == 0x7e);   // tie with the missing 480: even -> 448
  CHECK(from_float<fp8_e4m3>(1e30f).bits == 0x7e);    // saturates
  CHECK(from_float<fp8_e4m3>(-INFINITY).bits == 0xfe);
  CHECK(from_float<fp8_e5m2>(INFINITY).bits == 0x7b);
  CHECK(from_float<fp16>(std::ldexp(1.0f, -25)).bits == 0x0000);  // half the smallest subnormal: tie to 0
  CHECK(from_float<fp16>(std::nextafter(std::ldexp(1.0f, -25), 1.0f)).bits == 0x0001);
}

TEST_CASE("stochastic rounding: exact values stay, others go to a neighbour with the right probability") {
  // an exactly representable value never moves, whatever the random bits
  for (std::uint32_t r : {0u, 1u, 0x7fffu, 0xffffu, 0xffffffffu}) {
    CHECK(from_float<bf16>(1.5f, rounding::stochastic, r).bits == from_float<bf16>(1.5f).bits);
    CHECK(from_float<fp16>(-3.25f, rounding::stochastic, r).bits == from_float<fp16>(-3.25f).bits);
  }
  // bf16 discards 16 bits: over all 2^16 values of those random bits, x rounds
  // up exactly (discarded fraction * 2^16) times
  const float x = float_from_bits(0x3f80'1234u);
  unsigned ups = 0;
  for (std::uint32_t r = 0; r < 65536; ++r) {
    const auto b = from_float<bf16>(x, rounding::stochastic, r).bits;
    CHECK((b == 0x3f80 || b == 0x3f81));
    ups += b == 0x3f81;
  }
  CHECK(ups == 0x1234u);
  // fp16 (13 discarded bits at this magnitude): the same with the generic path
  const float y = 1.0f + 5 * std::ldexp(1.0f, -13);  // 5/8 of an fp16 ulp above 1
  unsigned up16 = 0;
  for (std::uint32_t r = 0; r < 8192; ++r) up16 += from_float<fp16>(y, rounding::stochastic, r).bits == 0x3c01;
  CHECK(up16 == 5 * 1024);
}

#if defined(FLASHOPTIM_TEST_CUDA_HEADERS)
TEST_CASE("C4: identical to CUDA's conversion functions on all 2^32 inputs") {
  // Counted by the rounding cases' sweeps above (check_all_inputs), which run
  // first; a format whose sweep did not run (a doctest filter) sweeps here.
  if (cuda_checked[0] != (1ull << 32)) check_all_inputs<fp16>("fp16");
  if (cuda_checked[1] != (1ull << 32)) check_all_inputs<bf16>("bf16");
  if (cuda_checked[2] != (1ull << 32)) check_all_inputs<fp8_e4m3>("fp8_e4m3");
  if (cuda_checked[3] != (1ull << 32)) check_all_inputs<fp8_e5m2>("fp8_e5m2");
  for (const unsigned long long n : cuda_checked) CHECK(n == (1ull << 32));
  const unsigned long long* wrong = cuda_wrong;
  std::printf("C4 vs CUDA host conversions: fp16 %llu, bf16 %llu, e4m3 %llu, e5m2 %llu wrong\n", wrong[0], wrong[1],
              wrong[2], wrong[3]);
  CHECK(wrong[0] == 0);
  CHECK(wrong[1] == 0);
  CHECK(wrong[2] == 0);
  CHECK(wrong[3] == 0);
}
#endif
