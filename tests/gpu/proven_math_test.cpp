// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// The host build of kernel/proven_math.hpp (the kernel's element arithmetic
// rewritten for proven operand ranges) against the codecs' own functions:
// the same bytes and the same decoded floats. Runs in CI on a stride of
// every input domain (every 61st fp32 pattern, every (param, code) pair of
// the int8 corrections) plus the patterns around every power of two;
// FLASHOPTIM_FULL_SWEEPS=1 walks every input of every domain (all 2^32 fp32
// patterns; about 15 minutes on 2 cores). The device build is checked the
// same way by tests/gpu/exhaustive_test.cu ("proven ..." cases).
#include "flashoptim/kernel/proven_math.hpp"

#include <doctest/doctest.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "common/data.hpp"
#include "flashoptim/codec/presets.hpp"

using namespace flashoptim;
namespace proven = flashoptim::kernel::proven;

namespace {

bool full_sweeps() {
  const char* v = std::getenv("FLASHOPTIM_FULL_SWEEPS");
  return v != nullptr && v[0] == '1';
}

/// Calls f(bits) for every 32-bit pattern in [begin, end) (a stride of them
/// unless full sweeps are asked for, plus the patterns within 3 of every
/// power of two) and returns how many f rejected.
template <class F>
long long sweep_bits(std::uint64_t begin, std::uint64_t end, F&& f) {
  const std::uint64_t stride = full_sweeps() ? 1 : 61;
  long long bad = 0;
  const long long n = static_cast<long long>((end - begin + stride - 1) / stride);
#pragma omp parallel for reduction(+ : bad) schedule(static)
  for (long long k = 0; k < n; ++k)
    bad += f(static_cast<std::uint32_t>(begin + static_cast<std::uint64_t>(k) * stride)) ? 0 : 1;
  if (stride > 1) {
    for (std::uint32_t e = 0; e < 256; ++e) {
      for (std::uint32_t s : {0u, 0x80000000u}) {
        for (int d = -3; d <= 3; ++d) {
          const std::uint64_t u = (static_cast<std::uint64_t>(e) << 23 | s) + static_cast<std::uint64_t>(d + 8) - 8;
          if (u >= begin && u < end) bad += f(static_cast<std::uint32_t>(u)) ? 0 : 1;
        }
      }
    }
  }
  return bad;
}

template <class T, class C>
void check_ulp_encode() {
  using M = codec::ulp_correction<T, C>;
  using A = proven::ulp_arithmetic<T, C>;
  const long long bad = sweep_bits(0, std::uint64_t{1} << 32, [](std::uint32_t u) {
    const float x = format::float_from_bits(u);
    T p0, p1;
    C c0{}, c1{};
    M::encode(x, p0, c0);
    A::encode(x, p1, c1);
    return p0.bits == p1.bits && c0 == c1;
  });
  CHECK(bad == 0);
}

template <class T, class C>
void check_ulp_decode() {
  using M = codec::ulp_correction<T, C>;
  using A = proven::ulp_arithmetic<T, C>;
  // i = param bits | correction bits << 16: every pair for int8 corrections.
  const std::uint64_t end = sizeof(C) == 1 ? (std::uint64_t{1} << 24) : (std::uint64_t{1} << 32);
  auto check = [](std::uint32_t i) {
    const T p{static_cast<std::uint16_t>(i)};
    const C c = static_cast<C>(static_cast<std::make_unsigned_t<C>>(i >> 16));
    const float want = M::decode(p, c);
    const float got = A::decode(format::to_float(p), A::fraction(c));
    return format::is_nan(want) ? format::is_nan(got) : format::bits_of(want) == format::bits_of(got);
  };
  long long bad = 0;
  if (sizeof(C) == 1) {
#pragma omp parallel for reduction(+ : bad) schedule(static)
    for (long long i = 0; i < static_cast<long long>(end); ++i) bad += check(static_cast<std::uint32_t>(i)) ? 0 : 1;
  } else {
    bad = sweep_bits(0, end, check);
  }
  CHECK(bad == 0);
}

/// The codec's own element: clamp to [-1, 1], post, quantize, sentinel.
template <class Codec>
int reference_code(float n) {
  using Code = typename Codec::code_format;
  if (!format::is_finite(n)) return static_cast<typename Codec::code_type>(Code::sentinel());
  const float y = Codec::compander::post(format::min_num(format::max_num(n, -1.0f), 1.0f));
  return Code::quantize(y, Codec::rounding, 0);
}

/// |n| beyond 1 + 2^-22 never reaches the element rules (|n| <= 1 + 2^-23).
bool in_domain(float n) { return !format::is_finite(n) || format::abs_bits(n) <= 1.0f + format::pow2(-22); }

/// A group of 32 values with the cases that take each branch of the
/// encoder: plain scales, zeros, subnormals, infinities and NaNs, groups
/// whose maximum lies outside [2^-64, 2^64].
std::vector<float> group_values(testdata::generator& gen, int kind, bool non_negative) {
  std::vector<float> v(32);
  const float scale = kind == 0 || kind == 6 ? 1.0f : kind == 1 ? 1e-25f : kind == 2 ? 1e25f : kind == 3 ? 1e-40f : 3e38f;
  for (auto& x : v) {
    x = gen.value(scale, 0.2, kind == 4 || gen.u32() % 8 == 0);
    if (non_negative) x = format::abs_bits(x);
  }
  if (gen.u32() % 5 == 0) v.assign(32, 0.0f);
  if (kind == 6) {
    // A plain scale beside elements 2^-149..2^-100 of it: products t / amax
    // below the normal range, where fp8's folded power of two meets
    // subnormals (and +-0).
    for (int i = 0; i < 32; i += 3) {
      const float tiny = format::pow2(-100 - static_cast<int>(gen.u32() % 50));
      v[static_cast<std::size_t>(i)] = (gen.u32() % 2 == 0 || non_negative) ? tiny : -tiny;
    }
    v[1] = non_negative ? 1.5f : -1.5f;
  }
  return v;
}

/// A whole group as one tile: the reduce of the kernel's encoder, where the
/// warp is this group.
struct whole_group_reduce {
  float operator()(float x) const { return x; }
  float max_num(float x) const { return x; }
  bool all(bool p) const { return p; }
};

template <class Codec>
void check_encoder(bool non_negative) {
  testdata::generator gen(7);
  int bad = 0;
  for (int trial = 0; trial < 40000; ++trial) {
    const std::vector<float> v = group_values(gen, trial % 7, non_negative);
    float x[32];
    std::memcpy(x, v.data(), sizeof x);
    typename Codec::code_type q0[32], q1[32];
    typename Codec::scale_type s0{}, s1{};
    const codec::rounding_key key{gen.u32(), 3, gen.u32()};
    Codec::encode_tile(x, q0, s0, codec::whole_group{}, key);
    proven::scale_fp32_encoder<Codec>::encode_tile(x, q1, s1, whole_group_reduce{}, key);
    if (std::memcmp(q0, q1, sizeof q0) != 0 || format::bits_of(s0) != format::bits_of(s1)) ++bad;
  }
  CHECK(bad == 0);
}

}  // namespace

