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
// definition. The vector code covers the finite path only: a block of groups
// in which any gradient, updated value or companded state is NaN or
// infinite, or any stored code is a sentinel, is stepped by the scalar
// step_tile instead (nothing of it has been written when that is decided),
// so the NaN payload and sentinel rules of the codecs have one implementation.
//
// A block of several groups is stepped at once: a group's encode waits for
// its maximum over all 32 elements, and with one group in flight the
// processor would mostly wait on that chain.

using vf = ops::vf;
using vi = ops::vi;
using vm = ops::vm;

inline constexpr int lanes = ops::width;
/// Vectors per group of 32.
inline constexpr int group_vectors = 32 / ops::width;

// ------------------------------------------------------------ format helpers

/// format::pow2 for k in the normal exponent range.
FLASHOPTIM_CPU_FN vf pow2(vi k) { return ops::as_f(ops::slli<23>(ops::addi(k, ops::set1i(127)))); }

/// format::scale_pow2: x * 2^floor(k/2) * 2^(k - floor(k/2)); the arithmetic
/// shift is floor(k/2) for negative k as well.
FLASHOPTIM_CPU_FN vf scale_pow2(vf x, vi k) {
  const vi k1 = ops::srai<1>(k);
  return ops::mul(ops::mul(x, pow2(k1)), pow2(ops::subi(k, k1)));
}

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

/// rounding_key{seed, step, index}.bits(i) for the lanes i = 0 .. lanes-1.
FLASHOPTIM_CPU_FN vi random_bits(std::uint64_t seed, std::uint64_t step, std::uint64_t index) {
  return ops::random_bits(seed ^ (step * 0x9e3779b97f4a7c15ull), index);
}

/// Storage element types as int32 lanes: the raw bits (`load`/`store`), and
/// their fp32 value (`value`, `from_float` round to nearest even, non-NaN).
template <class T>
struct velem;
template <>
struct velem<float> {
  FLASHOPTIM_CPU_FN static vi load(const float* p) { return ops::load_i32(p); }
  FLASHOPTIM_CPU_FN static void store(float* p, vi x) { ops::store_i32(p, x); }
  FLASHOPTIM_CPU_FN static vf value(vi raw) { return ops::as_f(raw); }
  FLASHOPTIM_CPU_FN static vf load_value(const float* p) { return ops::load(p); }
  FLASHOPTIM_CPU_FN static vi from_float(vf x) { return ops::as_i(x); }
};
template <>
struct velem<bf16> {
  FLASHOPTIM_CPU_FN static vi load(const bf16* p) { return ops::load_u16(p); }
  FLASHOPTIM_CPU_FN static void store(bf16* p, vi x) { ops::store_16(p, x); }
  FLASHOPTIM_CPU_FN static vf value(vi raw) { return ops::as_f(ops::slli<16>(raw)); }
  FLASHOPTIM_CPU_FN static vf load_value(const bf16* p) { return value(load(p)); }
  FLASHOPTIM_CPU_FN static vi from_float(vf x) { return bf16_rne(x); }
};
template <>
struct velem<fp16> {
  FLASHOPTIM_CPU_FN static vi load(const fp16* p) { return ops::load_u16(p); }
  FLASHOPTIM_CPU_FN static void store(fp16* p, vi x) { ops::store_16(p, x); }
  FLASHOPTIM_CPU_FN static vf value(vi raw) { return ops::half_to_float(raw); }
  FLASHOPTIM_CPU_FN static vf load_value(const fp16* p) { return ops::load_half(p); }
  // vcvtps2ph with an immediate RNE is IEEE's conversion: overflow to inf,
  // subnormal results kept (checked against encode_small_float in tests/cpu).
  FLASHOPTIM_CPU_FN static vi from_float(vf x) { return ops::float_to_half(x); }
};
template <>
struct velem<std::int8_t> {
  FLASHOPTIM_CPU_FN static vi load(const std::int8_t* p) { return ops::load_i8(p); }
  FLASHOPTIM_CPU_FN static void store(std::int8_t* p, vi x) { ops::store_8(p, x); }
};
template <>
struct velem<std::uint8_t> {
  FLASHOPTIM_CPU_FN static vi load(const std::uint8_t* p) { return ops::load_u8(p); }
  FLASHOPTIM_CPU_FN static void store(std::uint8_t* p, vi x) { ops::store_8(p, x); }
};
template <>
struct velem<std::int16_t> {
  FLASHOPTIM_CPU_FN static vi load(const std::int16_t* p) { return ops::load_i16(p); }
  FLASHOPTIM_CPU_FN static void store(std::int16_t* p, vi x) { ops::store_16(p, x); }
};
template <>
struct velem<std::uint16_t> {
  FLASHOPTIM_CPU_FN static vi load(const std::uint16_t* p) { return ops::load_u16(p); }
  FLASHOPTIM_CPU_FN static void store(std::uint16_t* p, vi x) { ops::store_16(p, x); }
};

