// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// docs/test-matrix.md C1: the weight split on all 2^32 fp32 bit patterns, for
// ulp_correction<bf16|fp16, int8|int16>, exact_split and rounded_split, against R64:
// - exact_split: bitwise for every finite value and both infinities, NaN
//   stays NaN (stored as the canonical NaN);
// - ulp modes: |decode(encode(x)) - x| <= ULP(lo) / (2M) for every finite x
//   whose lo is finite, and the stored correction equals the double-precision
//   round_half_away(clamp((x - lo) / h, -1, 1) * M) except where the fp32
//   product rounds across a half (counted, at most one code apart).
// The special cases the contract asks to document are asserted: -0 decodes
// to +0; subnormal lo keeps the same absolute bound; x beyond T's largest
// finite value (lo = inf) decodes to inf; inf -> inf; NaN -> NaN.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>

#include "flashoptim/codec/master.hpp"

using namespace flashoptim;
using namespace flashoptim::format;

namespace {

/// 2^k in double from its bits (k in the normal range): keeps the 2^32-input
/// loop free of libm calls.
inline double pow2d(int k) {
  const std::uint64_t b = static_cast<std::uint64_t>(k + 1023) << 52;
  double d;
  std::memcpy(&d, &b, sizeof d);
  return d;
}
/// floor(v + 0.5) for 0 <= v < 2^31 without libm.
inline long long round_half_up_small(double v) { return static_cast<long long>(v + 0.5); }

/// What the sweep below needs of one parameter value p: everything but the
/// input's own arithmetic depends on p alone, and consecutive inputs share p
/// for runs of about 2^16 (bf16) or 2^13 (fp16), so it is computed once per
/// run, with the 256 values the int8 correction's decode gives there.
template <class T>
struct ulp_param_facts {
  using spec = typename format_traits<T>::spec;
  using mode8 = codec::ulp_correction<T, std::int8_t>;
  using mode16 = codec::ulp_correction<T, std::int16_t>;
  std::uint16_t bits = 0;
  bool valid = false;
  bool lo_inf = false, lo_normal = false;
  double lo_d = 0, bound8 = 0, bound16 = 0, to_code = 0;
  float decoded8[256] = {};

