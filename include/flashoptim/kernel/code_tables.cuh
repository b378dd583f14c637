// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// The codecs as the kernel runs them: the same functions, computed for less.
// step_tile is called with kernel_config<Config> (kernel/kernel_config.cuh),
// whose master mode and state codecs are thin wrappers of Config's:
//   - tables: a 1-byte state code's normalized value (grouped::code_value: a
//     division by qmax, and for softsign a second division) and an int8
//     correction's fraction c / M are pure functions of one byte; each block
//     evaluates them once for all 256 bytes with the very functions the CPU
//     calls and every element looks its value up in shared memory;
//   - branch-free encoders (policy BranchFree): the ULP correction and the
//     softsign compander computed without data-dependent branches, so an
//     element's encode is one basic block the compiler can interleave with
//     the next element's.
// Both save instructions per element, which is what bounds the fused step
// on the H200 (docs/gpu.md); kernel/proven_codecs.cuh saves more.
// tests/gpu/exhaustive_test.cu checks every table entry and every wrapped
// function against the host's over all inputs.
#pragma once

#include <cuda_runtime.h>

#include <cstring>
#include <type_traits>

#include "flashoptim/codec/master.hpp"
#include "flashoptim/codec/state.hpp"
#include "flashoptim/kernel/proven_math.hpp"