// ------------------------------------------------------------ master modes
// One vector at a time. decode(param, aux) -> x, keeping the raw bytes;
// encode(before, after) -> the bytes to store: the new encoding of every lane
// whose fp32 value changed, the old bytes of the others (master_update).

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
  FLASHOPTIM_CPU_FN static void encode(vf before, vf after, const raw& r, vi& p, vi&) {
    p = ops::selecti(ops::neqi(ops::as_i(before), ops::as_i(after)), velem<T>::from_float(after), r.p);
  }
  FLASHOPTIM_CPU_FN static void store(T* p, none_t*, vi bits_p, vi) { velem<T>::store(p, bits_p); }
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
    const vm changed = ops::neqi(ops::as_i(before), ops::as_i(after));
    a = ops::selecti(changed, ops::as_i(after), r.a);
    p = ops::selecti(changed, velem<T>::from_float(after), r.p);
  }
  FLASHOPTIM_CPU_FN static void store(T* p, float* a, vi bits_p, vi bits_a) {
    velem<T>::store(p, bits_p);
    ops::store_i32(a, bits_a);
  }
};

/// codec::ulp_correction: x = float(lo) + scale_pow2(c / M, E(lo) - mant - 1).
///
/// scale_pow2's two factors are exact here, so its result is one rounding of
/// the exact product, and any exact way to the same product gives the same
/// bits. Decode: h = 2^E * 2^-(mant+1) is exact (a power of two down to
/// 2^-134, subnormal for the tiniest bf16), then f * h rounds once. Encode:
/// e * 2^(1-E) * 2^mant, each product exact (e is a multiple of 2^(E-24)
/// below 2^(E-8), or any finite value when lo is zero). 2^E comes from lo's
/// fp32 exponent field, raised to T's smallest normal exponent for zero and
/// subnormals: no branch, no special case.
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
  FLASHOPTIM_CPU_FN static vf decode(const T* p, const C* a, raw& r) {
    r.p = velem<T>::load(p);
    r.a = velem<C>::load(a);
    const vf f = div_by_constant(ops::to_float(r.a), ops::set1(static_cast<float>(mode::max_code)),
                                 ops::set1(1.0f / static_cast<float>(mode::max_code)));
    const vf lo = velem<T>::value(r.p);
    const vf h = ops::mul(ops::as_f(exponent_power(lo)), ops::set1(format::pow2(-(mant + 1))));
    return ops::add(lo, ops::mul(f, h));
  }
  /// ulp_correction::correction for finite x and lo = RNE(x). Its clamp to
  /// [-1, 1] is left out: e / h is exact and |x - RNE(x)| <= h for every x
  /// whose lo is finite (h: half an ULP of lo, or of the binade below when x
  /// rounds up to a power of two), so it never changes a value.
  FLASHOPTIM_CPU_FN static vi correction(vf x, vi lo) {
    const vf lo_value = velem<T>::value(lo);
    const vf e = ops::sub(x, lo_value);
    const vf inv = ops::as_f(ops::subi(ops::set1i(255 << 23), exponent_power(lo_value)));  // 2^(1-E)
    const vf en = ops::mul(ops::mul(e, inv), ops::set1(format::pow2(mant)));
    const vf s = ops::mul(en, ops::set1(static_cast<float>(mode::max_code)));
    // copysign(floor(|s| + 0.5), s) is trunc(s +- 0.5): |s| + 0.5 and
    // -(|s| + 0.5) round alike, and trunc is floor on the magnitude.
    const vi c = ops::to_int(ops::add(s, ops::copysign(ops::set1(0.5f), s)));
    // e is non-finite only where x overflowed T (lo = +-inf): c = 0
    return ops::selecti(ops::nonfinite(e), ops::set1i(0), c);
  }
  FLASHOPTIM_CPU_FN static void encode(vf before, vf after, const raw& r, vi& p, vi& a) {
    const vm changed = ops::neqi(ops::as_i(before), ops::as_i(after));
    const vi lo = velem<T>::from_float(after);
    p = ops::selecti(changed, lo, r.p);
    a = ops::selecti(changed, correction(after, lo), r.a);
  }
  FLASHOPTIM_CPU_FN static void store(T* p, C* a, vi bits_p, vi bits_a) {
    velem<T>::store(p, bits_p);
    velem<C>::store(a, bits_a);
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
    const vm changed = ops::neqi(ops::as_i(before), ops::as_i(after));
    const vi u = ops::as_i(after);
    const vi lo = ops::andi(u, ops::set1i(0xffff));
    p = ops::selecti(changed, ops::addi(ops::srli<16>(u), ops::srli<15>(lo)), r.p);
    a = ops::selecti(changed, lo, r.a);
  }
  FLASHOPTIM_CPU_FN static void store(bf16* p, std::uint16_t* a, vi bits_p, vi bits_a) {
    ops::store_16(p, bits_p);
    ops::store_16(a, bits_a);
  }
};

