// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// State codecs (docs/test-matrix.md C2, C3, C13 at the codec level): bitwise against
// R32's group quantizer, per-element error within the code-step bound (R64),
// quantize∘dequantize∘quantize idempotent, all-zero groups exact, the scale
// over the whole fp32 range, and non-finite elements.
#include <doctest/doctest.h>

#include <cfloat>
#include <cmath>
#include <cstdio>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "common/data.hpp"
#include "reference/describe.hpp"

using namespace flashoptim;
namespace c = flashoptim::codec;

namespace {

template <class Codec>
struct quantized {
  std::vector<typename Codec::code_type> codes;
  std::vector<typename Codec::scale_type> scales;
};

template <class Codec>
quantized<Codec> quantize(const std::vector<float>& x) {
  const auto n = static_cast<std::int64_t>(x.size());
  quantized<Codec> q;
  q.codes.resize(x.size());
  q.scales.resize(static_cast<std::size_t>(c::scale_count<Codec>(n)));
  REQUIRE(c::quantize<Codec>(x.data(), n, q.codes.data(), q.scales.data()).ok());
  return q;
}

template <class Codec>
std::vector<float> dequantize(const quantized<Codec>& q) {
  std::vector<float> out(q.codes.size());
  REQUIRE(c::dequantize<Codec>(q.codes.data(), q.scales.data(), static_cast<std::int64_t>(out.size()), out.data()).ok());
  return out;
}

template <class T>
bool same_bytes(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0);
}

/// Half a code step (plus rounding) in the companded, normalized domain y.
template <class Codec>
double code_step_bound(double y) {
  using Code = typename Codec::code_format;
  double b;
  // fp8: half an ulp relative, or half the smallest subnormal (a whole one
  // when positive values are kept off zero)
  const int floor_shift = Codec::rounding == c::code_rounding::half_up ? 1 : 0;
  if constexpr (std::is_same<Code, c::fp8_code<fp8_e4m3>>::value)
    b = std::max(std::fabs(y) * std::ldexp(1.0, -4), std::ldexp(1.0, -17 - floor_shift));
  else if constexpr (std::is_same<Code, c::fp8_code<fp8_e5m2>>::value)
    b = std::max(std::fabs(y) * std::ldexp(1.0, -3), std::ldexp(1.0, -31 - floor_shift));
  else b = (Codec::rounding == c::code_rounding::half_up ? 0.5 : 1.0) / Code::qmax;
  return b + 1e-6;
}

/// Per-element error bound of a grouped codec, in R64: the code step mapped
/// through the compander's inverse (its steepest slope over the step) and
/// the stored scale, plus what a stored scale that differs from the group's
/// true max |pre(x)| (the reference layout's fp16 scale) adds.
template <class Codec>
double element_bound(double x, double scale, double amax) {
  using K = typename Codec::compander;
  if constexpr (std::is_same<K, c::softsign>::value) {
    const double n = std::fabs(x) / amax, y = 2 * n / (1 + n), d = code_step_bound<Codec>(y);
    const double slope = 2.0 / ((2 - std::min(1.0, y + d)) * (2 - std::min(1.0, y + d)));  // dn/dy = 2/(2-|y|)^2
    return d * slope * scale + n * std::fabs(scale - amax) + std::fabs(x) * 1e-6;
  } else if constexpr (std::is_same<K, c::sqrt_compander>::value) {
    const double r = std::sqrt(x);
    const double dr = code_step_bound<Codec>(r / amax) * scale + r / amax * std::fabs(scale - amax) + r * 1e-6;
    return dr * (2 * r + dr);
  } else {
    return code_step_bound<Codec>(std::fabs(x) / amax) * scale + std::fabs(x) / amax * std::fabs(scale - amax) +
           std::fabs(x) * 1e-6;
  }
}
template <class Codec>
double element_bound(double x, double scale) {
  return element_bound<Codec>(x, scale, scale);
}

/// True group max of |pre(x)| in double.
template <class Codec>
double group_amax(const std::vector<float>& x, std::int64_t begin) {
  double m = 0;
  for (std::int64_t i = begin; i < std::min<std::int64_t>(begin + 32, static_cast<std::int64_t>(x.size())); ++i)
    m = std::max(m, std::fabs(static_cast<double>(Codec::compander::pre(x[i]))));
  return m;
}