TEST_CASE("proven ULP arithmetic: encode == ulp_correction::encode") {
  check_ulp_encode<bf16, std::int8_t>();
  check_ulp_encode<bf16, std::int16_t>();
  check_ulp_encode<fp16, std::int8_t>();
  check_ulp_encode<fp16, std::int16_t>();
}

TEST_CASE("proven ULP arithmetic: decode == ulp_correction::decode") {
  check_ulp_decode<bf16, std::int8_t>();
  check_ulp_decode<fp16, std::int8_t>();
  check_ulp_decode<bf16, std::int16_t>();
  check_ulp_decode<fp16, std::int16_t>();
}

TEST_CASE("proven element rules == clamp, post, quantize, sentinel") {
  using codec::defaults::momentum;
  using codec::defaults::second_moment;
  using half_up_v = codec::grouped<codec::uint8_code<true>, codec::sqrt_compander, codec::scale_fp32>;
  const long long bad_m = sweep_bits(0, std::uint64_t{1} << 32, [](std::uint32_t u) {
    const float n = format::float_from_bits(u);
    return !in_domain(n) || static_cast<std::int8_t>(proven::softsign_int8_code(n)) == reference_code<momentum>(n);
  });
  CHECK(bad_m == 0);
  // The sqrt compander's operand: n >= 0 (or -0), NaN or +inf.
  const long long bad_v = sweep_bits(0, std::uint64_t{1} << 32, [](std::uint32_t u) {
    const float n = format::float_from_bits(u);
    if (!in_domain(n) || (n < 0.0f) || (u == 0xff800000u)) return true;
    return static_cast<std::uint8_t>(proven::sqrt_uint8_code<true>(n)) ==
               static_cast<std::uint8_t>(reference_code<second_moment>(n)) &&
           static_cast<std::uint8_t>(proven::sqrt_uint8_code<false>(n)) ==
               static_cast<std::uint8_t>(reference_code<half_up_v>(n));
  });
  CHECK(bad_v == 0);
  // The positive-operand form (a range-checked attempt's second moment):
  // every n in (0, 1 + 2^-22].
  const std::uint64_t past_domain = format::bits_of(1.0f + format::pow2(-22)) + std::uint64_t{1};
  const long long bad_p = sweep_bits(1, past_domain, [](std::uint32_t u) {
    const float n = format::float_from_bits(u);
    return static_cast<std::uint8_t>(proven::sqrt_uint8_code_positive(n)) ==
           static_cast<std::uint8_t>(reference_code<second_moment>(n));
  });
  CHECK(bad_p == 0);
}

