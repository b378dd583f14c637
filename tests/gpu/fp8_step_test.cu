// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// The FP8 write fused into the step (device::fp8_step_plan,
// docs/fp8-params.md "Fused into the step"): after every step the fused
// launch's parameters, corrections, gradients and states equal the plain
// step's bytes (cpu::step_serial on a host mirror, which the plain GPU plan
// also matches), and its FP8 values and scales equal
// cpu::fp8_param_write_serial run on the CPU-stepped master, byte for byte,
// with no byte written past any FP8 buffer (sentinels). Cases: e4m3 and
// e5m2, plain and power-of-two scales, 1-D sizes around and between
// multiples of 128 (partial last blocks), 2-D row_1x128 shapes, a zero
// block, non-finite masters, a tensor without an FP8 copy in the list,
// misaligned FP8 values (scalar stores), misaligned parameters (no vector
// path: whole units as element-wise tiles), five step policies (unit runs
// staged and not, range-checked, element-wise tiles, 4 and 16 elements per
// thread), three master modes, grids of 1 and 7 blocks, device inputs, three
// parameter groups in one launch, several steps. A skipped step (host flag
// or device flag) or an invalid device value writes no byte; bad outputs are
// refused before anything is written.
#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "common/configs.hpp"
#include "common/guarded_buffer.hpp"
#include "flashoptim/cpu/fp8_param.hpp"
#include "flashoptim/device/fp8_step_plan.cuh"
#include "gpu_harness.hpp"

using namespace gpu_test;
namespace tc = testconfigs;

