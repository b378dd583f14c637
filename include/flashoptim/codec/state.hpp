// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// State codecs: how an optimizer state (momentum, second moment) is stored.
// Every codec has the same tile interface, so the step, the CPU path and the
// GPU kernel treat them alike:
//   group_size            elements sharing one scale (1: no scale)
//   code_type, scale_type per-element and per-group storage (none_t: absent)
//   decode_tile<N>(codes, scale, out)
//   encode_tile<N>(in, codes, scale, reduce, key)
// A tile is N consecutive elements of one group (N divides group_size, or
// any N for group_size 1). `reduce(float)` returns the maximum of its argument
// over every tile of the group (the identity when one tile is the group, a
// warp shuffle on the GPU). Elements past the end of a tensor are passed as 0.
#pragma once

#include <type_traits>

#include "flashoptim/codec/code.hpp"
#include "flashoptim/codec/compander.hpp"
#include "flashoptim/codec/scale.hpp"
#include "flashoptim/format/random.hpp"

namespace flashoptim::codec {

/// Where a tile's elements sit, for deterministic stochastic rounding.
struct rounding_key {
  std::uint64_t seed = 0;
  std::uint64_t step = 0;
  std::uint64_t index = 0;  ///< element index of the tile's first element in its tensor
  FLASHOPTIM_HOST_DEVICE std::uint32_t bits(int i) const {
    return format::random_bits(seed, step, index + static_cast<std::uint64_t>(i));
  }
};

/// Identity reduction: the tile is the whole group.
struct whole_group {
  FLASHOPTIM_HOST_DEVICE float operator()(float x) const { return x; }
};

/// No state: decodes as zeros, stores nothing (SGD without momentum).
struct none {
  using code_type = none_t;
  using scale_type = none_t;
  static constexpr int group_size = 1;
  static constexpr bool stores_state = false;
  static constexpr const char* kind = "none";
  template <int N>
  FLASHOPTIM_HOST_DEVICE static void decode_tile(const none_t (&)[N], none_t, float (&out)[N]) {
    FLASHOPTIM_UNROLL for (int i = 0; i < N; ++i) out[i] = 0.0f;
  }
  template <int N, class Reduce>
  FLASHOPTIM_HOST_DEVICE static void encode_tile(const float (&)[N], none_t (&)[N], none_t&, Reduce&&,
                                                 const rounding_key&) {}
};

/// One element of T per state element: fp32, bf16 or fp16 (any format with
/// traits), rounded to nearest even or stochastically.
template <class T, format::rounding Rounding = format::rounding::nearest_even>
struct plain {
  using code_type = T;
  using scale_type = none_t;
  using element_type = T;
  static constexpr int group_size = 1;
  static constexpr bool stores_state = true;
  static constexpr format::rounding rounding = Rounding;
  static constexpr const char* kind = "plain";

  FLASHOPTIM_HOST_DEVICE static float decode(T q) { return format::to_float(q); }
  FLASHOPTIM_HOST_DEVICE static T encode(float x, std::uint32_t random_bits) {
    return format::from_float<T>(x, Rounding, random_bits);
  }
  template <int N>
  FLASHOPTIM_HOST_DEVICE static void decode_tile(const T (&q)[N], none_t, float (&out)[N]) {
    FLASHOPTIM_UNROLL for (int i = 0; i < N; ++i) out[i] = decode(q[i]);
  }
  template <int N, class Reduce>
  FLASHOPTIM_HOST_DEVICE static void encode_tile(const float (&x)[N], T (&q)[N], none_t&, Reduce&&,
                                                 const rounding_key& key) {
    FLASHOPTIM_UNROLL for (int i = 0; i < N; ++i) {
      q[i] = encode(x[i], Rounding == format::rounding::stochastic ? key.bits(i) : 0u);
    }
  }
};

/// Group quantization: 32 consecutive elements of a tensor share one scale.
///   t = pre(x); scale = max |t| over the group's finite elements
///   y = post(normalize(t, scale)); q = Code::quantize(y)
///   decode: x = pre_inverse(post_inverse(value(q)) * scale)
/// With a Code that has a sentinel, a non-finite element is stored as the
/// sentinel (decoding to NaN) and does not enter the scale.
template <class Code, class Compander, class Scale, code_rounding Rounding = code_rounding::half_up>
struct grouped {
  using code_type = typename Code::storage;
  using scale_type = typename Scale::storage;
  using code_format = Code;
  using compander = Compander;
  using scale_format = Scale;
  static constexpr int group_size = 32;
  static constexpr bool stores_state = true;
  static constexpr code_rounding rounding = Rounding;
  static constexpr const char* kind = "grouped";

  /// post_inverse(value(q)): the normalized value of a code, a pure function
  /// of q that kernels may tabulate (NaN for the sentinel).
  FLASHOPTIM_HOST_DEVICE static float code_value(code_type q) {
    if (Code::is_sentinel(q)) return format::float_from_bits(format::canonical_nan_bits);
    return Compander::post_inverse(Code::value(q));
  }
  FLASHOPTIM_HOST_DEVICE static float decode(float code_val, float scale) {
    return Compander::pre_inverse(format::mul_rn(code_val, scale));
  }