template <class Codec>
constexpr bool is_reference_scale = std::is_same<typename Codec::scale_format, c::scale_fp16_reference>::value;

/// C2 on one codec: bitwise vs R32, error bound, idempotence, zero groups.
template <class Codec>
void check_grouped(const char* name, bool non_negative) {
  testdata::generator gen(17);
  const ref::codec_desc desc = ref::describe_codec<Codec>::get();
  double worst = 0;
  for (std::int64_t n : {0, 1, 31, 32, 33, 63, 65, 1023, 1025, 4097}) {
    std::vector<float> x(static_cast<std::size_t>(n));
    for (std::int64_t i = 0; i < n; ++i) {
      const std::int64_t g = i / 32;
      // mixed magnitudes: each group has its own scale, every 5th group is all zero
      const float group_scale = g % 5 == 4 ? 0.0f : std::ldexp(1.0f, static_cast<int>(g * 7 % 41) - 20);
      float v = gen.value(group_scale, 0.02) * (gen.uniform() < 0.1 ? 1e-3f : 1.0f);
      if (!std::isfinite(v) || group_scale == 0.0f) v = 0;
      x[i] = non_negative ? v * v : v;
    }
    const auto q = quantize<Codec>(x);
    // bitwise against R32
    std::vector<std::uint8_t> rcodes(static_cast<std::size_t>(n) * desc.code_bytes()),
        rscales(static_cast<std::size_t>((n + 31) / 32) * desc.scale_bytes());
    for (std::int64_t b = 0; b < n; b += 32) {
      const int count = static_cast<int>(std::min<std::int64_t>(32, n - b));
      ref::encode_group(desc, x.data() + b, count, rcodes.data() + b * desc.code_bytes(),
                        rscales.data() + (b / 32) * desc.scale_bytes(), 0, 0, static_cast<std::uint64_t>(b));
    }
    CHECK_MESSAGE(std::memcmp(rcodes.data(), q.codes.data(), rcodes.size()) == 0, name, " codes differ from R32, n=", n);
    CHECK_MESSAGE(std::memcmp(rscales.data(), q.scales.data(), rscales.size()) == 0, name, " scales differ from R32");
    // error bound per element against the group's scale (R64)
    const auto y = dequantize<Codec>(q);
    for (std::int64_t i = 0; i < n; ++i) {
      const double s = Codec::scale_format::load(q.scales[i / 32]);
      const double amax = group_amax<Codec>(x, i / 32 * 32);
      // the reference layout is only bounded where its fp16 scale is normal (C3 documents the rest)
      if (is_reference_scale<Codec> && (amax < 6.2e-5 || amax > 65504)) continue;
      const double err = std::fabs(static_cast<double>(y[i]) - x[i]);
      const double bound = amax > 0 ? element_bound<Codec>(x[i], s, amax) : 0.0;
      if (amax > 0 && bound > 0) worst = std::max(worst, err / bound);
      if (!(err <= bound)) {
        FAIL_CHECK(name, " n=", n, " element ", i, ": x=", x[i], " decoded ", y[i], " error ", err, " > bound ", bound);
        break;
      }
    }
    // idempotent: quantize(dequantize(q)) == q, bitwise. The reference layout
    // is only where its fp16 scale is a normal number (documented defect).
    const auto q2 = quantize<Codec>(y);
    for (std::int64_t b = 0; b < n; b += 32) {
      const double amax = group_amax<Codec>(x, b);
      if (is_reference_scale<Codec> && (amax < 6.2e-5 || amax > 65504)) continue;
      const std::int64_t e = std::min<std::int64_t>(n, b + 32);
      CHECK_MESSAGE(std::memcmp(&q.codes[b], &q2.codes[b], (e - b) * sizeof(q.codes[0])) == 0, name,
                    " re-quantized codes differ, group ", b / 32, " n=", n);
      CHECK_MESSAGE(std::memcmp(&q.scales[b / 32], &q2.scales[b / 32], sizeof(q.scales[0])) == 0, name,
                    " re-quantized scale differs, group ", b / 32);
    }
    // all-zero groups decode to exact zeros
    for (std::int64_t i = 0; i < n; ++i)
      if ((i / 32) % 5 == 4) CHECK(y[i] == 0.0f);
    (void)same_bytes<int>;
  }
  std::printf("C2 %-28s bitwise = R32, worst error / code-step bound = %.3f\n", name, worst);
}