namespace flashoptim::kernel {

/// Entries of one table: every value of a byte.
inline constexpr int table_entries = 256;
/// Table slots: 0 the master correction, 1 state 0, 2 state 1.
inline constexpr int table_slots = 3;

/// The block's tables, in dynamic shared memory (launches reserve
/// table_slots * table_entries floats when the config tabulates anything).
FLASHOPTIM_DEVICE FLASHOPTIM_INLINE float* shared_tables() {
  extern __shared__ float flashoptim_shared_tables[];
  return flashoptim_shared_tables;
}

namespace detail {
template <class T>
FLASHOPTIM_HOST_DEVICE FLASHOPTIM_INLINE unsigned byte_of(T q) {
  static_assert(sizeof(T) == 1, "one-byte codes");
  unsigned char b;
  std::memcpy(&b, &q, 1);
  return b;
}
template <class T>
FLASHOPTIM_HOST_DEVICE FLASHOPTIM_INLINE T from_byte(unsigned b) {
  static_assert(sizeof(T) == 1, "one-byte codes");
  const unsigned char c = static_cast<unsigned char>(b);
  T q;
  std::memcpy(&q, &c, 1);
  return q;
}

}  // namespace detail

/// softsign with post(n) = 2n / (1 + |n|) computed without a branch, the
/// IEEE quotient for every input:
///   |n| < 2^-25   1 + |n| rounds to 1: the quotient is 2n exactly
///   |n| >= 2^25   1 + |n| rounds to |n|: the quotient is +-2, or +-inf once
///                 2n overflows, or NaN for n = +-inf
///   otherwise     both operands are normal and within the range where the
///                 division's fast path is the correctly rounded quotient
/// (NaN in, NaN out). Checked against softsign::post on all 2^32 inputs.
struct branch_free_softsign : codec::softsign {
  FLASHOPTIM_HOST_DEVICE static float post(float n) {
#if FLASHOPTIM_DEVICE_CODE
    const float num = format::add_rn(n, n);  // 2n, exact doubling
    const float a = format::abs_bits(n);
    const float q = detail::div_fast_path(num, format::add_rn(1.0f, a));
    const float big = format::is_finite(num) ? format::copysign_bits(2.0f, n)
                                             : (format::is_finite(a) ? num : format::float_from_bits(0x7fffffffu));
    return a < format::pow2(-25) ? num : (a >= format::pow2(25) ? big : q);
#else
    return codec::softsign::post(n);
#endif
  }
};

/// branch_free_softsign for inputs a clamping scale produces (finite,
/// |n| <= 1), where the |n| >= 2^25 case cannot occur. Checked against
/// softsign::post on every fp32 value in [-1, 1].
struct clamped_softsign : codec::softsign {
  FLASHOPTIM_HOST_DEVICE static float post(float n) {
#if FLASHOPTIM_DEVICE_CODE
    const float num = format::add_rn(n, n);  // 2n, exact doubling
    const float a = format::abs_bits(n);
    const float q = detail::div_fast_path(num, format::add_rn(1.0f, a));
    return a < format::pow2(-25) ? num : q;
#else
    return codec::softsign::post(n);
#endif
  }
};

/// Scale formats whose normalize clamps to [-1, 1].
template <class S>
struct scale_clamps : std::false_type {};
template <>
struct scale_clamps<codec::scale_fp32> : std::true_type {};
template <class T>
struct scale_clamps<codec::scale_rounded_up<T>> : std::true_type {};

namespace detail {
template <class C, bool BranchFree, class = void>
struct codec_base {
  using type = C;
};
/// Any compander declaring compander_kind::softsign (codec/compander.hpp).
template <class Code, class Compander, class Scale, codec::code_rounding R>
struct codec_base<codec::grouped<Code, Compander, Scale, R>, true,
                  std::enable_if_t<codec::compander_kind_of<Compander> == codec::compander_kind::softsign>> {
  using compander = std::conditional_t<scale_clamps<Scale>::value, clamped_softsign, branch_free_softsign>;
  using type = codec::grouped<Code, compander, Scale, R>;
};
}  // namespace detail

/// fp8 codes whose compander's post_inverse is the identity (identity,
/// sqrt): their normalized value is the code's value times 2^-K, which an
/// sm_89+ device converts in hardware (kernel_codec::decode_tile) instead of
/// reading the table.
template <class C>
struct hardware_fp8_decode : std::false_type {};
template <class T, class Compander, class Scale, codec::code_rounding R>
struct hardware_fp8_decode<codec::grouped<codec::fp8_code<T>, Compander, Scale, R>>
    : std::bool_constant<codec::compander_kind_of<Compander> == codec::compander_kind::identity ||
                         codec::compander_kind_of<Compander> == codec::compander_kind::sqrt> {};

namespace detail {
#if FLASHOPTIM_DEVICE_CODE && __CUDA_ARCH__ >= 890
/// Two fp8 codes' values times 2^-K as floats: cvt to f16x2 (exact: every
/// e4m3 and e5m2 value is an f16), then for e4m3 a multiply by 2^-8 in f16
/// (exact: the results are multiples of 2^-17 below 2, f16 subnormals
/// included, and no ftz), for e5m2 by 2^-15 in fp32 (its smallest values
/// times 2^-15 are below f16's range). The format's NaN (the sentinel)
/// stays a NaN.
template <class T>
FLASHOPTIM_DEVICE FLASHOPTIM_INLINE void fp8_pair_values(std::uint16_t packed, float& fa, float& fb) {
  std::uint32_t h2;
  unsigned short lo, hi;
  if constexpr (std::is_same<T, fp8_e4m3>::value) {
    asm("{\n\t.reg .b32 h, c;\n\t"
        "cvt.rn.f16x2.e4m3x2 h, %1;\n\t"
        "mov.b32 c, 0x1c001c00;\n\t"  // 2^-8 in both halves
        "mul.rn.f16x2 %0, h, c;\n\t}"
        : "=r"(h2)
        : "h"(packed));
    asm("mov.b32 {%0, %1}, %2;" : "=h"(lo), "=h"(hi) : "r"(h2));
    asm("cvt.f32.f16 %0, %1;" : "=f"(fa) : "h"(lo));
    asm("cvt.f32.f16 %0, %1;" : "=f"(fb) : "h"(hi));
  } else {
    asm("cvt.rn.f16x2.e5m2x2 %0, %1;" : "=r"(h2) : "h"(packed));
    asm("mov.b32 {%0, %1}, %2;" : "=h"(lo), "=h"(hi) : "r"(h2));
    float x, y;
    asm("cvt.f32.f16 %0, %1;" : "=f"(x) : "h"(lo));
    asm("cvt.f32.f16 %0, %1;" : "=f"(y) : "h"(hi));
    fa = format::mul_rn(x, format::pow2(-15));
    fb = format::mul_rn(y, format::pow2(-15));
  }
}
#endif
}  // namespace detail

/// A grouped codec C as the kernel runs it: decode through table slot Slot
/// (Tabulate, 1-byte codes), encode with branch-free companders (BranchFree);
/// fp8 codes of hardware_fp8_decode decode through the conversion
/// instructions on sm_89+ (their table is then unused).
template <class C, int Slot, bool Tabulate, bool BranchFree>
struct kernel_codec : detail::codec_base<C, BranchFree>::type {
  using base = typename detail::codec_base<C, BranchFree>::type;
  using typename base::code_type;
  using typename base::scale_type;
  using scale_format = typename base::scale_format;
  static constexpr bool tabulated = Tabulate;

