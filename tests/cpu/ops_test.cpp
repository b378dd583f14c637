// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// The vector operations of the CPU step against the scalar functions they
// mirror, on every instruction set this machine has: conversions, the
// fixed-divisor division, the stochastic-rounding bits, the master-weight
// encodings. Strided sweeps over the 2^32 fp32 patterns run in CI; the full
// sweeps are the test cases marked skip, five minutes on two cores:
// `test_cpu_ops --no-skip -tc="exhaustive*"` (docs/cpu.md).
#include <doctest/doctest.h>

#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#include "flashoptim/cpu/step.hpp"

#if FLASHOPTIM_CPU_X86_SIMD

namespace {

using flashoptim::bf16;
using flashoptim::fp16;
namespace fmt = flashoptim::format;
namespace codec = flashoptim::codec;

// Each probe runs one vector operation over arrays whose length is a
// multiple of 16; compiled once per instruction set. (GCC 12 reports its own
// intrinsics' _mm*_undefined_*() starting values, bug 105593.)
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#define FLASHOPTIM_TEST_PROBES(NS, TARGET)                                                                          \
  namespace NS##_probe {                                                                                            \
  namespace k = flashoptim::cpu::detail::NS;                                                                        \
  using ops = k::ops;                                                                                               \
  __attribute__((target(TARGET))) inline void bf16_rne(const float* x, std::uint32_t* out, std::size_t n) {       \
    for (std::size_t i = 0; i < n; i += k::lanes) ops::store_i32(out + i, k::bf16_rne(ops::load(x + i)));          \
  }                                                                                                                 \
  __attribute__((target(TARGET))) inline void fp16_rne(const float* x, std::uint32_t* out, std::size_t n) {       \
    for (std::size_t i = 0; i < n; i += k::lanes) ops::store_i32(out + i, k::velem<fp16>::from_float(ops::load(x + i))); \
  }                                                                                                                 \
  __attribute__((target(TARGET))) inline void fp16_widen(const std::uint32_t* b, float* out, std::size_t n) {     \
    for (std::size_t i = 0; i < n; i += k::lanes) ops::store(out + i, ops::half_to_float(ops::load_i32(b + i)));    \
  }                                                                                                                 \
  __attribute__((target(TARGET))) inline void divide(const std::int32_t* a, float d, float* out, std::size_t n) { \
    for (std::size_t i = 0; i < n; i += k::lanes)                                                                  \
      ops::store(out + i, k::div_by_constant(ops::to_float(ops::load_i32(a + i)), ops::set1(d), ops::set1(1.0f / d))); \
  }                                                                                                                 \
  template <class Spec, bool SR>                                                                                    \
  __attribute__((target(TARGET))) inline void small_encode(const float* x, const std::uint32_t* r, std::uint32_t* out, \
                                                           std::size_t n) {                                         \
    for (std::size_t i = 0; i < n; i += k::lanes)                                                                   \
      ops::store_i32(out + i, k::encode_small<Spec, SR>(ops::load(x + i), ops::load_i32(r + i)));                    \
  }                                                                                                                 \
  template <class State>                                                                                            \
  __attribute__((target(TARGET))) inline void fp8_values(const std::uint8_t* q, float* out, std::size_t n) {       \
    for (std::size_t i = 0; i < n; i += k::lanes) ops::store(out + i, k::vstate<State>::fp8_value(ops::load_u8(q + i))); \
  }                                                                                                                 \
  __attribute__((target(TARGET))) inline void random(std::uint64_t seed, std::uint64_t step, std::uint64_t index,  \
                                                     std::uint32_t* out) {                                          \
    ops::store_i32(out, k::random_bits(seed, step, index));                                                        \
  }                                                                                                                 \
  template <class M>                                                                                                \
  __attribute__((target(TARGET))) inline void master_decode(const typename M::param_type* p,                       \
                                                            const typename M::aux_type* a, float* out,              \
                                                            std::size_t n) {                                        \
    for (std::size_t i = 0; i < n; i += k::lanes) {                                                                 \
      typename k::vmaster<M>::raw r;                                                                                \
      ops::store(out + i, k::vmaster<M>::decode(p + i, a + i, r));                                                 \
    }                                                                                                               \
  }                                                                                                                 \
  /* encode(before = after with its lowest bit flipped) always re-encodes: the bytes master_update */             \
  /* writes, through the step's own pair stores */                                                                \
  template <class M>                                                                                                \
  __attribute__((target(TARGET))) inline void master_encode(const float* x, typename M::param_type* p,             \
                                                            typename M::aux_type* a, std::size_t n) {               \
    for (std::size_t i = 0; i < n; i += 2 * k::lanes) {                                                             \
      typename k::vmaster<M>::raw r{};                                                                              \
      k::vi p0, a0 = ops::set1i(0), p1, a1 = ops::set1i(0);                                                         \
      const k::vf x0 = ops::load(x + i), x1 = ops::load(x + i + k::lanes);                                          \
      k::vmaster<M>::encode(ops::as_f(ops::xori(ops::as_i(x0), ops::set1i(1))), x0, r, p0, a0);                    \
      k::vmaster<M>::encode(ops::as_f(ops::xori(ops::as_i(x1), ops::set1i(1))), x1, r, p1, a1);                    \
      k::vmaster<M>::store2(p + i, a + i, p0, a0, p1, a1);                                                          \
    }                                                                                                               \
  }                                                                                                                 \
  /* decode, then encode(before = after = the decoded value): an unchanged lane */                                \
  template <class M>                                                                                                \
  __attribute__((target(TARGET))) inline void master_unchanged(const typename M::param_type* p,                    \
                                                              const typename M::aux_type* a,                        \
                                                              typename M::param_type* op, typename M::aux_type* oa, \
                                                              std::size_t n) {                                      \
    for (std::size_t i = 0; i < n; i += 2 * k::lanes) {                                                             \
      typename k::vmaster<M>::raw r0, r1;                                                                           \
      k::vi p0, a0 = ops::set1i(0), p1, a1 = ops::set1i(0);                                                         \
      const k::vf x0 = k::vmaster<M>::decode(p + i, a + i, r0);                                                     \
      const k::vf x1 = k::vmaster<M>::decode(p + i + k::lanes, a + i + k::lanes, r1);                               \
      k::vmaster<M>::encode(x0, x0, r0, p0, a0);                                                                    \
      k::vmaster<M>::encode(x1, x1, r1, p1, a1);                                                                    \
      k::vmaster<M>::store2(op + i, oa + i, p0, a0, p1, a1);                                                        \
    }                                                                                                               \
  }                                                                                                                 \
  __attribute__((target(TARGET))) inline bool any_above(const std::uint8_t* p, int n, std::uint8_t and_mask,         \
                                                        std::uint8_t xor_mask, std::uint8_t limit) {                \
    return ops::any_byte_above(p, n, and_mask, xor_mask, limit);                                                    \
  }                                                                                                                 \
  /* the pair stores: field Byte of each lane of two vectors of lanes */                                          \
  template <int Byte>                                                                                               \
  __attribute__((target(TARGET))) inline void pair_16(const std::uint32_t* x, std::uint16_t* out, std::size_t n) { \
    for (std::size_t i = 0; i < n; i += 2 * k::lanes)                                                               \
      ops::store_16x2<Byte>(out + i, ops::load_i32(x + i), ops::load_i32(x + i + k::lanes));                       \
  }                                                                                                                 \
  template <int Byte>                                                                                               \
  __attribute__((target(TARGET))) inline void pair_8(const std::uint32_t* x, std::uint8_t* out, std::size_t n) {   \
    for (std::size_t i = 0; i < n; i += 2 * k::lanes)                                                               \
      ops::store_8x2<Byte>(out + i, ops::load_i32(x + i), ops::load_i32(x + i + k::lanes));                        \
  }                                                                                                                 \
  }