/// Builds one group of 32 whose max magnitude is `amax`.
std::vector<float> group_with_max(float amax) {
  std::vector<float> x(32);
  for (int i = 0; i < 32; ++i) x[i] = amax * (i == 7 ? 1.0f : static_cast<float>(i) / 40.0f);
  return x;
}

}  // namespace

TEST_CASE("C2: grouped codecs, bitwise vs R32, error within the code step, idempotent") {
  check_grouped<c::defaults::momentum>("defaults::momentum", false);
  check_grouped<c::defaults::second_moment>("defaults::second_moment", true);
  check_grouped<c::reference::momentum>("reference::momentum", false);
  check_grouped<c::reference::second_moment>("reference::second_moment", true);
  check_grouped<c::precision::fp8_momentum>("precision::fp8_momentum", false);
  check_grouped<c::precision::fp8_second_moment>("precision::fp8_second_moment", true);
  check_grouped<c::grouped<c::fp8_code<fp8_e5m2>, c::identity, c::scale_fp32>>("fp8 e5m2 identity", false);
  check_grouped<c::grouped<c::int8_code<true>, c::identity, c::scale_fp32>>("int8 linear", false);
}

TEST_CASE("C2: plain codecs round to nearest even; stochastic ones to a neighbour") {
  testdata::generator gen(3);
  const auto x = gen.values(4097, 1.0f, 0.1, true);
  const auto qb = quantize<c::precision::bf16>(x);
  const auto qh = quantize<c::precision::fp16>(x);
  const auto qf = quantize<c::precision::fp32>(x);
  const auto qs = quantize<c::precision::bf16_sr>(x);
  for (std::size_t i = 0; i < x.size(); ++i) {
    CHECK(qb.codes[i].bits == format::from_float<bf16>(x[i]).bits);
    CHECK(qh.codes[i].bits == format::from_float<fp16>(x[i]).bits);
    CHECK((std::isnan(x[i]) ? std::isnan(qf.codes[i]) : format::bits_of(qf.codes[i]) == format::bits_of(x[i])));
    if (std::isfinite(x[i])) {
      const float lo = format::to_float(format::from_float<bf16>(x[i]));
      const float d = format::to_float(qs.codes[i]);
      CHECK(std::fabs(d - x[i]) < std::fabs(x[i]) * std::ldexp(1.0f, -7) + 1e-38f);
      (void)lo;
    }
  }
}

TEST_CASE("C3: default scale is finite, nonzero and exact over the whole fp32 range") {
  for (float amax : {0.0f, 1e-45f, 1e-12f, 2.9e-8f, 6e-8f, 6.1e-5f, 65504.0f, 65520.0f, 1e30f, FLT_MAX}) {
    const auto x = group_with_max(amax);
    std::vector<float> v(x.size());
    for (std::size_t i = 0; i < x.size(); ++i) v[i] = x[i];  // as a second moment: non-negative
    const auto qm = quantize<c::defaults::momentum>(x);
    const auto qv = quantize<c::defaults::second_moment>(v);
    const auto ym = dequantize(qm);
    const auto yv = dequantize(qv);
    INFO("group max ", amax);
    for (float s : {qm.scales[0], qv.scales[0]}) {
      CHECK(std::isfinite(s));
      CHECK((amax == 0.0f) == (s == 0.0f));
    }
    CHECK(qm.scales[0] == amax);  // the stored scale is the max itself
    // the max element comes back exactly; every element within its bound
    CHECK(ym[7] == x[7]);
    for (int i = 0; i < 32; ++i) {
      CHECK(std::isfinite(ym[i]));
      CHECK(std::isfinite(yv[i]));
      if (amax > 0) CHECK(std::fabs(ym[i] - x[i]) <= element_bound<c::defaults::momentum>(x[i], amax));
      const double vs = c::defaults::second_moment::scale_format::load(qv.scales[0]);
      if (vs > 0 && std::isnormal(v[i]))
        CHECK(std::fabs(static_cast<double>(yv[i]) - v[i]) <= element_bound<c::defaults::second_moment>(v[i], vs) * (1 + 1e-6));
      CHECK(std::fabs(static_cast<double>(yv[7]) - v[7]) <= std::max(std::fabs(static_cast<double>(v[7])) * 3e-7, 1.5e-45));
    }
  }
}