  /// Entry b of the table: the host's code_value of byte b.
  FLASHOPTIM_HOST_DEVICE static float entry(unsigned b) { return C::code_value(detail::from_byte<code_type>(b)); }

  /// grouped::encode_tile with the sentinel chosen by a select instead of a
  /// branch (BranchFree): the discarded quantization of a non-finite element
  /// is computed on clamped, finite-or-NaN values and is well defined.
  template <int N, class Reduce>
  FLASHOPTIM_HOST_DEVICE static void encode_tile(const float (&x)[N], code_type (&q)[N], scale_type& s,
                                                 Reduce&& reduce, const codec::rounding_key& key) {
    if constexpr (BranchFree) {
      using Code = typename base::code_format;
      using Compander = typename base::compander;
      float t[N];
      FLASHOPTIM_UNROLL for (int i = 0; i < N; ++i) t[i] = Compander::pre(x[i]);
      const float amax = reduce(base::template tile_amax<N>(t));
      s = scale_format::store(amax);
      const auto norm = scale_format::make_norm(amax, s);
      FLASHOPTIM_UNROLL for (int i = 0; i < N; ++i) {
        const float y = Compander::post(scale_format::normalize(t[i], norm));
        const code_type v = Code::quantize(
            y, base::rounding, base::rounding == codec::code_rounding::stochastic ? key.bits(i) : 0u);
        q[i] = Code::has_sentinel && !format::is_finite(t[i]) ? Code::sentinel() : v;
      }
    } else {
      base::encode_tile(x, q, s, reduce, key);
    }
  }

  template <int N>
  FLASHOPTIM_HOST_DEVICE static void decode_tile(const code_type (&q)[N], scale_type s, float (&out)[N]) {
#if FLASHOPTIM_DEVICE_CODE && __CUDA_ARCH__ >= 890
    if constexpr (hardware_fp8_decode<C>::value) {
      const float scale = scale_format::load(s);
      // The codes as the 32-bit words they were loaded in (little-endian
      // bytes), converted a pair (a half word) at a time.
      constexpr int W = (N + 3) / 4;
      std::uint32_t w[W] = {};
      std::memcpy(w, q, N);
      float v[4 * W];
      FLASHOPTIM_UNROLL for (int k = 0; k < W; ++k) {
        detail::fp8_pair_values<code_type>(static_cast<std::uint16_t>(w[k]), v[4 * k], v[4 * k + 1]);
        detail::fp8_pair_values<code_type>(static_cast<std::uint16_t>(w[k] >> 16), v[4 * k + 2], v[4 * k + 3]);
      }
      FLASHOPTIM_UNROLL for (int i = 0; i < N; ++i) out[i] = base::decode(v[i], scale);
      return;
    }
#endif
#if FLASHOPTIM_DEVICE_CODE
    if constexpr (Tabulate) {
      const float* table = shared_tables() + Slot * table_entries;
      const float scale = scale_format::load(s);
      FLASHOPTIM_UNROLL for (int i = 0; i < N; ++i) out[i] = base::decode(table[detail::byte_of(q[i])], scale);
      return;
    }
#endif
    C::decode_tile(q, s, out);
  }
};

/// ulp_correction<T, C> as the kernel runs it: the fraction c / M read from
/// table slot 0 (Tabulate, int8 corrections), encode without branches
/// (BranchFree). decode and encode are master.hpp's formulas.
template <class M, bool Tabulate, bool BranchFree>
struct kernel_master : M {
  using typename M::param_type;
  using typename M::aux_type;
  static constexpr bool tabulated = Tabulate;