FLASHOPTIM_TEST_PROBES(avx512, FLASHOPTIM_CPU_AVX512_TARGET)
FLASHOPTIM_TEST_PROBES(avx2, FLASHOPTIM_CPU_AVX2_TARGET)

using flashoptim::cpu::isa;

std::vector<isa> vector_isas() {
  std::vector<isa> v;
  for (isa i : {isa::avx512, isa::avx2})
    if (flashoptim::cpu::isa_available(i)) v.push_back(i);
  return v;
}

bool is_nan_bits(std::uint32_t u) { return (u & 0x7fffffffu) > 0x7f800000u; }

/// fp32 patterns: every `stride`-th of all 2^32 (stride 1: all), NaNs dropped,
/// in chunks of `chunk` (a multiple of 16, padded with zeros).
template <class F>
void sweep_floats(std::uint64_t stride, F&& f) {
  constexpr std::size_t chunk = 1 << 16;
  std::vector<float> x(chunk);
  std::size_t fill = 0;
  for (std::uint64_t u = 0; u < (1ull << 32); u += stride) {
    const std::uint32_t b = static_cast<std::uint32_t>(u);
    if (is_nan_bits(b)) continue;
    x[fill++] = fmt::float_from_bits(b);
    if (fill == chunk) {
      f(x.data(), chunk);
      fill = 0;
    }
  }
  for (std::size_t i = fill; i < chunk; ++i) x[i] = 0.0f;
  if (fill) f(x.data(), chunk);
}