// ------------------------------------------------------------ rules
// consts: the step's scalars broadcast once per run of groups.
// apply: Rule::apply on every lane, same operations in the same order. Adam
// also hands out sqrt(v), which the sqrt compander of its second moment
// would compute again from the same v.

template <class Rule>
struct vrule;

template <bool Decoupled>
struct vrule<rule::adam_rule<Decoupled>> {
  using scalars = typename rule::adam_rule<Decoupled>::scalars;
  static constexpr bool gives_sqrt_v = true;
  struct consts {
    vf beta1, one_minus_beta1, beta2, one_minus_beta2, neg_step_size, inv_sqrt_bc2, eps, weight_decay, decay;
  };
  FLASHOPTIM_CPU_FN static consts make(const scalars& s) {
    return {ops::set1(s.beta1),           ops::set1(s.one_minus_beta1), ops::set1(s.beta2),
            ops::set1(s.one_minus_beta2), ops::set1(s.neg_step_size),   ops::set1(s.inv_sqrt_bc2),
            ops::set1(s.eps),             ops::set1(s.weight_decay),    ops::set1(s.decay)};
  }
  FLASHOPTIM_CPU_FN static void apply(const consts& k, const scalars&, vf g, vf& p, vf& m, vf& v, vf& sqrt_v) {
    if (Decoupled) {
      p = ops::mul(p, k.decay);
    } else {
      g = ops::fma(k.weight_decay, p, g);
    }
    m = ops::fma(k.beta1, m, ops::mul(k.one_minus_beta1, g));
    v = ops::fma(k.beta2, v, ops::mul(ops::mul(k.one_minus_beta2, g), g));
    sqrt_v = ops::sqrt(v);
    const vf d = ops::fma(sqrt_v, k.inv_sqrt_bc2, k.eps);
    p = ops::fma(k.neg_step_size, ops::div(m, d), p);
  }
};