TEST_CASE("half_softsign's device quotient: one correction from any reciprocal within 1 ulp is RN(n / (1 + |n|))") {
  // The device computes n / d, d = 1 + |n|, as quotient_from_reciprocal(n,
  // d, r) with r from rcp.approx, which the PTX ISA bounds to 1 ulp of 1 / d
  // without saying which float it gives. So every float r within 1 ulp of
  // 1 / d must give the correctly rounded quotient, for every |n| <= 2 (the
  // domain half_softsign documents). Within 1 ulp: |r - 1/d| <= u, u the
  // spacing of the floats above RN(1/d), tested exactly in double as
  // |r d - 1| <= u d (r d and u d are exact products of 24-bit values).
  const auto quotient_exact_for_every_reciprocal = [](std::uint32_t bits) {
    const float n = format::float_from_bits(bits);
    const float d = 1.0f + std::fabs(n);
    const float want = n == 0.0f ? 0.0f : n / d;  // -0 gives +0 (documented; its code is 0)
    const float r0 = 1.0f / d;
    const double u = static_cast<double>(format::float_from_bits(format::bits_of(r0) + 1)) - r0;
    for (int k = -2; k <= 2; ++k) {  // a superset of those within 1 ulp
      const float r = format::float_from_bits(format::bits_of(r0) + static_cast<std::uint32_t>(k));
      if (std::fabs(static_cast<double>(r) * d - 1.0) > u * d) continue;  // not within 1 ulp
      if (format::bits_of(kernel::detail::quotient_from_reciprocal(n, d, r)) != format::bits_of(want)) return false;
    }
    return true;
  };
  const std::uint32_t two = format::bits_of(2.0f);
  CHECK(sweep_bits(0, std::uint64_t{two} + 1, quotient_exact_for_every_reciprocal) == 0);
  CHECK(sweep_bits(0x80000000u, 0x80000000u + std::uint64_t{two} + 1, quotient_exact_for_every_reciprocal) == 0);
  // The bound matters: two floats from RN(1/d) one correction is not enough
  // (n = 0x33c00000: d = 1 + 2^-23, RN(1/d) = 0x3f7ffffe; r = 0x3f7ffffc
  // gives 0x33bffffe where RN(n / d) is 0x33bfffff).
  const float n = format::float_from_bits(0x33c00000u);
  const float d = 1.0f + n;
  CHECK(format::bits_of(kernel::detail::quotient_from_reciprocal(n, d, format::float_from_bits(0x3f7ffffcu))) !=
        format::bits_of(n / d));
  CHECK(format::bits_of(kernel::detail::quotient_from_reciprocal(n, d, 1.0f / d)) == format::bits_of(n / d));
}

TEST_CASE("fold lemma: floor(RN(RN(M x) + 0.5)) == floor(RN(M x + 0.5)) for |x| <= 1.01") {
  for (float M : {127.0f, 254.0f, 32767.0f}) {
    CAPTURE(M);
    const long long bad = sweep_bits(0, std::uint64_t{1} << 32, [M](std::uint32_t u) {
      const float x = format::float_from_bits(u);
      if (!(format::abs_bits(x) <= 1.01f)) return true;
      const float two_roundings = (x * M) + 0.5f;
      const float one_rounding = format::fma_rn(x, M, 0.5f);
      return format::floor_exact(two_roundings) == format::floor_exact(one_rounding);
    });
    CHECK(bad == 0);
  }
}