namespace {

using gpu_guard::guarded;

/// A tensor of the case: its size, and its FP8 form (size 0 in shape: no
/// fused copy).
struct tensor_case {
  std::int64_t size;
  fp8_block_shape shape;  ///< shape.size == -1: the tensor has no FP8 output
};
inline tensor_case flat(std::int64_t n) { return {n, fp8_shape_1d(n)}; }
inline tensor_case rows(std::int64_t r, std::int64_t c) {
  return {r * c, fp8_shape_2d(r, c, fp8_block_kind::row_1x128)};
}
inline tensor_case no_copy(std::int64_t n) { return {n, fp8_block_shape{-1, 0, 0, 1}}; }

template <class F8>
struct outputs {
  std::vector<std::unique_ptr<guarded>> values, scales;
  std::vector<device::fp8_step_output<F8>> list;
  outputs(const std::vector<tensor_case>& cases, bool misalign) {
    for (std::size_t i = 0; i < cases.size(); ++i) {
      const auto& c = cases[i];
      device::fp8_step_output<F8> o;
      if (c.shape.size >= 0) {
        values.push_back(std::make_unique<guarded>(static_cast<std::size_t>(c.size), misalign && i % 2 == 0 ? 1 : 0));
        scales.push_back(std::make_unique<guarded>(static_cast<std::size_t>(c.shape.scale_count()) * 4, 0));
        o.values = static_cast<F8*>(values.back()->ptr());
        o.scales = static_cast<float*>(scales.back()->ptr());
        o.shape = c.shape;
      } else {
        values.push_back(nullptr);
        scales.push_back(nullptr);
      }
      list.push_back(o);
    }
  }
};

/// Zero master and zero gradients on elements [256, 384) of every tensor of
/// at least 512: a block of zeros (scale 1) that stays zero under AdamW.
template <class Config>
void zero_block(tensor_set<Config>& ts, bool master) {
  for (std::size_t i = 0; i < ts.count(); ++i) {
    if (ts.sizes[i] < 512) continue;
    auto r = ts.ref(i, false);
    auto* g = ts.template at<typename Config::grad_type>(s_grad, i, false);
    for (std::int64_t e = 256; e < 384; ++e) {
      g[e] = format::from_float<typename Config::grad_type>(0.0f);
      if (master) {
        typename Config::aux_type a{};
        Config::master::encode(0.0f, r.param[e], a);
        if constexpr (Config::has_aux) r.aux[e] = a;
      }
    }
  }
}

template <class Config>
typename Config::hyper hyper_for() {
  typename Config::hyper h;
  h.lr = 1e-2;
  h.weight_decay = 0.1;
  return h;
}

struct run_options {
  bool pow2 = false;
  bool misalign = false;
  /// Parameters 1 element off their vector alignment: no tensor takes the
  /// vector path, whole units step as element-wise tiles.
  bool misalign_params = false;
  bool non_finite = false;
  bool device_inputs = false;
  int grid = 0;  ///< 0: the plan's
  int steps = 4;
  /// Parameter groups: tensor i steps with group tensor_group[i]'s lr
  /// (1e-2 / (g + 1)); empty: one group.
  std::vector<std::int32_t> tensor_group;
};

/// Steps the case's tensors with the fused plan (set B) and with the CPU
/// (set A's host side); after every step compares B's device bytes with A's
/// host bytes and B's FP8 copy with cpu::fp8_param_write_serial on A's
/// host master.
template <class Config, class F8, class Policy = typename tuning::default_step_policy<Config>::type>
void check_fused(const std::vector<tensor_case>& cases, const run_options& ro, std::uint64_t seed) {
  CAPTURE(ro.pow2);
  CAPTURE(ro.misalign);
  CAPTURE(ro.misalign_params);
  CAPTURE(ro.non_finite);
  CAPTURE(ro.device_inputs);
  CAPTURE(ro.grid);
  std::vector<std::int64_t> sizes;
  for (const auto& c : cases) sizes.push_back(c.size);
  tensor_set<Config> a, b;  // a: the CPU reference (host), b: the fused step (device)
  std::array<int, s_count> mis{};
  if (ro.misalign_params) mis[s_param] = static_cast<int>(sizeof(typename Config::param_type));
  a.allocate(sizes, mis);
  b.allocate(sizes, mis);
  testdata::generator ga(seed), gb(seed);
  a.init(ga);
  b.init(gb);
  zero_block(a, true);
  zero_block(b, true);
  for (int k = 0; k < s_count; ++k) REQUIRE(a.host[k] == b.host[k]);
  b.upload();

  outputs<F8> out(cases, ro.misalign);
  device::fp8_step_plan<Config, F8, Policy> plan;
  const auto refs = b.refs(true);
  int groups = 1;
  for (auto g : ro.tensor_group) groups = std::max(groups, g + 1);
  if (ro.tensor_group.empty()) STATUS_OK(plan.build(refs.data(), out.list.data(), refs.size()));
  else STATUS_OK(plan.build(refs.data(), out.list.data(), refs.size(), ro.tensor_group.data(), groups));
  if (ro.grid > 0) plan.set_grid(ro.grid);
  fp8_param_options o;
  o.pow2_scales = ro.pow2;

  double* d_lr = nullptr;
  std::int64_t* d_step = nullptr;
  if (ro.device_inputs) {
    GPU_CHECK(cudaMalloc(&d_lr, sizeof(double)));
    GPU_CHECK(cudaMalloc(&d_step, sizeof(std::int64_t)));
  }
  const auto h = hyper_for<Config>();
  std::vector<typename Config::hyper> hs(static_cast<std::size_t>(groups), h);  // group g: lr / (g + 1)
  for (int g = 0; g < groups; ++g) hs[g].lr = h.lr / (g + 1);
  for (int s = 1; s <= ro.steps; ++s) {
    CAPTURE(s);
    a.fill_grads(ga, 1.0f, 0.05, ro.non_finite);
    b.fill_grads(gb, 1.0f, 0.05, ro.non_finite);
    zero_block(a, false);
    zero_block(b, false);
    b.upload(s_grad);
    step_args args;
    args.step = s;
    if (ro.tensor_group.empty()) {
      STATUS_OK(cpu_step(a, h, args));
    } else {
      // Each group's tensors on the CPU with its hyperparameters (the
      // rounding keys are the tensors' own, not their places in a list).
      const auto all = a.refs(false);
      for (int g = 0; g < groups; ++g) {
        std::vector<tensor_ref<Config>> part;
        for (std::size_t i = 0; i < all.size(); ++i)
          if (ro.tensor_group[i] == g) part.push_back(all[i]);
        STATUS_OK(cpu::step_serial<Config>(hs[g], args, part.data(), part.size()));
      }
    }
    if (!ro.tensor_group.empty()) {
      STATUS_OK(plan.step_async(hs.data(), groups, args, o, nullptr));
    } else if (ro.device_inputs) {
      const double lr = h.lr;
      const std::int64_t st = s;
      GPU_CHECK(cudaMemcpy(d_lr, &lr, sizeof lr, cudaMemcpyHostToDevice));
      GPU_CHECK(cudaMemcpy(d_step, &st, sizeof st, cudaMemcpyHostToDevice));
      device::device_inputs in;
      in.lr = d_lr;
      in.step = d_step;
      step_args host_args;  // what the device values override
      host_args.step = 1;
      STATUS_OK(plan.step_async(h, host_args, in, o, nullptr));
    } else {
      STATUS_OK(plan.step_async(h, args, o, nullptr));
    }
    GPU_CHECK(cudaDeviceSynchronize());
    // The step's own bytes: the plain step's (= the CPU's), padding included.
    for (int k = 0; k < s_count; ++k) {
      CAPTURE(slot_name(k));
      const auto d = b.download(k);
      REQUIRE(d == a.host[k]);
    }
    // The FP8 copy: the second pass's reference on the CPU-stepped master.
    for (std::size_t i = 0; i < cases.size(); ++i) {
      if (cases[i].shape.size < 0) continue;
      CAPTURE(i);
      CAPTURE(cases[i].size);
      const auto t = a.ref(i, false);
      std::vector<F8> values(static_cast<std::size_t>(cases[i].size));
      std::vector<float> scales(static_cast<std::size_t>(cases[i].shape.scale_count()));
      fp8_param_ref<typename Config::master, F8> r;
      r.master = t.param;
      r.aux = t.aux;
      r.values = values.data();
      r.scales = scales.data();
      r.shape = cases[i].shape;
      STATUS_OK(cpu::fp8_param_write_serial(&r, 1, o));
      const auto v = out.values[i]->body();
      const auto sc = out.scales[i]->body();
      std::int64_t value_diffs = 0, first = -1;
      for (std::size_t e = 0; e < v.size(); ++e)
        if (v[e] != values[e].bits) {
          if (first < 0) first = static_cast<std::int64_t>(e);
          ++value_diffs;
        }
      CAPTURE(first);
      CHECK(value_diffs == 0);
      CHECK(std::memcmp(sc.data(), scales.data(), sc.size()) == 0);
      CHECK(out.values[i]->guards_intact());
      CHECK(out.scales[i]->guards_intact());
    }
  }
  cudaFree(d_lr);
  cudaFree(d_step);
}

std::vector<tensor_case> mixed_list() {
  return {flat(1),    flat(127),     flat(128),      flat(129),     flat(0),   flat(1000),
          flat(2048), flat(2049),    rows(3, 256),   no_copy(777),  flat(4095), rows(17, 384),
          flat(5000), rows(40, 128), flat(278011)};
}

}  // namespace

