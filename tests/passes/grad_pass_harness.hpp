// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// What the gradient-pass tests share: host gradient lists of mixed types,
// the reduction order of docs/grad-passes.md written a second time (in a
// different shape from the library's: per-element lane selection and a
// recursive tree), an fp64 model of torch's clip_grad_norm_, and bitwise
// comparisons of doubles.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "flashoptim/format/dtype.hpp"
#include "flashoptim/format/types.hpp"
#include "flashoptim/rule/grad_order.hpp"
#include "flashoptim/rule/grad_scale.hpp"

namespace grad_test {

using namespace flashoptim;

inline std::uint64_t bits(double x) {
  std::uint64_t u;
  std::memcpy(&u, &x, sizeof u);
  return u;
}

/// Distance in units in the last place between two finite doubles of the
/// same sign.
inline std::uint64_t ulp_distance(double a, double b) {
  const std::uint64_t x = bits(a), y = bits(b);
  return x > y ? x - y : y - x;
}

/// A host gradient tensor: its bytes (with `offset` leading elements so
/// that data() can be misaligned for vector loads) and its values as fp32.
struct host_grad {
  dtype type = dtype::f32;
  std::int64_t size = 0;
  std::int64_t offset = 0;
  std::vector<unsigned char> bytes;

  const void* data() const { return size == 0 ? nullptr : bytes.data() + offset * size_of(type); }
  void* data() { return size == 0 ? nullptr : bytes.data() + offset * size_of(type); }
  float get(std::int64_t i) const {
    const unsigned char* p = static_cast<const unsigned char*>(data()) + i * size_of(type);
    switch (type) {
      case dtype::bf16: { bf16 v; std::memcpy(&v, p, 2); return format::to_float(v); }
      case dtype::f16: { fp16 v; std::memcpy(&v, p, 2); return format::to_float(v); }
      default: { float v; std::memcpy(&v, p, 4); return v; }
    }
  }
  void set(std::int64_t i, float x) {
    unsigned char* p = static_cast<unsigned char*>(data()) + i * size_of(type);
    switch (type) {
      case dtype::bf16: { const bf16 v = format::from_float<bf16>(x); std::memcpy(p, &v, 2); break; }
      case dtype::f16: { const fp16 v = format::from_float<fp16>(x); std::memcpy(p, &v, 2); break; }
      default: std::memcpy(p, &x, 4); break;
    }
  }
  /// Raw bits, for NaN payloads a conversion would not keep.
  void set_bits(std::int64_t i, std::uint32_t b) {
    unsigned char* p = static_cast<unsigned char*>(data()) + i * size_of(type);
    if (size_of(type) == 4) std::memcpy(p, &b, 4);
    else {
      const std::uint16_t h = static_cast<std::uint16_t>(b);
      std::memcpy(p, &h, 2);
    }
  }
  grad_tensor view() const { return grad_tensor{data(), type, size}; }
};

inline host_grad make_grad(dtype type, std::int64_t size, std::int64_t offset = 0) {
  host_grad g;
  g.type = type;
  g.size = size;
  g.offset = offset;
  // 16 spare bytes of alignment: std::vector's buffer is 16-byte aligned.
  g.bytes.assign(static_cast<std::size_t>((size + offset) * static_cast<std::int64_t>(size_of(type)) + 16), 0);
  return g;
}

/// Values whose magnitudes spread over several binades (gradients of a
/// real model span many), both signs, some exact zeros.
inline void fill_random(host_grad& g, std::uint64_t seed, float scale = 1.0f) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> mant(1.0f, 2.0f);
  std::uniform_int_distribution<int> expo(-12, 4);
  for (std::int64_t i = 0; i < g.size; ++i) {
    const std::uint64_t r = rng();
    float x = (r % 17 == 0) ? 0.0f : std::ldexp(mant(rng), expo(rng)) * scale;
    if (r & 1) x = -x;
    g.set(i, x);
  }
}

inline std::vector<grad_tensor> views(const std::vector<host_grad>& gs) {
  std::vector<grad_tensor> v;
  for (const auto& g : gs) v.push_back(g.view());
  return v;
}

// ---- The order, written again from its definition.

/// The shuffle-down tree on 32 values as a recursion: after the steps with
/// offsets 16 .. o, position j holds node(j, o) = node(j, 2o) + node(j + o, 2o),
/// and position j holds v[j] before any step (o = 32).
inline double node(const double* v, int j, int o) {
  if (o == 32) return v[j];
  return node(v, j, 2 * o) + node(v, j + o, 2 * o);
}
inline double tree32(const double* v) { return node(v, 0, 1); }

/// Groups of 32 (padded with +0) combined by tree32, level after level.
inline double tree_all(std::vector<double> v) {
  if (v.empty()) return 0.0;
  while (v.size() > 1) {
    std::vector<double> next;
    for (std::size_t g = 0; g < v.size(); g += 32) {
      double w[32];
      for (std::size_t j = 0; j < 32; ++j) w[j] = g + j < v.size() ? v[g + j] : 0.0;
      next.push_back(tree32(w));
    }
    v.swap(next);
  }
  return v[0];
}

/// A tensor's sum of squares: chunks of 1024; element i of a chunk goes to
/// lane (i mod 128) / 4, each lane adding in increasing i.
inline double reference_tensor_sum(const host_grad& g) {
  std::vector<double> chunks;
  for (std::int64_t c = 0; c < g.size; c += 1024) {
    double lane[32] = {};
    for (std::int64_t i = 0; i < 1024 && c + i < g.size; ++i) {
      const double d = g.get(c + i);
      lane[(i % 128) / 4] += d * d;  // exact product: contraction could not change it
    }
    chunks.push_back(tree32(lane));
  }
  return tree_all(chunks);
}

struct reference_result {
  std::vector<double> tensor_sums;
  double sum = 0.0;
  std::uint32_t max_bits = 0;
  std::int64_t elements = 0;
};

inline reference_result reference(const std::vector<host_grad>& gs) {
  reference_result r;
  for (const auto& g : gs) {
    r.tensor_sums.push_back(reference_tensor_sum(g));
    r.elements += g.size;
    for (std::int64_t i = 0; i < g.size; ++i) {
      std::uint32_t b;
      const float x = g.get(i);
      std::memcpy(&b, &x, 4);
      b &= 0x7fffffffu;
      if (b > 0x7f800000u) b = 0x7fc00000u;
      if (b > r.max_bits) r.max_bits = b;
    }
  }
  r.sum = tree_all(r.tensor_sums);
  return r;
}

// ---- torch.nn.utils.clip_grad_norm_ in fp64, after GradScaler.unscale_.

/// The multiplier torch applies, overall, to a raw gradient: unscale by
/// inv, then clip_coef_clamped = clamp(max_norm / (total_norm + 1e-6), max=1)
/// with total_norm the L2 norm of the unscaled gradients. The sum of squares
/// is taken in long double, the rest in double.
inline double torch_model_multiplier(const std::vector<host_grad>& gs, double max_norm, double inv,
                                     double* norm_out = nullptr) {
  long double s = 0.0L;
  for (const auto& g : gs)
    for (std::int64_t i = 0; i < g.size; ++i) {
      const long double u = static_cast<long double>(g.get(i)) * inv;
      s += u * u;
    }
  const double total_norm = static_cast<double>(std::sqrt(s));
  if (norm_out) *norm_out = total_norm;
  double coef = max_norm / (total_norm + 1e-6);
  if (coef > 1.0) coef = 1.0;
  return inv * coef;
}

}  // namespace grad_test
