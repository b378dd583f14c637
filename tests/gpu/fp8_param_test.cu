// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// FP8 parameters with block scales on the GPU (docs/fp8-params.md):
// kernel::fp8_param_plan writes the same bytes as cpu::fp8_param_write_serial
// (which test_fp8_param checks against the fp64 model): e4m3 and e5m2,
// 1-D, 1 x 128 and 128 x 128 blocks on shapes that are not multiples of 128,
// three master modes, plain and power-of-two scales, non-finite elements;
// aligned (vector loads and stores) and misaligned buffers; every tensor of
// a list in one launch, on one block per tile and on grids of 1 and 3 blocks
// (each block walking tiles of both kinds); and not a byte written past any
// buffer (sentinels).
#include <cuda_runtime.h>
#include <doctest/doctest.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "common/fp8_param_cases.hpp"
#include "common/gpu_check.hpp"
#include "common/guarded_buffer.hpp"
#include "flashoptim/cpu/fp8_param.hpp"
#include "flashoptim/kernel/fp8_param_kernel.cuh"

using namespace flashoptim;

namespace {

using gpu_guard::guarded;
using gpu_guard::sentinel;

template <class Master, class F8>
struct case_buffers {
  using P = typename Master::param_type;
  using A = typename Master::aux_type;
  fp8_model::master_tensor<Master> m;
  fp8_block_shape shape;
  std::vector<F8> cpu_values;
  std::vector<float> cpu_scales;
  guarded d_master, d_aux, d_values, d_scales;
  case_buffers(const fp8_block_shape& s, const std::vector<float>& x, bool misalign)
      : m(x),
        shape(s),
        cpu_values(static_cast<std::size_t>(s.size), F8{sentinel}),
        cpu_scales(static_cast<std::size_t>(s.scale_count())),
        d_master(x.size() * sizeof(P), misalign ? sizeof(P) : 0, m.param.data()),
        d_aux(x.size() * storage_bytes<A>, misalign ? storage_bytes<A> : 0, m.aux.data()),
        d_values(x.size(), misalign ? 1 : 0, nullptr),
        d_scales(cpu_scales.size() * 4, 0, nullptr) {
    std::memset(cpu_scales.data(), sentinel, cpu_scales.size() * 4);
  }
  fp8_param_ref<Master, F8> cpu_ref() {
    fp8_param_ref<Master, F8> r;
    r.master = m.param.data();
    if constexpr (storage_bytes<A> != 0) r.aux = m.aux.data();
    r.values = cpu_values.data();
    r.scales = cpu_scales.data();
    r.shape = shape;
    return r;
  }
  fp8_param_ref<Master, F8> gpu_ref() {
    fp8_param_ref<Master, F8> r;
    r.master = static_cast<const P*>(d_master.ptr());
    if constexpr (storage_bytes<A> != 0) r.aux = static_cast<const A*>(d_aux.ptr());
    r.values = static_cast<F8*>(d_values.ptr());
    r.scales = static_cast<float*>(d_scales.ptr());
    r.shape = shape;
    return r;
  }
  void check() {
    auto r = cpu_ref();
    REQUIRE(cpu::fp8_param_write_serial(&r, 1, options).ok());
    const auto v = d_values.body();
    const auto sc = d_scales.body();
    std::int64_t value_diffs = 0;
    for (std::size_t i = 0; i < v.size(); ++i) value_diffs += v[i] != cpu_values[i].bits;
    CHECK(value_diffs == 0);
    CHECK(std::memcmp(sc.data(), cpu_scales.data(), sc.size()) == 0);
    CHECK(d_values.guards_intact());
    CHECK(d_scales.guards_intact());
  }
  fp8_param_options options{};
};

template <class Master, class F8>
void run_cases(bool pow2, bool non_finite, bool misalign) {
  CAPTURE(pow2);
  CAPTURE(misalign);
  std::uint64_t seed = 7;
  for (const auto& s : fp8_model::shapes()) {
    CAPTURE(fp8_model::describe(s));
    case_buffers<Master, F8> b(s, fp8_model::values(s, ++seed, non_finite), misalign);
    b.options.pow2_scales = pow2;
    auto r = b.gpu_ref();
    kernel::fp8_param_plan<Master, F8> plan;
    REQUIRE(plan.build(&r, 1).ok());
    REQUIRE(plan.write_async(b.options, nullptr).ok());
    GPU_CHECK(cudaDeviceSynchronize());
    b.check();
  }
}

}  // namespace