void check_conversions(isa path, std::uint64_t stride) {
  std::vector<std::uint32_t> out(1 << 16);
  long bad_bf16 = 0, bad_fp16 = 0;
  sweep_floats(stride, [&](const float* x, std::size_t n) {
    if (path == isa::avx512) avx512_probe::bf16_rne(x, out.data(), n);
    else avx2_probe::bf16_rne(x, out.data(), n);
    for (std::size_t i = 0; i < n; ++i) bad_bf16 += out[i] != fmt::from_float<bf16>(x[i]).bits;
    if (path == isa::avx512) avx512_probe::fp16_rne(x, out.data(), n);
    else avx2_probe::fp16_rne(x, out.data(), n);
    for (std::size_t i = 0; i < n; ++i) bad_fp16 += out[i] != fmt::encode_small_float<fmt::fp16_spec>(x[i]);
  });
  INFO(flashoptim::cpu::to_string(path), " stride ", stride);
  CHECK(bad_bf16 == 0);
  CHECK(bad_fp16 == 0);
}

/// encode_small<Spec, SR> against format::encode_small_float on fp32
/// patterns (non-NaN) with random bits from a generator, all zeros and all
/// ones (the extremes of stochastic rounding; nearest even ignores them).
template <class Spec, bool SR>
long check_small_encode(isa path, std::uint64_t stride) {
  std::vector<std::uint32_t> out(1 << 16), r(1 << 16);
  std::uint32_t lcg = 12345;
  long bad = 0;
  sweep_floats(stride, [&](const float* x, std::size_t n) {
    for (int pick = 0; pick < (SR ? 3 : 1); ++pick) {
      for (std::size_t i = 0; i < n; ++i) {
        lcg = lcg * 1664525u + 1013904223u;
        r[i] = pick == 0 ? (lcg ^ (lcg >> 15)) * 2654435761u : pick == 1 ? 0u : ~0u;
      }
      if (path == isa::avx512) avx512_probe::small_encode<Spec, SR>(x, r.data(), out.data(), n);
      else avx2_probe::small_encode<Spec, SR>(x, r.data(), out.data(), n);
      for (std::size_t i = 0; i < n; ++i)
        bad += out[i] != fmt::encode_small_float<Spec>(x[i], SR ? fmt::rounding::stochastic : fmt::rounding::nearest_even, r[i]);
    }
  });
  return bad;
}

void check_small_encodes(isa path, std::uint64_t stride) {
  INFO(flashoptim::cpu::to_string(path), " stride ", stride);
  CHECK(check_small_encode<fmt::fp8_e4m3_spec, false>(path, stride) == 0);
  CHECK(check_small_encode<fmt::fp8_e5m2_spec, false>(path, stride) == 0);
  CHECK(check_small_encode<fmt::fp8_e4m3_spec, true>(path, stride) == 0);
  CHECK(check_small_encode<fmt::fp8_e5m2_spec, true>(path, stride) == 0);
  CHECK(check_small_encode<fmt::fp16_spec, true>(path, stride) == 0);
  CHECK(check_small_encode<fmt::fp16_spec, false>(path, stride) == 0);
}