TEST_CASE("proven scale_fp32 encoder == grouped::encode_tile on whole groups") {
  namespace p = codec::precision;
  check_encoder<codec::defaults::momentum>(false);
  check_encoder<codec::defaults::second_moment>(false);
  check_encoder<p::fp8_momentum>(false);
  check_encoder<p::fp8_second_moment>(false);
  check_encoder<p::fp8_second_moment>(true);
  // e5m2, and the fp8 codes the element rule leaves to the general path.
  using e5m2_m = codec::grouped<codec::fp8_code<fp8_e5m2>, codec::identity, codec::scale_fp32>;
  using e5m2_v = codec::grouped<codec::fp8_code<fp8_e5m2>, codec::sqrt_compander, codec::scale_fp32,
                                codec::code_rounding::half_up_nonzero>;
  using e4m3_nonzero_identity = codec::grouped<codec::fp8_code<fp8_e4m3>, codec::identity, codec::scale_fp32,
                                               codec::code_rounding::half_up_nonzero>;
  static_assert(proven::element_rule_of<p::fp8_momentum>::value == proven::element_rule::fp8_nearest);
  static_assert(proven::element_rule_of<e5m2_v>::value == proven::element_rule::fp8_nearest);
  static_assert(proven::element_rule_of<e4m3_nonzero_identity>::value == proven::element_rule::general);
  check_encoder<e5m2_m>(false);
  check_encoder<e5m2_v>(true);
  check_encoder<e4m3_nonzero_identity>(false);
  check_encoder<
      codec::grouped<codec::int8_code<true>, codec::softsign, codec::scale_fp32, codec::code_rounding::stochastic>>(
      false);
  check_encoder<codec::grouped<codec::uint8_code<true>, codec::sqrt_compander, codec::scale_fp32>>(false);
  check_encoder<codec::grouped<codec::int8_code<true>, codec::identity, codec::scale_fp32>>(false);
  check_encoder<codec::grouped<codec::uint8_code<true>, codec::identity, codec::scale_fp32>>(true);
}

TEST_CASE("fold lemma for M = 255 on x >= 0 (the reference second moment's code)") {
  // (One negative x, -0x1.010102p-9, breaks it: the reference's n is never negative.)
  const long long bad = sweep_bits(0, 0x80000000u, [](std::uint32_t u) {
    const float x = format::float_from_bits(u);
    if (!(x <= 1.01f)) return true;
    return format::floor_exact((x * 255.0f) + 0.5f) == format::floor_exact(format::fma_rn(x, 255.0f, 0.5f));
  });
  CHECK(bad == 0);
}

/// A group as a range-checked Adam step leaves it: |m| in [2^-60, 2^60],
/// v in [2^-100, 2^76] (magnitudes spread over the whole range, or close
/// together, with ties to the group maximum).
std::vector<float> checked_group(testdata::generator& gen, bool second_moment, int kind) {
  std::vector<float> v(32);
  const int lo = second_moment ? -100 : -60, hi = second_moment ? 75 : 59;
  const int center = lo + static_cast<int>(gen.u32() % static_cast<std::uint32_t>(hi - lo));
  for (auto& x : v) {
    const int e = kind == 0 ? lo + static_cast<int>(gen.u32() % static_cast<std::uint32_t>(hi - lo))
                            : std::min(hi, std::max(lo, center - static_cast<int>(gen.u32() % 12)));
    const float mant = 1.0f + static_cast<float>(gen.u32() >> 8) * format::pow2(-24);
    x = mant * format::pow2(e);
    if (!second_moment && gen.u32() % 2 == 0) x = -x;
  }
  if (kind == 2) v[gen.u32() % 32] = v[gen.u32() % 32];
  return v;
}

TEST_CASE("reference layout on range-checked tiles: the proven encoder == grouped::encode_tile") {
  using M = codec::reference::momentum;
  using V = codec::reference::second_moment;
  static_assert(proven::is_reference_checked_codec<M>::value && proven::is_reference_checked_codec<V>::value);
  static_assert(!proven::is_reference_checked_codec<codec::defaults::momentum>::value);
  testdata::generator gen(11);
  int bad_m = 0, bad_v = 0;
  for (int trial = 0; trial < 60000; ++trial) {
    for (bool second : {false, true}) {
      const std::vector<float> v = checked_group(gen, second, trial % 3);
      float x[32];
      std::memcpy(x, v.data(), sizeof x);
      std::uint8_t q0[32], q1[32];
      fp16 s0{}, s1{};
      if (second) {
        V::code_type a[32], b[32];
        V::encode_tile(x, a, s0, codec::whole_group{}, {});
        proven::reference_checked_encoder<V>::encode_tile(x, b, s1, whole_group_reduce{}, {});
        std::memcpy(q0, a, 32);
        std::memcpy(q1, b, 32);
      } else {
        M::code_type a[32], b[32];
        M::encode_tile(x, a, s0, codec::whole_group{}, {});
        proven::reference_checked_encoder<M>::encode_tile(x, b, s1, whole_group_reduce{}, {});
        std::memcpy(q0, a, 32);
        std::memcpy(q1, b, 32);
      }
      if (std::memcmp(q0, q1, 32) != 0 || s0.bits != s1.bits) ++(second ? bad_v : bad_m);
    }
  }
  CHECK(bad_m == 0);
  CHECK(bad_v == 0);
}