// Every master mode the pass decodes its own way: tabulated int8 fractions
// (bf16, fp16), computed int16 ones, and the modes decoded as they are.
TEST_CASE_TEMPLATE("gpu fp8 params: the CPU's bytes, nothing written past a buffer", Master, codec::native<float>,
                   codec::ulp_correction<bf16, std::int8_t>, codec::ulp_correction<fp16, std::int8_t>,
                   codec::ulp_correction<bf16, std::int16_t>, codec::fp32_master<bf16>, codec::exact_split,
                   codec::rounded_split) {
  for (bool pow2 : {false, true})
    for (bool misalign : {false, true}) {
      run_cases<Master, fp8_e4m3>(pow2, true, misalign);
      run_cases<Master, fp8_e5m2>(pow2, !pow2, misalign);
    }
}

TEST_CASE("gpu fp8 params: every tensor of a list in one launch, empty tensors among them") {
  using M = codec::ulp_correction<bf16, std::int8_t>;
  auto shapes = fp8_model::shapes();
  shapes.insert(shapes.begin() + 3, fp8_shape_1d(0));
  shapes.push_back(fp8_shape_2d(0, 300, fp8_block_kind::tile_128x128));
  shapes.push_back(fp8_shape_2d(5, 0, fp8_block_kind::row_1x128));
  // grid 0: one CUDA block per tile; 1 and 3: each block walks many tiles of
  // both kinds, interior and edge, reusing its shared amax slots (fresh
  // buffers each time, so a tile no block writes keeps its sentinels).
  for (int grid : {0, 1, 3}) {
    CAPTURE(grid);
    std::vector<std::unique_ptr<case_buffers<M, fp8_e4m3>>> bufs;
    std::vector<fp8_param_ref<M, fp8_e4m3>> refs;
    for (std::size_t k = 0; k < shapes.size(); ++k) {
      bufs.push_back(std::make_unique<case_buffers<M, fp8_e4m3>>(
          shapes[k], fp8_model::values(shapes[k], 500 + k, true), k % 3 == 1));
      refs.push_back(bufs.back()->gpu_ref());
    }
    kernel::fp8_param_plan<M, fp8_e4m3> plan;
    REQUIRE(plan.build(refs.data(), refs.size()).ok());
    plan.set_grid(grid);
    cudaStream_t stream;
    GPU_CHECK(cudaStreamCreate(&stream));
    REQUIRE(plan.write_async({}, stream).ok());
    REQUIRE(plan.write_async({}, stream).ok());  // twice: the same bytes (a function of the master)
    GPU_CHECK(cudaStreamSynchronize(stream));
    GPU_CHECK(cudaStreamDestroy(stream));
    for (std::size_t k = 0; k < shapes.size(); ++k) {
      CAPTURE(fp8_model::describe(shapes[k]));
      bufs[k]->check();
    }
  }
}

TEST_CASE("gpu fp8 params: a refused list leaves the plan unbuilt; write before build is an error") {
  using M = codec::native<float>;
  const auto s = fp8_shape_2d(130, 129, fp8_block_kind::tile_128x128);
  case_buffers<M, fp8_e4m3> b(s, fp8_model::values(s, 1, false), false);
  kernel::fp8_param_plan<M, fp8_e4m3> plan;
  CHECK(plan.write_async({}, nullptr).code() == status_code::invalid_argument);
  auto r = b.gpu_ref();
  r.shape.cols = 128;
  CHECK(plan.build(&r, 1).code() == status_code::size_mismatch);
  CHECK(plan.write_async({}, nullptr).code() == status_code::invalid_argument);
  const auto v = b.d_values.all();
  for (auto c : v) CHECK(c == sentinel);
}
