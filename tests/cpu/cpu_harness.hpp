// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// Drives cpu::step on every instruction set and thread count next to
// cpu::step_serial on the same bytes, and compares every buffer after every
// step (docs/test-matrix.md C5, C20). Inputs start from random state bytes (sentinel
// codes, non-canonical corrections, scales over the whole fp32 range
// included) and mix the edge cases of testdata::generator with groups whose
// magnitude runs from 2^-70 to 2^70.
#pragma once

#include <doctest/doctest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "common/data.hpp"
#include "common/harness.hpp"
#include "flashoptim/cpu/step.hpp"
#include "reference/describe.hpp"

namespace cpuharness {

using flashoptim::cpu::isa;

/// How a run's inputs are drawn.
struct profile {
  double special = 0.03;     ///< fraction of edge-case values
  bool non_finite = false;   ///< NaN and inf among the gradients
  int group_exponent = 70;   ///< groups scaled by 2^k, |k| <= this
  bool random_states = true; ///< start from random state bytes (else zeros)
  float grad_sigma = 1.0f;
  float max_abs = 3e38f;     ///< larger magnitudes are clamped (16-bit formats)
};

inline float clamp_abs(float x, float max_abs) { return std::fabs(x) > max_abs ? std::copysign(max_abs, x) : x; }

inline float group_factor(testdata::generator& gen, int max_exponent) {
  if (max_exponent == 0 || gen.uniform() < 0.5) return 1.0f;
  return std::ldexp(1.0f, static_cast<int>(gen.u32() % (2u * max_exponent + 1u)) - max_exponent);
}

/// Parameters: testdata values (finite), groups of 32 scaled together.
inline void init_params(const ref::model& md, ref::tensor& t, testdata::generator& gen, const profile& pr) {
  const std::size_t pb = flashoptim::size_of(md.master.param), ab = flashoptim::size_of(md.master.aux);
  float f = 1.0f;
  for (std::int64_t i = 0; i < t.n; ++i) {
    if (i % 32 == 0) f = group_factor(gen, pr.group_exponent / 2);
    float x = clamp_abs(gen.value(1.0f, pr.special) * f, pr.max_abs);
    if (!std::isfinite(x)) x = 1.0f;
    ref::master_encode(md.master, x, t.param.data() + i * pb, t.aux.data() + i * ab);
  }
  // corrections beyond the canonical ones (c = -128, any c with any param)
  if (md.master.kind == ref::master_kind::ulp_correction && pr.random_states)
    for (auto& b : t.aux) b = static_cast<std::uint8_t>(gen.u32());
}

inline flashoptim::dtype scale_dtype(const ref::codec_desc& c) {
  switch (c.scale) {
    case ref::scale_kind::fp32: return flashoptim::dtype::f32;
    case ref::scale_kind::bf16_up: return flashoptim::dtype::bf16;
    default: return flashoptim::dtype::f16;
  }
}

/// State bytes as a run with history would leave them, and worse: random
/// codes (sentinels included), scales from 0 and subnormals to huge values.
inline void init_states(const ref::model& md, ref::tensor& t, testdata::generator& gen) {
  for (int k = 0; k < 2; ++k) {
    const ref::codec_desc& c = md.state[k];
    if (c.kind == ref::codec_kind::plain) {
      const std::size_t b = c.code_bytes();
      for (std::int64_t i = 0; i < t.n; ++i) {
        float x = gen.value(k == 1 ? 0.1f : 1.0f, 0.05);
        if (k == 1) x = x * x;  // a second moment is non-negative
        ref::store_float(c.element, t.code[k].data() + i * b, x);
      }
    } else if (c.kind == ref::codec_kind::grouped) {
      for (auto& q : t.code[k]) q = static_cast<std::uint8_t>(gen.u32());
      const std::size_t sb = c.scale_bytes();
      const std::size_t groups = t.scale[k].size() / sb;
      for (std::size_t g = 0; g < groups; ++g) {
        float s = std::ldexp(static_cast<float>(gen.uniform()) + 0.5f, static_cast<int>(gen.u32() % 81u) - 40);
        const std::uint32_t pick = gen.u32() % 50u;
        if (pick == 0) s = 0.0f;
        if (pick == 1) s = 1e-40f;
        if (pick == 2) s = 1e30f;
        ref::store_float(scale_dtype(c), t.scale[k].data() + g * sb, s);
      }
    }
  }
}

/// Gradients: testdata values, groups scaled together.
inline void fill_grads(const ref::model& md, ref::tensor& t, testdata::generator& gen, const profile& pr) {
  const std::size_t gb = flashoptim::size_of(md.grad);
  float f = 1.0f;
  for (std::int64_t i = 0; i < t.n; ++i) {
    if (i % 32 == 0) f = group_factor(gen, pr.group_exponent);
    ref::store_float(md.grad, t.grad.data() + i * gb,
                     clamp_abs(gen.value(pr.grad_sigma, pr.special, pr.non_finite) * f, pr.max_abs));
  }
}

struct variant {
  isa path;
  int threads;
};

/// Every instruction set this machine has, each with several thread counts.
inline std::vector<variant> variants() {
  std::vector<variant> v;
  for (isa i : {isa::avx512, isa::avx2})
    if (flashoptim::cpu::isa_available(i))
      for (int t : {1, 2, 3, 7}) v.push_back({i, t});
  v.push_back({isa::portable, 2});
  v.push_back({isa::portable, 7});
  v.push_back({isa::automatic, 0});  // the defaults a user gets
  return v;
}

struct result {
  bool ok = true;
  std::string what;
};

/// Steps `sizes` (one tensor list) `steps` times with step_serial and with
/// every variant, on identical bytes; compares all buffers after each step.
template <class Config>
result run_variants(const typename Config::hyper& h, const std::vector<std::int64_t>& sizes, int steps,
                    std::uint64_t seed, const profile& pr, double inv_grad_scale = 1.0) {
  const ref::model md = ref::describe<Config>(h);
  testdata::generator gen(seed);
  std::vector<ref::tensor> serial(sizes.size());
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    serial[i].allocate(md, sizes[i]);
    serial[i].seed = seed * 31u + i;
    init_params(md, serial[i], gen, pr);
    if (pr.random_states) init_states(md, serial[i], gen);
  }
  // some tensors are shards: stochastic rounding keys on index_base + i
  std::vector<std::uint64_t> index_base(sizes.size());
  for (std::size_t i = 0; i < sizes.size(); ++i) index_base[i] = i % 2 ? 1000003u * (i + 1) : 0;
  const std::vector<variant> vs = variants();
  std::vector<std::vector<ref::tensor>> runs(vs.size(), serial);
  auto views = [&index_base](std::vector<ref::tensor>& ts) {
    std::vector<flashoptim::tensor_ref<Config>> v;
    for (std::size_t i = 0; i < ts.size(); ++i) {
      v.push_back(ref::view<Config>(ts[i]));
      v.back().index_base = index_base[i];
    }
    return v;
  };
  result r;
  for (int s = 1; s <= steps && r.ok; ++s) {
    for (auto& t : serial) fill_grads(md, t, gen, pr);
    flashoptim::step_args a;
    a.step = s;
    a.inv_grad_scale = inv_grad_scale;
    auto sv = views(serial);
    const flashoptim::status st = flashoptim::cpu::step_serial<Config>(h, a, sv.data(), sv.size());
    if (!st.ok()) return {false, std::string("step_serial: ") + st.what()};
    for (std::size_t k = 0; k < vs.size() && r.ok; ++k) {
      for (std::size_t i = 0; i < serial.size(); ++i) runs[k][i].grad = serial[i].grad;
      flashoptim::cpu::step_options o;
      o.instruction_set = vs[k].path;
      o.threads = vs[k].threads;
      if (vs[k].path != isa::automatic) o.min_groups_per_thread = 1;
      auto v = views(runs[k]);
      const flashoptim::status sc = flashoptim::cpu::step<Config>(h, a, v.data(), v.size(), o);
      if (!sc.ok()) return {false, std::string("cpu::step: ") + sc.what()};
      for (std::size_t i = 0; i < serial.size() && r.ok; ++i) {
        std::string where;
        if (!harness::same_bytes(serial[i], runs[k][i], where)) {
          r.ok = false;
          r.what = std::string(flashoptim::cpu::to_string(vs[k].path)) + " threads=" + std::to_string(vs[k].threads) +
                   " step " + std::to_string(s) + " tensor " + std::to_string(i) + " (n=" +
                   std::to_string(sizes[i]) + "): " + where;
        }
      }
    }
  }
  return r;
}

/// C5 x C20 for one configuration: N in {0, 1, 31, 33, 1025, 278011} and a
/// list with an empty tensor last, 10 steps compared after each (so after 1
/// and 10), on edge-case inputs with and without non-finite gradients.
template <class Config>
void check_config(const char* name, const typename Config::hyper& h, bool large = true) {
  std::vector<std::vector<std::int64_t>> lists = {{0}, {1}, {31}, {33}, {1025}, {33, 1, 1025, 64, 31, 0}};
  if (large) lists.push_back({278011});
  std::uint64_t seed = 1;
  for (const auto& sizes : lists) {
    for (const bool non_finite : {false, true}) {
      if (non_finite && sizes.size() == 1 && sizes[0] == 278011) continue;  // the small sizes cover it
      profile pr;
      pr.non_finite = non_finite;
      const result r = run_variants<Config>(h, sizes, 10, seed++, pr);
      INFO(std::string(name), " sizes[0]=", sizes[0], " (", sizes.size(), " tensors) non_finite=", non_finite, ": ", r.what);
      CHECK(r.ok);
    }
  }
}

}  // namespace cpuharness
