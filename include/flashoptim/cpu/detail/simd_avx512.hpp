// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// The AVX-512 vector operations the CPU step is written in: 16 fp32 lanes,
// masks in k-registers. Every function carries its own target attribute, so
// the including program needs no -m flag; the step calls into them only after
// the run-time check (cpu/isa.hpp). Each operation is the IEEE operation the
// scalar code performs (vdivps, vsqrtps and vfmadd are correctly rounded),
// and `mul` hides its result from the optimizer so that no compiler flag
// (GCC's default -ffp-contract=fast) can fuse it into a later add.
#pragma once

#include "flashoptim/cpu/isa.hpp"
#include "flashoptim/format/random.hpp"

#if FLASHOPTIM_CPU_X86_SIMD
#include <immintrin.h>

#include <cstdint>

#define FLASHOPTIM_CPU_AVX512_TARGET "avx512f,avx512bw,avx512dq,avx512vl,avx2,fma,f16c,bmi,bmi2,popcnt"
#define FLASHOPTIM_CPU_AVX512_FN __attribute__((target(FLASHOPTIM_CPU_AVX512_TARGET), always_inline)) inline

// GCC 12's intrinsics start some results from _mm*_undefined_*(), which its own
// -Wmaybe-uninitialized reports wherever they are inlined (GCC bug 105593).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

namespace flashoptim::cpu::detail::avx512 {

struct ops {
  using vf = __m512;
  using vi = __m512i;
  using vm = __mmask16;
  static constexpr int width = 16;
  static constexpr const char* name = "avx512";

  // ---- fp32
  FLASHOPTIM_CPU_AVX512_FN static vf set1(float x) { return _mm512_set1_ps(x); }
  FLASHOPTIM_CPU_AVX512_FN static vf load(const float* p) { return _mm512_loadu_ps(p); }
  FLASHOPTIM_CPU_AVX512_FN static void store(float* p, vf x) { _mm512_storeu_ps(p, x); }
  FLASHOPTIM_CPU_AVX512_FN static vf add(vf a, vf b) { return _mm512_add_ps(a, b); }
  FLASHOPTIM_CPU_AVX512_FN static vf sub(vf a, vf b) { return _mm512_sub_ps(a, b); }
  FLASHOPTIM_CPU_AVX512_FN static vf mul(vf a, vf b) {
    vf r = _mm512_mul_ps(a, b);
    __asm__("" : "+v"(r));  // an opaque product: never contracted into an fma
    return r;
  }
  FLASHOPTIM_CPU_AVX512_FN static vf div(vf a, vf b) { return _mm512_div_ps(a, b); }
  FLASHOPTIM_CPU_AVX512_FN static vf sqrt(vf a) { return _mm512_sqrt_ps(a); }
  /// a * b + c, one rounding.
  FLASHOPTIM_CPU_AVX512_FN static vf fma(vf a, vf b, vf c) { return _mm512_fmadd_ps(a, b, c); }
  /// c - a * b, one rounding (= fma(-a, b, c)).
  FLASHOPTIM_CPU_AVX512_FN static vf fnma(vf a, vf b, vf c) { return _mm512_fnmadd_ps(a, b, c); }
  /// min/max of non-NaN operands (x86 semantics differ from fminf only for NaN).
  FLASHOPTIM_CPU_AVX512_FN static vf min(vf a, vf b) { return _mm512_min_ps(a, b); }
  FLASHOPTIM_CPU_AVX512_FN static vf max(vf a, vf b) { return _mm512_max_ps(a, b); }
  FLASHOPTIM_CPU_AVX512_FN static vf abs(vf a) { return as_f(_mm512_and_si512(as_i(a), _mm512_set1_epi32(0x7fffffff))); }
  /// |magnitude| with the sign bit of `sign`.
  FLASHOPTIM_CPU_AVX512_FN static vf copysign(vf magnitude, vf sign) {
    return as_f(_mm512_ternarylogic_epi32(_mm512_set1_epi32(0x7fffffff), as_i(magnitude), as_i(sign), 0xca));
  }
  FLASHOPTIM_CPU_AVX512_FN static vm lt(vf a, vf b) { return _mm512_cmp_ps_mask(a, b, _CMP_LT_OQ); }
  FLASHOPTIM_CPU_AVX512_FN static vm gt(vf a, vf b) { return _mm512_cmp_ps_mask(a, b, _CMP_GT_OQ); }
  /// NaN or +-inf.
  FLASHOPTIM_CPU_AVX512_FN static vm nonfinite(vf a) { return _mm512_fpclass_ps_mask(a, 0x99); }
  FLASHOPTIM_CPU_AVX512_FN static vf select(vm m, vf if_set, vf if_clear) { return _mm512_mask_blend_ps(m, if_clear, if_set); }

