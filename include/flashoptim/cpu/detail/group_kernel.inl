// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// The vector step of whole groups of 32 elements, written once over a
// vector-operations type `ops` and compiled once per instruction set: this
// file is included by kernel_avx512.hpp and kernel_avx2.hpp inside their own
// namespace, after they define `ops`, FLASHOPTIM_CPU_FN (an always-inlined
// function for that instruction set) and FLASHOPTIM_CPU_ENTRY. It includes
// nothing itself.
//
// Every function below mirrors a scalar function of codec/, rule/ or format/
// operation for operation (named in its comment); the scalar one is the
// definition. The vector code covers the finite path only: a group in which
// any gradient, updated value or companded state is NaN or infinite (or a
// parameter or plain state beyond what its format stores finite), or any
// stored code is a sentinel, is stepped by the scalar step_tile instead
// (nothing of it has been written when that is decided), so the NaN payload
// and sentinel rules of the codecs keep their one implementation.
//
// Groups go `lanes` at a time (16 on AVX-512, 8 on AVX2): pass 1 decodes,
// updates and re-encodes the master weights of all of them into registers
// and stack, pass 2 finds their scales as one vector (a group's codes wait
// for its maximum over 32 elements; one group at a time would mostly wait on
// that chain), pass 3 stores. A block that needs the scalar step is retried
// group by group, so only the groups that need it take it.

using vf = ops::vf;
using vi = ops::vi;
using vm = ops::vm;

inline constexpr int lanes = ops::width;
/// Vectors per group of 32.
inline constexpr int group_vectors = 32 / ops::width;

// ------------------------------------------------------------ format helpers

/// div_rn(a, d) for a fixed divisor d and integer a with |a| < 2^16: one
/// Newton step from the rounded reciprocal r (Markstein). It returns the
/// correctly rounded quotient for every integer numerator of the codes and
/// corrections divided this way (d = 127, 254, 255, 32767; tests/cpu checks
/// all of them exhaustively), for a fraction of a division's cost.
FLASHOPTIM_CPU_FN vf div_by_constant(vf a, vf d, vf r) {
  const vf q = ops::mul(a, r);
  return ops::fma(ops::fnma(q, d, a), r, q);
}

/// format_traits<bf16>::from_float, round to nearest even, for non-NaN x.
FLASHOPTIM_CPU_FN vi bf16_rne(vf x) {
  const vi u = ops::as_i(x);
  return ops::srli<16>(ops::addi(u, ops::addi(ops::set1i(0x7fff), ops::andi(ops::srli<16>(u), ops::set1i(1)))));
}
/// The stochastic variant: add 16 random bits below the cut, truncate.
FLASHOPTIM_CPU_FN vi bf16_stochastic(vf x, vi random) {
  return ops::srli<16>(ops::addi(ops::as_i(x), ops::andi(random, ops::set1i(0xffff))));
}

/// format::encode_small_float<Spec>(x, mode, random) for non-NaN x, in
/// integer arithmetic as the scalar function, for the formats whose smallest
/// normal exponent lies above fp32's by far enough (fp16, fp8): there every
/// fp32 subnormal and zero sits 56 or more bits below the cut and rounds to
/// zero in both modes, so the implicit bit is set for every lane (e32 = 0
/// taken as exponent -127, still far below the cut) and no lane needs a
/// branch of its own. Per lane, with e the exponent of x and M Spec's
/// mantissa bits:
///   eq = max(e, emin), shift = 23 - M + (eq - e) (variable shifts; a count
///   of 32 or more gives 0, which is the scalar result wherever it occurs)
///   nearest even: kept = (sig + 2^(shift-1) - 1 + ((sig >> shift) & 1)) >> shift
///     (for shift > 32 the add wraps, the shift still gives the scalar's 0)
///   stochastic, shift <= 31: kept = (sig + (random & (2^shift - 1))) >> shift
///   stochastic, shift >= 32: the scalar adds random << (shift - 32) in 64
///     bits; with k = shift - 32 that is the carry out of the 32-bit sum
///     (sig >> k) + random (sig's low k bits cannot reach the random bits)
///   result = ((eq + bias - 1) << M) + kept, then Spec's overflow rule.
template <class Spec, bool Stochastic>
FLASHOPTIM_CPU_FN vi encode_small(vf x, vi random) {
  static_assert(Spec::emin > -80, "fp32 subnormals must round to zero (not bf16)");
  constexpr int M = Spec::mant_bits;
  const vi u = ops::as_i(x);
  const vi a = ops::andi(u, ops::set1i(0x7fffffff));
  const vi e32 = ops::srli<23>(a);
  const vi e32q = ops::maxi(e32, ops::set1i(Spec::emin + 127));
  const vi shift = ops::addi(ops::subi(e32q, e32), ops::set1i(23 - M));
  const vi sig = ops::ori(ops::andi(a, ops::set1i(0x7fffff)), ops::set1i(0x800000));
  const vi one = ops::set1i(1);
  vi kept;
  if constexpr (Stochastic) {
    const vi low = ops::srlv(ops::addi(sig, ops::andi(random, ops::subi(ops::sllv(one, shift), one))), shift);
    const vi wide = ops::subi(shift, ops::set1i(32));  // negative below 32: unused lanes
    const vi sum = ops::addi(ops::srlv(sig, wide), random);
    // carry out of sum: sum < random as unsigned (compared with the sign bits flipped)
    const vi flip = ops::set1i(static_cast<std::int32_t>(0x80000000u));
    const vi carry = ops::selecti(ops::gti(ops::xori(random, flip), ops::xori(sum, flip)), one, ops::set1i(0));
    kept = ops::selecti(ops::gti(shift, ops::set1i(31)), carry, low);
  } else {
    (void)random;
    const vi half_minus_one = ops::subi(ops::sllv(one, ops::subi(shift, one)), one);
    kept = ops::srlv(ops::addi(ops::addi(sig, half_minus_one), ops::andi(ops::srlv(sig, shift), one)), shift);
  }
  const vi result = ops::addi(ops::slli<M>(ops::subi(e32q, ops::set1i(128 - Spec::bias))), kept);
  const vi sign = ops::andi(ops::srli<31 - (Spec::exp_bits + M)>(u), ops::set1i(static_cast<std::int32_t>(Spec::sign_bit)));
  const vi max_finite = ops::set1i(static_cast<std::int32_t>(Spec::max_finite_bits));
  if constexpr (Spec::overflow == format::overflow_rule::saturate) {
    return ops::ori(ops::mini(result, max_finite), sign);
  } else if constexpr (Spec::overflow == format::overflow_rule::to_infinity) {
    return ops::ori(ops::selecti(ops::gti(result, max_finite), ops::set1i(static_cast<std::int32_t>(Spec::inf_bits)), result),
                    sign);
  } else {
    return ops::selecti(ops::gti(result, max_finite), ops::set1i(static_cast<std::int32_t>(Spec::nan_bits)),
                        ops::ori(result, sign));
  }
}

/// rounding_key{seed, step, index}.bits(i) for the lanes i = 0 .. lanes-1.
FLASHOPTIM_CPU_FN vi random_bits(std::uint64_t seed, std::uint64_t step, std::uint64_t index) {
  // format::random_mix's hash, on the word each ISA folds for its lanes
  vi x = ops::random_word(format::random_key(seed, step), index);
  x = ops::xori(x, ops::srli<16>(x));
  x = ops::mulloi(x, ops::set1i(0x7feb352d));
  x = ops::xori(x, ops::srli<15>(x));
  x = ops::mulloi(x, ops::set1i(static_cast<std::int32_t>(0x846ca68bu)));
  return ops::xori(x, ops::srli<16>(x));
}