  void set(T p, float min_normal) {
    bits = p.bits;
    valid = true;
    const float lo = to_float(p);
    lo_inf = std::isinf(lo);
    lo_normal = std::fabs(lo) >= min_normal;
    lo_d = lo;
    // R64: the error bound ULP(lo) / (2M) and the factor to the ideal code
    // before its M, (x - lo) / (ULP(lo) / 2)
    const int E = mode8::layout::exponent(p);
    const double ulp = pow2d(E - spec::mant_bits);
    bound8 = ulp / (2.0 * mode8::max_code);
    bound16 = ulp / (2.0 * mode16::max_code);
    to_code = pow2d(spec::mant_bits + 1 - E);
    for (int c = -128; c < 128; ++c) decoded8[c + 128] = mode8::decode(p, static_cast<std::int8_t>(c));
  }
};

/// One correction's tallies over a range of inputs (summed over the ranges).
struct ulp_counts {
  unsigned long long finite = 0, bound_fail = 0, code_off = 0, code_far = 0, exact = 0, normals = 0, exact_normals = 0,
                     overflow_ok = 0, overflow_bad = 0, special_bad = 0;
  double max_rel = 0;
  void add(const ulp_counts& o) {
    finite += o.finite, bound_fail += o.bound_fail, code_off += o.code_off, code_far += o.code_far;
    exact += o.exact, normals += o.normals, exact_normals += o.exact_normals;
    overflow_ok += o.overflow_ok, overflow_bad += o.overflow_bad, special_bad += o.special_bad;
    max_rel = std::max(max_rel, o.max_rel);
  }
};

/// One correction's checks of a finite input x whose lo is finite: y is its
/// decoded value, c its code, en the clamped (x - lo) / (ULP(lo) / 2).
template <int M>
inline void tally_finite(ulp_counts& n, float x, float y, long long c, double en, double bound, bool lo_normal) {
  const double xd = x;
  const double err = std::fabs(static_cast<double>(y) - xd);
  n.bound_fail += err > bound;
  // R64: the ideal code, en times M rounded half away from zero, and its
  // distance to the stored one in integers (the same values as through
  // copysign and fabs in double)
  const long long r = round_half_up_small(std::fabs(en * M));
  const long long diff = (en < 0 ? -r : r) - c;
  n.code_off += diff != 0;
  n.code_far += diff > 1 || diff < -1;
  const bool same = bits_of(y) == bits_of(x);
  n.exact += same;
  // bit-exactness and relative error over values in T's normal range
  if (lo_normal) {
    ++n.normals;
    n.exact_normals += same;
    // (the division only where the quotient can raise the maximum: err
    // above max_rel |x| less a margin far wider than the product's rounding)
    const double ax = std::fabs(xd);
    if (err > n.max_rel * ax * (1 - 0x1p-40) && x != 0 && err != 0) n.max_rel = std::max(n.max_rel, err / ax);
  }
}

/// Both corrections of T over the inputs with bit patterns [begin, end): one
/// pass computes what they share (the input, its special cases, p's facts,
/// the ideal code before its M). Each correction's encode runs on every
/// input; the two must agree on the parameter, which is from_float<T>(x) for
/// both (counted in params_differ).
template <class T>
void sweep_ulp(std::uint64_t begin, std::uint64_t end, ulp_counts& n8, ulp_counts& n16,
               unsigned long long& params_differ) {
  using mode8 = codec::ulp_correction<T, std::int8_t>;
  using mode16 = codec::ulp_correction<T, std::int16_t>;
  using spec = typename format_traits<T>::spec;
  const float min_normal = static_cast<float>(std::ldexp(1.0, spec::emin));
  ulp_param_facts<T> f;  // the facts of the last parameter value seen
  unsigned long long differ = 0;
  for (std::uint64_t i = begin; i < end; ++i) {
    const std::uint32_t u = static_cast<std::uint32_t>(i);
    const float x = float_from_bits(u);
    T p8, p16;
    std::int8_t c8;
    std::int16_t c16;
    mode8::encode(x, p8, c8);
    mode16::encode(x, p16, c16);
    differ += p8.bits != p16.bits;
    if (!f.valid || p8.bits != f.bits) f.set(p8, min_normal);
    const float y8 = f.decoded8[static_cast<int>(c8) + 128];
    const float y16 = mode16::decode(p16, c16);
    if ((u & 0x7f800000u) == 0x7f800000u) {  // inf or NaN
      if (std::isnan(x)) {
        n8.special_bad += !std::isnan(y8);
        n16.special_bad += !std::isnan(y16);
      } else {
        n8.special_bad += !(std::isinf(y8) && std::signbit(y8) == std::signbit(x));
        n16.special_bad += !(std::isinf(y16) && std::signbit(y16) == std::signbit(x));
      }
      continue;
    }
    if (f.lo_inf) {  // x beyond T's range: the parameter is inf and so is the decoded value
      n8.overflow_ok += std::isinf(y8);
      n8.overflow_bad += !std::isinf(y8);
      n16.overflow_ok += std::isinf(y16);
      n16.overflow_bad += !std::isinf(y16);
      continue;
    }
    ++n8.finite;
    ++n16.finite;
    // R64: (x - lo) / (ULP(lo) / 2) clamped to [-1, 1]
    double en = (static_cast<double>(x) - f.lo_d) * f.to_code;
    en = en < -1 ? -1 : (en > 1 ? 1 : en);
    tally_finite<mode8::max_code>(n8, x, y8, c8, en, f.bound8, f.lo_normal);
    tally_finite<mode16::max_code>(n16, x, y16, c16, en, f.bound16, f.lo_normal);
  }
  params_differ += differ;
}

void report_ulp_mode(const char* name, const ulp_counts& n) {
  std::printf(
      "C1 %-20s finite-lo inputs %llu: bound |x'-x| <= ULP/(2M) violated %llu; code != R64 %llu (more than one apart "
      "%llu); bit-exact %.4f%% of inputs in T's normal range, max relative error there %.3g; overflow to inf %llu (not inf: %llu); "
      "inf/NaN wrong %llu\n",
      name, n.finite, n.bound_fail, n.code_off, n.code_far, 100.0 * n.exact_normals / n.normals, n.max_rel,
      n.overflow_ok, n.overflow_bad, n.special_bad);
  CHECK(n.bound_fail == 0);
  CHECK(n.code_far == 0);
  CHECK(n.overflow_bad == 0);
  CHECK(n.special_bad == 0);
}

/// -0 decodes as +0 (the parameter keeps its sign): documented.
template <class T, class C>
void check_negative_zero() {
  using mode = codec::ulp_correction<T, C>;
  T p;
  C c;
  mode::encode(-0.0f, p, c);
  CHECK(p.bits == format_traits<T>::spec::sign_bit);
  CHECK(c == 0);
  CHECK(bits_of(mode::decode(p, c)) == 0u);
}

/// ulp_correction<T, int8> and <T, int16> on all 2^32 inputs, in one sweep
/// (what the two share computed once: the four ULP sweeps 258 -> 232 s of
/// wall on 2 threads of the 2-core development machine, the same counts).
template <class T>
void check_ulp_modes(const char* name8, const char* name16) {
  ulp_counts n8, n16;
  unsigned long long params_differ = 0;
  constexpr int chunks = 256;
#pragma omp parallel for schedule(dynamic)
  for (int k = 0; k < chunks; ++k) {
    const std::uint64_t step = (std::uint64_t{1} << 32) / chunks;
    ulp_counts part8, part16;
    unsigned long long differ = 0;
    sweep_ulp<T>(k * step, (k + 1) * step, part8, part16, differ);
#pragma omp critical
    {
      n8.add(part8);
      n16.add(part16);
      params_differ += differ;
    }
  }
  report_ulp_mode(name8, n8);
  report_ulp_mode(name16, n16);
  CHECK(params_differ == 0);
  check_negative_zero<T, std::int8_t>();
  check_negative_zero<T, std::int16_t>();
}

}  // namespace