  template <int N>
  FLASHOPTIM_HOST_DEVICE static void decode_tile(const code_type (&q)[N], scale_type s, float (&out)[N]) {
    const float scale = Scale::load(s);
    FLASHOPTIM_UNROLL for (int i = 0; i < N; ++i) out[i] = decode(code_value(q[i]), scale);
  }

  /// Group max of |pre(x)| over finite elements, as a tile's partial result.
  template <int N>
  FLASHOPTIM_HOST_DEVICE static float tile_amax(const float (&t)[N]) {
    float m = 0.0f;
    FLASHOPTIM_UNROLL for (int i = 0; i < N; ++i) {
      const float a = format::abs_bits(t[i]);
      if (!Code::has_sentinel || format::is_finite(a)) m = a > m ? a : m;
      if (!Code::has_sentinel && format::is_nan(a)) m = a;  // the reference lets NaN through
    }
    return m;
  }

  template <int N, class Reduce>
  FLASHOPTIM_HOST_DEVICE static void encode_tile(const float (&x)[N], code_type (&q)[N], scale_type& s,
                                                 Reduce&& reduce, const rounding_key& key) {
    static_assert(group_size % N == 0, "a tile lies within one group");
    float t[N];
    FLASHOPTIM_UNROLL for (int i = 0; i < N; ++i) t[i] = Compander::pre(x[i]);
    const float amax = reduce(tile_amax(t));
    s = Scale::store(amax);
    const auto norm = Scale::make_norm(amax, s);
    FLASHOPTIM_UNROLL for (int i = 0; i < N; ++i) {
      if (Code::has_sentinel && !format::is_finite(t[i])) {
        q[i] = Code::sentinel();
      } else {
        const float y = Compander::post(Scale::normalize(t[i], norm));
        q[i] = Code::quantize(y, Rounding, Rounding == code_rounding::stochastic ? key.bits(i) : 0u);
      }
    }
  }
};

template <class C>
struct is_grouped : std::false_type {};
template <class Code, class Compander, class Scale, code_rounding R>
struct is_grouped<grouped<Code, Compander, Scale, R>> : std::true_type {};

/// The paper's exact layout (codec::reference::*: the fp16 reference
/// scale): a configuration with such a state keeps the paper's arithmetic
/// and failures, without the finite-arithmetic guarantee of
/// docs/finite-arithmetic.md.
template <class C, class = void>
struct is_reference_layout : std::false_type {};
template <class C>
struct is_reference_layout<C, std::void_t<typename C::scale_format>>
    : std::is_same<typename C::scale_format, scale_fp16_reference> {};

/// The largest magnitude codec C stores as a finite state (the step clamps
/// a finite state to it): format::finite_limit of a plain codec's element
/// type under its rounding; FLT_MAX for every other codec (a grouped codec
/// stores any finite value finite; codec::none stores nothing).
template <class C, class = void>
struct state_limit {
  FLASHOPTIM_HOST_DEVICE static float value() { return format::float_from_bits(format::max_finite_bits); }
};
template <class C>
struct state_limit<C, std::void_t<typename C::element_type>> {
  FLASHOPTIM_HOST_DEVICE static float value() { return format::finite_limit<typename C::element_type>(C::rounding); }
};

/// A value C decoded (with the group's stored scale s), as the step's
/// recomputation of rule/tile.hpp starts from it: +-inf from a grouped
/// codec with a finite scale (so not from a sentinel, which decodes to NaN)
/// is an overflow of a finite stored state (a scale near FLT_MAX times a
/// code above 1, or the sqrt compander's r * r of a scale above
/// sqrt(FLT_MAX)) and becomes +-FLT_MAX. Everything else is returned as is:
/// sentinels and non-finite scales still decode as non-finite.
template <class C>
FLASHOPTIM_HOST_DEVICE FLASHOPTIM_INLINE float finite_decoded(float decoded, typename C::scale_type s) {
  if constexpr (!std::is_same<typename C::scale_type, none_t>::value) {
    if (!format::is_finite(decoded) && !format::is_nan(decoded) && format::is_finite(C::scale_format::load(s)))
      return format::copysign_bits(format::float_from_bits(format::max_finite_bits), decoded);
  } else {
    (void)s;
  }
  return decoded;
}

/// Number of scale entries a tensor of n elements needs under codec C (0
/// for n <= 0). Rounds up without forming n + group_size - 1, which
/// overflows for n near INT64_MAX: the checks that refuse such sizes call
/// this before they know n is in range.
template <class C>
FLASHOPTIM_HOST_DEVICE constexpr std::int64_t scale_count(std::int64_t n) {
  return std::is_same<typename C::scale_type, none_t>::value || n <= 0 ? 0 : (n - 1) / C::group_size + 1;
}

}  // namespace flashoptim::codec