template <bool Decoupled>
struct vrule<rule::sgd_rule<Decoupled>> {
  using scalars = typename rule::sgd_rule<Decoupled>::scalars;
  static constexpr bool gives_sqrt_v = false;
  struct consts {
    vf neg_lr, weight_decay, decay, momentum, one_minus_dampening;
  };
  FLASHOPTIM_CPU_FN static consts make(const scalars& s) {
    return {ops::set1(s.neg_lr), ops::set1(s.weight_decay), ops::set1(s.decay), ops::set1(s.momentum),
            ops::set1(s.one_minus_dampening)};
  }
  FLASHOPTIM_CPU_FN static void apply(const consts& k, const scalars& s, vf g, vf& p, vf& m, vf&, vf&) {
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
  static constexpr bool gives_sqrt_v = false;
  struct consts {
    vf neg_lr, beta1, one_minus_beta1, beta2, one_minus_beta2, decay;
  };
  FLASHOPTIM_CPU_FN static consts make(const scalars& s) {
    return {ops::set1(s.neg_lr), ops::set1(s.beta1),           ops::set1(s.one_minus_beta1),
            ops::set1(s.beta2),  ops::set1(s.one_minus_beta2), ops::set1(s.decay)};
  }
  FLASHOPTIM_CPU_FN static void apply(const consts& k, const scalars&, vf g, vf& p, vf& m, vf&, vf&) {
    const vf c = ops::fma(k.beta1, m, ops::mul(k.one_minus_beta1, g));
    // lion::sign: +-1, and c * 0 for zeros (c itself: the same signed zero)
    const vf u = ops::select(ops::gt(c, ops::set1(0.0f)), ops::set1(1.0f),
                             ops::select(ops::lt(c, ops::set1(0.0f)), ops::set1(-1.0f), c));
    p = ops::fma(k.neg_lr, u, ops::mul(p, k.decay));
    m = ops::fma(k.beta2, m, ops::mul(k.one_minus_beta2, g));
  }
};

// ------------------------------------------------------------ state codecs
// Per vector: decode (flags sentinels in `bad`), pre (the companded value;
// plain codecs flag non-finite values in `bad`, grouped ones find them in
// their group maximum) and encode (`index` is the tensor index of the
// vector's first lane, for stochastic rounding). Per group: load_scale (what
// decoding multiplies by), amax_bits (the bits of max |pre(x)|: the group's
// scale input for finite values, >= 0x7f800000 when any value is not) and
// store_scale (stores the scale, returns what normalization needs).

template <class State>
struct vstate;

/// Codecs without a scale.
struct vstate_no_scale {
  static constexpr bool grouped = false;
  struct scale_value {};
  struct norm {};
  template <class S>
  FLASHOPTIM_CPU_FN static scale_value load_scale(const S*) {
    return {};
  }
  FLASHOPTIM_CPU_FN static vi amax_bits(vi acc, vf) { return acc; }
  FLASHOPTIM_CPU_FN static vi sentinel_start() { return ops::set1i(0); }
  FLASHOPTIM_CPU_FN static bool has_sentinel(vi) { return false; }
  template <class S>
  FLASHOPTIM_CPU_FN static norm store_scale(std::int32_t, S*) {
    return {};
  }
};

template <>
struct vstate<codec::none> : vstate_no_scale {
  FLASHOPTIM_CPU_FN static vf decode(const none_t*, scale_value, vi&) { return ops::set1(0.0f); }
  FLASHOPTIM_CPU_FN static vf pre(vf x, const vf*, vm&) { return x; }
  FLASHOPTIM_CPU_FN static void encode(vf, const norm&, none_t*, std::uint64_t, std::uint64_t, std::uint64_t) {}
};

template <class T, format::rounding R>
struct vstate<codec::plain<T, R>> : vstate_no_scale {
  FLASHOPTIM_CPU_FN static vf decode(const T* q, scale_value, vi&) { return velem<T>::load_value(q); }
  FLASHOPTIM_CPU_FN static vf pre(vf x, const vf*, vm& bad) {
    bad = ops::mor(bad, ops::nonfinite(x));
    return x;
  }
  FLASHOPTIM_CPU_FN static void encode(vf x, const norm&, T* q, std::uint64_t seed, std::uint64_t step,
                                       std::uint64_t index) {
    if constexpr (std::is_same<T, bf16>::value && R == format::rounding::stochastic) {
      velem<T>::store(q, bf16_stochastic(x, random_bits(seed, step, index)));
    } else {
      (void)seed, (void)step, (void)index;
      velem<T>::store(q, velem<T>::from_float(x));
    }
  }
};

template <class Code, class Compander, class Scale, codec::code_rounding R>
struct vstate<codec::grouped<Code, Compander, Scale, R>> {
  static constexpr bool grouped = true;
  using code_type = typename Code::storage;
  using scale_type = typename Scale::storage;
  static constexpr int qmax = Code::qmax;
  static constexpr int qmin = Code::is_signed ? -qmax : 0;
  static constexpr bool is_sqrt = std::is_same<Compander, codec::sqrt_compander>::value;
  static constexpr bool is_softsign = std::is_same<Compander, codec::softsign>::value;
  static constexpr bool divides = std::is_same<typename Scale::norm_type, float>::value;
  static_assert(divides || std::is_same<typename Scale::norm_type, codec::reciprocal_norm>::value,
                "vector_scale lists only dividing and reciprocal scale formats");
  /// round_code's clamp to [qmin, qmax] changes nothing when |y| <= 1 (both
  /// normalizations guarantee it, softsign keeps it), y >= 0 for unsigned
  /// codes (the sqrt compander) and the offset is 0.5: floor(127 * y + 0.5)
  /// stays within [-127, 127]. A stochastic offset just below 1 can round
  /// qmax + u up to qmax + 1, so that mode keeps it.
  static constexpr bool clamps = R == codec::code_rounding::stochastic || (!Code::is_signed && !is_sqrt);
  /// apply_reciprocal's clamp of n to [-1, 1] cannot change a code either:
  /// t * RN(1/s) exceeds 1 by at most 2^-23 for |t| <= s, so y <= 1 + 2^-22
  /// and floor(qmax * y + 0.5) is still qmax (and -qmax below); stochastic
  /// offsets reach qmax + 1 either way, which the code clamp then takes back.
  /// Only the sign of a clamped value could matter, and it is kept.
  static constexpr bool clamps_n = false;