TEST_CASE("C1: ulp_correction<bf16, int8> and <bf16, int16> on all 2^32 inputs") {
  check_ulp_modes<bf16>("bf16 + int8", "bf16 + int16");
}
TEST_CASE("C1: ulp_correction<fp16, int8> and <fp16, int16> on all 2^32 inputs") {
  check_ulp_modes<fp16>("fp16 + int8", "fp16 + int16");
}

TEST_CASE("C1: exact_split is lossless on all 2^32 inputs") {
  unsigned long long finite_bad = 0, nan_bad = 0, rne_diff = 0;
#pragma omp parallel for reduction(+ : finite_bad, nan_bad, rne_diff) schedule(static)
  for (long long i = 0; i < (1ll << 32); ++i) {
    const std::uint32_t u = static_cast<std::uint32_t>(i);
    const float x = float_from_bits(u);
    bf16 p;
    std::uint16_t c;
    codec::exact_split::encode(x, p, c);
    const float y = codec::exact_split::decode(p, c);
    if (std::isnan(x)) {
      // stored canonically (the sign of a NaN comes from the arithmetic
      // that made it, which differs between CPU and GPU)
      nan_bad += !std::isnan(y) || !std::isnan(to_float(p));
    } else {
      finite_bad += bits_of(y) != u;
      // the parameter is x rounded half away from zero: it differs from RNE only on exact ties
      rne_diff += p.bits != from_float<bf16>(x).bits && (u & 0xffffu) != 0x8000u;
    }
  }
  std::printf("C1 exact_split: non-NaN inputs not bit-exact %llu, NaN handling wrong %llu, param != RNE off ties %llu\n",
              finite_bad, nan_bad, rne_diff);
  CHECK(finite_bad == 0);
  CHECK(nan_bad == 0);
  CHECK(rne_diff == 0);
  // the NaN whose carry would have reached the sign bit
  bf16 p;
  std::uint16_t c;
  codec::exact_split::encode(float_from_bits(0x7fff8000u), p, c);
  CHECK(p.bits == 0x7fff);
  CHECK(std::isnan(codec::exact_split::decode(p, c)));
  // a negative NaN is stored as the canonical (positive) NaN, like every NaN
  codec::exact_split::encode(float_from_bits(0xffffffffu), p, c);
  CHECK(p.bits == 0x7fff);
  CHECK(std::isnan(codec::exact_split::decode(p, c)));
}

namespace {
/// v rounded to the nearest integer, ties to even, for |v| < 2^51: adding
/// 1.5 * 2^52 to |v| leaves no fraction bits, so the sum rounds it in the
/// current rounding mode (to nearest even, the default), and subtracting it
/// back is exact; v's sign is put back after (a negative v that rounds to
/// zero gives -0). What nearbyint does, without its libm call in the
/// 2^32-input loop.
inline double round_even_small(double v) {
  const double shift = 0x1.8p52;
  return std::copysign((std::fabs(v) + shift) - shift, v);
}

/// R64 of rounded_split: x rounded to nearest even at a spacing of 2^(E - 15),
/// E = x's exponent raised to -126 for subnormals, computed in double (x / q
/// is exact there, below 2^24 in magnitude, and rounds to nearest even as
/// above); beyond 2^128 it is an infinity, as rounding to a format with
/// fp32's exponent range gives.
inline double rounded24_r64(float x) {
  const std::uint32_t u = bits_of(x);
  const int field = static_cast<int>((u >> 23) & 0xffu);
  const int e = field == 0 ? -126 : field - 127;
  const double r = round_even_small(static_cast<double>(x) * pow2d(15 - e)) * pow2d(e - 15);
  if (std::fabs(r) >= pow2d(128)) return std::copysign(std::numeric_limits<double>::infinity(), r);
  return r;
}
}  // namespace