/// Storage element types as int32 lanes: the raw bits (`load`; `store2`: two
/// vectors' lanes, the low bits of each; `store` where a scale format stores
/// one vector), and their fp32 value (`value`, `from_float` round to nearest
/// even, non-NaN).
template <class T>
struct velem;
template <>
struct velem<float> {
  FLASHOPTIM_CPU_FN static vi load(const float* p) { return ops::load_i32(p); }
  FLASHOPTIM_CPU_FN static void store2(float* p, vi x, vi y) {
    ops::store_i32(p, x);
    ops::store_i32(p + lanes, y);
  }
  FLASHOPTIM_CPU_FN static vf value(vi raw) { return ops::as_f(raw); }
  FLASHOPTIM_CPU_FN static vf load_value(const float* p) { return ops::load(p); }
  FLASHOPTIM_CPU_FN static vi from_float(vf x) { return ops::as_i(x); }
};
template <>
struct velem<bf16> {
  FLASHOPTIM_CPU_FN static vi load(const bf16* p) { return ops::load_u16(p); }
  FLASHOPTIM_CPU_FN static void store(bf16* p, vi x) { ops::store_16(p, x); }
  FLASHOPTIM_CPU_FN static void store2(bf16* p, vi x, vi y) { ops::store_16x2<0>(p, x, y); }
  FLASHOPTIM_CPU_FN static vf value(vi raw) { return ops::as_f(ops::slli<16>(raw)); }
  FLASHOPTIM_CPU_FN static vf load_value(const bf16* p) { return value(load(p)); }
  FLASHOPTIM_CPU_FN static vi from_float(vf x) { return bf16_rne(x); }
};
template <>
struct velem<fp16> {
  FLASHOPTIM_CPU_FN static vi load(const fp16* p) { return ops::load_u16(p); }
  FLASHOPTIM_CPU_FN static void store(fp16* p, vi x) { ops::store_16(p, x); }
  FLASHOPTIM_CPU_FN static void store2(fp16* p, vi x, vi y) { ops::store_16x2<0>(p, x, y); }
  FLASHOPTIM_CPU_FN static vf value(vi raw) { return ops::half_to_float(raw); }
  FLASHOPTIM_CPU_FN static vf load_value(const fp16* p) { return ops::load_half(p); }
  // vcvtps2ph with an immediate RNE is IEEE's conversion: overflow to inf,
  // subnormal results kept (checked against encode_small_float in tests/cpu).
  FLASHOPTIM_CPU_FN static vi from_float(vf x) { return ops::float_to_half(x); }
};
/// fp8 codes: the raw bits only (vstate's fp8 branch decodes them).
template <>
struct velem<fp8_e4m3> {
  FLASHOPTIM_CPU_FN static vi load(const fp8_e4m3* p) { return ops::load_u8(p); }
  FLASHOPTIM_CPU_FN static void store2(fp8_e4m3* p, vi x, vi y) { ops::store_8x2<0>(p, x, y); }
};
template <>
struct velem<fp8_e5m2> {
  FLASHOPTIM_CPU_FN static vi load(const fp8_e5m2* p) { return ops::load_u8(p); }
  FLASHOPTIM_CPU_FN static void store2(fp8_e5m2* p, vi x, vi y) { ops::store_8x2<0>(p, x, y); }
};
template <>
struct velem<std::int8_t> {
  FLASHOPTIM_CPU_FN static vi load(const std::int8_t* p) { return ops::load_i8(p); }
  FLASHOPTIM_CPU_FN static void store2(std::int8_t* p, vi x, vi y) { ops::store_8x2<0>(p, x, y); }
};
template <>
struct velem<std::uint8_t> {
  FLASHOPTIM_CPU_FN static vi load(const std::uint8_t* p) { return ops::load_u8(p); }
  FLASHOPTIM_CPU_FN static void store2(std::uint8_t* p, vi x, vi y) { ops::store_8x2<0>(p, x, y); }
};
template <>
struct velem<std::int16_t> {
  FLASHOPTIM_CPU_FN static vi load(const std::int16_t* p) { return ops::load_i16(p); }
  FLASHOPTIM_CPU_FN static void store2(std::int16_t* p, vi x, vi y) { ops::store_16x2<0>(p, x, y); }
};
template <>
struct velem<std::uint16_t> {
  FLASHOPTIM_CPU_FN static vi load(const std::uint16_t* p) { return ops::load_u16(p); }
  FLASHOPTIM_CPU_FN static void store2(std::uint16_t* p, vi x, vi y) { ops::store_16x2<0>(p, x, y); }
};

/// The scalar step_tile's finite-arithmetic recomputation (rule/tile.hpp
/// finite_guard) takes a lane that is not finite, or beyond `limit`, what
/// the slot stores finite; the group then takes the scalar step.
/// fp32's own limit is a class test per vector (`bad`). A smaller limit
/// (bf16, fp16, fp8; every limit is finite) is a running maximum of |x|'s
/// bits (`reach`), compared once per group: as integers those bits order finite values as the floats and
/// put infinities and NaNs above every finite limit, so "not finite or
/// |x| > limit" is "bits(|x|) > bits(limit)", two vector operations per
/// value instead of a class test, an absolute value, a compare and mask
/// moves (bf16/bf16 AdamW, docs/cpu.md). (vrangeps would be one operation
/// but returns the other operand for a quiet NaN.)
struct limit_check {
  vm bad;
  vi reach;
};
FLASHOPTIM_CPU_FN bool is_fp32_limit(float limit) { return format::bits_of(limit) == format::max_finite_bits; }
FLASHOPTIM_CPU_FN limit_check limit_start() { return {ops::mask_none(), ops::set1i(0)}; }
FLASHOPTIM_CPU_FN void note_limit(limit_check& c, vf x, float limit) {
  if (is_fp32_limit(limit)) {
    c.bad = ops::mor(c.bad, ops::nonfinite(x));
  } else {
    c.reach = ops::maxi(c.reach, ops::andi(ops::as_i(x), ops::set1i(0x7fffffff)));
  }
}
FLASHOPTIM_CPU_FN vm beyond_limit(const limit_check& c, float limit) {
  if (is_fp32_limit(limit)) return c.bad;
  return ops::mor(c.bad, ops::gti(c.reach, ops::set1i(static_cast<std::int32_t>(format::bits_of(limit)))));
}

// ------------------------------------------------------------ master modes
// One vector at a time. decode(param, aux) -> x, keeping the raw bytes;
// encode(before, after) -> the bytes to store: the new encoding of every lane
// whose fp32 value changed, the old bytes of the others (master_update).
// They select on equality (ops::select_eqi: old bytes where the bits are
// equal), never on a complemented mask, which GCC 12 miscompiles when the
// program is built for AVX-512 (simd_avx2.hpp).

template <class Master>
struct vmaster;

template <class T>
struct vmaster<codec::native<T>> {
  struct raw {
    vi p;
  };
  FLASHOPTIM_CPU_FN static vf decode(const T* p, const none_t*, raw& r) {
    r.p = velem<T>::load(p);
    return velem<T>::value(r.p);
  }
  /// fp32 and bf16: master_update without its select. Every value here is
  /// not NaN (a group with a NaN is the scalar step's), and re-encoding an
  /// unchanged value gives its bytes back (codec::reencodes_every_pair); fp32
  /// stores the value's bits, bf16 rounds in integer arithmetic. fp16 keeps
  /// the select: its conversion is F16C's, under the caller's MXCSR when
  /// ieee_denormals is off, which this path does not reason about.
  FLASHOPTIM_CPU_FN static void encode(vf before, vf after, const raw& r, vi& p, vi&) {
    static_assert(codec::reencodes_every_pair<codec::native<T>>::value, "");
    if constexpr (std::is_same<T, fp16>::value) {
      p = ops::select_eqi(ops::as_i(before), ops::as_i(after), r.p, velem<T>::from_float(after));
    } else {
      (void)before, (void)r;
      p = velem<T>::from_float(after);
    }
  }
  FLASHOPTIM_CPU_FN static void store2(T* p, none_t*, vi p0, vi, vi p1, vi) { velem<T>::store2(p, p0, p1); }
};