template <class M>
void check_master(isa path, std::uint64_t stride) {
  using P = typename M::param_type;
  using A = typename M::aux_type;
  constexpr std::size_t n = 1 << 16;
  // decode: every parameter pattern with corrections around it (all of them for int8)
  std::vector<P> p(n);
  std::vector<A> a(n);
  std::vector<float> out(n);
  const int aux_patterns = sizeof(A) == 1 ? 256 : 600;
  long bad_decode = 0;
  std::uint32_t lcg = 1;
  for (int c = 0; c < aux_patterns; ++c) {
    for (std::size_t i = 0; i < n; ++i) {
      p[i].bits = static_cast<std::uint16_t>(i);
      lcg = lcg * 1664525u + 1013904223u;
      a[i] = static_cast<A>(sizeof(A) == 1 ? c : (c < 4 ? c * 0x3fff - 0x8000 : static_cast<int>(lcg >> 16)));
    }
    if (path == isa::avx512) avx512_probe::master_decode<M>(p.data(), a.data(), out.data(), n);
    else avx2_probe::master_decode<M>(p.data(), a.data(), out.data(), n);
    for (std::size_t i = 0; i < n; ++i) {
      const std::uint32_t want = fmt::bits_of(M::decode(p[i], a[i]));
      const std::uint32_t got = fmt::bits_of(out[i]);
      // a non-finite parameter decodes to some non-finite value (inf or NaN):
      // the step hands such a block to the scalar path
      const bool finite = (want & 0x7f800000u) != 0x7f800000u;
      if (!finite) bad_decode += (got & 0x7f800000u) != 0x7f800000u;
      else bad_decode += want != got;
    }
  }
  // encode: fp32 patterns (every finite one with stride 1)
  std::vector<P> vp(n);
  std::vector<A> va(n);
  long bad_encode = 0;
  sweep_floats(stride, [&](const float* x, std::size_t m) {
    if (path == isa::avx512) avx512_probe::master_encode<M>(x, vp.data(), va.data(), m);
    else avx2_probe::master_encode<M>(x, vp.data(), va.data(), m);
    for (std::size_t i = 0; i < m; ++i) {
      P wp;
      A wa{};
      M::encode(x[i], wp, wa);
      bad_encode += vp[i].bits != wp.bits || va[i] != wa;
    }
  });
  INFO(flashoptim::cpu::to_string(path), " ", M::name, " ", sizeof(P), "+", sizeof(A), " stride ", stride);
  CHECK(bad_decode == 0);
  CHECK(bad_encode == 0);
}

}  // namespace

TEST_CASE("fp32 -> bf16 and fp16 round to nearest even as format::from_float (strided sweep)") {
  for (isa path : vector_isas()) check_conversions(path, 251);
}

TEST_CASE("exhaustive: fp32 -> bf16 and fp16 over all 2^32 patterns" * doctest::skip()) {
  for (isa path : vector_isas()) check_conversions(path, 1);
}

