// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// device::optimizer writing FP8 copies (set_fp8_outputs, docs/fp8-params.md
// "In the owning optimizers") == cpu::optimizer writing them, byte for byte,
// over the same model: both block kinds, both formats, power-of-two scales,
// a compressed and an fp32 master, off-loaded tensors, the gradient pass with a skipped step, a
// release step, a CUDA graph replaying step + write, and a checkpoint load
// that re-derives the copy; copies written in the step's launch and by the
// pass after it, over more groups than one launch takes; bad outputs are
// refused with nothing written.
#include <cuda_runtime.h>
#include <doctest/doctest.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <unistd.h>
#include <vector>

#include "common/configs.hpp"
#include "common/data.hpp"
#include "fp8_outputs_model.hpp"
#include "common/gpu_check.hpp"
#include "flashoptim/cpu/fp8_param.hpp"
#include "flashoptim/optim/cpu_optimizer.hpp"
#include "flashoptim/optim/device_optimizer.cuh"
#include "flashoptim/optim/device_optimizer_io.cuh"
#include "optimizer_bytes.cuh"

using namespace flashoptim;
namespace tc = testconfigs;
using optimizer_test::bytes_of;

namespace {

using fp8_outputs_test::descs;
using fp8_outputs_test::fp8_model;

/// The same model twice: host buffers for cpu::optimizer, device buffers
/// for device::optimizer, and both sides' FP8 outputs (sentinel-filled).
template <class Config, class F8>
struct twin {
  using P = typename Config::param_type;
  using G = typename Config::grad_type;
  fp8_model<Config, F8> host;  // cpu::optimizer's buffers
  std::vector<std::vector<P>>& hp = host.params;
  std::vector<std::vector<G>>& hg = host.grads;
  std::vector<std::vector<F8>>& hv = host.values;
  std::vector<std::vector<float>>& hs = host.scales;
  std::vector<P*> dp;
  std::vector<G*> dg;
  std::vector<float*> dfp32;
  std::vector<F8*> dv;
  std::vector<float*> ds;

  explicit twin(std::uint64_t seed) : host(seed) {
    for (std::size_t i = 0; i < descs.size(); ++i) {
      const auto n = static_cast<std::size_t>(descs[i].size);
      const auto nb = hs[i].size();
      dp.push_back(alloc<P>(n));
      dg.push_back(alloc<G>(n));
      dfp32.push_back(alloc<float>(n));
      dv.push_back(alloc<F8>(n));
      ds.push_back(alloc<float>(nb));
      GPU_CHECK(cudaMemcpy(dfp32.back(), host.fp32[i].data(), n * sizeof(float), cudaMemcpyHostToDevice));
      GPU_CHECK(cudaMemcpy(dv.back(), hv[i].data(), n, cudaMemcpyHostToDevice));
      GPU_CHECK(cudaMemcpy(ds.back(), hs[i].data(), nb * sizeof(float), cudaMemcpyHostToDevice));
    }
  }
  ~twin() {
    for (auto* p : dp) cudaFree(p);
    for (auto* p : dg) cudaFree(p);
    for (auto* p : dfp32) cudaFree(p);
    for (auto* p : dv) cudaFree(p);
    for (auto* p : ds) cudaFree(p);
  }
  twin(const twin&) = delete;
  twin& operator=(const twin&) = delete;
  template <class T>
  static T* alloc(std::size_t n) {
    T* p = nullptr;
    GPU_CHECK(cudaMalloc(&p, std::max<std::size_t>(1, n) * sizeof(T)));
    return p;
  }