template <class T>
struct vmaster<codec::fp32_master<T>> {
  struct raw {
    vi p, a;
  };
  FLASHOPTIM_CPU_FN static vf decode(const T* p, const float* a, raw& r) {
    r.p = velem<T>::load(p);
    r.a = ops::load_i32(a);
    return ops::as_f(r.a);
  }
  FLASHOPTIM_CPU_FN static void encode(vf before, vf after, const raw& r, vi& p, vi& a) {
    a = ops::select_eqi(ops::as_i(before), ops::as_i(after), r.a, ops::as_i(after));
    p = ops::select_eqi(ops::as_i(before), ops::as_i(after), r.p, velem<T>::from_float(after));
  }
  FLASHOPTIM_CPU_FN static void store2(T* p, float* a, vi p0, vi a0, vi p1, vi a1) {
    velem<T>::store2(p, p0, p1);
    velem<float>::store2(a, a0, a1);
  }
};

/// codec::ulp_correction: x = float(lo) + scale_pow2(c / M, E(lo) - mant - 1).
///
/// scale_pow2's first factor is exact here, so its result is one rounding of
/// the exact product, and any exact way to the same product gives the same
/// bits. Decode: ((c / M) * 2^-(mant+1)) * 2^E, the first factor exact (the
/// division's constants scaled), the product rounded once. Encode: e / h =
/// e * 2^(1-E) * 2^mant is exact (e is a multiple of 2^(E-24) below
/// 2^(E-8), or any finite value when lo is zero), so (e * 2^(1-E)) *
/// (2^mant * M) rounds once, as the scalar (e / h) * M does. 2^E comes from
/// lo's fp32 exponent field, raised to T's smallest normal exponent for zero
/// and subnormals: no branch, no special case. (An infinite parameter
/// decodes to NaN rather than inf; either way the group goes to the scalar
/// step.)
template <class T, class C>
struct vmaster<codec::ulp_correction<T, C>> {
  using mode = codec::ulp_correction<T, C>;
  using spec = typename mode::layout::spec;
  static constexpr int mant = spec::mant_bits;
  struct raw {
    vi p, a;
  };
  /// 2^E(lo) as fp32 bits, E = 1 - bias for zero and subnormals.
  FLASHOPTIM_CPU_FN static vi exponent_power(vf lo) {
    return ops::maxi(ops::andi(ops::as_i(lo), ops::set1i(0x7f800000)), ops::set1i((128 - spec::bias) << 23));
  }
  /// (c / M) * 2^-(mant+1), exact: the fixed-divisor division with both
  /// constants scaled by 2^(mant+1) scales every intermediate exactly.
  FLASHOPTIM_CPU_FN static vf scaled_fraction(vi c) {
    return div_by_constant(ops::to_float(c), ops::set1(static_cast<float>(mode::max_code) * format::pow2(mant + 1)),
                           ops::set1((1.0f / static_cast<float>(mode::max_code)) * format::pow2(-(mant + 1))));
  }
  FLASHOPTIM_CPU_FN static vf decode(const T* p, const C* a, raw& r) {
    r.p = velem<T>::load(p);
    r.a = velem<C>::load(a);
    const vf lo = velem<T>::value(r.p);
    // (c / M) * h = ((c / M) * 2^-(mant+1)) * 2^E, rounded once
    return ops::add(lo, ops::mul(scaled_fraction(r.a), ops::as_f(exponent_power(lo))));
  }
  /// ulp_correction::correction for finite x and lo = RNE(x). Its clamp to
  /// [-1, 1] is left out: e / h is exact and |x - RNE(x)| <= h for every x
  /// whose lo is finite (h: half an ULP of lo, or of the binade below when x
  /// rounds up to a power of two), so it never changes a value.
  FLASHOPTIM_CPU_FN static vi correction(vf x, vi lo) {
    const vf lo_value = velem<T>::value(lo);
    const vf e = ops::sub(x, lo_value);
    const vf inv = ops::as_f(ops::subi(ops::set1i(255 << 23), exponent_power(lo_value)));  // 2^(1-E)
    // s = (e / h) * M = (e * 2^(1-E)) * (2^mant * M): the first product and
    // the constant are exact, so the one rounding is the scalar code's
    const vf s = ops::mul(ops::mul(e, inv), ops::set1(format::pow2(mant) * static_cast<float>(mode::max_code)));
    // copysign(floor(|s| + 0.5), s) is trunc(s +- 0.5): |s| + 0.5 and
    // -(|s| + 0.5) round alike, and trunc is floor on the magnitude.
    // Where x overflowed T (lo = +-inf) e * 2^(1-E) is inf * 0, NaN, and the
    // conversion gives 0x80000000, whose low 8 or 16 bits, the stored c, are
    // the 0 the scalar code stores.
    return ops::to_int(ops::add(s, ops::copysign(ops::set1(0.5f), s)));
  }
  FLASHOPTIM_CPU_FN static void encode(vf before, vf after, const raw& r, vi& p, vi& a) {
    const vi lo = velem<T>::from_float(after);
    p = ops::select_eqi(ops::as_i(before), ops::as_i(after), r.p, lo);
    a = ops::select_eqi(ops::as_i(before), ops::as_i(after), r.a, correction(after, lo));
  }
  FLASHOPTIM_CPU_FN static void store2(T* p, C* a, vi p0, vi a0, vi p1, vi a1) {
    velem<T>::store2(p, p0, p1);
    velem<C>::store2(a, a0, a1);
  }
};

/// codec::exact_split: integer only.
template <>
struct vmaster<codec::exact_split> {
  struct raw {
    vi p, a;
  };
  FLASHOPTIM_CPU_FN static vf decode(const bf16* p, const std::uint16_t* a, raw& r) {
    r.p = ops::load_u16(p);
    r.a = ops::load_u16(a);
    const vi hi = ops::andi(ops::subi(r.p, ops::srli<15>(r.a)), ops::set1i(0xffff));
    return ops::as_f(ops::ori(ops::slli<16>(hi), r.a));
  }
  /// For non-NaN x (the NaN rule is the scalar path's).
  FLASHOPTIM_CPU_FN static void encode(vf before, vf after, const raw& r, vi& p, vi& a) {
    const vi u = ops::as_i(after);
    const vi lo = ops::andi(u, ops::set1i(0xffff));
    p = ops::select_eqi(ops::as_i(before), u, r.p, ops::addi(ops::srli<16>(u), ops::srli<15>(lo)));
    a = ops::select_eqi(ops::as_i(before), u, r.a, lo);
  }
  FLASHOPTIM_CPU_FN static void store2(bf16* p, std::uint16_t* a, vi p0, vi a0, vi p1, vi a1) {
    ops::store_16x2<0>(p, p0, p1);
    ops::store_16x2<0>(a, a0, a1);
  }
};

/// codec::rounded_split: integer only, as the scalar code.
template <>
struct vmaster<codec::rounded_split> {
  struct raw {
    vi p, a;
  };
  FLASHOPTIM_CPU_FN static vf decode(const bf16* p, const std::int8_t* a, raw& r) {
    r.p = ops::load_u16(p);
    r.a = ops::load_i8(a);  // sign-extended: (p << 16) + (c << 8) borrows below p where c < 0
    return ops::as_f(ops::addi(ops::slli<16>(r.p), ops::slli<8>(r.a)));
  }
  /// For non-NaN x (the NaN rule is the scalar path's). p and a are left
  /// in place, unshifted: the parameter is bits 16-31 of p, the correction
  /// bits 8-15 of a, which the stores pick out (store_16x2<2>, store_8x2<1>).
  ///
  /// master_update without its select, as for native<T>
  /// (codec::reencodes_every_pair: an unchanged value that is not NaN
  /// re-encodes to its own bytes; NaN groups are the scalar step's).
  FLASHOPTIM_CPU_FN static void encode(vf before, vf after, const raw& r, vi& p, vi& a) {
    static_assert(codec::reencodes_every_pair<codec::rounded_split>::value, "");
    (void)before, (void)r;
    const vi u = ops::as_i(after);
    const vi w = ops::addi(ops::addi(u, ops::set1i(0x7f)), ops::andi(ops::srli<8>(u), ops::set1i(1)));
    p = ops::addi(w, ops::set1i(0x8000));
    a = w;
  }
  FLASHOPTIM_CPU_FN static void store2(bf16* p, std::int8_t* a, vi p0, vi a0, vi p1, vi a1) {
    ops::store_16x2<2>(p, p0, p1);
    ops::store_8x2<1>(a, a0, a1);
  }
};

