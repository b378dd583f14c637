// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// R32 (docs/test-matrix.md): a plain scalar model of a step, in fp32, with the
// library's canonical operation order, written from docs/contract.md's formulas
// without the library's templates. It is the bitwise oracle of the CPU and
// GPU paths. It works on raw byte buffers described at run time, and uses
// from the library only the fp32 <-> narrow conversions (checked on all 2^32
// inputs by docs/test-matrix.md C4), the counter-based random bits, and
// format::mul_rn where a product feeding an add must not be contracted.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <vector>

#include "flashoptim/format/bits.hpp"
#include "flashoptim/format/dtype.hpp"
#include "flashoptim/format/random.hpp"
#include "flashoptim/format/types.hpp"

namespace ref {

using flashoptim::dtype;
namespace format = flashoptim::format;

// ------------------------------------------------------------------ storage
inline float load_float(dtype t, const std::uint8_t* p) {
  using namespace flashoptim;
  switch (t) {
    case dtype::f32: { float f; std::memcpy(&f, p, 4); return f; }
    case dtype::bf16: { bf16 v; std::memcpy(&v, p, 2); return format::to_float(v); }
    case dtype::f16: { fp16 v; std::memcpy(&v, p, 2); return format::to_float(v); }
    case dtype::f8_e4m3: return format::to_float(fp8_e4m3{*p});
    case dtype::f8_e5m2: return format::to_float(fp8_e5m2{*p});
    default: throw std::logic_error("load_float: not a float type");
  }
}
/// Round-to-nearest-even (or stochastic) store; fp32 NaNs canonical.
inline void store_float(dtype t, std::uint8_t* p, float x, bool stochastic = false, std::uint32_t r = 0) {
  using namespace flashoptim;
  const auto mode = stochastic ? format::rounding::stochastic : format::rounding::nearest_even;
  switch (t) {
    case dtype::f32: { if (std::isnan(x)) { const std::uint32_t c = 0x7fffffffu; std::memcpy(p, &c, 4); } else std::memcpy(p, &x, 4); return; }
    case dtype::bf16: { bf16 v = format::from_float<bf16>(x, mode, r); std::memcpy(p, &v, 2); return; }
    case dtype::f16: { fp16 v = format::from_float<fp16>(x, mode, r); std::memcpy(p, &v, 2); return; }
    case dtype::f8_e4m3: *p = format::from_float<fp8_e4m3>(x, mode, r).bits; return;
    case dtype::f8_e5m2: *p = format::from_float<fp8_e5m2>(x, mode, r).bits; return;
    default: throw std::logic_error("store_float: not a float type");
  }
}
inline std::uint32_t bits(float x) { std::uint32_t u; std::memcpy(&u, &x, 4); return u; }
inline float from_bits(std::uint32_t u) { float x; std::memcpy(&x, &u, 4); return x; }

// ------------------------------------------------------------------ master modes
enum class master_kind { native, fp32_master, ulp_correction, exact_split, rounded_split };

struct master_desc {
  master_kind kind = master_kind::native;
  dtype param = dtype::f32;
  dtype aux = dtype::none;
  int max_code = 0;  // ulp_correction: 127 or 32767
};

/// Unbiased exponent of a bf16/fp16 value, 1 - bias for zero and subnormals.
inline int narrow_exponent(dtype t, std::uint16_t b) {
  const int mant = t == dtype::bf16 ? 7 : 10, bias = t == dtype::bf16 ? 127 : 15;
  const int field = (b & 0x7fff) >> mant;
  return field == 0 ? 1 - bias : field - bias;
}
inline int mant_bits(dtype t) { return t == dtype::bf16 ? 7 : 10; }

inline float master_decode(const master_desc& m, const std::uint8_t* p, const std::uint8_t* a) {
  switch (m.kind) {
    case master_kind::native: return load_float(m.param, p);
    case master_kind::fp32_master: return load_float(dtype::f32, a);
    case master_kind::ulp_correction: {
      std::uint16_t pb; std::memcpy(&pb, p, 2);
      const int c = m.aux == dtype::i8 ? static_cast<int>(static_cast<std::int8_t>(*a))
                                       : static_cast<int>(*reinterpret_cast<const std::int16_t*>(a));
      const int k = narrow_exponent(m.param, pb) - mant_bits(m.param) - 1;
      const float f = static_cast<float>(c) / static_cast<float>(m.max_code);
      const float x = load_float(m.param, p) + std::ldexp(f, k);
      // a NaN parameter decodes to the canonical NaN (the GPU's add makes it)
      return std::isnan(x) ? from_bits(0x7fffffffu) : x;
    }
    case master_kind::exact_split: {
      std::uint16_t pb, cb; std::memcpy(&pb, p, 2); std::memcpy(&cb, a, 2);
      const std::uint32_t hi = static_cast<std::uint16_t>(pb - (cb >> 15));
      return from_bits((hi << 16) | cb);
    }
    case master_kind::rounded_split: {
      // the 24-bit value (upper half * 256 + remainder) as the top 24 bits of an fp32
      std::uint16_t pb; std::memcpy(&pb, p, 2);
      const std::int32_t w = static_cast<std::int32_t>(pb) * 256 + static_cast<std::int8_t>(*a);
      return from_bits(static_cast<std::uint32_t>(w) << 8);
    }
  }
  return 0;
}

inline void master_encode(const master_desc& m, float x, std::uint8_t* p, std::uint8_t* a) {
  switch (m.kind) {
    case master_kind::native: store_float(m.param, p, x); return;
    case master_kind::fp32_master: store_float(dtype::f32, a, x); store_float(m.param, p, x); return;
    case master_kind::ulp_correction: {
      store_float(m.param, p, x);
      std::uint16_t pb; std::memcpy(&pb, p, 2);
      const float e = x - load_float(m.param, p);
      int c = 0;
      if (std::isfinite(e)) {
        const int k = narrow_exponent(m.param, pb) - mant_bits(m.param) - 1;
        float en = std::ldexp(e, -k);
        en = en < -1.0f ? -1.0f : (en > 1.0f ? 1.0f : en);
        const float s = en * static_cast<float>(m.max_code);
        c = static_cast<int>(std::copysign(std::floor(std::fabs(s) + 0.5f), s));
      }
      if (m.aux == dtype::i8) *reinterpret_cast<std::int8_t*>(a) = static_cast<std::int8_t>(c);
      else { const std::int16_t c16 = static_cast<std::int16_t>(c); std::memcpy(a, &c16, 2); }
      return;
    }
    case master_kind::exact_split: {
      const std::uint32_t u = std::isnan(x) ? 0x7fffffffu : bits(x);  // NaNs stored canonically
      std::uint16_t pb, cb;
      if ((u & 0x7fffffffu) > 0x7f800000u) { pb = static_cast<std::uint16_t>((u >> 16) | 0x40u); cb = u & 0x7fffu; }
      else { pb = static_cast<std::uint16_t>((u >> 16) + ((u & 0xffffu) >> 15)); cb = u & 0xffffu; }
      std::memcpy(p, &pb, 2); std::memcpy(a, &cb, 2);
      return;
    }
    case master_kind::rounded_split: {
      // x rounded to nearest even at a spacing of 2^(E - 15) in double, then
      // split as upper half (nearest, ties away) and signed remainder
      std::uint32_t w = 0x7fff00u;  // NaN: the canonical upper half, remainder 0
      if (!std::isnan(x)) {
        const int field = static_cast<int>((bits(x) >> 23) & 0xffu);
        const double q = std::ldexp(1.0, (field == 0 ? -126 : field - 127) - 15);
        const double r = std::nearbyint(static_cast<double>(x) / q) * q;
        const float rf = std::fabs(r) >= std::ldexp(1.0, 128) ? std::copysign(std::numeric_limits<float>::infinity(), x) : static_cast<float>(r);
        w = bits(rf) >> 8;
      }
      const std::uint16_t pb = static_cast<std::uint16_t>((w + 128u) >> 8);
      const std::int8_t c = static_cast<std::int8_t>(static_cast<std::int32_t>(w) - 256 * static_cast<std::int32_t>(pb));
      std::memcpy(p, &pb, 2); std::memcpy(a, &c, 1);
      return;
    }
  }
}

// ------------------------------------------------------------------ state codecs
enum class codec_kind { none, plain, grouped };
enum class compander_kind { identity, softsign, sqrt };
enum class scale_kind { fp32, fp16_reference, bf16_up, fp16_up };
enum class code_round { half_up, half_up_nonzero, stochastic };

struct codec_desc {
  codec_kind kind = codec_kind::none;
  dtype element = dtype::none;  // plain: element type; grouped: code type (i8, u8, f8_*)
  bool stochastic = false;      // plain: stochastic rounding
  bool sentinel = false;        // grouped
  compander_kind compander = compander_kind::identity;
  scale_kind scale = scale_kind::fp32;
  code_round rounding = code_round::half_up;