TEST_CASE("fp32 -> fp8 (e4m3, e5m2) and fp16, nearest even and stochastic, as encode_small_float (strided sweep)") {
  for (isa path : vector_isas()) check_small_encodes(path, 251);
  // every exponent, with the mantissas around the rounding points of each
  // format (ties, one below, one above) and the stochastic shifts 31 .. 33
  std::vector<float> x;
  for (std::uint32_t e = 0; e < 255; ++e)
    for (std::uint32_t m : {0u, 1u, 0x7fffffu, 0x400000u, 0x3fffffu, 0x400001u, 0x80000u, 0x7ffffu, 0x80001u, 0x100000u,
                            0xfffffu, 0x100001u, 0x1000u, 0xfffu, 0x1001u, 0x2000u, 0x1fffu, 0x2001u, 0x5a5a5au})
      for (std::uint32_t s : {0u, 0x80000000u}) x.push_back(fmt::float_from_bits(s | (e << 23) | m));
  x.push_back(fmt::float_from_bits(0x7f800000u));
  x.push_back(fmt::float_from_bits(0xff800000u));
  while (x.size() % 16) x.push_back(0.0f);
  std::vector<std::uint32_t> r(x.size()), out(x.size());
  for (isa path : vector_isas()) {
    long bad = 0;
    for (std::uint32_t bits : {0u, ~0u, 0x80000000u, 0x7fffffffu, 0x12345678u, 1u}) {
      for (std::size_t i = 0; i < x.size(); ++i) r[i] = bits ^ static_cast<std::uint32_t>(i * 0x9e3779b9u * (bits & 1u));
      auto run = [&](auto spec, auto sr) {
        using S = decltype(spec);
        constexpr bool SR = decltype(sr)::value;
        if (path == isa::avx512) avx512_probe::small_encode<S, SR>(x.data(), r.data(), out.data(), x.size());
        else avx2_probe::small_encode<S, SR>(x.data(), r.data(), out.data(), x.size());
        for (std::size_t i = 0; i < x.size(); ++i)
          bad += out[i] != fmt::encode_small_float<S>(x[i], SR ? fmt::rounding::stochastic : fmt::rounding::nearest_even, r[i]);
      };
      run(fmt::fp8_e4m3_spec{}, std::false_type{});
      run(fmt::fp8_e5m2_spec{}, std::false_type{});
      run(fmt::fp16_spec{}, std::false_type{});
      run(fmt::fp8_e4m3_spec{}, std::true_type{});
      run(fmt::fp8_e5m2_spec{}, std::true_type{});
      run(fmt::fp16_spec{}, std::true_type{});
    }
    INFO(flashoptim::cpu::to_string(path));
    CHECK(bad == 0);
  }
}

TEST_CASE("exhaustive: fp32 -> fp8 and fp16 (both roundings) over all 2^32 patterns" * doctest::skip()) {
  for (isa path : vector_isas()) check_small_encodes(path, 1);
}

TEST_CASE("fp8 code values equal fp8_code::value for every finite code, in every lane") {
  // 256 codes; the rotation puts each code in each lane position
  std::vector<std::uint8_t> q;
  for (int rot = 0; rot < 16; ++rot)
    for (int i = 0; i < 256; ++i) q.push_back(static_cast<std::uint8_t>(i + rot));
  std::vector<float> out(q.size());
  for (isa path : vector_isas()) {
    using e4 = codec::precision::fp8_momentum;
    using e5 = codec::grouped<codec::fp8_code<flashoptim::fp8_e5m2>, codec::identity, codec::scale_fp32>;
    long bad = 0;
    if (path == isa::avx512) avx512_probe::fp8_values<e4>(q.data(), out.data(), q.size());
    else avx2_probe::fp8_values<e4>(q.data(), out.data(), q.size());
    for (std::size_t i = 0; i < q.size(); ++i) {
      const flashoptim::fp8_e4m3 c{q[i]};
      if (!codec::fp8_code<flashoptim::fp8_e4m3>::is_sentinel(c))
        bad += fmt::bits_of(out[i]) != fmt::bits_of(codec::fp8_code<flashoptim::fp8_e4m3>::value(c));
    }
    if (path == isa::avx512) avx512_probe::fp8_values<e5>(q.data(), out.data(), q.size());
    else avx2_probe::fp8_values<e5>(q.data(), out.data(), q.size());
    for (std::size_t i = 0; i < q.size(); ++i) {
      const flashoptim::fp8_e5m2 c{q[i]};
      if ((q[i] & 0x7fu) <= fmt::fp8_e5m2_spec::max_finite_bits)  // finite codes; the others take the scalar step
        bad += fmt::bits_of(out[i]) != fmt::bits_of(codec::fp8_code<flashoptim::fp8_e5m2>::value(c));
    }
    INFO(flashoptim::cpu::to_string(path));
    CHECK(bad == 0);
  }
}