// ------------------------------------------------------------ rules
// consts: the step's scalars broadcast once per run of groups.
// apply: Rule::apply on every lane, same operations in the same order. Adam
// also hands out sqrt(v), which the sqrt compander of its second moment
// would compute again from the same v.

template <class Rule>
struct vrule;

template <bool Decoupled, bool AMSGrad>
struct vrule<rule::adam_rule<Decoupled, AMSGrad>> {
  using scalars = typename rule::adam_rule<Decoupled, AMSGrad>::scalars;
  static constexpr int num_states = rule::adam_rule<Decoupled, AMSGrad>::num_states;
  /// The slot whose square root apply hands out (the denominator's).
  static constexpr int sqrt_slot = AMSGrad ? 2 : 1;
  struct consts {
    vf beta1, one_minus_beta1, beta2, one_minus_beta2, neg_step_size, inv_sqrt_bc2, eps, weight_decay, decay;
  };
  FLASHOPTIM_CPU_FN static consts make(const scalars& s) {
    return {ops::set1(s.beta1),           ops::set1(s.one_minus_beta1), ops::set1(s.beta2),
            ops::set1(s.one_minus_beta2), ops::set1(s.neg_step_size),   ops::set1(s.inv_sqrt_bc2),
            ops::set1(s.eps),             ops::set1(s.weight_decay),    ops::set1(s.decay)};
  }
  FLASHOPTIM_CPU_FN static void apply(const consts& k, const scalars&, vf g, vf& p, vf (&st)[num_states],
                                      vf& sqrt_v) {
    vf& m = st[0];
    vf& v = st[1];
    if (Decoupled) {
      p = ops::mul(p, k.decay);
    } else {
      g = ops::fma(k.weight_decay, p, g);
    }
    m = ops::fma(k.beta1, m, ops::mul(k.one_minus_beta1, g));
    v = ops::fma(k.beta2, v, ops::mul(ops::mul(k.one_minus_beta2, g), g));
    vf vd = v;
    if constexpr (AMSGrad) {
      // rule::adam_rule's max; a NaN v leaves vmax, but v itself then
      // sends the group to the scalar step
      st[2] = ops::select(ops::gt(v, st[2]), v, st[2]);
      vd = st[2];
    }
    sqrt_v = ops::sqrt(vd);
    const vf d = ops::fma(sqrt_v, k.inv_sqrt_bc2, k.eps);
    p = ops::fma(k.neg_step_size, ops::div(m, d), p);
  }
};

template <bool Decoupled>
struct vrule<rule::sgd_rule<Decoupled>> {
  using scalars = typename rule::sgd_rule<Decoupled>::scalars;
  static constexpr int sqrt_slot = -1;
  struct consts {
    vf neg_lr, weight_decay, decay, momentum, one_minus_dampening;
  };
  FLASHOPTIM_CPU_FN static consts make(const scalars& s) {
    return {ops::set1(s.neg_lr), ops::set1(s.weight_decay), ops::set1(s.decay), ops::set1(s.momentum),
            ops::set1(s.one_minus_dampening)};
  }
  FLASHOPTIM_CPU_FN static void apply(const consts& k, const scalars& s, vf g, vf& p, vf (&st)[1], vf&) {
    vf& m = st[0];
    if (Decoupled) {
      p = ops::mul(p, k.decay);
    } else {
      g = ops::fma(k.weight_decay, p, g);
    }
    vf u = g;
    if (s.has_momentum) {
      m = s.first_step ? g : ops::fma(k.momentum, m, ops::mul(k.one_minus_dampening, g));
      u = s.nesterov ? ops::fma(k.momentum, m, g) : m;
    }
    p = ops::fma(k.neg_lr, u, p);
  }
};

template <>
struct vrule<rule::lion> {
  using scalars = rule::lion::scalars;
  static constexpr int sqrt_slot = -1;
  struct consts {
    vf neg_lr, beta1, one_minus_beta1, beta2, one_minus_beta2, decay;
  };
  FLASHOPTIM_CPU_FN static consts make(const scalars& s) {
    return {ops::set1(s.neg_lr), ops::set1(s.beta1),           ops::set1(s.one_minus_beta1),
            ops::set1(s.beta2),  ops::set1(s.one_minus_beta2), ops::set1(s.decay)};
  }
  FLASHOPTIM_CPU_FN static void apply(const consts& k, const scalars&, vf g, vf& p, vf (&st)[1], vf&) {
    vf& m = st[0];
    const vf c = ops::fma(k.beta1, m, ops::mul(k.one_minus_beta1, g));
    // lion::sign: +-1, and c * 0 for zeros (c itself: the same signed zero;
    // a NaN c sends the group to the scalar step)
    const vf u = ops::select(ops::gt(c, ops::set1(0.0f)), ops::set1(1.0f),
                             ops::select(ops::lt(c, ops::set1(0.0f)), ops::set1(-1.0f), c));
    p = ops::fma(k.neg_lr, u, ops::mul(p, k.decay));
    m = ops::fma(k.beta2, m, ops::mul(k.one_minus_beta2, g));
  }
};

// ------------------------------------------------------------ scale formats
// A vector of scales, lane g for group g of a block: load (what decoding
// multiplies by) and store (from the groups' maxima; returns what
// normalization uses: the stored scale, or the divisor of the reference
// layout). Each mirrors its scale format's store/load/make_norm.

template <class Scale>
struct vscale;

template <>
struct vscale<codec::scale_fp32> {
  FLASHOPTIM_CPU_FN static vf load(const float* s) { return ops::load(s); }
  FLASHOPTIM_CPU_FN static vf store(vf amax, float* s) {
    ops::store(s, amax);
    return amax;
  }
};

/// The reference layout: fp16(max(amax, 1e-12)) stored, max(amax, 1e-12) divides.
template <>
struct vscale<codec::scale_fp16_reference> {
  FLASHOPTIM_CPU_FN static vf load(const fp16* s) { return ops::load_half(s); }
  FLASHOPTIM_CPU_FN static vf store(vf amax, fp16* s) {
    const vf clamped = ops::max(amax, ops::set1(1e-12f));
    ops::store_16(s, velem<fp16>::from_float(clamped));
    return clamped;
  }
};

/// scale_rounded_up::store: RNE, one up where that fell below amax, one down
/// where that overflowed.
template <class T>
struct vscale<codec::scale_rounded_up<T>> {
  FLASHOPTIM_CPU_FN static vf load(const T* s) { return velem<T>::load_value(s); }
  FLASHOPTIM_CPU_FN static vf store(vf amax, T* s) {
    vi b = velem<T>::from_float(amax);
    b = ops::selecti(ops::lt(velem<T>::value(b), amax), ops::addi(b, ops::set1i(1)), b);
    b = ops::selecti(ops::nonfinite(velem<T>::value(b)), ops::subi(b, ops::set1i(1)), b);
    velem<T>::store(s, b);
    return velem<T>::value(b);
  }
};