TEST_CASE("C1: rounded_split is fp32 rounded to 24 bits on all 2^32 inputs") {
  using mode = codec::rounded_split;
  unsigned long long value_bad = 0, bound_bad = 0, param_far = 0, not_fixed = 0, nan_bad = 0, param_not_rne = 0;
#pragma omp parallel for reduction(+ : value_bad, bound_bad, param_far, not_fixed, nan_bad, param_not_rne) schedule(static)
  for (long long i = 0; i < (1ll << 32); ++i) {
    const std::uint32_t u = static_cast<std::uint32_t>(i);
    const float x = float_from_bits(u);
    bf16 p;
    std::int8_t c;
    mode::encode(x, p, c);
    const float y = mode::decode(p, c);
    if (std::isnan(x)) {
      nan_bad += !std::isnan(y) || p.bits != 0x7fff || c != 0;
      continue;
    }
    // the decoded value is the 24-bit rounding, bit for bit (the sign of a zero included)
    const double r = rounded24_r64(x);
    value_bad += bits_of(y) != bits_of(static_cast<float>(r)) || std::signbit(y) != std::signbit(x);
    // within half the 24-bit spacing of p's binade: ULP(p) / 512 (x finite, p finite)
    const float pv = to_float(p);
    if (std::isfinite(pv) && std::isfinite(y)) {
      const int field = (p.bits >> 7) & 0xff;
      const double ulp = pow2d((field == 0 ? -126 : field - 127) - 7);
      bound_bad += std::fabs(static_cast<double>(y) - static_cast<double>(x)) > ulp / 512.0;
      // the parameter: within half an ULP of y plus nothing (half away from zero on y's grid)
      param_far += std::fabs(static_cast<double>(pv) - static_cast<double>(y)) > ulp / 2.0;
    }
    param_not_rne += p.bits != from_float<bf16>(x).bits;
    // every stored pair is a fixed point: re-encoding its value gives the same bytes
    bf16 p2;
    std::int8_t c2;
    mode::encode(y, p2, c2);
    not_fixed += p2.bits != p.bits || c2 != c;
  }
  std::printf("C1 rounded_split: value != R64 24-bit rounding %llu, beyond ULP(p)/512 %llu, param beyond ULP/2 of the "
              "value %llu, not a fixed point %llu, NaN handling wrong %llu; param != RNE(x) (near ties, allowed) %llu\n",
              value_bad, bound_bad, param_far, not_fixed, nan_bad, param_not_rne);
  CHECK(value_bad == 0);
  CHECK(bound_bad == 0);
  CHECK(param_far == 0);
  CHECK(not_fixed == 0);
  CHECK(nan_bad == 0);
  // near ties only: a 24-bit pattern has 2^8 neighbours per bf16 value, and
  // the differences are the inputs within half a 24-bit step of a bf16 tie
  CHECK(param_not_rne < (1ull << 32) / 128);
  // spot checks: -0 stays -0, the largest finite value overflows to infinity
  // at 24 bits (its parameter too), a negative remainder below a power of two
  bf16 p;
  std::int8_t c;
  mode::encode(-0.0f, p, c);
  CHECK(p.bits == 0x8000);
  CHECK(c == 0);
  mode::encode(std::numeric_limits<float>::max(), p, c);
  CHECK(p.bits == 0x7f80);
  CHECK(std::isinf(mode::decode(p, c)));
  mode::encode(float_from_bits(0x3f7fff00u), p, c);  // just below 1: parameter 1.0, remainder -1
  CHECK(p.bits == 0x3f80);
  CHECK(c == -1);
  CHECK(bits_of(mode::decode(p, c)) == 0x3f7fff00u);
  mode::encode(float_from_bits(0x3f808000u), p, c);  // a bf16 tie: away from zero, remainder -128
  CHECK(p.bits == 0x3f81);
  CHECK(c == -128);
  CHECK(bits_of(mode::decode(p, c)) == 0x3f808000u);
}