TEST_CASE("keep_if_equal keeps the bytes exactly when the bits are equal") {
  testdata::generator gen(3);
  for (int i = 0; i < 10000; ++i) {
    const float before = gen.value(1.0f, 0.3, true);
    const float after = i % 3 == 0 ? before : gen.value(1.0f, 0.3, true);
    bf16 p{static_cast<std::uint16_t>(gen.u32())};
    std::int8_t a = static_cast<std::int8_t>(gen.u32());
    const bf16 p0 = p;
    const std::int8_t a0 = a;
    const bf16 np{static_cast<std::uint16_t>(gen.u32())};
    const std::int8_t na = static_cast<std::int8_t>(gen.u32());
    proven::keep_if_equal(before, after, p, a, np, na);
    const bool keep = format::bits_of(before) == format::bits_of(after);
    CHECK(p.bits == (keep ? p0.bits : np.bits));
    CHECK(a == (keep ? a0 : na));
  }
}

// ---------------------------------------------------------------------------
// The tiny-tolerant second attempt (kernel/range_checked.cuh, Tiny): tiny
// operands lifted by powers of two into the proven ranges. On the host the
// proven functions are the IEEE ones, so these check the lifts' identities
// with the device's fast paths replaced by what they are proven to return on
// the lifted operands (the correctly rounded results).

namespace {

float lift(float x, int k) { return format::mul_rn(x, format::pow2(k)); }

/// A whole group as one tile, remembering what `all` was asked.
struct recording_reduce {
  bool* asked;
  float operator()(float x) const { return x; }
  float max_num(float x) const { return x; }
  bool all(bool p) const {
    *asked = p;
    return p;
  }
};

/// Groups whose maximum lies in [2^-149, 2^-64): the tiny encoder takes its
/// plain path there, and must give the codec's bytes.
template <class Codec>
void check_tiny_encoder(bool non_negative) {
  testdata::generator gen(17);
  int bad = 0, not_plain = 0;
  for (int trial = 0; trial < 40000; ++trial) {
    const int e = -149 + static_cast<int>(gen.u32() % 85);  // 2^e in [2^-149, 2^-65]
    float x[32];
    for (float& v : x) {
      const float u = static_cast<float>(gen.uniform());
      v = format::scale_pow2(non_negative || gen.u32() % 2 ? u : -u, e);  // subnormals included
      if (gen.u32() % 9 == 0) v = 0.0f;
    }
    if (non_negative) {  // the sqrt compander's input: squares of these
      for (float& v : x) v = format::mul_rn(v, v);
    }
    typename Codec::code_type q0[32], q1[32];
    typename Codec::scale_type s0{}, s1{};
    const codec::rounding_key key{gen.u32(), 3, gen.u32()};
    Codec::encode_tile(x, q0, s0, codec::whole_group{}, key);
    bool plain = false;
    proven::scale_fp32_encoder<Codec, typename Codec::compander, typename Codec::compander, true>::encode_tile(
        x, q1, s1, recording_reduce{&plain}, key);
    not_plain += !plain;
    if (std::memcmp(q0, q1, sizeof q0) != 0 || format::bits_of(s0) != format::bits_of(s1)) ++bad;
  }
  CHECK(bad == 0);
  CHECK(not_plain == 0);
}

}  // namespace

TEST_CASE("tiny-tolerant attempt: sqrt(v * 2^64) * 2^-32 == sqrt(v) for every v in (0, 2^-100)") {
  const std::uint32_t end = format::bits_of(format::pow2(-100));
  long long bad = 0;
#pragma omp parallel for reduction(+ : bad) schedule(static)
  for (long long u = 1; u < static_cast<long long>(end); ++u) {
    const float v = format::float_from_bits(static_cast<std::uint32_t>(u));
    bad += format::bits_of(lift(format::sqrt_rn(lift(v, 64)), -32)) != format::bits_of(format::sqrt_rn(v));
  }
  CHECK(bad == 0);
  // +0: sqrt_or_tiny's lift keeps it +0
  CHECK(format::bits_of(proven::sqrt_or_tiny(0.0f)) == 0u);
}