/// detail::make_reciprocal on every lane.
struct vreciprocal {
  vf pre, factor;
};
FLASHOPTIM_CPU_FN vreciprocal make_reciprocal(vf s) {
  const vm positive = ops::gt(s, ops::set1(0.0f));
  const vm small = ops::mand(positive, ops::lt(s, ops::set1(format::pow2(-64))));
  const vm big = ops::gt(s, ops::set1(format::pow2(64)));
  const vf pre = ops::select(small, ops::set1(format::pow2(64)),
                             ops::select(big, ops::set1(format::pow2(-64)), ops::set1(1.0f)));
  const vf factor = ops::select(positive, ops::div(ops::set1(1.0f), ops::mul(s, pre)), ops::set1(0.0f));
  return {pre, factor};
}

// ------------------------------------------------------------ state codecs
// Per vector: decode, pre (the companded value; plain codecs note their
// values against their limit (note_limit), grouped ones find non-finite
// values in their group maximum) and code (the stored bits; `index` is the
// tensor index of the vector's first lane, for stochastic rounding), stored
// a pair of vectors at a time (store2). Per group or per block of `lanes`
// groups: the scale to decode with, and the norm to encode with, from
// amax_bits (the bits of max |pre(x)|: the group's scale input for finite
// values, >= 0x7f800000 when any value is not); whether its stored codes
// hold a sentinel (codes_have_sentinel, on the bytes before they are
// stepped).

template <class State>
struct vstate;

/// Codecs without a scale.
struct vstate_no_scale {
  static constexpr bool grouped = false;
  /// Whether pre notes its values against a limit (note_limit).
  static constexpr bool limited = false;
  FLASHOPTIM_CPU_FN static float limit() { return 0.0f; }
  struct scale_value {};
  struct norm {};
  using block_scales = scale_value;
  using block_norms = norm;
  template <class S>
  FLASHOPTIM_CPU_FN static scale_value load_scale(const S*) {
    return {};
  }
  template <class S>
  FLASHOPTIM_CPU_FN static norm store_scale(std::int32_t, S*) {
    return {};
  }
  template <class S>
  FLASHOPTIM_CPU_FN static block_scales load_scales(const S*) {
    return {};
  }
  FLASHOPTIM_CPU_FN static scale_value scale_of(const block_scales&, int) { return {}; }
  template <class S>
  FLASHOPTIM_CPU_FN static block_norms store_scales(vi, S*) {
    return {};
  }
  FLASHOPTIM_CPU_FN static norm norm_of(const block_norms&, int) { return {}; }
  FLASHOPTIM_CPU_FN static vi amax_bits(vi acc, vf) { return acc; }
  template <class Q>
  FLASHOPTIM_CPU_FN static bool codes_have_sentinel(const Q*, int) {
    return false;
  }
};

template <>
struct vstate<codec::none> : vstate_no_scale {
  FLASHOPTIM_CPU_FN static vf decode(const none_t*, scale_value) { return ops::set1(0.0f); }
  FLASHOPTIM_CPU_FN static vf pre(vf x, const vf*, limit_check&) { return x; }
  FLASHOPTIM_CPU_FN static vi code(vf, const norm&, std::uint64_t, std::uint64_t, std::uint64_t) { return ops::set1i(0); }
  FLASHOPTIM_CPU_FN static void store2(none_t*, vi, vi) {}
};

template <class T, format::rounding R>
struct vstate<codec::plain<T, R>> : vstate_no_scale {
  FLASHOPTIM_CPU_FN static vf decode(const T* q, scale_value) { return velem<T>::load_value(q); }
  static constexpr bool limited = true;
  FLASHOPTIM_CPU_FN static float limit() { return codec::state_limit<codec::plain<T, R>>::value(); }
  FLASHOPTIM_CPU_FN static vf pre(vf x, const vf*, limit_check& c) {
    note_limit(c, x, limit());
    return x;
  }
  FLASHOPTIM_CPU_FN static vi code(vf x, const norm&, std::uint64_t seed, std::uint64_t step, std::uint64_t index) {
    if constexpr (std::is_same<T, bf16>::value && R == format::rounding::stochastic) {
      return bf16_stochastic(x, random_bits(seed, step, index));
    } else if constexpr (std::is_same<T, fp16>::value && R == format::rounding::stochastic) {
      // format_traits<fp16>::from_float(x, stochastic, bits): the generic encoder
      return encode_small<format::fp16_spec, true>(x, random_bits(seed, step, index));
    } else {
      (void)seed, (void)step, (void)index;
      return velem<T>::from_float(x);
    }
  }
  FLASHOPTIM_CPU_FN static void store2(T* q, vi c0, vi c1) { velem<T>::store2(q, c0, c1); }
};

/// Code formats: integer codes (qmax) or fp8 codes (their format's spec and
/// exponent K, codec::fp8_code).
template <class Code>
struct vcode_info {
  static constexpr bool fp8 = false;
  static constexpr int qmax = Code::qmax;
};
template <class T>
struct vcode_info<codec::fp8_code<T>> {
  static constexpr bool fp8 = true;
  static constexpr int qmax = 0;
  using spec = typename format::format_traits<T>::spec;
};

template <class Code, class Compander, class Scale, codec::code_rounding R>
struct vstate<codec::grouped<Code, Compander, Scale, R>> {
  static constexpr bool grouped = true;
  static constexpr bool limited = false;  ///< the group maximum finds non-finite values
  FLASHOPTIM_CPU_FN static float limit() { return 0.0f; }
  using code_type = typename Code::storage;
  using scale_type = typename Scale::storage;
  static constexpr bool is_fp8 = vcode_info<Code>::fp8;
  static constexpr int qmax = vcode_info<Code>::qmax;
  static constexpr int qmin = Code::is_signed ? -qmax : 0;
  // by the compander's declared kind (codec/compander.hpp), not its type
  static constexpr bool is_sqrt = codec::compander_kind_of<Compander> == codec::compander_kind::sqrt;
  static constexpr bool is_softsign = codec::compander_kind_of<Compander> == codec::compander_kind::softsign;
  static constexpr bool divides = std::is_same<typename Scale::norm_type, float>::value;
  static_assert(divides || std::is_same<typename Scale::norm_type, codec::reciprocal_norm>::value,
                "vector_scale lists only dividing and reciprocal scale formats");
  /// round_code's clamp to [qmin, qmax] changes nothing when |y| <= 1 (both
  /// normalizations guarantee it, softsign keeps it), y >= 0 for unsigned
  /// codes (the sqrt compander) and the offset is 0.5: floor(127 * y + 0.5)
  /// stays within [-127, 127]. A stochastic offset just below 1 can round
  /// qmax + u up to qmax + 1, so that mode keeps it.
  static constexpr bool clamps = !is_fp8 && (R == codec::code_rounding::stochastic || (!Code::is_signed && !is_sqrt));
  /// apply_reciprocal's clamp of n to [-1, 1] cannot change a code when the
  /// scale is the group maximum itself (scale_fp32): t * RN(1/s) exceeds 1 by
  /// at most 2^-23 for |t| <= s, so y <= 1 + 2^-22 and floor(qmax * y + 0.5)
  /// is still qmax (-qmax below); a stochastic offset reaches qmax + 1 with
  /// or without it, and the code clamp takes that back. Rounded-up 16-bit
  /// scales saturate below the maximum, so they keep it. fp8 codes round
  /// y * 2^K: 2^K (1 + 2^-22) rounds to nearest 2^K as the clamped 1 does,
  /// but stochastic rounding could carry it up a step, so that mode keeps
  /// the clamp.
  static constexpr bool clamps_n =
      !std::is_same<Scale, codec::scale_fp32>::value || (is_fp8 && R == codec::code_rounding::stochastic);
  /// Integer codes rounded half up whose multiply and add fold into one FMA
  /// (encode): every normalization here gives |y| <= 1 + 2^-22, and the fold
  /// lemma holds there for qmax = 127 and 254, and for qmax = 255 on y >= 0
  /// (the sqrt compander's).
  static constexpr bool folds = !is_fp8 && R != codec::code_rounding::stochastic &&
                                (qmax == 127 || qmax == 254 || (qmax == 255 && is_sqrt));