TEST_CASE("fp16 -> fp32 (F16C) equals decode_small_float for all 65536 patterns, NaNs included") {
  std::vector<std::uint32_t> b(65536);
  std::vector<float> out(65536);
  for (std::uint32_t i = 0; i < 65536; ++i) b[i] = i;
  for (isa path : vector_isas()) {
    if (path == isa::avx512) avx512_probe::fp16_widen(b.data(), out.data(), b.size());
    else avx2_probe::fp16_widen(b.data(), out.data(), b.size());
    long bad = 0;
    for (std::uint32_t i = 0; i < 65536; ++i)
      bad += fmt::bits_of(out[i]) != fmt::bits_of(fmt::decode_small_float<fmt::fp16_spec>(i));
    INFO(flashoptim::cpu::to_string(path));
    CHECK(bad == 0);
  }
}

TEST_CASE("division by 127, 254, 255 and 32767 in one Newton step is div_rn for every numerator used") {
  std::vector<std::int32_t> a;
  for (std::int32_t v = -32768; v <= 65535; ++v) a.push_back(v);
  while (a.size() % 16) a.push_back(0);
  std::vector<float> out(a.size());
  for (isa path : vector_isas()) {
    for (float d : {127.0f, 254.0f, 255.0f, 32767.0f}) {
      if (path == isa::avx512) avx512_probe::divide(a.data(), d, out.data(), a.size());
      else avx2_probe::divide(a.data(), d, out.data(), a.size());
      long bad = 0;
      for (std::size_t i = 0; i < a.size(); ++i)
        bad += fmt::bits_of(out[i]) != fmt::bits_of(fmt::div_rn(static_cast<float>(a[i]), d));
      INFO(flashoptim::cpu::to_string(path), " d = ", d);
      CHECK(bad == 0);
    }
  }
}

TEST_CASE("stochastic-rounding bits equal format::random_bits(seed, step, index + lane)") {
  std::uint64_t z = 88172645463325252ull;
  auto next = [&] {
    z ^= z << 13;
    z ^= z >> 7;
    z ^= z << 17;
    return z;
  };
  for (isa path : vector_isas()) {
    long bad = 0;
    std::uint32_t out[16];
    for (int trial = 0; trial < 20000; ++trial) {
      const std::uint64_t seed = next(), step = trial % 3 ? next() % 1000 : next();
      // some wrap around 2^64, some cross a 2^32 boundary (the lanes' low
      // words wrap and the high word moves on)
      const std::uint64_t index = trial % 5 == 0   ? ~0ull - (next() % 20)
                                  : trial % 7 == 0 ? ((next() % 1000 + 1) << 32) - (next() % 20)
                                                   : next() % (1ull << 40);
      if (path == isa::avx512) avx512_probe::random(seed, step, index, out);
      else avx2_probe::random(seed, step, index, out);
      const int lanes = path == isa::avx512 ? 16 : 8;
      for (int i = 0; i < lanes; ++i) bad += out[i] != fmt::random_bits(seed, step, index + static_cast<std::uint64_t>(i));
    }
    INFO(flashoptim::cpu::to_string(path));
    CHECK(bad == 0);
  }
}

/// The pair stores keep field Byte of each 32-bit lane, in lane order, first
/// vector then second (the step stores every byte through them).
template <int Byte>
void check_pair_stores(isa path) {
  constexpr std::size_t n = 1 << 12;
  std::vector<std::uint32_t> x(n);
  std::uint32_t lcg = 7u + Byte;
  for (auto& v : x) v = (lcg = lcg * 1664525u + 1013904223u);
  long bad = 0;
  if constexpr (Byte == 0 || Byte == 2) {
    std::vector<std::uint16_t> o(n);
    if (path == isa::avx512) avx512_probe::pair_16<Byte>(x.data(), o.data(), n);
    else avx2_probe::pair_16<Byte>(x.data(), o.data(), n);
    for (std::size_t i = 0; i < n; ++i) bad += o[i] != static_cast<std::uint16_t>(x[i] >> (8 * Byte));
  }
  std::vector<std::uint8_t> o8(n);
  if (path == isa::avx512) avx512_probe::pair_8<Byte>(x.data(), o8.data(), n);
  else avx2_probe::pair_8<Byte>(x.data(), o8.data(), n);
  for (std::size_t i = 0; i < n; ++i) bad += o8[i] != static_cast<std::uint8_t>(x[i] >> (8 * Byte));
  INFO(flashoptim::cpu::to_string(path), " byte ", Byte);
  CHECK(bad == 0);
}

