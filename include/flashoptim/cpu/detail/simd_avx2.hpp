// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// The AVX2 (+FMA, F16C) vector operations of the CPU step: 8 fp32 lanes,
// masks as all-ones lanes. Same interface and same guarantees as
// simd_avx512.hpp: per-function target attributes, IEEE operations only,
// `mul` results opaque to contraction.
#pragma once

#include "flashoptim/cpu/isa.hpp"
#include "flashoptim/format/random.hpp"

#if FLASHOPTIM_CPU_X86_SIMD
#include <immintrin.h>

#include <cstdint>

#define FLASHOPTIM_CPU_AVX2_TARGET "avx2,fma,f16c,bmi,bmi2,popcnt"
#define FLASHOPTIM_CPU_AVX2_FN __attribute__((target(FLASHOPTIM_CPU_AVX2_TARGET), always_inline)) inline

// GCC 12's intrinsics start some results from _mm*_undefined_*(), which its own
// -Wmaybe-uninitialized reports wherever they are inlined (GCC bug 105593).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

namespace flashoptim::cpu::detail::avx2 {

struct ops {
  using vf = __m256;
  using vi = __m256i;
  using vm = __m256i;
  static constexpr int width = 8;
  static constexpr const char* name = "avx2";

  // ---- fp32
  FLASHOPTIM_CPU_AVX2_FN static vf set1(float x) { return _mm256_set1_ps(x); }
  FLASHOPTIM_CPU_AVX2_FN static vf load(const float* p) { return _mm256_loadu_ps(p); }
  FLASHOPTIM_CPU_AVX2_FN static void store(float* p, vf x) { _mm256_storeu_ps(p, x); }
  FLASHOPTIM_CPU_AVX2_FN static vf add(vf a, vf b) { return _mm256_add_ps(a, b); }
  FLASHOPTIM_CPU_AVX2_FN static vf sub(vf a, vf b) { return _mm256_sub_ps(a, b); }
  FLASHOPTIM_CPU_AVX2_FN static vf mul(vf a, vf b) {
    vf r = _mm256_mul_ps(a, b);
    __asm__("" : "+x"(r));  // an opaque product: never contracted into an fma
    return r;
  }
  FLASHOPTIM_CPU_AVX2_FN static vf div(vf a, vf b) { return _mm256_div_ps(a, b); }
  FLASHOPTIM_CPU_AVX2_FN static vf sqrt(vf a) { return _mm256_sqrt_ps(a); }
  FLASHOPTIM_CPU_AVX2_FN static vf fma(vf a, vf b, vf c) { return _mm256_fmadd_ps(a, b, c); }
  FLASHOPTIM_CPU_AVX2_FN static vf fnma(vf a, vf b, vf c) { return _mm256_fnmadd_ps(a, b, c); }
  FLASHOPTIM_CPU_AVX2_FN static vf floor(vf a) { return _mm256_round_ps(a, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC); }
  FLASHOPTIM_CPU_AVX2_FN static vf min(vf a, vf b) { return _mm256_min_ps(a, b); }
  FLASHOPTIM_CPU_AVX2_FN static vf max(vf a, vf b) { return _mm256_max_ps(a, b); }
  FLASHOPTIM_CPU_AVX2_FN static vf abs(vf a) { return as_f(_mm256_and_si256(as_i(a), _mm256_set1_epi32(0x7fffffff))); }
  FLASHOPTIM_CPU_AVX2_FN static vf copysign(vf magnitude, vf sign) {
    const vi m = _mm256_set1_epi32(0x7fffffff);
    return as_f(_mm256_or_si256(_mm256_and_si256(m, as_i(magnitude)), _mm256_andnot_si256(m, as_i(sign))));
  }
  FLASHOPTIM_CPU_AVX2_FN static vm lt(vf a, vf b) { return _mm256_castps_si256(_mm256_cmp_ps(a, b, _CMP_LT_OQ)); }
  FLASHOPTIM_CPU_AVX2_FN static vm gt(vf a, vf b) { return _mm256_castps_si256(_mm256_cmp_ps(a, b, _CMP_GT_OQ)); }
  FLASHOPTIM_CPU_AVX2_FN static vm nonfinite(vf a) {
    const vi e = _mm256_set1_epi32(0x7f800000);
    return _mm256_cmpeq_epi32(_mm256_and_si256(as_i(a), e), e);
  }
  FLASHOPTIM_CPU_AVX2_FN static vf select(vm m, vf if_set, vf if_clear) {
    return _mm256_blendv_ps(if_clear, if_set, _mm256_castsi256_ps(m));
  }