  std::vector<optim::param_group<Config>> groups(bool device) {
    if (!device) return host.groups();
    return fp8_model<Config, F8>::groups_over(std::vector<void*>(dp.begin(), dp.end()),
                                              std::vector<const void*>(dg.begin(), dg.end()),
                                              std::vector<const float*>(dfp32.begin(), dfp32.end()));
  }
  std::vector<optim::fp8_output<F8>> outputs(bool device) {
    if (!device) return host.outputs();
    std::vector<optim::fp8_output<F8>> o(descs.size());
    for (std::size_t i = 0; i < descs.size(); ++i)
      if (descs[i].copy) o[i] = {dv[i], ds[i], descs[i].kind};
    return o;
  }
  void set_grads(std::uint64_t seed, bool non_finite = false) {
    host.set_grads(seed, non_finite);
    for (std::size_t i = 0; i < descs.size(); ++i)
      GPU_CHECK(cudaMemcpy(dg[i], hg[i].data(), hg[i].size() * sizeof(G), cudaMemcpyHostToDevice));
  }
  /// Every FP8 byte of the device side == the host side's (the sentinels
  /// included, for the tensor without a copy).
  void require_same_copy(const char* when) {
    GPU_CHECK(cudaDeviceSynchronize());
    const std::string stage = when;  // doctest prints a char pointer as an address
    for (std::size_t i = 0; i < descs.size(); ++i) {
      CAPTURE(stage);
      CAPTURE(i);
      const auto v = bytes_of(reinterpret_cast<const std::uint8_t*>(dv[i]), static_cast<std::int64_t>(hv[i].size()));
      const auto s = bytes_of(ds[i], static_cast<std::int64_t>(hs[i].size()));
      REQUIRE(std::memcmp(v.data(), hv[i].data(), v.size()) == 0);
      REQUIRE(std::memcmp(s.data(), hs[i].data(), s.size()) == 0);
      if (!descs[i].copy) REQUIRE(hv[i][0].bits == 0x5a);
    }
  }
};

optim::optimizer_options quiet() {
  optim::optimizer_options o;
  o.lr_check = optim::lr_check_mode::off;
  o.seed = 5;
  return o;
}

/// offload: device::optimizer's offload_fraction (the off-loaded tensors'
/// copies are written by its CPU part); a graph capture is refused then, so
/// that stage is left out.
template <class Config, class F8>
void run_twin(bool pow2, double offload = 0.0) {
  twin<Config, F8> m(11);
  cpu::optimizer<Config> host;
  device::optimizer<Config> dev;
  STATUS_OK(host.init(m.groups(false), quiet()));
  optim::optimizer_options dev_options = quiet();
  dev_options.offload_fraction = offload;
  STATUS_OK(dev.init(m.groups(true), dev_options));
  if (offload > 0.0) REQUIRE(dev.host_tensor_count() > 0);
  fp8_param_options po;
  po.pow2_scales = pow2;
  STATUS_OK(host.set_fp8_outputs(m.outputs(false), po));
  STATUS_OK(dev.set_fp8_outputs(m.outputs(true), po));
  CHECK(dev.fp8_form().json() == host.fp8_form().json());
  // the 1 x 128 copies (64 x 256 and 1-D) are written by the step's own
  // launch, the 128 x 128 one by the launch after it
  CHECK(dev.fused_fp8_count() == 2);
  m.require_same_copy("set_fp8_outputs");
  cudaStream_t stream;
  GPU_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  for (int s = 1; s <= 3; ++s) {
    m.set_grads(100 + s);
    STATUS_OK(host.step());
    STATUS_OK(dev.step_async(stream));
    GPU_CHECK(cudaStreamSynchronize(stream));
    m.require_same_copy("step");
  }
  // the gradient pass: a clipped step, then a skipped one (the copy stays)
  grad_pass_config cfg;
  cfg.max_norm = 0.25;
  STATUS_OK(dev.set_grad_pass(cfg));
  grad_control ctl = rule::initial_control(cfg);  // GradScaler's initial scale, as set_grad_pass resets the device's
  for (const bool bad : {false, true}) {
    m.set_grads(200 + bad, bad);
    STATUS_OK(host.step(cfg, ctl));
    STATUS_OK(dev.step_async(stream));
    GPU_CHECK(cudaStreamSynchronize(stream));
    m.require_same_copy(bad ? "skipped step" : "clipped step");
  }
  dev.clear_grad_pass();
  // a release step: the copy is written at its end
  STATUS_OK(dev.enable_release());
  m.set_grads(300);
  STATUS_OK(host.begin_step());
  STATUS_OK(dev.begin_step());
  for (std::size_t i = descs.size(); i-- > 0;) {
    STATUS_OK(host.step_tensor(i));
    STATUS_OK(dev.step_tensor_async(i, stream));
  }
  STATUS_OK(host.end_step());
  STATUS_OK(dev.end_step_async(stream));
  GPU_CHECK(cudaStreamSynchronize(stream));
  m.require_same_copy("release step");
  if (offload > 0.0) {
    // and a plain step once more after the release step
    m.set_grads(350);
    STATUS_OK(host.step());
    STATUS_OK(dev.step_async(stream));
    GPU_CHECK(cudaStreamSynchronize(stream));
    m.require_same_copy("step after release (off-load)");
    GPU_CHECK(cudaStreamDestroy(stream));
    return;
  }
  // a CUDA graph of step_async replays the step and the write
  cudaGraph_t graph;
  GPU_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
  const status captured = dev.step_async(stream);
  GPU_CHECK(cudaStreamEndCapture(stream, &graph));
  STATUS_OK(captured);
  cudaGraphExec_t exec;
  GPU_CHECK(cudaGraphInstantiate(&exec, graph, 0));
  for (int s = 1; s <= 2; ++s) {
    m.set_grads(400 + s);
    STATUS_OK(host.step());
    GPU_CHECK(cudaGraphLaunch(exec, stream));
    GPU_CHECK(cudaStreamSynchronize(stream));
    m.require_same_copy("graph replay");
  }
  GPU_CHECK(cudaGraphExecDestroy(exec));
  GPU_CHECK(cudaGraphDestroy(graph));
  GPU_CHECK(cudaStreamDestroy(stream));
}

std::string temp_path(const std::string& leaf) {
  static int counter = 0;
  const char* dir = std::getenv("TMPDIR");
  return std::string(dir ? dir : "/tmp") + "/flashoptim_gpufp8_" + std::to_string(::getpid()) + "_" +
         std::to_string(counter++) + "_" + leaf;
}

}  // namespace