  FLASHOPTIM_HOST_DEVICE static float entry(unsigned b) {
    return format::div_rn(static_cast<float>(detail::from_byte<aux_type>(b)), static_cast<float>(M::max_code));
  }

  FLASHOPTIM_HOST_DEVICE static float decode(param_type p, aux_type c) {
#if FLASHOPTIM_DEVICE_CODE
    if constexpr (Tabulate) {
      const float f = shared_tables()[detail::byte_of(c)];
      return format::to_float(p) + format::scale_pow2(f, M::log2_half_ulp(p));
    }
#endif
    return M::decode(p, c);
  }

  /// M::encode with its early return for a non-finite error turned into a
  /// select (clamping keeps the discarded value's conversion defined).
  FLASHOPTIM_HOST_DEVICE static void encode(float x, param_type& p, aux_type& c) {
    if constexpr (BranchFree) {
      p = format::from_float<param_type>(x);
      const float e = x - format::to_float(p);
      const float en = format::scale_pow2(e, -M::log2_half_ulp(p));
      const float clamped = format::min_num(format::max_num(en, -1.0f), 1.0f);
      const float s = clamped * static_cast<float>(M::max_code);
      const float r = format::floor_exact(format::abs_bits(s) + 0.5f);
      const int q = static_cast<int>(format::copysign_bits(r, s));
      c = format::is_finite(e) ? static_cast<aux_type>(q) : aux_type{0};
    } else {
      M::encode(x, p, c);
    }
  }
};

}  // namespace flashoptim::kernel

namespace flashoptim::codec {
/// master_update for the kernel's branch-free ULP modes: encode, then keep
/// the old bytes by a select (instead of a branch around the encode) when
/// the fp32 value did not change. Same bytes as the primary template.
#define FLASHOPTIM_KERNEL_MASTER_UPDATE(T, C, TAB)                                                                \
  template <>                                                                                                     \
  FLASHOPTIM_HOST_DEVICE FLASHOPTIM_INLINE void master_update<kernel::kernel_master<ulp_correction<T, C>, TAB, true>>( \
      float before, float after, T& p, C& a) {                                                                    \
    T np;                                                                                                         \
    C na;                                                                                                         \
    kernel::kernel_master<ulp_correction<T, C>, TAB, true>::encode(after, np, na);                                \
    const bool keep = format::bits_of(before) == format::bits_of(after);                                          \
    p = keep ? p : np;                                                                                            \
    a = keep ? a : na;                                                                                            \
  }
FLASHOPTIM_KERNEL_MASTER_UPDATE(bf16, std::int8_t, true)
FLASHOPTIM_KERNEL_MASTER_UPDATE(bf16, std::int8_t, false)
FLASHOPTIM_KERNEL_MASTER_UPDATE(fp16, std::int8_t, true)
FLASHOPTIM_KERNEL_MASTER_UPDATE(fp16, std::int8_t, false)
FLASHOPTIM_KERNEL_MASTER_UPDATE(bf16, std::int16_t, false)
FLASHOPTIM_KERNEL_MASTER_UPDATE(fp16, std::int16_t, false)
#undef FLASHOPTIM_KERNEL_MASTER_UPDATE
}  // namespace flashoptim::codec