  using scale_value = vf;
  struct norm {
    vf pre, factor;  ///< reciprocal_norm, or the divisor in `factor`
    bool has_pre;
  };

  FLASHOPTIM_CPU_FN static vf load_scale(const scale_type* s) { return ops::set1(Scale::load(*s)); }

  /// Sentinels are the extreme codes (int8: -128, uint8: 255): a running
  /// minimum (signed) or maximum (unsigned) of the codes finds them.
  FLASHOPTIM_CPU_FN static vi sentinel_start() { return ops::set1i(Code::is_signed ? 127 : 0); }
  FLASHOPTIM_CPU_FN static bool has_sentinel(vi acc) {
    return Code::has_sentinel && ops::any(ops::eqi(acc, ops::set1i(static_cast<std::int32_t>(Code::sentinel()))));
  }

  /// grouped::decode(code_value(q), scale), code_value = post_inverse(value(q)).
  FLASHOPTIM_CPU_FN static vf decode(const code_type* q, vf scale, vi& extreme) {
    const vi qi = velem<code_type>::load(q);
    if (Code::has_sentinel) extreme = Code::is_signed ? ops::mini(extreme, qi) : ops::maxi(extreme, qi);
    vf y = div_by_constant(ops::to_float(qi), ops::set1(static_cast<float>(qmax)), ops::set1(1.0f / static_cast<float>(qmax)));
    if (is_softsign) y = ops::div(y, ops::sub(ops::set1(2.0f), ops::abs(y)));
    const vf t = ops::mul(y, scale);
    return is_sqrt ? ops::mul(t, t) : t;
  }