TEST_CASE("fused fp8 step: AdamW bf16 + int8 master, e4m3 and e5m2, plain and pow2 scales, the CPU's bytes") {
  using C = tc::adamw_default;
  std::uint64_t seed = 100;
  for (bool pow2 : {false, true}) {
    run_options ro;
    ro.pow2 = pow2;
    check_fused<C, fp8_e4m3>(mixed_list(), ro, ++seed);
    check_fused<C, fp8_e5m2>(mixed_list(), ro, ++seed);
  }
}

TEST_CASE("fused fp8 step: one tensor at a time, sizes around multiples of 128") {
  using C = tc::adamw_default;
  std::uint64_t seed = 200;
  for (std::int64_t n : {1, 8, 9, 120, 127, 128, 129, 255, 256, 257, 2047, 2048, 2049, 2050, 6143, 6144, 6145, 65537}) {
    CAPTURE(n);
    run_options ro;
    ro.steps = 2;
    check_fused<C, fp8_e4m3>({flat(n)}, ro, ++seed);
  }
}

TEST_CASE("fused fp8 step: non-finite masters, misaligned values, grids, device inputs") {
  using C = tc::adamw_default;
  run_options ro;
  ro.non_finite = true;
  ro.steps = 3;
  check_fused<C, fp8_e4m3>(mixed_list(), ro, 301);
  check_fused<C, fp8_e5m2>(mixed_list(), ro, 302);
  ro = {};
  ro.misalign = true;
  check_fused<C, fp8_e4m3>(mixed_list(), ro, 303);
  ro = {};
  ro.misalign_params = true;  // whole units as element-wise tiles (the unit runs take no tensor)
  check_fused<C, fp8_e4m3>(mixed_list(), ro, 312);
  check_fused<C, fp8_e4m3, tuning::previous_step_policy>(mixed_list(), ro, 313);
  for (int grid : {1, 7}) {
    ro = {};
    ro.grid = grid;
    check_fused<C, fp8_e4m3>(mixed_list(), ro, 304 + grid);
  }
  ro = {};
  ro.device_inputs = true;
  ro.pow2 = true;
  check_fused<C, fp8_e4m3>(mixed_list(), ro, 310);
  ro = {};
  for (std::size_t i = 0; i < mixed_list().size(); ++i) ro.tensor_group.push_back(static_cast<std::int32_t>(i % 3));
  check_fused<C, fp8_e4m3>(mixed_list(), ro, 311);  // three parameter groups in one launch
}