  /// Maximum of the int32 lanes.
  FLASHOPTIM_CPU_AVX512_FN static std::int32_t hmaxi(vi a) {
    __m256i m8 = _mm256_max_epi32(_mm512_castsi512_si256(a), _mm512_extracti64x4_epi64(a, 1));
    __m128i m4 = _mm_max_epi32(_mm256_castsi256_si128(m8), _mm256_extracti128_si256(m8, 1));
    m4 = _mm_max_epi32(m4, _mm_shuffle_epi32(m4, _MM_SHUFFLE(1, 0, 3, 2)));
    m4 = _mm_max_epi32(m4, _mm_shuffle_epi32(m4, _MM_SHUFFLE(2, 3, 0, 1)));
    return _mm_cvtsi128_si32(m4);
  }
  /// Lane g: the maximum of the 16 lanes of a[g] (16 vectors in, one out),
  /// by a transposing reduction tree.
  FLASHOPTIM_CPU_AVX512_FN static vi transpose_max(const vi* a) {
    vi b[8], c[4], d[2];
    for (int k = 0; k < 8; ++k)  // 128-bit quarters: [a0 q0|q2 .. a0 q1|q3 .. a1 ..]
      b[k] = _mm512_max_epi32(_mm512_shuffle_i32x4(a[2 * k], a[2 * k + 1], 0x44),
                              _mm512_shuffle_i32x4(a[2 * k], a[2 * k + 1], 0xee));
    for (int k = 0; k < 4; ++k)  // quarter q: 4 partial maxima of group 4k + q
      c[k] = _mm512_max_epi32(_mm512_shuffle_i32x4(b[2 * k], b[2 * k + 1], 0x88),
                              _mm512_shuffle_i32x4(b[2 * k], b[2 * k + 1], 0xdd));
    for (int k = 0; k < 2; ++k)  // quarter q: 2 each of groups 8k + q, 8k + 4 + q
      d[k] = _mm512_max_epi32(_mm512_unpacklo_epi64(c[2 * k], c[2 * k + 1]), _mm512_unpackhi_epi64(c[2 * k], c[2 * k + 1]));
    // lane 4q + j: group 4j + q
    const vi e = _mm512_max_epi32(
        _mm512_castps_si512(_mm512_shuffle_ps(_mm512_castsi512_ps(d[0]), _mm512_castsi512_ps(d[1]), _MM_SHUFFLE(2, 0, 2, 0))),
        _mm512_castps_si512(_mm512_shuffle_ps(_mm512_castsi512_ps(d[0]), _mm512_castsi512_ps(d[1]), _MM_SHUFFLE(3, 1, 3, 1))));
    return _mm512_permutexvar_epi32(_mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15), e);
  }
  /// Lane i of a in every lane.
  FLASHOPTIM_CPU_AVX512_FN static vf broadcast_lane(vf a, int i) { return _mm512_permutexvar_ps(_mm512_set1_epi32(i), a); }
  /// b where m is set and b > a, else a: max(a, b) on the lanes of m.
  FLASHOPTIM_CPU_AVX512_FN static vi maxi_where(vm m, vi a, vi b) { return _mm512_mask_max_epi32(a, m, a, b); }