  using scale_value = vf;
  struct norm {
    vf pre, factor;  ///< reciprocal_norm, or the divisor in `factor`
    bool has_pre;
  };
  using block_scales = vf;
  using block_norms = norm;  ///< lane g: group g

  // ---- one group: the scale format's own functions
  FLASHOPTIM_CPU_FN static vf load_scale(const scale_type* s) { return ops::set1(Scale::load(*s)); }
  /// grouped::encode_tile's scale, from the group's finite maximum |t|.
  FLASHOPTIM_CPU_FN static norm store_scale(std::int32_t amax_bits, scale_type* s) {
    const float amax = format::float_from_bits(static_cast<std::uint32_t>(amax_bits));
    const scale_type stored = Scale::store(amax);
    *s = stored;
    const auto n = Scale::make_norm(amax, stored);
    if constexpr (divides) {
      return {ops::set1(1.0f), ops::set1(n), false};
    } else {
      return {ops::set1(n.pre), ops::set1(n.factor), n.pre != 1.0f};
    }
  }

  // ---- a block of `lanes` groups: the same on vectors of scales
  FLASHOPTIM_CPU_FN static vf load_scales(const scale_type* s) { return vscale<Scale>::load(s); }
  FLASHOPTIM_CPU_FN static vf scale_of(vf scales, int g) { return ops::broadcast_lane(scales, g); }
  FLASHOPTIM_CPU_FN static norm store_scales(vi amax_bits, scale_type* s) {
    const vf used = vscale<Scale>::store(ops::as_f(amax_bits), s);
    if constexpr (divides) {
      return {ops::set1(1.0f), used, false};
    } else {
      const vreciprocal r = make_reciprocal(used);
      // t * 1 is t: a block with any pre != 1 multiplies all its groups
      return {r.pre, r.factor, ops::any_neqi(ops::as_i(r.pre), ops::as_i(ops::set1(1.0f)))};
    }
  }
  FLASHOPTIM_CPU_FN static norm norm_of(const norm& n, int g) {
    return {n.has_pre ? ops::broadcast_lane(n.pre, g) : n.pre, ops::broadcast_lane(n.factor, g), n.has_pre};
  }

  /// Whether any of the n codes at q (n a multiple of 32) is the sentinel
  /// (int8: -128, uint8: 255; the byte s is found as the byte maximum of
  /// b ^ ~s reaching 0xff), or for fp8 codes a magnitude above the format's
  /// largest finite one (the sentinel, NaN, or for e5m2 an infinity): the
  /// group then takes the scalar step. One pass over the bytes, before the
  /// group is stepped.
  FLASHOPTIM_CPU_FN static bool codes_have_sentinel(const code_type* q, int n) {
    static_assert(sizeof(code_type) == 1, "byte codes");
    if constexpr (is_fp8) {
      return ops::any_byte_above(q, n, 0x7f, 0, static_cast<std::uint8_t>(vcode_info<Code>::spec::max_finite_bits));
    } else if constexpr (Code::has_sentinel) {
      const auto s = static_cast<std::uint8_t>(Code::sentinel());
      return ops::any_byte_above(q, n, 0xff, static_cast<std::uint8_t>(~s), 0xfe);
    } else {
      (void)q, (void)n;
      return false;
    }
  }

  /// fp8_code::value = to_float(q) * 2^-K for a finite code, exactly: normal
  /// codes by placing the bits in an fp32 with the exponent rebased (bias and
  /// K), subnormal ones (exponent field 0) as mant * 2^(emin - M - K), a
  /// small integer times a power of two; the sign bit moved to bit 31.
  FLASHOPTIM_CPU_FN static vf fp8_value(vi q) {
    using S = typename vcode_info<Code>::spec;
    constexpr int M = S::mant_bits;
    const vi m = ops::andi(q, ops::set1i(0x7f));
    const vf normal = ops::as_f(ops::addi(ops::slli<23 - M>(m), ops::set1i((127 - S::bias - Code::exponent) << 23)));
    const vf sub = ops::mul(ops::to_float(m), ops::set1(format::pow2(S::emin - M - Code::exponent)));
    const vf mag = ops::select(ops::gti(ops::set1i(1 << M), m), sub, normal);
    return ops::as_f(ops::ori(ops::as_i(mag), ops::slli<24>(ops::andi(q, ops::set1i(0x80)))));
  }

  /// grouped::decode(code_value(q), scale), code_value = post_inverse(value(q)).
  /// A sentinel decodes to some value; codes_have_sentinel sent its group
  /// to the scalar step.
  FLASHOPTIM_CPU_FN static vf decode(const code_type* q, vf scale) {
    const vi qi = velem<code_type>::load(q);
    vf y;
    if constexpr (is_fp8) {
      y = fp8_value(qi);
    } else {
      y = div_by_constant(ops::to_float(qi), ops::set1(static_cast<float>(qmax)), ops::set1(1.0f / static_cast<float>(qmax)));
    }
    if (is_softsign) y = ops::div(y, ops::sub(ops::set1(2.0f), ops::abs(y)));
    const vf t = ops::mul(y, scale);
    return is_sqrt ? ops::mul(t, t) : t;
  }

  /// Compander::pre; the sqrt compander takes sqrt(x) from the rule when it
  /// computed one from the same x.
  FLASHOPTIM_CPU_FN static vf pre(vf x, const vf* sqrt_x, limit_check&) { return is_sqrt ? (sqrt_x ? *sqrt_x : ops::sqrt(x)) : x; }

  /// Running maximum of |t| as integers: the same order as the floats for
  /// finite values, and infinities and NaNs above all of them.
  FLASHOPTIM_CPU_FN static vi amax_bits(vi acc, vf t) { return ops::maxi(acc, ops::andi(ops::as_i(t), ops::set1i(0x7fffffff))); }

