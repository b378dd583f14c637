// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// The tensors of the optimizers' FP8-copy tests (test_cpu_optimizer_fp8,
// test_gpu_optimizer_fp8): one of each form the copy can take.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "common/data.hpp"
#include "flashoptim/format/fp8_blocks.hpp"
#include "flashoptim/optim/fp8_outputs.hpp"

namespace fp8_outputs_test {

/// Tensor i: rows x cols (0 x 0: 1-D), its block kind, whether it has a copy.
struct tensor_desc {
  std::int64_t size, rows, cols;
  flashoptim::fp8_block_kind kind;
  bool copy;
};

/// 128 x 128 blocks with partial tiles on both edges; 1 x 128 on rows of
/// 256; a 1-D tensor with a partial last block; a tensor without a copy.
/// The tests put the first two in group 0 and the rest in group 1.
inline const std::vector<tensor_desc> descs = {
    {200 * 300, 200, 300, flashoptim::fp8_block_kind::tile_128x128, true},
    {64 * 256, 64, 256, flashoptim::fp8_block_kind::row_1x128, true},
    {1000, 0, 0, flashoptim::fp8_block_kind::row_1x128, true},
    {77, 0, 0, flashoptim::fp8_block_kind::row_1x128, false}};

inline flashoptim::fp8_block_shape shape_of(const tensor_desc& d) {
  return d.rows > 0 ? flashoptim::fp8_shape_2d(d.rows, d.cols, d.kind) : flashoptim::fp8_shape_1d(d.size);
}

/// The host model: parameters, gradients, fp32 initial weights and the FP8
/// outputs (sentinel-filled) of every tensor of `descs`.
template <class Config, class F8>
struct fp8_model {
  using P = typename Config::param_type;
  using G = typename Config::grad_type;
  std::vector<std::vector<P>> params;
  std::vector<std::vector<G>> grads;
  std::vector<std::vector<float>> fp32;
  std::vector<std::vector<F8>> values;
  std::vector<std::vector<float>> scales;

  explicit fp8_model(std::uint64_t seed) {
    testdata::generator gen(seed);
    for (const auto& d : descs) {
      const auto n = static_cast<std::size_t>(d.size);
      params.emplace_back(n);
      grads.emplace_back(n);
      fp32.push_back(gen.values(n, 0.05f, 0.0));
      values.emplace_back(n, F8{0x5a});  // a sentinel no write leaves
      const flashoptim::fp8_block_shape s = shape_of(d);
      scales.emplace_back(static_cast<std::size_t>(s.scale_count()), -7.0f);
    }
  }
  std::vector<flashoptim::optim::param_group<Config>> groups() {
    std::vector<void*> p;
    std::vector<const void*> g;
    std::vector<const float*> f;
    for (std::size_t i = 0; i < descs.size(); ++i) {
      p.push_back(params[i].data());
      g.push_back(grads[i].data());
      f.push_back(fp32[i].data());
    }
    return groups_over(p, g, f);
  }
  /// Two groups over these buffers (host here; the GPU test's device copies).
  static std::vector<flashoptim::optim::param_group<Config>> groups_over(const std::vector<void*>& p,
                                                             const std::vector<const void*>& g,
                                                             const std::vector<const float*>& f) {
    std::vector<flashoptim::optim::param_group<Config>> gs(2);
    for (int g = 0; g < 2; ++g) {
      gs[g].hyper.lr = 1e-2 * (g + 1);
      gs[g].hyper.weight_decay = g == 0 ? 0.1 : 0.0;
    }
    for (std::size_t i = 0; i < descs.size(); ++i) {
      flashoptim::optim::param_spec s;
      s.param = p[i];
      s.grad = g[i];
      s.size = descs[i].size;
      s.rows = descs[i].rows;
      s.cols = descs[i].cols;
      s.name = "w" + std::to_string(i);
      s.init_fp32 = f[i];
      gs[i < 2 ? 0 : 1].params.push_back(s);  // the optimizer's order is this one
    }
    return gs;
  }
  std::vector<flashoptim::optim::fp8_output<F8>> outputs() {
    std::vector<flashoptim::optim::fp8_output<F8>> o(descs.size());
    for (std::size_t i = 0; i < descs.size(); ++i)
      if (descs[i].copy) o[i] = {values[i].data(), scales[i].data(), descs[i].kind};
    return o;
  }
  void set_grads(std::uint64_t seed, bool non_finite = false) {
    testdata::generator gen(seed);
    for (auto& g : grads)
      for (auto& x : g) x = flashoptim::format::from_float<G>(gen.normal(0.5f));
    if (non_finite) grads[1][5] = flashoptim::format::from_float<G>(std::numeric_limits<float>::infinity());
  }
};

}  // namespace fp8_outputs_test