TEST_CASE("C3: the reference layout's fp16 scale fails where the peer does (documented)") {
  // group max >= 65520: the fp16 scale is inf and the group decodes to NaN
  {
    const auto q = quantize<c::reference::momentum>(group_with_max(65520.0f));
    CHECK(std::isinf(format::to_float(q.scales[0])));
    const auto y = dequantize(q);
    CHECK(std::isnan(y[0]));  // code 0 times an infinite scale
  }
  // group max <= 2.9e-8: the scale rounds to 0 and the state is wiped
  {
    const auto q = quantize<c::reference::momentum>(group_with_max(2.9e-8f));
    CHECK(format::to_float(q.scales[0]) == 0.0f);
    const auto y = dequantize(q);
    CHECK(y[7] == 0.0f);
  }
  // 1e-7: an fp16 subnormal scale, ~19% off
  {
    const auto x = group_with_max(1e-7f);
    const auto y = dequantize(quantize<c::reference::momentum>(x));
    const double rel = std::fabs(y[7] - x[7]) / x[7];
    std::printf("C3 reference scale at 1e-7: relative error of the max element %.1f%%\n", 100 * rel);
    CHECK(rel > 0.1);
  }
}

TEST_CASE("C13 (codec): one non-finite element costs that element alone") {
  testdata::generator gen(9);
  for (float bad : {INFINITY, -INFINITY, NAN}) {
    std::vector<float> x = gen.values(64, 1.0f, 0.0);
    std::vector<float> v(64);
    for (int i = 0; i < 64; ++i) v[i] = x[i] * x[i];
    const auto clean_m = dequantize(quantize<c::defaults::momentum>(x));
    x[5] = bad;
    v[5] = std::isnan(bad) ? bad : INFINITY;
    const auto ym = dequantize(quantize<c::defaults::momentum>(x));
    const auto yv = dequantize(quantize<c::defaults::second_moment>(v));
    INFO("bad value ", bad);
    CHECK(std::isnan(ym[5]));  // never laundered into a finite value
    CHECK(std::isnan(yv[5]));
    int others_finite = 0;
    for (int i = 0; i < 64; ++i)
      if (i != 5) others_finite += std::isfinite(ym[i]) && std::isfinite(yv[i]);
    CHECK(others_finite == 63);
    // the other elements keep a scale of their own finite values
    for (int i = 0; i < 64; ++i)
      if (i != 5) CHECK(std::fabs(ym[i] - x[i]) <= element_bound<c::defaults::momentum>(x[i], ym[i] == 0 ? 1.0 : 4.0) + 0.05);
    // the reference layout loses the whole group (documented peer defect)
    const auto yr = dequantize(quantize<c::reference::momentum>(x));
    int group_nan = 0;
    for (int i = 0; i < 32; ++i) group_nan += !std::isfinite(yr[i]);
    if (!std::isnan(bad)) CHECK(group_nan == 32);
    (void)clean_m;
  }
}

TEST_CASE("bulk functions reject bad arguments and write nothing") {
  std::vector<float> x(40, 1.0f);
  std::vector<std::int8_t> codes(40, 7);
  std::vector<float> scales(2, 3.0f);
  CHECK(c::quantize<c::defaults::momentum>(x.data(), 40, codes.data(), nullptr).code() == status_code::null_pointer);
  CHECK(c::quantize<c::defaults::momentum>(x.data(), -1, codes.data(), scales.data()).code() == status_code::size_mismatch);
  CHECK(c::quantize<c::defaults::momentum>(x.data(), 40, codes.data(), reinterpret_cast<float*>(reinterpret_cast<char*>(scales.data()) + 1)).code() ==
        status_code::misaligned);
  CHECK(codes[0] == 7);
  CHECK(scales[0] == 3.0f);
  std::vector<bf16> p(4);
  std::vector<std::int8_t> corr(4, 9);
  CHECK(c::split<c::ulp_correction<bf16, std::int8_t>>(nullptr, 4, p.data(), corr.data()).code() == status_code::null_pointer);
  CHECK(corr[0] == 9);
  CHECK(c::split<c::ulp_correction<bf16, std::int8_t>>(nullptr, 0, nullptr, nullptr).ok());
}

namespace {
bool names(const flashoptim::status& s, const char* a, const char* b) {
  const std::string m = s.message();
  return m.find(a) != std::string::npos && m.find(b) != std::string::npos;
}
}  // namespace