  /// grouped::encode_tile's codes: normalize, post, detail::round_code. The
  /// code of each lane, in its low bits (store2 stores a pair of vectors).
  FLASHOPTIM_CPU_FN static vi code(vf t, const norm& nm, std::uint64_t seed, std::uint64_t step, std::uint64_t index) {
    (void)seed, (void)step, (void)index;
    vf n;
    if constexpr (divides) {
      n = ops::div(t, nm.factor);  // scale_fp16_reference::normalize
    } else {
      // detail::apply_reciprocal; t * 1 is t for every non-NaN t
      n = ops::mul(nm.has_pre ? ops::mul(t, nm.pre) : t, nm.factor);
      if (clamps_n) n = ops::min(is_sqrt ? n : ops::max(n, ops::set1(-1.0f)), ops::set1(1.0f));
    }
    vi c;
    vf positive_where = n;  ///< > 0 exactly where y > 0 (half_up_nonzero)
    if constexpr (folds) {
      // The codes rounded half up, as kernel/proven_math.hpp's element rules:
      // floor(RN(RN(qmax * y) + 0.5)) is floor(RN(qmax * y + 0.5)) (the fold
      // lemma, for every |y| <= 1.01 and qmax = 127 or 254, and for y >= 0
      // and qmax = 255; tests/gpu/proven_math_test.cpp sweeps every such y),
      // one FMA. softsign's y = RN(2n / (1 + |n|)) is 2 RN(n / (1 + |n|))
      // exactly (that quotient is normal, or n itself where 1 + |n| rounds
      // to 1), so its code is floor(RN(2 qmax * q + 0.5)) with q the half
      // quotient: the same real number before the one rounding.
      const vf h = is_softsign ? ops::div(n, ops::add(ops::set1(1.0f), ops::abs(n))) : n;
      c = ops::floor_to_int(ops::fma(h, ops::set1(static_cast<float>(is_softsign ? 2 * qmax : qmax)), ops::set1(0.5f)));
      positive_where = h;
    } else {
      const vf y = is_softsign ? ops::div(ops::mul(ops::set1(2.0f), n), ops::add(ops::set1(1.0f), ops::abs(n))) : n;
      if constexpr (is_fp8) {
        // fp8_code::quantize: y * 2^K (exact) through the format's conversion
        constexpr bool sr = R == codec::code_rounding::stochastic;
        const vf s = ops::mul(y, ops::set1(format::pow2(Code::exponent)));
        c = encode_small<typename vcode_info<Code>::spec, sr>(s, sr ? random_bits(seed, step, index) : ops::set1i(0));
        // half_up_nonzero: a positive y never gives code 0 (c is 0 .. 0x7e
        // there); no clamp (clamps is false for fp8 codes)
        if (R == codec::code_rounding::half_up_nonzero) c = ops::maxi_where(ops::gt(y, ops::set1(0.0f)), c, ops::set1i(1));
        return c;
      } else {
        const vf scaled = ops::mul(y, ops::set1(static_cast<float>(qmax)));
        vf offset;
        if constexpr (R == codec::code_rounding::stochastic) {
          offset = ops::mul(ops::to_float(ops::srli<8>(random_bits(seed, step, index))), ops::set1(0x1p-24f));
        } else {
          offset = ops::set1(0.5f);
        }
        c = ops::floor_to_int(ops::add(scaled, offset));
        positive_where = y;
      }
    }
    if (clamps) c = ops::mini(ops::maxi(c, ops::set1i(qmin)), ops::set1i(qmax));
    // half_up_nonzero: a positive y never rounds to 0 (c >= 0 there)
    if (R == codec::code_rounding::half_up_nonzero)
      c = ops::maxi_where(ops::gt(positive_where, ops::set1(0.0f)), c, ops::set1i(1));
    return c;
  }
  FLASHOPTIM_CPU_FN static void store2(code_type* q, vi c0, vi c1) { velem<code_type>::store2(q, c0, c1); }
};

// ------------------------------------------------------------ the block step

template <class Config>
struct group_kernel {
  using master = vmaster<typename Config::master>;
  // the rule's declared vector form (rule/vector_form.hpp), whose scalars
  // are the rule's (vector_support.hpp checks)
  using vr = vrule<rule::vector_form_t<typename Config::rule>>;
  static constexpr int K = Config::num_slots;
  // Loops over slots are FLASHOPTIM_CPU_FOR_SLOTS (vector_support.hpp),
  // unrolled in these target-attributed functions: no lambda, whose target
  // attribute nvcc's front end would drop.
  static_assert(K <= FLASHOPTIM_CPU_MAX_SLOTS, "FLASHOPTIM_CPU_FOR_SLOTS unrolls at most FLASHOPTIM_CPU_MAX_SLOTS slots");
  template <int I>
  using vs = vstate<typename Config::template state<I>>;
  using scalars = typename Config::scalars;

  /// Per-slot values of the types of each slot's vstate.
  template <class S>
  struct slot_scales {
    typename vstate<S>::scale_value v[lanes];  ///< the decoding scale of group b of a block
  };
  template <class S>
  struct slot_norms {
    typename vstate<S>::norm v[lanes];  ///< the encoding norm of group b of a block
  };
  using scales_type = typename Config::template slot_map<slot_scales>;
  using norms_type = typename Config::template slot_map<slot_norms>;

  struct consts {
    typename vr::consts rule;
    vf inv_grad_scale;
  };
  FLASHOPTIM_CPU_FN static consts make(const scalars& sc) { return {vr::make(sc), ops::set1(sc.inv_grad_scale)}; }

  /// p + i, except for the absent buffers of none_t slots.
  template <class P>
  FLASHOPTIM_CPU_FN static P* at(P* p, std::int64_t i) {
    if constexpr (std::is_same<typename std::remove_cv<P>::type, none_t>::value) {
      (void)i;
      return p;
    } else {
      return p + i;
    }
  }

  /// Everything of `Groups` groups between the update and the stores.
  template <int Groups>
  struct block {
    static constexpr int count = Groups * group_vectors;
    vi out_p[count], out_a[count];  ///< master bytes to store
    vf t[K][count];                 ///< companded states, per slot
    vi amax[K][Groups];
    limit_check lim_p, lim[K];  ///< of the updated parameters, of each plain state
  };

  /// Decodes, updates and encodes the master weight of `Groups` groups into
  /// registers, with each group's decoding scales given.
  template <int Groups>
  FLASHOPTIM_CPU_FN static void update(const consts& k, const scalars& sc, const tensor_ref<Config>& t,
                                       std::int64_t begin, const scales_type& scales, block<Groups>& r) {
    r.lim_p = limit_start();
    FLASHOPTIM_CPU_FOR_SLOTS(K, I, { r.lim[I] = limit_start(); });
    for (int b = 0; b < Groups; ++b) {
      for (int q = 0; q < K; ++q) r.amax[q][b] = ops::set1i(0);
      for (int j = 0; j < group_vectors; ++j) {
        const int i = b * group_vectors + j;
        const std::int64_t e = begin + i * lanes;
        typename master::raw raw;
        const vf x = master::decode(t.param + e, at(t.aux, e), raw);
        vf st[K];
        FLASHOPTIM_CPU_FOR_SLOTS(K, I, {
          st[I] = vs<I>::decode(at(slot_at<I>(t.states).codes, e), slot_at<I>(scales).v[b]);
        });
        vf g = velem<typename Config::grad_type>::load_value(t.grad + e);
        // A non-finite g needs no check of its own: every rule carries it
        // into p or m (0 * inf is NaN).
        g = ops::mul(g, k.inv_grad_scale);
        vf p = x, sqrt_v;
        vr::apply(k.rule, sc, g, p, st, sqrt_v);
        note_limit(r.lim_p, p, codec::master_limit<typename Config::master>::value());
        master::encode(x, p, raw, r.out_p[i], r.out_a[i]);
        FLASHOPTIM_CPU_FOR_SLOTS(K, I, {
          // the rule's square root of this slot's value, when it has it
          r.t[I][i] = vs<I>::pre(st[I], vr::sqrt_slot == I ? &sqrt_v : nullptr, r.lim[I]);
          r.amax[I][b] = vs<I>::amax_bits(r.amax[I][b], r.t[I][i]);
        });
      }
    }
  }

  /// Stores the master bytes and encodes the states of group b of a block,
  /// two vectors at a time (a group is 2 or 4 of them: the pair stores of
  /// simd_avx512.hpp take fewer shuffles than two single ones).
  template <int Groups>
  FLASHOPTIM_CPU_FN static void store_group(const tensor_ref<Config>& t, std::int64_t begin, std::uint64_t step,
                                            const block<Groups>& r, int b, const norms_type& norms) {
    static_assert(group_vectors % 2 == 0, "vectors of a group go in pairs");
    for (int j = 0; j < group_vectors; j += 2) {
      const int i = b * group_vectors + j;
      const std::int64_t e = begin + i * lanes;
      const std::uint64_t index = t.index_base + static_cast<std::uint64_t>(e);
      master::store2(t.param + e, at(t.aux, e), r.out_p[i], r.out_a[i], r.out_p[i + 1], r.out_a[i + 1]);
      FLASHOPTIM_CPU_FOR_SLOTS(K, I, {
        const auto& norm = slot_at<I>(norms).v[b];
        const std::uint64_t seed = t.seed ^ ::flashoptim::detail::slot_salt_of(I);
        vs<I>::store2(at(slot_at<I>(t.states).codes, e), vs<I>::code(r.t[I][i], norm, seed, step, index),
                      vs<I>::code(r.t[I][i + 1], norm, seed, step, index + lanes));
      });
    }
  }