  // ---- int32 lanes
  FLASHOPTIM_CPU_AVX512_FN static vi set1i(std::int32_t x) { return _mm512_set1_epi32(x); }
  FLASHOPTIM_CPU_AVX512_FN static vi as_i(vf a) { return _mm512_castps_si512(a); }
  FLASHOPTIM_CPU_AVX512_FN static vf as_f(vi a) { return _mm512_castsi512_ps(a); }
  FLASHOPTIM_CPU_AVX512_FN static vi addi(vi a, vi b) { return _mm512_add_epi32(a, b); }
  FLASHOPTIM_CPU_AVX512_FN static vi mulloi(vi a, vi b) { return _mm512_mullo_epi32(a, b); }
  FLASHOPTIM_CPU_AVX512_FN static vi subi(vi a, vi b) { return _mm512_sub_epi32(a, b); }
  FLASHOPTIM_CPU_AVX512_FN static vi andi(vi a, vi b) { return _mm512_and_si512(a, b); }
  FLASHOPTIM_CPU_AVX512_FN static vi ori(vi a, vi b) { return _mm512_or_si512(a, b); }
  FLASHOPTIM_CPU_AVX512_FN static vi xori(vi a, vi b) { return _mm512_xor_si512(a, b); }
  template <int N>
  FLASHOPTIM_CPU_AVX512_FN static vi slli(vi a) { return _mm512_slli_epi32(a, N); }
  template <int N>
  FLASHOPTIM_CPU_AVX512_FN static vi srli(vi a) { return _mm512_srli_epi32(a, N); }
  /// Per-lane shifts; a count of 32 or more gives 0 (vpsllvd / vpsrlvd).
  FLASHOPTIM_CPU_AVX512_FN static vi sllv(vi a, vi n) { return _mm512_sllv_epi32(a, n); }
  FLASHOPTIM_CPU_AVX512_FN static vi srlv(vi a, vi n) { return _mm512_srlv_epi32(a, n); }
  FLASHOPTIM_CPU_AVX512_FN static vi mini(vi a, vi b) { return _mm512_min_epi32(a, b); }
  FLASHOPTIM_CPU_AVX512_FN static vi maxi(vi a, vi b) { return _mm512_max_epi32(a, b); }
  FLASHOPTIM_CPU_AVX512_FN static vm eqi(vi a, vi b) { return _mm512_cmpeq_epi32_mask(a, b); }
  FLASHOPTIM_CPU_AVX512_FN static vm gti(vi a, vi b) { return _mm512_cmpgt_epi32_mask(a, b); }
  FLASHOPTIM_CPU_AVX512_FN static vi selecti(vm m, vi if_set, vi if_clear) {
    return _mm512_mask_blend_epi32(m, if_clear, if_set);
  }
  /// if_equal where a == b, else if_different. The AVX2 file says why the
  /// vector paths have equality selects and no "not equal" mask; this one
  /// keeps the same interface (and no complemented mask either).
  FLASHOPTIM_CPU_AVX512_FN static vi select_eqi(vi a, vi b, vi if_equal, vi if_different) {
    return _mm512_mask_blend_epi32(_mm512_cmpeq_epi32_mask(a, b), if_different, if_equal);
  }
  /// Whether any lane of a differs from b's.
  FLASHOPTIM_CPU_AVX512_FN static bool any_neqi(vi a, vi b) { return _mm512_cmpneq_epi32_mask(a, b) != 0; }
  /// int32 -> fp32 (exact below 2^24) and fp32 -> int32 truncating (exact for integral values).
  FLASHOPTIM_CPU_AVX512_FN static vf to_float(vi a) { return _mm512_cvtepi32_ps(a); }
  FLASHOPTIM_CPU_AVX512_FN static vi to_int(vf a) { return _mm512_cvttps_epi32(a); }
  /// floor(a) as int32 in one conversion (embedded round-down).
  FLASHOPTIM_CPU_AVX512_FN static vi floor_to_int(vf a) {
    return _mm512_cvt_roundps_epi32(a, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
  }

  // ---- masks
  FLASHOPTIM_CPU_AVX512_FN static vm mask_none() { return 0; }
  FLASHOPTIM_CPU_AVX512_FN static vm mor(vm a, vm b) { return static_cast<vm>(a | b); }
  FLASHOPTIM_CPU_AVX512_FN static vm mand(vm a, vm b) { return static_cast<vm>(a & b); }
  FLASHOPTIM_CPU_AVX512_FN static bool any(vm a) { return a != 0; }

  // ---- memory: narrow integers widened to int32 lanes, and narrowed back (truncating)
  FLASHOPTIM_CPU_AVX512_FN static vi load_i32(const void* p) { return _mm512_loadu_si512(p); }
  FLASHOPTIM_CPU_AVX512_FN static void store_i32(void* p, vi a) { _mm512_storeu_si512(p, a); }
  FLASHOPTIM_CPU_AVX512_FN static vi load_u16(const void* p) {
    return _mm512_cvtepu16_epi32(_mm256_loadu_si256(static_cast<const __m256i*>(p)));
  }
  FLASHOPTIM_CPU_AVX512_FN static vi load_i16(const void* p) {
    return _mm512_cvtepi16_epi32(_mm256_loadu_si256(static_cast<const __m256i*>(p)));
  }
  FLASHOPTIM_CPU_AVX512_FN static vi load_u8(const void* p) {
    return _mm512_cvtepu8_epi32(_mm_loadu_si128(static_cast<const __m128i*>(p)));
  }
  FLASHOPTIM_CPU_AVX512_FN static vi load_i8(const void* p) {
    return _mm512_cvtepi8_epi32(_mm_loadu_si128(static_cast<const __m128i*>(p)));
  }
  FLASHOPTIM_CPU_AVX512_FN static void store_16(void* p, vi a) {
    _mm256_storeu_si256(static_cast<__m256i*>(p), _mm512_cvtepi32_epi16(a));
  }
  /// Whether any of the n bytes at p (n a multiple of 32), ANDed with
  /// and_mask and XORed with xor_mask, is above `limit` (unsigned): one
  /// byte maximum per 64 bytes and one compare, where a running maximum of
  /// the widened codes took an operation per vector.
  FLASHOPTIM_CPU_AVX512_FN static bool any_byte_above(const void* p, int n, std::uint8_t and_mask, std::uint8_t xor_mask,
                                                      std::uint8_t limit) {
    const char* b = static_cast<const char*>(p);
    const __m512i am = _mm512_set1_epi8(static_cast<char>(and_mask)), xm = _mm512_set1_epi8(static_cast<char>(xor_mask));
    __m512i acc = _mm512_setzero_si512();
    int i = 0;
    for (; i + 64 <= n; i += 64)
      acc = _mm512_max_epu8(acc, _mm512_xor_si512(_mm512_and_si512(_mm512_loadu_si512(b + i), am), xm));
    if (i < n) {  // the last 32, the upper half zero
      const __m512i last = _mm512_zextsi256_si512(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + i)));
      acc = _mm512_max_epu8(acc, _mm512_xor_si512(_mm512_and_si512(last, am),
                                                  _mm512_zextsi256_si512(_mm512_castsi512_si256(xm))));
    }
    return _mm512_cmpgt_epu8_mask(acc, _mm512_set1_epi8(static_cast<char>(limit))) != 0;
  }
  /// The 16-bit fields at byte Byte (0 or 2) of every lane of a, then of b:
  /// 32 values. Two in-lane byte shuffles and one two-source qword permute
  /// (three shuffle-port operations) where two vpmovdw take four, and no
  /// shift for the high field. Byte 0 stores what store_16 stores.
  template <int Byte>
  FLASHOPTIM_CPU_AVX512_FN static void store_16x2(void* p, vi a, vi b) {
    static_assert(Byte == 0 || Byte == 2, "a 16-bit field of a 32-bit lane");
    const __m512i pick = _mm512_broadcast_i32x4(_mm_setr_epi8(Byte, Byte + 1, Byte + 4, Byte + 5, Byte + 8, Byte + 9,
                                                              Byte + 12, Byte + 13, -1, -1, -1, -1, -1, -1, -1, -1));
    // qword 0 of each 128-bit lane of a, then of b
    const __m512i r = _mm512_permutex2var_epi64(_mm512_shuffle_epi8(a, pick), _mm512_setr_epi64(0, 2, 4, 6, 8, 10, 12, 14),
                                                _mm512_shuffle_epi8(b, pick));
    _mm512_storeu_si512(p, r);
  }
  /// The bytes at Byte (0 to 3) of every lane of a, then of b: 32 values,
  /// as store_16x2 (two vpmovdb for Byte 0).
  template <int Byte>
  FLASHOPTIM_CPU_AVX512_FN static void store_8x2(void* p, vi a, vi b) {
    static_assert(Byte >= 0 && Byte < 4, "a byte of a 32-bit lane");
    const __m512i pick = _mm512_broadcast_i32x4(
        _mm_setr_epi8(Byte, Byte + 4, Byte + 8, Byte + 12, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1));
    // dword 0 of each 128-bit lane of a, then of b
    const __m512i r = _mm512_permutex2var_epi32(_mm512_shuffle_epi8(a, pick),
                                                _mm512_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28, 0, 0, 0, 0, 0, 0, 0, 0),
                                                _mm512_shuffle_epi8(b, pick));
    _mm256_storeu_si256(static_cast<__m256i*>(p), _mm512_castsi512_si256(r));
  }

  // ---- fp16 (F16C): exact widening; IEEE round-to-nearest-even narrowing
  // (immediate rounding, independent of MXCSR.RC; NaN payloads are the
  // caller's business).
  FLASHOPTIM_CPU_AVX512_FN static vf half_to_float(vi bits) { return _mm512_cvtph_ps(_mm512_cvtepi32_epi16(bits)); }
  FLASHOPTIM_CPU_AVX512_FN static vf load_half(const void* p) {
    return _mm512_cvtph_ps(_mm256_loadu_si256(static_cast<const __m256i*>(p)));
  }
  FLASHOPTIM_CPU_AVX512_FN static vi float_to_half(vf x) {
    return _mm512_cvtepu16_epi32(_mm512_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  }

  // ---- counter-based random bits
  /// The word format::random_mix hashes, for the indices index0 + i of the
  /// 16 lanes i: the index's low words in 32-bit lanes (a lane whose low word
  /// wrapped past 2^32 takes the next high word's fold).
  FLASHOPTIM_CPU_AVX512_FN static vi random_word(std::uint64_t key, std::uint64_t index0) {
    const std::uint32_t lo0 = static_cast<std::uint32_t>(index0);
    const std::uint32_t hi0 = static_cast<std::uint32_t>(index0 >> 32);
    const std::uint32_t key_lo = static_cast<std::uint32_t>(key), key_hi = static_cast<std::uint32_t>(key >> 32);
    const __m512i lo = _mm512_add_epi32(_mm512_set1_epi32(static_cast<int>(lo0)),
                                        _mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0));
    const __mmask16 wrapped = _mm512_cmplt_epu32_mask(lo, _mm512_set1_epi32(static_cast<int>(lo0)));
    const std::uint32_t fold0 = (hi0 ^ key_hi) * format::random_fold;
    const std::uint32_t fold1 = ((hi0 + 1u) ^ key_hi) * format::random_fold;
    const __m512i fold = _mm512_mask_blend_epi32(wrapped, _mm512_set1_epi32(static_cast<int>(fold0)),
                                                 _mm512_set1_epi32(static_cast<int>(fold1)));
    return _mm512_add_epi32(_mm512_xor_si512(lo, _mm512_set1_epi32(static_cast<int>(key_lo))), fold);
  }
};

}  // namespace flashoptim::cpu::detail::avx512

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

#endif  // FLASHOPTIM_CPU_X86_SIMD