TEST_CASE("bulk functions refuse overlapping buffers, naming both, and write nothing") {
  using M = c::ulp_correction<bf16, std::int8_t>;
  using Q = c::defaults::momentum;
  // one arena: every buffer below is carved from it, so overlaps are real
  std::vector<std::uint32_t> arena(256, 0x5a5a5a5au);
  auto* bytes = reinterpret_cast<unsigned char*>(arena.data());
  auto* f32 = reinterpret_cast<float*>(bytes);
  auto* b16 = reinterpret_cast<bf16*>(bytes);
  auto* i8 = reinterpret_cast<std::int8_t*>(bytes);
  for (int i = 0; i < 64; ++i) f32[i] = 0.25f * static_cast<float>(i);
  const std::vector<std::uint32_t> filled = arena;

  flashoptim::status s = c::split<M>(f32, 64, b16 + 64, i8 + 8);  // param inside x, correction too
  CHECK(s.code() == status_code::aliasing);
  CHECK(names(s, "fp32 input", "param"));
  CHECK(std::string(s.message()).find("codec::split") != std::string::npos);
  s = c::split<M>(f32, 16, b16 + 64, i8 + 140);  // x alone; param [128, 160) and correction [140, 156)
  CHECK(s.code() == status_code::aliasing);
  CHECK(names(s, "param", "correction"));
  s = c::reconstruct<M>(b16 + 64, i8 + 200, 32, f32 + 40);  // output [160, 288) over param [128, 192)
  CHECK(s.code() == status_code::aliasing);
  CHECK(names(s, "param", "fp32 output"));
  s = c::quantize<Q>(f32, 64, i8 + 200, reinterpret_cast<float*>(bytes + 256));  // codes inside x
  CHECK(s.code() == status_code::aliasing);
  CHECK(names(s, "fp32 input", "codes"));
  s = c::quantize<Q>(f32, 40, i8 + 300, reinterpret_cast<float*>(bytes + 332));  // scales [332, 340) in codes
  CHECK(s.code() == status_code::aliasing);
  CHECK(names(s, "codes", "scales"));
  s = c::dequantize<Q>(i8 + 300, reinterpret_cast<float*>(bytes + 400), 40, reinterpret_cast<float*>(bytes + 240));
  CHECK(s.code() == status_code::aliasing);  // output [240, 400) over codes [300, 340)
  CHECK(names(s, "codes", "fp32 output"));
  s = c::dequantize<Q>(i8 + 300, reinterpret_cast<float*>(bytes + 400), 40, reinterpret_cast<float*>(bytes + 344));
  CHECK(s.code() == status_code::aliasing);  // output [344, 504) over scales [400, 408)
  CHECK(names(s, "scales", "fp32 output"));
  CHECK(arena == filled);

  // adjacent buffers, and buffers that are only read sharing bytes, are fine
  CHECK(c::split<M>(f32, 16, b16 + 32, i8 + 96).ok());  // x [0, 64), param [64, 96), correction [96, 112)
  CHECK(c::reconstruct<M>(b16 + 32, i8 + 96, 16, f32 + 28).ok());  // reads [64, 112), writes [112, 176)
  for (int i = 0; i < 16; ++i) CHECK(f32[28 + i] == 0.25f * static_cast<float>(i));
}