TEST_CASE("device::optimizer FP8 copies == cpu::optimizer's: bf16 + int8 master, e4m3") {
  run_twin<tc::adamw_default, fp8_e4m3>(false);
  run_twin<tc::adamw_rounded, fp8_e4m3>(false);  // the default split
}
TEST_CASE("device::optimizer FP8 copies == cpu::optimizer's: fp32 master, e5m2, power-of-two scales") {
  run_twin<tc::adamw_fp32_native, fp8_e5m2>(true);
}
TEST_CASE("device::optimizer FP8 copies == cpu::optimizer's with off-loaded tensors (their copies written by the CPU)") {
  run_twin<tc::adamw_default, fp8_e4m3>(false, 0.5);
  run_twin<tc::adamw_rounded, fp8_e4m3>(false, 0.5);
  run_twin<tc::adamw_fp32_native, fp8_e5m2>(true, 0.5);
}

TEST_CASE("device::optimizer: bad FP8 outputs are refused and nothing is written") {
  using C = tc::adamw_default;
  using F8 = fp8_e4m3;
  twin<C, F8> m(21);
  device::optimizer<C> dev;
  CHECK(dev.set_fp8_outputs(m.outputs(true)).code() == status_code::invalid_argument);  // before init
  STATUS_OK(dev.init(m.groups(true), quiet()));
  CHECK_FALSE(dev.set_fp8_outputs(m.outputs(false)).ok());  // host memory
  auto bad = m.outputs(true);
  bad[2].values = reinterpret_cast<F8*>(m.dp[0]);  // over a parameter
  CHECK(dev.set_fp8_outputs(bad).code() == status_code::aliasing);
  bad = m.outputs(true);
  bad[2].blocks = fp8_block_kind::tile_128x128;  // a 1-D tensor
  CHECK(dev.set_fp8_outputs(bad).code() == status_code::invalid_argument);
  CHECK_FALSE(dev.has_fp8_outputs());
  m.require_same_copy("nothing written");  // the device buffers still hold the host's sentinels
  // the same refusals with off-loaded tensors
  optim::optimizer_options o = quiet();
  o.offload_fraction = 0.5;
  device::optimizer<C> off;
  STATUS_OK(off.init(m.groups(true), o));
  REQUIRE(off.host_tensor_count() > 0);
  CHECK_FALSE(off.set_fp8_outputs(m.outputs(false)).ok());  // host memory
  bad = m.outputs(true);
  bad[0].values = reinterpret_cast<F8*>(m.dp[1]);  // an off-loaded tensor's copy over a parameter
  CHECK(off.set_fp8_outputs(bad).code() == status_code::aliasing);
  CHECK_FALSE(off.has_fp8_outputs());
  m.require_same_copy("nothing written (off-load)");
}

