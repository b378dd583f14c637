// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// Companders: the one-line nonlinear maps a grouped codec applies around its
// linear quantizer. A compander is a type with four functions:
//   pre(x)           applied to the raw value; the group's scale is max|pre(x)|
//   post(n)          applied to the normalized value n = pre(x) / scale, |n| <= 1
//   post_inverse(y), pre_inverse(t)
// with pre(0) == 0 and post mapping [-1, 1] onto [-1, 1] monotonically.
// Users add their own by writing such a type.
//
// The fast paths (the CPU vector kernels, the GPU's branch-free and proven
// encoders) do not call these functions: they run their own arithmetic for
// each compander_kind. A compander says which one it is with
//   static constexpr compander_kind kind = compander_kind::softsign;
// promising its four functions give the bits of that kind's library
// compander for every input; without the declaration (or with `generic`) its
// own functions run, on the scalar CPU step and the GPU's generic encoder
// (cpu::path_of / kernel::path_of say so at compile time).
#pragma once

#include <type_traits>

#include "flashoptim/format/bits.hpp"

namespace flashoptim::codec {

/// The arithmetic a compander's functions compute, as the fast paths know it.
enum class compander_kind {
  identity,  ///< x, n (codec::identity)
  softsign,  ///< x, 2n / (1 + |n|) (codec::softsign)
  sqrt,      ///< sqrt(x), n (codec::sqrt_compander)
  generic,   ///< anything else: only its own functions compute it
};

namespace detail {
template <class C, class = void>
struct compander_kind_of : std::integral_constant<compander_kind, compander_kind::generic> {};
template <class C>
struct compander_kind_of<C, std::void_t<decltype(C::kind)>> : std::integral_constant<compander_kind, C::kind> {};
}  // namespace detail

/// C::kind when C declares it, else compander_kind::generic.
template <class C>
inline constexpr compander_kind compander_kind_of = detail::compander_kind_of<C>::value;

/// No transform: linear group quantization.
struct identity {
  static constexpr const char* name = "identity";
  static constexpr compander_kind kind = compander_kind::identity;
  FLASHOPTIM_HOST_DEVICE static float pre(float x) { return x; }
  FLASHOPTIM_HOST_DEVICE static float post(float n) { return n; }
  FLASHOPTIM_HOST_DEVICE static float post_inverse(float y) { return y; }
  FLASHOPTIM_HOST_DEVICE static float pre_inverse(float t) { return t; }
};

/// y = 2n / (1 + |n|): twice the resolution near zero, where momentum lives
/// (the FlashOptim momentum layout). Inverse n = y / (2 - |y|).
struct softsign {
  static constexpr const char* name = "softsign";
  static constexpr compander_kind kind = compander_kind::softsign;
  FLASHOPTIM_HOST_DEVICE static float pre(float x) { return x; }
  FLASHOPTIM_HOST_DEVICE static float post(float n) { return format::div_rn(format::add_rn(n, n), format::add_rn(1.0f, format::abs_bits(n))); }
  FLASHOPTIM_HOST_DEVICE static float post_inverse(float y) { return format::div_rn(y, format::sub_rn(2.0f, format::abs_bits(y))); }
  FLASHOPTIM_HOST_DEVICE static float pre_inverse(float t) { return t; }
};

/// r = sqrt(v) before taking the group max: the second moment is quantized
/// on the scale Adam divides by (the FlashOptim second-moment layout).
/// sqrt rounds down at the top of the range, so r * r never overflows.
struct sqrt_compander {
  static constexpr const char* name = "sqrt";
  static constexpr compander_kind kind = compander_kind::sqrt;
  FLASHOPTIM_HOST_DEVICE static float pre(float v) { return format::sqrt_rn(v); }
  FLASHOPTIM_HOST_DEVICE static float post(float n) { return n; }
  FLASHOPTIM_HOST_DEVICE static float post_inverse(float y) { return y; }
  FLASHOPTIM_HOST_DEVICE static float pre_inverse(float r) { return format::mul_rn(r, r); }
};

}  // namespace flashoptim::codec