TEST_CASE("bulk functions refuse counts whose byte extents overflow, before any arithmetic") {
  using Q = c::defaults::momentum;
  std::vector<float> x(64, 1.0f), out(64, 5.0f);
  std::vector<std::int8_t> codes(64, 7);
  std::vector<float> scales(2, 3.0f);
  const std::int64_t top = std::numeric_limits<std::int64_t>::max();
  for (std::int64_t n : {top, top - 30, top / 4 + 1, static_cast<std::int64_t>(SIZE_MAX / 4 / 4),
                         static_cast<std::int64_t>(SIZE_MAX / 8), flashoptim::max_elements + 1}) {
    INFO("n = ", n);
    flashoptim::status s = c::quantize<Q>(x.data(), n, codes.data(), scales.data());
    CHECK(s.code() == status_code::invalid_argument);
    CHECK(std::string(s.message()).find("2^56") != std::string::npos);
    s = c::dequantize<Q>(codes.data(), scales.data(), n, out.data());
    CHECK(s.code() == status_code::invalid_argument);
    CHECK(std::string(s.message()).find("2^56") != std::string::npos);
    s = c::split<c::ulp_correction<bf16, std::int8_t>>(x.data(), n, reinterpret_cast<bf16*>(out.data()), codes.data());
    CHECK(s.code() == status_code::invalid_argument);
    s = c::reconstruct<c::ulp_correction<bf16, std::int8_t>>(reinterpret_cast<bf16*>(x.data()), codes.data(), n, out.data());
    CHECK(s.code() == status_code::invalid_argument);
  }
  // in range, but the buffer would end past the top of the address space
  auto* high = reinterpret_cast<float*>((UINTPTR_MAX - 64) & ~std::uintptr_t{15});
  const flashoptim::status s = c::dequantize<Q>(codes.data(), scales.data(), 64, high);
  CHECK(s.code() == status_code::invalid_argument);
  CHECK(std::string(s.message()).find("address space") != std::string::npos);
  CHECK(codes[0] == 7);
  CHECK(scales[0] == 3.0f);
  CHECK(out[0] == 5.0f);
}

namespace {
// A user's own format: fp8 with 3 exponent and 4 mantissa bits, saturating.
struct fp8_e3m4 {
  std::uint8_t bits;
};
}  // namespace
template <>
struct flashoptim::format::format_traits<fp8_e3m4>
    : flashoptim::format::small_float_traits<
          fp8_e3m4, flashoptim::format::small_float_spec<3, 4, 0x6fu, 0x7fu, true, flashoptim::format::overflow_rule::saturate>> {
  static constexpr const char* name = "fp8_e3m4";
};

namespace {
// A user's own compander: cube root before the group max (a gentler sqrt).
struct cbrt_compander {
  static float pre(float x) { return std::cbrt(x); }
  static float post(float n) { return n; }
  static float post_inverse(float y) { return y; }
  static float pre_inverse(float t) { return t * t * t; }
};
}  // namespace

TEST_CASE("a user adds a format through format_traits and a compander as a type") {
  using T = fp8_e3m4;
  // every finite pattern decodes and re-encodes to itself; values round to a neighbour
  for (unsigned b = 0; b < 256; ++b) {
    const float x = format::to_float(T{static_cast<std::uint8_t>(b)});
    if (!std::isfinite(x)) continue;
    CHECK(format::from_float<T>(x).bits == (x == 0.0f ? (b & 0x80u) : b));
  }
  CHECK(format::to_float(format::from_float<T>(1.0f + 1.0f / 32)) == 1.0f);  // a tie rounds to even
  CHECK(format::to_float(format::from_float<T>(1e9f)) == format::to_float(T{0x6f}));  // saturates
  // the new format as a plain state, through a whole step
  using cfg = step_config<rule::sgd, c::native<float>, float, c::plain<T>>;
  std::vector<float> p(5, 1.0f), g = {0.5f, -0.25f, 1.0f, 0.0f, 2.0f};
  std::vector<T> m(5);
  tensor_ref<cfg> t;
  t.param = p.data(), t.grad = g.data(), flashoptim::state_of<0>(t).codes = m.data(), t.size = 5;
  cfg::hyper h;
  h.lr = 0.5;
  h.momentum = 0.9;
  step_args a;
  REQUIRE(cpu::step_serial<cfg>(h, a, &t, 1).ok());
  for (int i = 0; i < 5; ++i) {
    CHECK(format::to_float(m[i]) == format::to_float(format::from_float<T>(g[i])));  // first step: buffer = g
    CHECK(p[i] == 1.0f - 0.5f * g[i]);
  }
  // a user compander in a grouped codec: quantize, dequantize within the code step
  using G = c::grouped<c::uint8_code<true>, cbrt_compander, c::scale_fp32>;
  std::vector<float> x(64);
  for (int i = 0; i < 64; ++i) x[i] = std::pow(1.3f, static_cast<float>(i % 32 - 16));
  const auto q = quantize<G>(x);
  const auto y = dequantize(q);
  for (int i = 0; i < 64; ++i) {
    const double s = q.scales[i / 32];
    const double t_true = std::cbrt(static_cast<double>(x[i])), t_dec = std::cbrt(static_cast<double>(y[i]));
    CHECK(std::fabs(t_dec - t_true) <= (0.5 / 254 + 1e-6) * s);
  }
}