TEST_CASE("device::save records the FP8 form; device::load re-derives the copy") {
  using C = tc::adamw_default;
  using F8 = fp8_e4m3;
  twin<C, F8> a(31), b(31);
  device::optimizer<C> src, dst;
  STATUS_OK(src.init(a.groups(true), quiet()));
  STATUS_OK(dst.init(b.groups(true), quiet()));
  STATUS_OK(src.set_fp8_outputs(a.outputs(true)));
  STATUS_OK(dst.set_fp8_outputs(b.outputs(true)));
  for (int s = 1; s <= 2; ++s) {
    a.set_grads(40 + s);
    STATUS_OK(src.step_async(nullptr));
  }
  b.set_grads(99);
  STATUS_OK(dst.step_async(nullptr));
  const std::string path = temp_path("fp8.safetensors");
  STATUS_OK(device::save(src, path));
  std::vector<unsigned char> image;
  STATUS_OK(io::read_file(path, image));
  io::safetensors_header h;
  STATUS_OK(io::parse_safetensors(image.data(), image.size(), h));
  REQUIRE(h.metadata.count("fp8_params") == 1);
  CHECK(h.metadata.at("fp8_params") == src.fp8_form().json());
  STATUS_OK(device::load(dst, path));
  GPU_CHECK(cudaDeviceSynchronize());
  for (std::size_t i = 0; i < descs.size(); ++i) {
    CAPTURE(i);
    const auto n = static_cast<std::int64_t>(a.hv[i].size());
    CHECK(bytes_of(reinterpret_cast<const std::uint8_t*>(a.dv[i]), n) ==
          bytes_of(reinterpret_cast<const std::uint8_t*>(b.dv[i]), n));
    CHECK(bytes_of(a.ds[i], static_cast<std::int64_t>(a.hs[i].size())) ==
          bytes_of(b.ds[i], static_cast<std::int64_t>(b.hs[i].size())));
  }
  std::remove(path.c_str());
}