  /// Compander::pre; the sqrt compander takes sqrt(x) from the rule when it
  /// computed one from the same x.
  FLASHOPTIM_CPU_FN static vf pre(vf x, const vf* sqrt_x, vm&) { return is_sqrt ? (sqrt_x ? *sqrt_x : ops::sqrt(x)) : x; }

  /// Running maximum of |t| as integers: the same order as the floats for
  /// finite values, and infinities and NaNs above all of them.
  FLASHOPTIM_CPU_FN static vi amax_bits(vi acc, vf t) { return ops::maxi(acc, ops::andi(ops::as_i(t), ops::set1i(0x7fffffff))); }

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

  /// grouped::encode_tile's codes: normalize, post, detail::round_code.
  FLASHOPTIM_CPU_FN static void encode(vf t, const norm& nm, code_type* q, std::uint64_t seed, std::uint64_t step,
                                       std::uint64_t index) {
    vf n;
    if constexpr (divides) {
      n = ops::div(t, nm.factor);  // scale_fp16_reference::normalize
    } else {
      // detail::apply_reciprocal; t * 1 is t for every non-NaN t
      n = ops::mul(nm.has_pre ? ops::mul(t, nm.pre) : t, nm.factor);
      if (clamps_n) n = ops::min(is_sqrt ? n : ops::max(n, ops::set1(-1.0f)), ops::set1(1.0f));
    }
    const vf y = is_softsign ? ops::div(ops::mul(ops::set1(2.0f), n), ops::add(ops::set1(1.0f), ops::abs(n))) : n;
    const vf scaled = ops::mul(y, ops::set1(static_cast<float>(qmax)));
    vf offset;
    if constexpr (R == codec::code_rounding::stochastic) {
      offset = ops::mul(ops::to_float(ops::srli<8>(random_bits(seed, step, index))), ops::set1(0x1p-24f));
    } else {
      (void)seed, (void)step, (void)index;
      offset = ops::set1(0.5f);
    }
    vi c = ops::floor_to_int(ops::add(scaled, offset));
    if (clamps) c = ops::mini(ops::maxi(c, ops::set1i(qmin)), ops::set1i(qmax));
    // half_up_nonzero: a positive y never rounds to 0 (c >= 0 there)
    if (R == codec::code_rounding::half_up_nonzero) c = ops::maxi_where(ops::gt(y, ops::set1(0.0f)), c, ops::set1i(1));
    velem<code_type>::store(q, c);
  }
};

// ------------------------------------------------------------ the block step

template <class Config>
struct group_kernel {
  using master = vmaster<typename Config::master>;
  using vr = vrule<typename Config::rule>;
  using s0 = vstate<typename Config::state0>;
  using s1 = vstate<typename Config::state1>;
  using scalars = typename Config::scalars;

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