TEST_CASE("fused fp8 step: other step policies (element-wise tiles, unstaged runs, 4 and 16 elements per thread)") {
  using C = tc::adamw_default;
  run_options ro;
  ro.steps = 3;
  check_fused<C, fp8_e4m3, tuning::previous_step_policy>(mixed_list(), ro, 401);
  check_fused<C, fp8_e4m3, tuning::unstaged_step_policy>(mixed_list(), ro, 402);
  check_fused<C, fp8_e5m2, tuning::step_policy<256, 4, 2, true, true, true, true, true, false, 3>>(mixed_list(), ro,
                                                                                                   403);
  check_fused<C, fp8_e4m3, tuning::step_policy<128, 16, 2, true, true, true, true, true, false, 3>>(mixed_list(), ro,
                                                                                                    404);
  // Range-checked runs: a warp whose check fails redoes its tile, and the
  // FP8 copy is written from the redone master.
  check_fused<C, fp8_e4m3, tuning::step_policy<256, 8, 2, true, true, true, true, true, true, 3>>(mixed_list(), ro,
                                                                                                   406);
  ro.misalign = true;
  check_fused<C, fp8_e4m3, tuning::previous_step_policy>(mixed_list(), ro, 405);
}

TEST_CASE("fused fp8 step: fp32, exact-split and rounded-split masters") {
  run_options ro;
  ro.steps = 3;
  check_fused<tc::adamw_fp32_native, fp8_e4m3>(mixed_list(), ro, 501);
  check_fused<tc::adamw_rounded, fp8_e4m3>(mixed_list(), ro, 503);  // the default bf16 + int8 split
  ro.pow2 = true;
  check_fused<tc::adamw_exact, fp8_e5m2>(mixed_list(), ro, 502);
  check_fused<tc::adamw_rounded, fp8_e5m2>(mixed_list(), ro, 504);
}