TEST_CASE("tiny-tolerant attempt: RN(1 / (s * 2^128)) * 2^64 == RN(1 / (s * 2^64)) on [2^-149, 2^-64)") {
  const std::uint32_t end = format::bits_of(format::pow2(-64));
  long long bad = 0, count = 0;
  // every 7th pattern (the identity is scaling by a power of two inside the
  // normal range, exact by construction): ~7.5e7 divisions
#pragma omp parallel for reduction(+ : bad, count) schedule(static)
  for (long long u = 1; u < static_cast<long long>(end); u += 7) {
    const float s = format::float_from_bits(static_cast<std::uint32_t>(u));
    const float lifted = lift(format::div_rn(1.0f, lift(lift(s, 64), 64)), 64);
    bad += format::bits_of(lifted) != format::bits_of(format::div_rn(1.0f, lift(s, 64)));
    bad += format::bits_of(lifted) != format::bits_of(proven::reciprocal_lifted(s));
    ++count;
  }
  CHECK(count > 70000000);
  CHECK(bad == 0);
}

TEST_CASE("tiny-tolerant attempt: a tiny m's lifted quotient lands p where the exact one does") {
  // m below 2^-60 (subnormals and zeros of both signs included), d in
  // [2^-60, 2^59] (the denominator's proven range), the update's factor
  // -lr / bc1 and the parameter p; where checked_adam_math<true, true>
  // accepts m (|p| >= 2^-126 and |lr / bc1| * 2^-99 <= |p|), fma(ns, q, p)
  // must be the same with the device's quotient (the lifted one: RN(m *
  // 2^100 / d) * 2^-100, +0 for either zero) as with RN(m / d); and the
  // lifted quotient is RN(m / d) itself wherever that is at least 2^-126.
  testdata::generator gen(23);
  long long accepted = 0, bad_p = 0, normal_q = 0, bad_q = 0;
  for (int trial = 0; trial < 2000000; ++trial) {
    const auto rnd = [&](int lo, int hi) {
      const float mant = 1.0f + static_cast<float>(gen.uniform());
      return format::scale_pow2(mant, lo + static_cast<int>(gen.u32() % static_cast<std::uint32_t>(hi - lo + 1)));
    };
    float m = trial % 97 == 0 ? 0.0f : (gen.u32() % 3 == 0 ? format::float_from_bits(gen.u32() % 0x800000u)  // subnormal
                                                           : rnd(-126, -61));
    if (gen.u32() % 2) m = -m;
    const float d = rnd(-60, 58);
    const float ns = -rnd(-40, 10);
    float p = rnd(-140, 20);
    if (gen.u32() % 2) p = -p;
    const float q_exact = format::div_rn(m, d);
    const float q_dev = m == 0.0f ? 0.0f : lift(format::div_rn(lift(m, 100), d), -100);
    if (format::abs_bits(q_exact) >= format::pow2(-126)) {
      ++normal_q;
      bad_q += format::bits_of(q_dev) != format::bits_of(q_exact);
    }
    const float ap = format::abs_bits(p);
    if (ap >= format::pow2(-126) && ap >= lift(format::abs_bits(ns), -99)) {
      ++accepted;
      bad_p += format::bits_of(format::fma_rn(ns, q_dev, p)) != format::bits_of(format::fma_rn(ns, q_exact, p));
    }
  }
  CHECK(accepted > 100000);
  CHECK(normal_q > 100000);
  CHECK(bad_p == 0);
  CHECK(bad_q == 0);
}

TEST_CASE("tiny-tolerant attempt: the tiny encoder == grouped::encode_tile for group maxima in [2^-149, 2^-64)") {
  namespace p = codec::precision;
  check_tiny_encoder<codec::defaults::momentum>(false);
  check_tiny_encoder<codec::defaults::second_moment>(true);
  check_tiny_encoder<p::fp8_momentum>(false);
  check_tiny_encoder<p::fp8_second_moment>(true);
  check_tiny_encoder<
      codec::grouped<codec::int8_code<true>, codec::softsign, codec::scale_fp32, codec::code_rounding::stochastic>>(
      false);
}