TEST_CASE("pair stores: the 16-bit and 8-bit fields of two vectors, in order") {
  for (isa path : vector_isas()) {
    check_pair_stores<0>(path);
    check_pair_stores<1>(path);
    check_pair_stores<2>(path);
    check_pair_stores<3>(path);
  }
}

/// The codes' sentinel scan (group_kernel.inl, codes_have_sentinel), with
/// the masks it passes for int8 and uint8 sentinels and for e4m3 and e5m2
/// non-finite magnitudes: each such byte at every position of a group, of a
/// block of 8 groups (AVX2) and of 16 (AVX-512), and none.
TEST_CASE("byte scan: a sentinel or non-finite fp8 code at any position of 32, 256 or 512 bytes") {
  struct use {
    std::uint8_t and_mask, xor_mask, limit, hit, near;  ///< `near`: the closest byte that is no hit
  };
  const use uses[] = {
      {0xff, 0x7f, 0xfe, 0x80, 0x81},  // int8 codes, sentinel -128
      {0xff, 0x00, 0xfe, 0xff, 0xfe},  // uint8 codes, sentinel 255
      {0x7f, 0x00, 0x7e, 0xff, 0xfe},  // e4m3 codes: magnitude above 0x7e (NaN), either sign
      {0x7f, 0x00, 0x7b, 0x7c, 0xfb},  // e5m2 codes: magnitude above 0x7b (infinity, NaN)
  };
  for (isa path : vector_isas()) {
    long bad = 0;
    for (const use& u : uses) {
      for (int n : {32, 256, 512}) {
        std::vector<std::uint8_t> b(n, u.near);
        const auto scan = [&] {
          return path == isa::avx512 ? avx512_probe::any_above(b.data(), n, u.and_mask, u.xor_mask, u.limit)
                                     : avx2_probe::any_above(b.data(), n, u.and_mask, u.xor_mask, u.limit);
        };
        bad += scan();
        for (int i = 0; i < n; ++i) {
          b[i] = u.hit;
          bad += !scan();
          b[i] = u.near;
        }
      }
    }
    INFO(flashoptim::cpu::to_string(path));
    CHECK(bad == 0);
  }
}

TEST_CASE("master modes: vector decode and encode equal the codec's (strided encode sweep)") {
  for (isa path : vector_isas()) {
    check_master<codec::ulp_correction<bf16, std::int8_t>>(path, 509);
    check_master<codec::ulp_correction<bf16, std::int16_t>>(path, 509);
    check_master<codec::ulp_correction<fp16, std::int8_t>>(path, 509);
    check_master<codec::ulp_correction<fp16, std::int16_t>>(path, 509);
    check_master<codec::exact_split>(path, 509);
    check_master<codec::rounded_split>(path, 509);
  }
}

/// codec::reencodes_every_pair: re-encoding each decoded pair gives it back,
/// through the vector code (whose encode has no select for master_update's
/// "unchanged value keeps its bytes", group_kernel.inl) and through the
/// codec's own functions (the GPU's range-checked attempt encodes so,
/// kernel::reencoding_master). Every (parameter, correction) pair; those whose value is
/// NaN go to the scalar step and are only counted. Returns their count.
template <class M>
long check_unchanged_pairs(isa path) {
  using P = typename M::param_type;
  using A = typename M::aux_type;
  constexpr bool has_aux = !std::is_same<A, flashoptim::none_t>::value;
  constexpr std::size_t n = 1 << 16;
  std::vector<P> p(n), op(n);
  std::vector<A> a(n), oa(n);
  long bad = 0, nan_pairs = 0;
  for (int c = has_aux ? -128 : 0; c < (has_aux ? 128 : 1); ++c) {
    for (std::size_t i = 0; i < n; ++i) {
      p[i].bits = static_cast<std::uint16_t>(i);
      if constexpr (has_aux) a[i] = static_cast<A>(c);
    }
    if (path == isa::avx512) avx512_probe::master_unchanged<M>(p.data(), a.data(), op.data(), oa.data(), n);
    else avx2_probe::master_unchanged<M>(p.data(), a.data(), op.data(), oa.data(), n);
    for (std::size_t i = 0; i < n; ++i) {
      if (fmt::is_nan(M::decode(p[i], a[i]))) {
        ++nan_pairs;
        continue;
      }
      bad += op[i].bits != p[i].bits;
      if constexpr (has_aux) bad += oa[i] != a[i];
      // the trait's claim on the codec itself, which the GPU's range-checked
      // attempt relies on (kernel::reencoding_master)
      P sp;
      A sa{};
      M::encode(M::decode(p[i], a[i]), sp, sa);
      bad += sp.bits != p[i].bits;
      if constexpr (has_aux) bad += sa != a[i];
    }
  }
  INFO(flashoptim::cpu::to_string(path), " ", M::name, " ", sizeof(P));
  CHECK(bad == 0);
  return nan_pairs;
}

