// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// FP8 parameters with block scales (docs/fp8-params.md), shared by the CPU
// and GPU tests: an fp64 model of the recipe written without the library's
// conversion code (the FP8 value is the nearest of the format's finite
// values, found by search), and master tensors whose blocks span the fp32
// range, zero blocks and non-finite elements included.
#pragma once

#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "flashoptim/format/fp8_blocks.hpp"

namespace fp8_model {

using namespace flashoptim;

template <class F8>
inline constexpr bool is_e4m3 = std::is_same<F8, fp8_e4m3>::value;

/// The value of a finite code, from the OCP definitions (bias 7 / 15).
template <class F8>
double decode(std::uint8_t b) {
  const int m_bits = is_e4m3<F8> ? 3 : 2;
  const int bias = is_e4m3<F8> ? 7 : 15;
  const int e = (b >> m_bits) & ((1 << (7 - m_bits)) - 1);
  const int m = b & ((1 << m_bits) - 1);
  const double mag = e == 0 ? std::ldexp(static_cast<double>(m), 1 - bias - m_bits)
                            : std::ldexp(1.0 + static_cast<double>(m) / (1 << m_bits), e - bias);
  return (b & 0x80) ? -mag : mag;
}
template <class F8>
bool finite_code(std::uint8_t b) {
  const std::uint8_t mag = b & 0x7f;
  return is_e4m3<F8> ? mag != 0x7f : mag < 0x7c;
}
template <class F8>
double fmt_max() {
  return is_e4m3<F8> ? 448.0 : 57344.0;
}

/// Nearest finite code to y (ties to the even code), saturating: a search
/// over the codes of y's sign.
template <class F8>
std::uint8_t nearest(double y, bool negative) {
  const std::uint8_t sign = negative ? 0x80 : 0x00;
  std::uint8_t best = sign;
  double best_d = std::fabs(std::fabs(y) - 0.0);
  for (int c = 1; c < 128; ++c) {
    if (!finite_code<F8>(static_cast<std::uint8_t>(c))) continue;
    const double d = std::fabs(std::fabs(y) - decode<F8>(static_cast<std::uint8_t>(c)));
    if (d < best_d || (d == best_d && (c & 1) == 0)) {
      best_d = d;
      best = static_cast<std::uint8_t>(sign | c);
    }
  }
  return best;
}

/// q of a block from its amax (a double: the exact maximum of finite |x|).
template <class F8>
float quant_factor(double amax, bool pow2) {
  if (amax == 0.0) return 1.0f;
  const double qd = fmt_max<F8>() / amax;  // float(qd) is fp32's rounded quotient (53 >= 2 * 24 + 2)
  float q = qd >= static_cast<double>(FLT_MAX) ? FLT_MAX : static_cast<float>(qd);
  if (pow2) {
    int e = 0;
    std::frexp(static_cast<double>(q), &e);
    q = static_cast<float>(std::ldexp(1.0, e - 1));
  }
  return q;
}

struct written {
  std::vector<std::uint8_t> values;
  std::vector<float> scales;
};

/// The recipe on decoded master values x.
template <class F8>
written write(const fp8_block_shape& s, const std::vector<float>& x, bool pow2) {
  written out;
  out.values.assign(static_cast<std::size_t>(s.size), 0);
  out.scales.assign(static_cast<std::size_t>(s.scale_count()), 0.0f);
  for (std::int64_t br = 0; br < s.scale_rows(); ++br)
    for (std::int64_t bc = 0; bc < s.scale_cols(); ++bc) {
      std::vector<std::int64_t> idx;
      for (std::int64_t r = br * s.block_rows; r < std::min<std::int64_t>(s.rows, (br + 1) * s.block_rows); ++r)
        for (std::int64_t c = bc * 128; c < std::min<std::int64_t>(s.cols, (bc + 1) * 128); ++c)
          if (r * s.cols + c < s.size) idx.push_back(r * s.cols + c);
      double amax = 0.0;
      for (auto i : idx)
        if (std::isfinite(x[i])) amax = std::max(amax, std::fabs(static_cast<double>(x[i])));
      const float q = quant_factor<F8>(amax, pow2);
      for (auto i : idx) {
        const float v = x[i];
        std::uint8_t b;
        if (std::isnan(v)) b = 0x7f;
        else if (std::isinf(v)) b = is_e4m3<F8> ? 0x7f : static_cast<std::uint8_t>(v < 0 ? 0xfc : 0x7c);
        else {
          const float y = static_cast<float>(static_cast<double>(v) * static_cast<double>(q));  // exact, then rounded
          b = nearest<F8>(y, std::signbit(y));
        }
        out.values[i] = b;
      }
      out.scales[br * s.scale_cols() + bc] = static_cast<float>(1.0 / static_cast<double>(q));
    }
  return out;
}

/// Master values: each 128-column stripe of each block-row gets its own
/// magnitude, from 1e-44 (fp32 subnormals: the quotient overflows) to 1e38,
/// some blocks all zero, some elements non-finite when asked.
inline std::vector<float> values(const fp8_block_shape& s, std::uint64_t seed, bool non_finite) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  const std::int64_t stripes = s.scale_rows() * s.scale_cols();
  std::vector<double> mag(static_cast<std::size_t>(stripes > 0 ? stripes : 1));
  for (auto& m : mag) {
    const double k = u(rng);
    m = k < 0.08 ? 0.0 : k < 0.14 ? 1e-44 : k < 0.2 ? 1e-39 : k < 0.26 ? 1e38 : std::pow(10.0, -30.0 + 60.0 * u(rng));
  }
  std::vector<float> x(static_cast<std::size_t>(s.size));
  std::normal_distribution<double> n(0.0, 1.0);
  for (std::int64_t i = 0; i < s.size; ++i) {
    const std::int64_t r = i / s.cols, c = i % s.cols;
    const double m = mag[static_cast<std::size_t>((r / s.block_rows) * s.scale_cols() + c / 128)];
    double v = m * n(rng);
    if (m == 1e38) v = std::max(-3.4e38, std::min(3.4e38, v));
    x[i] = static_cast<float>(v);
    if (u(rng) < 0.01) x[i] = -0.0f;
    if (non_finite && u(rng) < 0.002) {
      const double k = u(rng);
      x[i] = k < 0.33 ? std::numeric_limits<float>::quiet_NaN()
                      : (k < 0.66 ? std::numeric_limits<float>::infinity() : -std::numeric_limits<float>::infinity());
    }
  }
  return x;
}