  std::size_t code_bytes() const { return kind == codec_kind::none ? 0 : flashoptim::size_of(element); }
  std::size_t scale_bytes() const {
    if (kind != codec_kind::grouped) return 0;
    return scale == scale_kind::fp32 ? 4 : 2;
  }
  int qmax() const {
    switch (element) {
      case dtype::i8: return 127;
      case dtype::u8: return sentinel ? 254 : 255;
      default: return 0;
    }
  }
};

inline float unit_uniform(std::uint32_t r) { return std::ldexp(static_cast<float>(r >> 8), -24); }

/// Value of a grouped code before scaling: post_inverse(q / qmax), NaN for a sentinel.
inline float code_value(const codec_desc& c, const std::uint8_t* q) {
  float y;
  switch (c.element) {
    case dtype::i8: {
      const int v = static_cast<std::int8_t>(*q);
      if (c.sentinel && v == -128) return NAN;
      y = static_cast<float>(v) / 127.0f;
      break;
    }
    case dtype::u8:
      if (c.sentinel && *q == 255) return NAN;
      y = static_cast<float>(*q) / static_cast<float>(c.qmax());
      break;
    case dtype::f8_e4m3:
      if ((*q & 0x7f) == 0x7f) return NAN;
      y = load_float(dtype::f8_e4m3, q) * std::ldexp(1.0f, -8);
      break;
    case dtype::f8_e5m2:
      if ((*q & 0x7f) == 0x7f) return NAN;
      y = load_float(dtype::f8_e5m2, q) * std::ldexp(1.0f, -15);
      break;
    default: throw std::logic_error("code_value");
  }
  if (c.compander == compander_kind::softsign) return y / (2.0f - std::fabs(y));
  return y;
}

inline float load_scale(const codec_desc& c, const std::uint8_t* s) {
  return c.scale == scale_kind::fp32 ? load_float(dtype::f32, s) : load_float(c.scale == scale_kind::bf16_up ? dtype::bf16 : dtype::f16, s);
}

inline void decode_group(const codec_desc& c, const std::uint8_t* codes, const std::uint8_t* scale, int count,
                         float* out) {
  if (c.kind == codec_kind::none) { for (int i = 0; i < count; ++i) out[i] = 0.0f; return; }
  if (c.kind == codec_kind::plain) {
    for (int i = 0; i < count; ++i) out[i] = load_float(c.element, codes + i * c.code_bytes());
    return;
  }
  const float s = load_scale(c, scale);
  for (int i = 0; i < count; ++i) {
    const float t = code_value(c, codes + i * c.code_bytes()) * s;
    out[i] = c.compander == compander_kind::sqrt ? t * t : t;
  }
}

/// Encodes `count` values (one group, or single elements for plain codecs).
/// `index0` is the tensor index of x[0]; `seed` already carries the slot salt.
inline void encode_group(const codec_desc& c, const float* x, int count, std::uint8_t* codes, std::uint8_t* scale,
                         std::uint64_t seed, std::uint64_t step, std::uint64_t index0) {
  using flashoptim::format::random_bits;
  if (c.kind == codec_kind::none) return;
  if (c.kind == codec_kind::plain) {
    for (int i = 0; i < count; ++i)
      store_float(c.element, codes + i * c.code_bytes(), x[i], c.stochastic,
                  c.stochastic ? random_bits(seed, step, index0 + i) : 0u);
    return;
  }
  float t[32];
  for (int i = 0; i < count; ++i) t[i] = c.compander == compander_kind::sqrt ? std::sqrt(x[i]) : x[i];
  // the group's max |t|: over finite elements with a sentinel; NaN propagates without
  float amax = 0.0f;
  for (int i = 0; i < count; ++i) {
    const float a = std::fabs(t[i]);
    if (c.sentinel && !std::isfinite(a)) continue;
    if (std::isnan(a) || std::isnan(amax)) amax = NAN;
    else if (a > amax) amax = a;
  }
  // store the scale and build the normalization
  bool divide = false;
  float divisor = 0.0f, pre = 1.0f, factor = 0.0f;
  switch (c.scale) {
    case scale_kind::fp16_reference: {
      const float clamped = std::isnan(amax) ? 1e-12f : (amax > 1e-12f ? amax : 1e-12f);
      // fmaxf(NaN, 1e-12) is 1e-12 on every path
      store_float(dtype::f16, scale, clamped);
      divide = true;
      divisor = clamped;
      break;
    }
    case scale_kind::fp32:
      store_float(dtype::f32, scale, amax);
      break;
    case scale_kind::bf16_up:
    case scale_kind::fp16_up: {
      const dtype st = c.scale == scale_kind::bf16_up ? dtype::bf16 : dtype::f16;
      std::uint16_t b;
      store_float(st, scale, amax);
      std::memcpy(&b, scale, 2);
      if (load_float(st, scale) < amax) ++b;
      std::memcpy(scale, &b, 2);
      if (!std::isfinite(load_float(st, scale))) { --b; std::memcpy(scale, &b, 2); }
      break;
    }
  }
  if (!divide) {
    const float s = load_scale(c, scale);
    if (s > 0.0f) {
      if (s < std::ldexp(1.0f, -64)) { pre = std::ldexp(1.0f, 64); factor = 1.0f / (s * pre); }
      else if (s > std::ldexp(1.0f, 64)) { pre = std::ldexp(1.0f, -64); factor = 1.0f / (s * pre); }
      else factor = 1.0f / s;
    }
  }
  for (int i = 0; i < count; ++i) {
    std::uint8_t* q = codes + i * c.code_bytes();
    if (c.sentinel && !std::isfinite(t[i])) {
      *q = c.element == dtype::i8 ? 0x80 : (c.element == dtype::u8 ? 255 : 0x7f);
      continue;
    }
    float n;
    if (divide) n = t[i] / divisor;
    else { n = (t[i] * pre) * factor; n = n < -1.0f ? -1.0f : (n > 1.0f ? 1.0f : n); }
    const float y = c.compander == compander_kind::softsign ? (2.0f * n) / (1.0f + std::fabs(n)) : n;
    const std::uint32_t r = c.rounding == code_round::stochastic ? random_bits(seed, step, index0 + i) : 0u;
    if (c.element == dtype::i8 || c.element == dtype::u8) {
      int v = 0;
      if (!std::isnan(y)) {
        const float off = c.rounding == code_round::stochastic ? unit_uniform(r) : 0.5f;
        const float f = std::floor(format::mul_rn(y, static_cast<float>(c.qmax())) + off);  // never contracted
        const int lo = c.element == dtype::i8 ? -127 : 0;
        v = f < static_cast<float>(lo) ? lo : (f > static_cast<float>(c.qmax()) ? c.qmax() : static_cast<int>(f));
        if (c.rounding == code_round::half_up_nonzero && v == 0 && y > 0.0f) v = 1;
      }
      *q = static_cast<std::uint8_t>(v);
    } else {
      if (std::isnan(y)) { *q = 0; continue; }
      const int e = c.element == dtype::f8_e4m3 ? 8 : 15;
      store_float(c.element, q, y * std::ldexp(1.0f, e), c.rounding == code_round::stochastic, r);
      if (c.rounding == code_round::half_up_nonzero && y > 0.0f && (*q & 0x7f) == 0) *q = 1;
    }
  }
}

// ------------------------------------------------------------------ rules
enum class rule_kind { sgd, sgdw, adam, adamw, lion };

struct rule_desc {
  rule_kind kind = rule_kind::adamw;
  double lr = 1e-3, beta1 = 0.9, beta2 = 0.999, eps = 1e-8, weight_decay = 0.0;
  double momentum = 0.0, dampening = 0.0;
  bool nesterov = false, decouple_lr = false;
  double initial_lr = 0.0;
  bool amsgrad = false;   ///< Adam/AdamW: a third state, vmax = max(vmax, v), denominator from vmax
  bool maximize = false;  ///< the gradient is negated first (torch's maximize)
};

struct scalars32 {
  float lr, neg_lr, wd, decay, mu, omd, b1, omb1, b2, omb2, neg_step, rs, eps, inv_scale;
  bool first;
};

inline scalars32 make_scalars(const rule_desc& r, std::int64_t step, double inv_scale) {
  // beta^t by binary exponentiation: the contract fixes this double algorithm
  // (a naive product of t factors rounds differently)
  auto power = [](double b, std::int64_t e) {
    double acc = 1.0;
    for (; e > 0; e >>= 1, b *= b)
      if (e & 1) acc *= b;
    return acc;
  };
  const double p1 = power(r.beta1, step), p2 = power(r.beta2, step);
  scalars32 s{};
  s.lr = static_cast<float>(r.lr);
  s.neg_lr = static_cast<float>(-r.lr);
  s.wd = static_cast<float>(r.weight_decay);
  s.decay = static_cast<float>(r.decouple_lr ? 1.0 - format::mul_rn(r.weight_decay, r.lr / r.initial_lr)
                                             : 1.0 - format::mul_rn(r.lr, r.weight_decay));  // products never contracted
  s.mu = static_cast<float>(r.momentum);
  s.omd = static_cast<float>(1.0 - r.dampening);
  s.b1 = static_cast<float>(r.beta1);
  s.omb1 = static_cast<float>(1.0 - r.beta1);
  s.b2 = static_cast<float>(r.beta2);
  s.omb2 = static_cast<float>(1.0 - r.beta2);
  s.neg_step = static_cast<float>(-(r.lr / (1.0 - p1)));
  s.rs = static_cast<float>(1.0 / std::sqrt(1.0 - p2));
  s.eps = static_cast<float>(r.eps);
  s.inv_scale = static_cast<float>(inv_scale);
  if (r.maximize) s.inv_scale = -s.inv_scale;  // g = -(graw * inv_scale), exactly
  s.first = step == 1;
  return s;
}

/// +-FLT_MAX for an overflowed value (docs/finite-arithmetic.md), NaN kept.
inline float clamp_to(float x, float limit) { return x > limit ? limit : (x < -limit ? -limit : x); }
inline float sat(float x) { return clamp_to(x, std::numeric_limits<float>::max()); }

/// The rule; `saturating`: the finite-arithmetic recomputation, every
/// intermediate that can overflow clamped to +-FLT_MAX and sqrt of a
/// negative v taken of 0.
inline void apply_rule(const rule_desc& r, const scalars32& s, float g, float& p, float (&st)[3],
                       bool saturating = false) {
  float& m = st[0];
  float& v = st[1];
  auto b = [saturating](float x) { return saturating ? sat(x) : x; };
  switch (r.kind) {
    case rule_kind::sgd:
    case rule_kind::sgdw: {
      if (r.kind == rule_kind::sgdw) p = b(p * s.decay);
      else g = b(std::fma(s.wd, p, g));
      float u = g;
      if (r.momentum != 0.0) {
        m = s.first ? g : b(std::fma(s.mu, m, s.omd * g));
        u = r.nesterov ? b(std::fma(s.mu, m, g)) : m;
      }
      p = b(std::fma(s.neg_lr, u, p));
      return;
    }
    case rule_kind::adam:
    case rule_kind::adamw: {
      if (r.kind == rule_kind::adamw) p = b(p * s.decay);
      else g = b(std::fma(s.wd, p, g));
      m = b(std::fma(s.b1, m, s.omb1 * g));
      v = b(std::fma(s.b2, v, b((s.omb2 * g) * g)));
      float vd = v;
      if (r.amsgrad) {
        // torch.maximum: NaN in either propagates
        st[2] = (std::isnan(v) || v > st[2]) ? v : st[2];
        vd = st[2];
      }
      const float d = b(std::fma(std::sqrt(saturating && !(vd > 0.0f) ? 0.0f : vd), s.rs, s.eps));
      p = b(std::fma(s.neg_step, b(m / d), p));
      return;
    }
    case rule_kind::lion: {
      const float c = std::fma(s.b1, m, s.omb1 * g);
      const float u = c > 0.0f ? 1.0f : (c < 0.0f ? -1.0f : c * 0.0f);
      p = b(std::fma(s.neg_lr, u, b(p * s.decay)));
      m = b(std::fma(s.b2, m, s.omb2 * g));
      return;
    }
  }
}

// ------------------------------------------------------------------ finite arithmetic
// docs/finite-arithmetic.md: a result that is not finite, or beyond what its
// slot stores finite, is recomputed with saturation when every input is
// finite, and clamped to the slot's limit. Not for the reference layout.

/// Largest fp32 value stored finite as `t` (round to nearest even: just
/// below the midpoint above the largest finite value; stochastic: the
/// largest finite value); `decoded`: the largest value a finite stored
/// parameter decodes to (the midpoint).
inline float slot_limit(dtype t, bool stochastic = false, bool decoded = false) {
  if (t == dtype::bf16) return from_bits(stochastic ? 0x7f7f0000u : (decoded ? 0x7f7f8000u : 0x7f7f7fffu));
  if (t == dtype::f16) return stochastic ? 65504.0f : (decoded ? 65520.0f : std::nextafter(65520.0f, 0.0f));
  return std::numeric_limits<float>::max();
}
inline float state_limit(const codec_desc& c) {
  return c.kind == codec_kind::plain ? slot_limit(c.element, c.stochastic) : std::numeric_limits<float>::max();
}
inline bool beyond(float x, float limit) { return !(std::fabs(x) <= limit); }

// ------------------------------------------------------------------ a tensor and a step
inline constexpr int slots = 3;
inline constexpr std::uint64_t slot_salt[slots] = {0x5851f42d4c957f2dull, 0x14057b7ef767814full,
                                                   0x2545f4914f6cdd1dull};

struct model {
  rule_desc rule;
  master_desc master;
  dtype grad = dtype::bf16;
  codec_desc state[slots];  ///< kind none past the rule's states
};

struct tensor {
  std::int64_t n = 0;
  std::uint64_t seed = 0;
  std::vector<std::uint8_t> param, aux, grad, code[slots], scale[slots];