  template <int Groups>
  FLASHOPTIM_CPU_FN static bool clean(const block<Groups>& r) {
    vm bad = beyond_limit(r.lim_p, codec::master_limit<typename Config::master>::value());
    FLASHOPTIM_CPU_FOR_SLOTS(K, I, {
      if (vs<I>::limited) bad = ops::mor(bad, beyond_limit(r.lim[I], vs<I>::limit()));
    });
    return !ops::any(bad);
  }

  /// Whether a stored code of the `Groups` groups from element `begin` is a
  /// sentinel (those groups take the scalar step, nothing written).
  template <int Groups>
  FLASHOPTIM_CPU_FN static bool has_sentinel(const tensor_ref<Config>& t, std::int64_t begin) {
    bool sentinel = false;
    FLASHOPTIM_CPU_FOR_SLOTS(K, I, {
      sentinel = sentinel || vs<I>::codes_have_sentinel(at(slot_at<I>(t.states).codes, begin), Groups * 32);
    });
    return sentinel;
  }

  /// Steps the whole group starting at element `begin` of `t`, scales through
  /// the scale formats' own functions. Returns false, having written
  /// nothing, when it needs the scalar step.
  FLASHOPTIM_CPU_FN static bool run_group(const consts& k, const scalars& sc, const tensor_ref<Config>& t,
                                          std::int64_t begin, std::uint64_t step) {
    if (has_sentinel<1>(t, begin)) return false;
    const std::int64_t group = begin / 32;
    scales_type scales;
    FLASHOPTIM_CPU_FOR_SLOTS(K, I, {
      slot_at<I>(scales).v[0] = vs<I>::load_scale(at(slot_at<I>(t.states).scales, group));
    });
    block<1> r;
    update<1>(k, sc, t, begin, scales, r);
    std::int32_t max[K];
    bool finite = true;
    FLASHOPTIM_CPU_FOR_SLOTS(K, I, {
      max[I] = vs<I>::grouped ? ops::hmaxi(r.amax[I][0]) : 0;
      finite = finite && max[I] < 0x7f800000;
    });
    if (!finite || !clean(r)) return false;
    norms_type norms;
    FLASHOPTIM_CPU_FOR_SLOTS(K, I, {
      slot_at<I>(norms).v[0] = vs<I>::store_scale(max[I], at(slot_at<I>(t.states).scales, group));
    });
    store_group(t, begin, step, r, 0, norms);
    return true;
  }

  /// The same for `lanes` consecutive groups, their scales as one vector.
  FLASHOPTIM_CPU_FN static bool run_block(const consts& k, const scalars& sc, const tensor_ref<Config>& t,
                                          std::int64_t begin, std::uint64_t step) {
    if (has_sentinel<lanes>(t, begin)) return false;
    const std::int64_t group = begin / 32;
    scales_type scales;
    FLASHOPTIM_CPU_FOR_SLOTS(K, I, {
      const auto block_scales = vs<I>::load_scales(at(slot_at<I>(t.states).scales, group));
      for (int b = 0; b < lanes; ++b) slot_at<I>(scales).v[b] = vs<I>::scale_of(block_scales, b);
    });
    block<lanes> r;
    update<lanes>(k, sc, t, begin, scales, r);
    vi max[K];
    vm over = ops::mask_none();
    const vi finite_limit = ops::set1i(0x7f7fffff);
    FLASHOPTIM_CPU_FOR_SLOTS(K, I, {
      max[I] = vs<I>::grouped ? ops::transpose_max(r.amax[I]) : ops::set1i(0);
      over = ops::mor(over, ops::gti(max[I], finite_limit));
    });
    if (ops::any(over) || !clean(r)) return false;
    norms_type norms;
    FLASHOPTIM_CPU_FOR_SLOTS(K, I, {
      const auto block_norms = vs<I>::store_scales(max[I], at(slot_at<I>(t.states).scales, group));
      for (int b = 0; b < lanes; ++b) slot_at<I>(norms).v[b] = vs<I>::norm_of(block_norms, b);
    });
    for (int b = 0; b < lanes; ++b) store_group(t, begin, step, r, b, norms);
    return true;
  }
};

/// Prefetches the group `Bytes` bytes of buffer p ahead of the one at
/// element `first` (one prefetch per 64-byte line), when that group is
/// inside the buffer's `size` elements: no address outside the buffer.
template <std::int64_t Bytes, class P>
FLASHOPTIM_CPU_FN void prefetch_ahead(P* p, std::int64_t first, std::int64_t size) {
  if constexpr (Bytes > 0 && !std::is_same<typename std::remove_cv<P>::type, none_t>::value) {
    constexpr std::int64_t ahead = Bytes / static_cast<std::int64_t>(sizeof(P));
    constexpr int group_bytes = 32 * static_cast<int>(sizeof(P));
    if (first + ahead + 32 <= size) {
      const char* a = reinterpret_cast<const char*>(p + first + ahead);
      for (int k = 0; k < group_bytes; k += 64) __builtin_prefetch(a + k, 0, 3);
    }
  }
}

/// Steps groups [group_begin, group_end) of one tensor: whole groups on this
/// instruction set (`lanes` at a time, then one by one), the partial last
/// group and groups holding non-finite values through `scalar`
/// (cpu::step_tile_at).
template <class Config>
FLASHOPTIM_CPU_ENTRY void run_groups(const typename Config::scalars& sc, const tensor_ref<Config>& t,
                                     std::int64_t group_begin, std::int64_t group_end, std::uint64_t step,
                                     ::flashoptim::cpu::detail::scalar_group_fn<Config> scalar) {
  using kernel = group_kernel<Config>;
  const typename kernel::consts k = kernel::make(sc);
  const std::int64_t whole = t.size / 32;
  const std::int64_t vector_end = group_end < whole ? group_end : whole;
  std::int64_t g = group_begin;
  // Without a grouped state there is no group maximum to wait on, so the
  // blocks of `lanes` groups (whose point is to overlap those chains) only
  // add the block's round trip through the stack: such configurations go
  // one group at a time, all in registers (fp32 AdamW: 1.19 -> 1.40 G
  // params/s on one core, docs/cpu.md).
  bool any_grouped = false;
  FLASHOPTIM_CPU_FOR_SLOTS(kernel::K, I, {
    any_grouped = any_grouped || kernel::template vs<I>::grouped;
  });
  if (!any_grouped) {
    // (tuning/cpu.hpp, plain_prefetch_bytes: the loads of a group some way
    // ahead, while this one is stepped)
    constexpr std::int64_t pf = ::flashoptim::tuning::cpu::plain_prefetch_bytes;
    for (; g < vector_end; ++g) {
      const std::int64_t e = g * 32;
      prefetch_ahead<pf>(t.param, e, t.size);
      if constexpr (Config::has_aux) prefetch_ahead<pf>(t.aux, e, t.size);
      prefetch_ahead<pf>(t.grad, e, t.size);
      FLASHOPTIM_CPU_FOR_SLOTS(kernel::K, I, { prefetch_ahead<pf>(slot_at<I>(t.states).codes, e, t.size); });
      if (!kernel::run_group(k, sc, t, e, step)) scalar(sc, t, e, step);
    }
  }
  for (; g + lanes <= vector_end; g += lanes) {
    if (kernel::run_block(k, sc, t, g * 32, step)) continue;
    for (int b = 0; b < lanes; ++b) {
      if (!kernel::run_group(k, sc, t, (g + b) * 32, step)) scalar(sc, t, (g + b) * 32, step);
    }
  }
  for (; g < vector_end; ++g) {
    if (!kernel::run_group(k, sc, t, g * 32, step)) scalar(sc, t, g * 32, step);
  }
  for (; g < group_end; ++g) scalar(sc, t, g * 32, step);
}