TEST_CASE("device::optimizer: FP8 copies over more groups than one launch takes, fused and passed, == the recipe") {
  // One tensor per group, tuning::max_step_groups + 3 groups: two step
  // launches, each with copies written in the launch (1 x 128, whole-block
  // rows) and copies written by the pass after it (128 x 128, a width that
  // is not a multiple of 128). After every step each copy must be
  // cpu::fp8_param_write_serial of the master the device keeps.
  using C = tc::adamw_default;
  using F8 = fp8_e4m3;
  using P = C::param_type;
  using G = C::grad_type;
  struct shape {
    std::int64_t rows, cols;  // cols 0: 1-D of `rows` elements
    fp8_block_kind kind;
    bool fused;
  };
  const auto row = fp8_block_kind::row_1x128, tile = fp8_block_kind::tile_128x128;
  std::vector<shape> shapes;
  const shape cycle[4] = {{300, 0, row, true}, {64, 256, row, true}, {130, 200, tile, false}, {40, 100, row, false}};
  for (int g = 0; g < tuning::max_step_groups + 3; ++g) shapes.push_back(cycle[g % 4]);
  const std::size_t n_t = shapes.size();
  auto size_of = [](const shape& s) { return s.cols == 0 ? s.rows : s.rows * s.cols; };
  auto form_of = [](const shape& s) { return s.cols == 0 ? fp8_shape_1d(s.rows) : fp8_shape_2d(s.rows, s.cols, s.kind); };
  std::vector<P*> dp(n_t);
  std::vector<G*> dg(n_t);
  std::vector<F8*> dv(n_t);
  std::vector<float*> ds(n_t);
  std::vector<optim::param_group<C>> groups(n_t);
  std::vector<optim::fp8_output<F8>> outs(n_t);
  std::mt19937 rng(77);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::size_t fused = 0;
  for (std::size_t i = 0; i < n_t; ++i) {
    const std::int64_t n = size_of(shapes[i]);
    std::vector<P> hp(static_cast<std::size_t>(n));
    for (auto& x : hp) x = format::from_float<P>(0.05f * normal(rng));
    GPU_CHECK(cudaMalloc(&dp[i], n * sizeof(P)));
    GPU_CHECK(cudaMalloc(&dg[i], n * sizeof(G)));
    GPU_CHECK(cudaMalloc(&dv[i], n));
    GPU_CHECK(cudaMalloc(&ds[i], form_of(shapes[i]).scale_count() * sizeof(float)));
    GPU_CHECK(cudaMemcpy(dp[i], hp.data(), n * sizeof(P), cudaMemcpyHostToDevice));
    optim::param_spec s;
    s.param = dp[i];
    s.grad = dg[i];
    s.size = n;
    if (shapes[i].cols != 0) {
      s.rows = shapes[i].rows;
      s.cols = shapes[i].cols;
    }
    groups[i].params.push_back(s);
    groups[i].hyper.lr = 1e-2 * (1 + static_cast<int>(i) % 3);
    groups[i].hyper.weight_decay = i % 2 ? 0.1 : 0.0;
    outs[i] = {dv[i], ds[i], shapes[i].kind};
    fused += shapes[i].fused ? 1 : 0;
  }
  device::optimizer<C> dev;
  STATUS_OK(dev.init(groups, quiet()));
  STATUS_OK(dev.set_fp8_outputs(outs));
  CHECK(dev.fused_fp8_count() == fused);
  for (int step = 1; step <= 3; ++step) {
    CAPTURE(step);
    for (std::size_t i = 0; i < n_t; ++i) {
      std::vector<G> hg(static_cast<std::size_t>(size_of(shapes[i])));
      for (auto& x : hg) x = format::from_float<G>(1e-2f * normal(rng));
      GPU_CHECK(cudaMemcpy(dg[i], hg.data(), hg.size() * sizeof(G), cudaMemcpyHostToDevice));
    }
    STATUS_OK(dev.step_async(nullptr));
    GPU_CHECK(cudaDeviceSynchronize());
    device::optimizer<C>::host_copy h;
    STATUS_OK(dev.copy_to_host(h));
    for (std::size_t i = 0; i < n_t; ++i) {
      CAPTURE(i);
      const fp8_block_shape form = form_of(shapes[i]);
      std::vector<F8> values(static_cast<std::size_t>(form.size));
      std::vector<float> scales(static_cast<std::size_t>(form.scale_count()));
      fp8_param_ref<C::master, F8> r;
      r.master = h.tensors[i].param;
      r.aux = h.tensors[i].aux;
      r.values = values.data();
      r.scales = scales.data();
      r.shape = form;
      STATUS_OK(cpu::fp8_param_write_serial(&r, 1, fp8_param_options{}));
      const auto v = bytes_of(reinterpret_cast<const std::uint8_t*>(dv[i]), form.size);
      const auto sc = bytes_of(ds[i], form.scale_count());
      REQUIRE(std::memcmp(v.data(), values.data(), v.size()) == 0);
      REQUIRE(std::memcmp(sc.data(), scales.data(), scales.size() * sizeof(float)) == 0);
    }
  }
  for (std::size_t i = 0; i < n_t; ++i) {
    cudaFree(dp[i]);
    cudaFree(dg[i]);
    cudaFree(dv[i]);
    cudaFree(ds[i]);
  }
}