  FLASHOPTIM_CPU_AVX2_FN static std::int32_t hmaxi(vi a) {
    __m128i m4 = _mm_max_epi32(_mm256_castsi256_si128(a), _mm256_extracti128_si256(a, 1));
    m4 = _mm_max_epi32(m4, _mm_shuffle_epi32(m4, _MM_SHUFFLE(1, 0, 3, 2)));
    m4 = _mm_max_epi32(m4, _mm_shuffle_epi32(m4, _MM_SHUFFLE(2, 3, 0, 1)));
    return _mm_cvtsi128_si32(m4);
  }
  /// Lane g: the maximum of the 8 lanes of a[g] (8 vectors in, one out).
  FLASHOPTIM_CPU_AVX2_FN static vi transpose_max(const vi* a) {
    vi b[4], c[2];
    for (int k = 0; k < 4; ++k)  // halves: a[2k] partial, a[2k+1] partial
      b[k] = _mm256_max_epi32(_mm256_permute2x128_si256(a[2 * k], a[2 * k + 1], 0x20),
                              _mm256_permute2x128_si256(a[2 * k], a[2 * k + 1], 0x31));
    for (int k = 0; k < 2; ++k)  // half h: 2 each of groups 4k + h, 4k + 2 + h
      c[k] = _mm256_max_epi32(_mm256_unpacklo_epi64(b[2 * k], b[2 * k + 1]), _mm256_unpackhi_epi64(b[2 * k], b[2 * k + 1]));
    // lane 4h + j: group 2j + h
    const vi e = _mm256_max_epi32(
        _mm256_castps_si256(_mm256_shuffle_ps(_mm256_castsi256_ps(c[0]), _mm256_castsi256_ps(c[1]), _MM_SHUFFLE(2, 0, 2, 0))),
        _mm256_castps_si256(_mm256_shuffle_ps(_mm256_castsi256_ps(c[0]), _mm256_castsi256_ps(c[1]), _MM_SHUFFLE(3, 1, 3, 1))));
    return _mm256_permutevar8x32_epi32(e, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
  }
  FLASHOPTIM_CPU_AVX2_FN static vf broadcast_lane(vf a, int i) { return _mm256_permutevar8x32_ps(a, _mm256_set1_epi32(i)); }
  FLASHOPTIM_CPU_AVX2_FN static vi maxi_where(vm m, vi a, vi b) {
    return _mm256_blendv_epi8(a, _mm256_max_epi32(a, b), m);
  }

  // ---- int32 lanes
  FLASHOPTIM_CPU_AVX2_FN static vi set1i(std::int32_t x) { return _mm256_set1_epi32(x); }
  FLASHOPTIM_CPU_AVX2_FN static vi as_i(vf a) { return _mm256_castps_si256(a); }
  FLASHOPTIM_CPU_AVX2_FN static vf as_f(vi a) { return _mm256_castsi256_ps(a); }
  FLASHOPTIM_CPU_AVX2_FN static vi addi(vi a, vi b) { return _mm256_add_epi32(a, b); }
  FLASHOPTIM_CPU_AVX2_FN static vi mulloi(vi a, vi b) { return _mm256_mullo_epi32(a, b); }
  FLASHOPTIM_CPU_AVX2_FN static vi subi(vi a, vi b) { return _mm256_sub_epi32(a, b); }
  FLASHOPTIM_CPU_AVX2_FN static vi andi(vi a, vi b) { return _mm256_and_si256(a, b); }
  FLASHOPTIM_CPU_AVX2_FN static vi ori(vi a, vi b) { return _mm256_or_si256(a, b); }
  FLASHOPTIM_CPU_AVX2_FN static vi xori(vi a, vi b) { return _mm256_xor_si256(a, b); }
  template <int N>
  FLASHOPTIM_CPU_AVX2_FN static vi slli(vi a) { return _mm256_slli_epi32(a, N); }
  template <int N>
  FLASHOPTIM_CPU_AVX2_FN static vi srli(vi a) { return _mm256_srli_epi32(a, N); }
  /// Per-lane shifts; a count of 32 or more gives 0 (vpsllvd / vpsrlvd).
  FLASHOPTIM_CPU_AVX2_FN static vi sllv(vi a, vi n) { return _mm256_sllv_epi32(a, n); }
  FLASHOPTIM_CPU_AVX2_FN static vi srlv(vi a, vi n) { return _mm256_srlv_epi32(a, n); }
  FLASHOPTIM_CPU_AVX2_FN static vi mini(vi a, vi b) { return _mm256_min_epi32(a, b); }
  FLASHOPTIM_CPU_AVX2_FN static vi maxi(vi a, vi b) { return _mm256_max_epi32(a, b); }
  FLASHOPTIM_CPU_AVX2_FN static vm eqi(vi a, vi b) { return _mm256_cmpeq_epi32(a, b); }
  FLASHOPTIM_CPU_AVX2_FN static vm gti(vi a, vi b) { return _mm256_cmpgt_epi32(a, b); }
  FLASHOPTIM_CPU_AVX2_FN static vi selecti(vm m, vi if_set, vi if_clear) { return _mm256_blendv_epi8(if_clear, if_set, m); }
  // There is no "not equal" mask on purpose: GCC 12, compiling this code in a
  // translation unit built with -mavx512vl -mavx512bw (-march=x86-64-v4 or
  // native), folds blendv(c, s, cmpeq ^ all-ones) into blendv(c, s, cmpeq),
  // dropping the complement (a select of unchanged bytes then never takes
  // the new ones). Equality selects and tests take the plain compare.
  /// if_equal where a == b, else if_different.
  FLASHOPTIM_CPU_AVX2_FN static vi select_eqi(vi a, vi b, vi if_equal, vi if_different) {
    return _mm256_blendv_epi8(if_different, if_equal, _mm256_cmpeq_epi32(a, b));
  }
  /// Whether any lane of a differs from b's.
  FLASHOPTIM_CPU_AVX2_FN static bool any_neqi(vi a, vi b) {
    return _mm256_movemask_epi8(_mm256_cmpeq_epi32(a, b)) != -1;
  }
  FLASHOPTIM_CPU_AVX2_FN static vf to_float(vi a) { return _mm256_cvtepi32_ps(a); }
  FLASHOPTIM_CPU_AVX2_FN static vi to_int(vf a) { return _mm256_cvttps_epi32(a); }
  FLASHOPTIM_CPU_AVX2_FN static vi floor_to_int(vf a) { return _mm256_cvttps_epi32(floor(a)); }

  // ---- masks
  FLASHOPTIM_CPU_AVX2_FN static vm mask_none() { return _mm256_setzero_si256(); }
  FLASHOPTIM_CPU_AVX2_FN static vm mor(vm a, vm b) { return _mm256_or_si256(a, b); }
  FLASHOPTIM_CPU_AVX2_FN static vm mand(vm a, vm b) { return _mm256_and_si256(a, b); }
  FLASHOPTIM_CPU_AVX2_FN static bool any(vm a) { return !_mm256_testz_si256(a, a); }

  // ---- memory
  FLASHOPTIM_CPU_AVX2_FN static vi load_i32(const void* p) { return _mm256_loadu_si256(static_cast<const __m256i*>(p)); }
  FLASHOPTIM_CPU_AVX2_FN static void store_i32(void* p, vi a) { _mm256_storeu_si256(static_cast<__m256i*>(p), a); }
  FLASHOPTIM_CPU_AVX2_FN static vi load_u16(const void* p) {
    return _mm256_cvtepu16_epi32(_mm_loadu_si128(static_cast<const __m128i*>(p)));
  }
  FLASHOPTIM_CPU_AVX2_FN static vi load_i16(const void* p) {
    return _mm256_cvtepi16_epi32(_mm_loadu_si128(static_cast<const __m128i*>(p)));
  }
  FLASHOPTIM_CPU_AVX2_FN static vi load_u8(const void* p) {
    return _mm256_cvtepu8_epi32(_mm_loadl_epi64(static_cast<const __m128i*>(p)));
  }
  FLASHOPTIM_CPU_AVX2_FN static vi load_i8(const void* p) {
    return _mm256_cvtepi8_epi32(_mm_loadl_epi64(static_cast<const __m128i*>(p)));
  }
  /// Whether any of the n bytes at p (n a multiple of 32), ANDed with
  /// and_mask and XORed with xor_mask, is above `limit` (unsigned, below 255).
  FLASHOPTIM_CPU_AVX2_FN static bool any_byte_above(const void* p, int n, std::uint8_t and_mask, std::uint8_t xor_mask,
                                                    std::uint8_t limit) {
    const char* b = static_cast<const char*>(p);
    const __m256i am = _mm256_set1_epi8(static_cast<char>(and_mask)), xm = _mm256_set1_epi8(static_cast<char>(xor_mask));
    __m256i acc = _mm256_setzero_si256();
    for (int i = 0; i < n; i += 32)
      acc = _mm256_max_epu8(acc, _mm256_xor_si256(_mm256_and_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + i)), am), xm));
    // acc > limit somewhere: max(acc, limit + 1) == acc there (limit < 255)
    const __m256i above = _mm256_cmpeq_epi8(_mm256_max_epu8(acc, _mm256_set1_epi8(static_cast<char>(limit + 1))), acc);
    return _mm256_movemask_epi8(above) != 0;
  }
  /// The 16-bit field at byte Byte (0: the low 16 bits, truncating; 2: the
  /// high 16) of each lane, packed.
  template <int Byte = 0>
  FLASHOPTIM_CPU_AVX2_FN static __m128i narrow_16(vi a) {
    static_assert(Byte == 0 || Byte == 2, "a 16-bit field of a 32-bit lane");
    constexpr char b = static_cast<char>(Byte);
    const __m256i pick = _mm256_setr_epi8(b, b + 1, b + 4, b + 5, b + 8, b + 9, b + 12, b + 13, -1, -1, -1, -1, -1, -1, -1, -1,  //
                                          b, b + 1, b + 4, b + 5, b + 8, b + 9, b + 12, b + 13, -1, -1, -1, -1, -1, -1, -1, -1);
    return _mm256_castsi256_si128(_mm256_permute4x64_epi64(_mm256_shuffle_epi8(a, pick), 0x08));
  }
  FLASHOPTIM_CPU_AVX2_FN static void store_16(void* p, vi a) { _mm_storeu_si128(static_cast<__m128i*>(p), narrow_16(a)); }
  /// The byte at Byte (0 to 3) of each lane, packed.
  template <int Byte>
  FLASHOPTIM_CPU_AVX2_FN static void store_8_at(void* p, vi a) {
    static_assert(Byte >= 0 && Byte < 4, "a byte of a 32-bit lane");
    constexpr char b = static_cast<char>(Byte);
    const __m256i pick = _mm256_setr_epi8(b, b + 4, b + 8, b + 12, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,  //
                                          b, b + 4, b + 8, b + 12, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1);
    const __m256i r = _mm256_permutevar8x32_epi32(_mm256_shuffle_epi8(a, pick), _mm256_setr_epi32(0, 4, 1, 1, 1, 1, 1, 1));
    _mm_storel_epi64(static_cast<__m128i*>(p), _mm256_castsi256_si128(r));
  }
  /// The field at Byte of a's lanes, then of b's, packed (the
  /// AVX-512 file's pair stores; here two stores, the shift for a field
  /// above bit 0 folded into the byte shuffle).
  template <int Byte>
  FLASHOPTIM_CPU_AVX2_FN static void store_16x2(void* p, vi a, vi b) {
    _mm_storeu_si128(static_cast<__m128i*>(p), narrow_16<Byte>(a));
    _mm_storeu_si128(static_cast<__m128i*>(p) + 1, narrow_16<Byte>(b));
  }
  template <int Byte>
  FLASHOPTIM_CPU_AVX2_FN static void store_8x2(void* p, vi a, vi b) {
    store_8_at<Byte>(p, a);
    store_8_at<Byte>(static_cast<char*>(p) + 8, b);
  }

  // ---- fp16 (F16C)
  FLASHOPTIM_CPU_AVX2_FN static vf half_to_float(vi bits) { return _mm256_cvtph_ps(narrow_16(bits)); }
  FLASHOPTIM_CPU_AVX2_FN static vf load_half(const void* p) {
    return _mm256_cvtph_ps(_mm_loadu_si128(static_cast<const __m128i*>(p)));
  }
  FLASHOPTIM_CPU_AVX2_FN static vi float_to_half(vf x) {
    return _mm256_cvtepu16_epi32(_mm256_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  }

  // ---- counter-based random bits
  /// The word format::random_mix hashes, for the 8 lanes i (see the AVX-512
  /// version; unsigned compares as signed ones with the sign bits flipped).
  FLASHOPTIM_CPU_AVX2_FN static vi random_word(std::uint64_t key, std::uint64_t index0) {
    const std::uint32_t lo0 = static_cast<std::uint32_t>(index0);
    const std::uint32_t hi0 = static_cast<std::uint32_t>(index0 >> 32);
    const std::uint32_t key_lo = static_cast<std::uint32_t>(key), key_hi = static_cast<std::uint32_t>(key >> 32);
    const __m256i base = _mm256_set1_epi32(static_cast<int>(lo0));
    const __m256i lo = _mm256_add_epi32(base, _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    const __m256i flip = _mm256_set1_epi32(static_cast<int>(0x80000000u));
    const __m256i wrapped = _mm256_cmpgt_epi32(_mm256_xor_si256(base, flip), _mm256_xor_si256(lo, flip));
    const std::uint32_t fold0 = (hi0 ^ key_hi) * format::random_fold;
    const std::uint32_t fold1 = ((hi0 + 1u) ^ key_hi) * format::random_fold;
    const __m256i fold = _mm256_blendv_epi8(_mm256_set1_epi32(static_cast<int>(fold0)),
                                            _mm256_set1_epi32(static_cast<int>(fold1)), wrapped);
    return _mm256_add_epi32(_mm256_xor_si256(lo, _mm256_set1_epi32(static_cast<int>(key_lo))), fold);
  }
};

}  // namespace flashoptim::cpu::detail::avx2

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

#endif  // FLASHOPTIM_CPU_X86_SIMD