TEST_CASE("fused fp8 step: a skipped step (host or device flag) or an invalid device value writes no byte") {
  using C = tc::adamw_default;
  const auto cases = mixed_list();
  std::vector<std::int64_t> sizes;
  for (const auto& c : cases) sizes.push_back(c.size);
  tensor_set<C> b;
  b.allocate(sizes);
  testdata::generator g(600);
  b.init(g);
  b.fill_grads(g);
  b.upload();
  outputs<fp8_e4m3> out(cases, false);
  device::fp8_step_plan<C, fp8_e4m3> plan;
  const auto refs = b.refs(true);
  STATUS_OK(plan.build(refs.data(), out.list.data(), refs.size()));
  const auto h = hyper_for<C>();
  step_args a;
  a.step = 1;
  a.skip = true;
  STATUS_OK(plan.step_async(h, a, fp8_param_options{}, nullptr));
  std::int32_t* d_skip = nullptr;
  GPU_CHECK(cudaMalloc(&d_skip, sizeof(std::int32_t)));
  const std::int32_t one = 1;
  GPU_CHECK(cudaMemcpy(d_skip, &one, sizeof one, cudaMemcpyHostToDevice));
  device::device_inputs in;
  in.skip = d_skip;
  a.skip = false;
  STATUS_OK(plan.step_async(h, a, in, fp8_param_options{}, nullptr));
  // An invalid device value (a negative lr): the error flag, no byte written.
  double* d_lr = nullptr;
  std::int32_t* d_error = nullptr;
  GPU_CHECK(cudaMalloc(&d_lr, sizeof(double)));
  GPU_CHECK(cudaMalloc(&d_error, sizeof(std::int32_t)));
  const double bad_lr = -1.0;
  const std::int32_t zero = 0;
  GPU_CHECK(cudaMemcpy(d_lr, &bad_lr, sizeof bad_lr, cudaMemcpyHostToDevice));
  GPU_CHECK(cudaMemcpy(d_error, &zero, sizeof zero, cudaMemcpyHostToDevice));
  device::device_inputs bad;
  bad.lr = d_lr;
  bad.error = d_error;
  STATUS_OK(plan.step_async(h, a, bad, fp8_param_options{}, nullptr));
  GPU_CHECK(cudaDeviceSynchronize());
  std::int32_t error = 0;
  GPU_CHECK(cudaMemcpy(&error, d_error, sizeof error, cudaMemcpyDeviceToHost));
  CHECK(error == 1);
  cudaFree(d_lr);
  cudaFree(d_error);
  cudaFree(d_skip);
  std::string where;
  const bool same = b.same(where);  // the device bytes are still the host's initial ones
  INFO(where);
  CHECK(same);
  for (std::size_t i = 0; i < cases.size(); ++i) {
    if (!out.values[i]) continue;
    for (auto c : out.values[i]->all()) CHECK(c == sentinel_byte);
    for (auto c : out.scales[i]->all()) CHECK(c == sentinel_byte);
  }
}

TEST_CASE("fused fp8 step: refused outputs leave the plan unbuilt") {
  using C = tc::adamw_default;
  tensor_set<C> b;
  b.allocate({256 * 3, 300});
  testdata::generator g(700);
  b.init(g);
  b.upload();
  const auto refs = b.refs(true);
  auto try_build = [&](std::vector<tensor_case> cases, auto&& edit) {
    outputs<fp8_e4m3> out(cases, false);
    edit(out.list);
    device::fp8_step_plan<C, fp8_e4m3> plan;
    const status st = plan.build(refs.data(), out.list.data(), refs.size());
    CHECK(!plan.built());
    CHECK(plan.step_async(hyper_for<C>(), step_args{}, fp8_param_options{}, nullptr).code() ==
          status_code::invalid_argument);
    for (const auto& v : out.values)
      if (v) {
        for (auto c : v->all()) CHECK(c == sentinel_byte);
      }
    return st.code();
  };
  auto none = [](auto&) {};
  // 128 x 128 blocks: the second pass's.
  CHECK(try_build({{768, fp8_shape_2d(3, 256, fp8_block_kind::tile_128x128)}, flat(300)}, none) ==
        status_code::invalid_argument);
  // Rows whose width is not a multiple of 128.
  CHECK(try_build({{768, fp8_shape_2d(4, 192, fp8_block_kind::row_1x128)}, flat(300)}, none) ==
        status_code::invalid_argument);
  // A shape of another size than the tensor's.
  CHECK(try_build({flat(767), flat(300)}, none) == status_code::size_mismatch);
  // Values without scales.
  CHECK(try_build({flat(768), flat(300)}, [](auto& l) { l[1].scales = nullptr; }) == status_code::null_pointer);
  // Values over another tensor's parameters; scales over the first tensor's values.
  CHECK(try_build({flat(768), flat(300)},
                  [&](auto& l) { l[0].values = reinterpret_cast<fp8_e4m3*>(refs[1].param); }) == status_code::aliasing);
  CHECK(try_build({flat(768), flat(300)},
                  [&](auto& l) { l[1].scales = reinterpret_cast<float*>(l[0].values); }) == status_code::aliasing);
  // Host memory.
  std::vector<fp8_e4m3> host(768);
  CHECK(try_build({flat(768), flat(300)}, [&](auto& l) { l[0].values = host.data(); }) != status_code::success);
}