  /// Steps the Block whole groups starting at element `begin` of `t`.
  /// Returns false, having written nothing, when they need the scalar step.
  /// Pass 1 decodes, updates and encodes the master weight into registers;
  /// pass 2 finds each group's scale; pass 3 stores.
  template <int Block>
  FLASHOPTIM_CPU_FN static bool run(const consts& k, const scalars& sc, const tensor_ref<Config>& t,
                                    std::int64_t begin, std::uint64_t step) {
    constexpr int count = Block * group_vectors;
    const std::int64_t group = begin / 32;
    vi out_p[count], out_a[count];
    vf t0[count], t1[count];
    vi amax0[Block], amax1[Block];
    vm bad = ops::mask_none();
    vi extreme0 = s0::sentinel_start(), extreme1 = s1::sentinel_start();
    for (int b = 0; b < Block; ++b) {
      const auto scale0 = s0::load_scale(at(t.scale0, group + b));
      const auto scale1 = s1::load_scale(at(t.scale1, group + b));
      amax0[b] = amax1[b] = ops::set1i(0);
      for (int j = 0; j < group_vectors; ++j) {
        const int i = b * group_vectors + j;
        const std::int64_t e = begin + i * lanes;
        typename master::raw raw;
        const vf x = master::decode(t.param + e, at(t.aux, e), raw);
        vf m = s0::decode(at(t.code0, e), scale0, extreme0);
        vf v = s1::decode(at(t.code1, e), scale1, extreme1);
        vf g = velem<typename Config::grad_type>::load_value(t.grad + e);
        // A non-finite g needs no check of its own: every rule carries it
        // into p or m (0 * inf is NaN).
        g = ops::mul(g, k.inv_grad_scale);
        vf p = x, sqrt_v;
        vr::apply(k.rule, sc, g, p, m, v, sqrt_v);
        bad = ops::mor(bad, ops::nonfinite(p));
        master::encode(x, p, raw, out_p[i], out_a[i]);
        t0[i] = s0::pre(m, nullptr, bad);
        t1[i] = s1::pre(v, vr::gives_sqrt_v ? &sqrt_v : nullptr, bad);
        amax0[b] = s0::amax_bits(amax0[b], t0[i]);
        amax1[b] = s1::amax_bits(amax1[b], t1[i]);
      }
    }
    std::int32_t max0[Block], max1[Block];
    for (int b = 0; b < Block; ++b) {
      max0[b] = s0::grouped ? ops::hmaxi(amax0[b]) : 0;
      max1[b] = s1::grouped ? ops::hmaxi(amax1[b]) : 0;
      if (max0[b] >= 0x7f800000 || max1[b] >= 0x7f800000) return false;
    }
    if (ops::any(bad) || s0::has_sentinel(extreme0) || s1::has_sentinel(extreme1)) return false;

    for (int b = 0; b < Block; ++b) {
      const auto norm0 = s0::store_scale(max0[b], at(t.scale0, group + b));
      const auto norm1 = s1::store_scale(max1[b], at(t.scale1, group + b));
      for (int j = 0; j < group_vectors; ++j) {
        const int i = b * group_vectors + j;
        const std::int64_t e = begin + i * lanes;
        const std::uint64_t index = static_cast<std::uint64_t>(e);
        master::store(t.param + e, at(t.aux, e), out_p[i], out_a[i]);
        s0::encode(t0[i], norm0, at(t.code0, e), t.seed ^ ::flashoptim::detail::slot_salt[0], step, index);
        s1::encode(t1[i], norm1, at(t.code1, e), t.seed ^ ::flashoptim::detail::slot_salt[1], step, index);
      }
    }
    return true;
  }
};

/// Groups stepped at once by the vector path (see the file comment).
inline constexpr int block_groups = 4;

/// Steps groups [group_begin, group_end) of one tensor: whole groups on this
/// instruction set, the partial last group and blocks holding non-finite
/// values through `scalar` (cpu::step_tile_at).
template <class Config>
FLASHOPTIM_CPU_ENTRY void run_groups(const typename Config::scalars& sc, const tensor_ref<Config>& t,
                                     std::int64_t group_begin, std::int64_t group_end, std::uint64_t step,
                                     ::flashoptim::cpu::detail::scalar_group_fn<Config> scalar) {
  using kernel = group_kernel<Config>;
  const typename kernel::consts k = kernel::make(sc);
  const std::int64_t whole = t.size / 32;
  const std::int64_t vector_end = group_end < whole ? group_end : whole;
  std::int64_t g = group_begin;
  for (; g + block_groups <= vector_end; g += block_groups) {
    if (kernel::template run<block_groups>(k, sc, t, g * 32, step)) continue;
    for (int b = 0; b < block_groups; ++b) {
      if (!kernel::template run<1>(k, sc, t, (g + b) * 32, step)) scalar(sc, t, (g + b) * 32, step);
    }
  }
  for (; g < vector_end; ++g) {
    if (!kernel::template run<1>(k, sc, t, g * 32, step)) scalar(sc, t, g * 32, step);
  }
  for (; g < group_end; ++g) scalar(sc, t, g * 32, step);
}