  void allocate(const model& m, std::int64_t size) {
    n = size;
    param.assign(static_cast<std::size_t>(n) * flashoptim::size_of(m.master.param), 0);
    aux.assign(static_cast<std::size_t>(n) * flashoptim::size_of(m.master.aux), 0);
    grad.assign(static_cast<std::size_t>(n) * flashoptim::size_of(m.grad), 0);
    for (int s = 0; s < slots; ++s) {
      code[s].assign(static_cast<std::size_t>(n) * m.state[s].code_bytes(), 0);
      scale[s].assign(static_cast<std::size_t>((n + 31) / 32) * m.state[s].scale_bytes(), 0);
    }
  }
};

inline void step(const model& md, tensor& t, std::int64_t step_count, double inv_scale = 1.0) {
  const scalars32 s = make_scalars(md.rule, step_count, inv_scale);
  const std::size_t pb = flashoptim::size_of(md.master.param), ab = flashoptim::size_of(md.master.aux),
                    gb = flashoptim::size_of(md.grad);
  for (std::int64_t b = 0; b < t.n; b += 32) {
    const int count = static_cast<int>(t.n - b < 32 ? t.n - b : 32);
    const std::int64_t g = b / 32;
    float st[slots][32];
    for (int k = 0; k < slots; ++k) {
      const codec_desc& c = md.state[k];
      decode_group(c, t.code[k].data() + b * c.code_bytes(), t.scale[k].data() + g * c.scale_bytes(), count, st[k]);
    }
    bool finite_rule = true;
    for (int k = 0; k < slots; ++k)
      finite_rule = finite_rule && (md.state[k].scale != scale_kind::fp16_reference || md.state[k].kind != codec_kind::grouped);
    for (int i = 0; i < count; ++i) {
      std::uint8_t* p = t.param.data() + (b + i) * pb;
      std::uint8_t* a = t.aux.data() + (b + i) * ab;
      const float x = master_decode(md.master, p, a);
      float y = x;
      const float graw = load_float(md.grad, t.grad.data() + (b + i) * gb);
      float e[slots], e0[slots];
      for (int k = 0; k < slots; ++k) e[k] = e0[k] = st[k][i];
      apply_rule(md.rule, s, graw * s.inv_scale, y, e);
      bool flagged = beyond(y, slot_limit(md.master.param));
      for (int k = 0; k < slots; ++k)
        flagged = flagged || (md.state[k].kind != codec_kind::none && beyond(e[k], state_limit(md.state[k])));
      if (finite_rule && flagged) {
        // a grouped state decoded to +-inf from a finite scale: +-FLT_MAX
        auto finite_state = [&](int k, float d) {
          const codec_desc& c = md.state[k];
          if (c.kind == codec_kind::grouped && std::isinf(d) &&
              std::isfinite(load_scale(c, t.scale[k].data() + g * c.scale_bytes())))
            return std::copysign(std::numeric_limits<float>::max(), d);
          return d;
        };
        float ei[slots];
        bool finite_in = std::isfinite(graw) && !beyond(x, slot_limit(md.master.param, false, true));
        for (int k = 0; k < slots; ++k) {
          ei[k] = finite_state(k, e0[k]);
          finite_in = finite_in && std::isfinite(ei[k]);
        }
        if (finite_in) {
          float yp = x;
          apply_rule(md.rule, s, sat(graw * s.inv_scale), yp, ei, true);
          y = bits(yp) == bits(x) ? yp : clamp_to(yp, slot_limit(md.master.param));
          for (int k = 0; k < slots; ++k)
            e[k] = md.state[k].kind != codec_kind::none ? clamp_to(ei[k], state_limit(md.state[k])) : ei[k];
        }
      }
      for (int k = 0; k < slots; ++k) st[k][i] = e[k];
      // a NaN counts as changed unless it was the canonical one (codec::updated_bits)
      if (bits(x) != (std::isnan(y) ? 0x7fffffffu : bits(y))) master_encode(md.master, y, p, a);
    }
    for (int k = 0; k < slots; ++k) {
      const codec_desc& c = md.state[k];
      encode_group(c, st[k], count, t.code[k].data() + b * c.code_bytes(), t.scale[k].data() + g * c.scale_bytes(),
                   t.seed ^ slot_salt[k], static_cast<std::uint64_t>(step_count), static_cast<std::uint64_t>(b));
    }
  }
}

}  // namespace ref