/// The shapes every test runs: 1-D, and 2-D of both kinds, with sizes that
/// are and are not multiples of 128.
inline std::vector<fp8_block_shape> shapes() {
  std::vector<fp8_block_shape> v;
  for (std::int64_t n : {1, 5, 127, 128, 129, 1000, 16384, 16385, 40000}) v.push_back(fp8_shape_1d(n));
  const std::int64_t dims[][2] = {{1, 1}, {3, 200}, {128, 128}, {130, 129}, {257, 300}, {129, 4}, {7, 1024}, {300, 2}};
  for (const auto& d : dims)
    for (auto k : {fp8_block_kind::row_1x128, fp8_block_kind::tile_128x128}) v.push_back(fp8_shape_2d(d[0], d[1], k));
  return v;
}

inline std::string describe(const fp8_block_shape& s) {
  return std::to_string(s.rows) + "x" + std::to_string(s.cols) + " (" + std::to_string(s.size) + " elements, blocks " +
         std::to_string(s.block_rows) + "x128)";
}

/// A master tensor: Master::encode of the values, and the values it decodes to.
template <class Master>
struct master_tensor {
  std::vector<typename Master::param_type> param;
  std::vector<typename Master::aux_type> aux;
  std::vector<float> decoded;
  explicit master_tensor(const std::vector<float>& x) : param(x.size()), aux(x.size()), decoded(x.size()) {
    for (std::size_t i = 0; i < x.size(); ++i) {
      Master::encode(x[i], param[i], aux[i]);
      decoded[i] = Master::decode(param[i], aux[i]);
    }
  }
};

inline std::uint32_t bits(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

}  // namespace fp8_model