TEST_CASE("rounded_split::encode_not_nan == encode for every value that is not NaN") {
  // Every upper half with low halves at the 24-bit rounding's and the
  // parameter's boundaries (bits 0-7 at 0x7f / 0x80 with bit 8 odd and
  // even, bits 8-15 at 0x7f / 0x80 / 0xff) and a few others.
  const std::uint32_t lows[] = {0x0000, 0x007f, 0x0080, 0x0081, 0x00ff, 0x017f, 0x0180, 0x0181, 0x7f7f, 0x7f80,
                                0x7fff, 0x8000, 0x807f, 0x8080, 0xff7f, 0xff80, 0xffff, 0x1234, 0xa5a5};
  long bad = 0, nan_values = 0, nan_differ = 0;
  for (std::uint32_t hi = 0; hi < 0x10000u; ++hi) {
    for (std::uint32_t lo : lows) {
      const float x = fmt::float_from_bits(hi << 16 | lo);
      bf16 p, q;
      std::int8_t c, d;
      codec::rounded_split::encode(x, p, c);
      codec::rounded_split::encode_not_nan(x, q, d);
      if (fmt::is_nan(x)) {
        ++nan_values;
        nan_differ += q.bits != p.bits || d != c;  // why the attempt must commit no NaN
        continue;
      }
      bad += q.bits != p.bits || d != c;
    }
  }
  CHECK(bad == 0);
  CHECK(nan_values > 0);
  CHECK(nan_differ > 0);
}

TEST_CASE("master modes without the keep select: an unchanged lane keeps its bytes, every pair not NaN") {
  static_assert(codec::reencodes_every_pair<codec::rounded_split>::value);
  static_assert(codec::reencodes_every_pair<codec::native<bf16>>::value);
  static_assert(!codec::reencodes_every_pair<codec::ulp_correction<bf16, std::int8_t>>::value);
  for (isa path : vector_isas()) {
    // rounded split: NaN parameters (2 x 127 patterns, any correction),
    // infinities with a positive correction (2 x 127) and zeros with a
    // negative one (2 x 128)
    CHECK(check_unchanged_pairs<codec::rounded_split>(path) == 2 * 127 * 256 + 2 * 127 + 2 * 128);
    CHECK(check_unchanged_pairs<codec::native<bf16>>(path) == 2 * 127);
    CHECK(check_unchanged_pairs<codec::native<fp16>>(path) == 2 * 1023);
  }
}

TEST_CASE("exhaustive: master encodings over all finite fp32 patterns" * doctest::skip()) {
  for (isa path : vector_isas()) {
    check_master<codec::ulp_correction<bf16, std::int8_t>>(path, 1);
    check_master<codec::ulp_correction<bf16, std::int16_t>>(path, 1);
    check_master<codec::ulp_correction<fp16, std::int8_t>>(path, 1);
    check_master<codec::ulp_correction<fp16, std::int16_t>>(path, 1);
    check_master<codec::exact_split>(path, 1);
    check_master<codec::rounded_split>(path, 1);
  }
}

#else
TEST_CASE("no vector paths in this build") { CHECK(flashoptim::cpu::detected_isa() == flashoptim::cpu::isa::portable); }
#endif
