// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// The GPU gradient pass (device/grad_pass.cuh) against its CPU twin
// (cpu/grad_pass.hpp): the same bits of every output for every launch shape
// (block size, segment grid, level-1 grid), with misaligned tensors (CUB's
// scalar fallback), non-finite gradients of every type, empty tensors and
// lists, replayed from a captured CUDA graph while GradScaler's state
// evolves on the device, and one tensor past 2^31 elements.
#include <cuda_runtime.h>
#include <doctest/doctest.h>

#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "common/gpu_check.hpp"
#include "flashoptim/cpu/grad_pass.hpp"
#include "flashoptim/device/grad_pass.cuh"
#include "passes/grad_pass_harness.hpp"

using namespace flashoptim;
using namespace grad_test;

namespace {

/// Device copies of host gradients, byte for byte (same misalignment
/// within a 256-byte-aligned allocation).
struct device_grads {
  std::vector<void*> buffers;
  std::vector<grad_tensor> tensors;
  explicit device_grads(const std::vector<host_grad>& gs) {
    for (const auto& g : gs) {
      void* p = nullptr;
      const std::size_t bytes = g.bytes.size();
      GPU_CHECK(cudaMalloc(&p, bytes));
      GPU_CHECK(cudaMemcpy(p, g.bytes.data(), bytes, cudaMemcpyHostToDevice));
      buffers.push_back(p);
      const void* data = g.size == 0 ? nullptr : static_cast<char*>(p) + g.offset * size_of(g.type);
      tensors.push_back(grad_tensor{data, g.type, g.size});
    }
  }
  void upload(const std::vector<host_grad>& gs) {
    for (std::size_t i = 0; i < gs.size(); ++i)
      GPU_CHECK(cudaMemcpy(buffers[i], gs[i].bytes.data(), gs[i].bytes.size(), cudaMemcpyHostToDevice));
  }
  ~device_grads() {
    for (void* p : buffers) cudaFree(p);
  }
  grad_list list() const { return grad_list{tensors.data(), static_cast<std::int64_t>(tensors.size())}; }
};

/// The outputs in one device allocation.
struct device_outputs {
  std::int64_t count;
  unsigned char* base = nullptr;
  explicit device_outputs(std::int64_t n) : count(n) {
    GPU_CHECK(cudaMalloc(&base, bytes()));
    GPU_CHECK(cudaMemset(base, 0xA5, bytes()));
  }
  ~device_outputs() { cudaFree(base); }
  std::size_t bytes() const { return sizeof(grad_control) + sizeof(grad_summary) + 2 * sizeof(double) * (count + 1); }
  grad_control* control() const { return reinterpret_cast<grad_control*>(base); }
  grad_summary* summary() const { return reinterpret_cast<grad_summary*>(base + sizeof(grad_control)); }
  double* sums() const {
    return reinterpret_cast<double*>(base + sizeof(grad_control) + sizeof(grad_summary));
  }
  double* norms() const { return sums() + count + 1; }
  device::grad_pass_outputs outputs() const { return {control(), summary(), sums(), norms()}; }
  void set_control(const grad_control& c) { GPU_CHECK(cudaMemcpy(control(), &c, sizeof c, cudaMemcpyHostToDevice)); }
};

struct results {
  grad_control control{};
  grad_summary summary{};
  std::vector<double> sums, norms;
};

results read(const device_outputs& d) {
  results r;
  r.sums.resize(d.count);
  r.norms.resize(d.count);
  GPU_CHECK(cudaMemcpy(&r.control, d.control(), sizeof r.control, cudaMemcpyDeviceToHost));
  GPU_CHECK(cudaMemcpy(&r.summary, d.summary(), sizeof r.summary, cudaMemcpyDeviceToHost));
  if (d.count > 0) {
    GPU_CHECK(cudaMemcpy(r.sums.data(), d.sums(), d.count * sizeof(double), cudaMemcpyDeviceToHost));
    GPU_CHECK(cudaMemcpy(r.norms.data(), d.norms(), d.count * sizeof(double), cudaMemcpyDeviceToHost));
  }
  return r;
}

/// The CPU twin with the same configuration and control state.
results cpu_twin(const std::vector<host_grad>& gs, const grad_pass_config& c, const grad_control& ctl) {
  const auto v = views(gs);
  results r;
  r.control = ctl;
  r.sums.resize(gs.size());
  r.norms.resize(gs.size());
  const status s = cpu::grad_pass(grad_list{v.data(), static_cast<std::int64_t>(v.size())}, c, &r.control,
                                  cpu::grad_outputs{&r.summary, r.sums.data(), r.norms.data()});
  REQUIRE_MESSAGE(s.ok(), s.what());
  return r;
}

void require_same(const results& gpu, const results& cpu) {
  CHECK(std::memcmp(&gpu.control, &cpu.control, sizeof gpu.control) == 0);
  CHECK(bits(gpu.control.multiplier) == bits(cpu.control.multiplier));
  CHECK(bits(gpu.control.total_norm) == bits(cpu.control.total_norm));
  CHECK(bits(gpu.summary.sum_squares) == bits(cpu.summary.sum_squares));
  CHECK(bits(gpu.summary.norm) == bits(cpu.summary.norm));
  CHECK(gpu.summary.max_abs_bits == cpu.summary.max_abs_bits);
  CHECK(gpu.summary.non_finite == cpu.summary.non_finite);
  CHECK(gpu.summary.elements == cpu.summary.elements);
  REQUIRE(gpu.sums.size() == cpu.sums.size());
  for (std::size_t t = 0; t < gpu.sums.size(); ++t) {
    INFO("tensor ", t);
    CHECK(bits(gpu.sums[t]) == bits(cpu.sums[t]));
    CHECK(bits(gpu.norms[t]) == bits(cpu.norms[t]));
  }
}

std::vector<host_grad> mixed_list(std::uint64_t seed) {
  const std::int64_t sizes[] = {0,     1,     3,     127,   128,   129,    1000,   1023,  1024,
                                1025,  4097,  32767, 32768, 32769, 100003, 0,      65536, 7,
                                32 * 32768 + 32768 + 5};
  const dtype types[] = {dtype::f32, dtype::bf16, dtype::f16};
  std::vector<host_grad> gs;
  int i = 0;
  for (std::int64_t n : sizes) {
    const dtype t = types[i % 3];
    host_grad g = make_grad(t, n, i % 4 == 3 ? 1 : (i % 4 == 1 ? 2 : 0));  // some rows not vector-aligned
    fill_random(g, seed + static_cast<std::uint64_t>(i), t == dtype::f16 ? 0.25f : 1.0f);
    gs.push_back(std::move(g));
    ++i;
  }
  return gs;
}

results run_gpu(const std::vector<host_grad>& gs, const grad_pass_config& c, const grad_control& ctl,
                const device::grad_pass_launch& launch) {
  device_grads d(gs);
  device_outputs o(static_cast<std::int64_t>(gs.size()));
  o.set_control(ctl);
  device::grad_pass_plan plan;
  const status s = plan.build(d.list(), c, o.outputs(), launch);
  REQUIRE_MESSAGE(s.ok(), s.what());
  STATUS_OK(plan.run_async(nullptr));
  GPU_CHECK(cudaDeviceSynchronize());
  return read(o);
}

}  // namespace

TEST_CASE("GPU == CPU, bit for bit, for every launch shape") {
  const auto gs = mixed_list(1);
  grad_pass_config c;
  c.max_norm = 3.0;
  c.scaler.init_scale = 1024.0;
  const grad_control ctl = rule::initial_control(c);
  const results cpu = cpu_twin(gs, c, ctl);
  CHECK(bits(cpu.summary.sum_squares) == bits(reference(gs).sum));
  struct shape {
    int threads, grid, group_grid;
  };
  const shape shapes[] = {{32, 1, 1},    {64, 2, 1},   {96, 7, 3},   {128, 33, 0}, {256, 0, 0},
                          {480, 5, 2},   {512, 0, 1},  {1024, 1, 0}, {1024, 0, 0}, {256, 1000, 1000},
                          {32, 0, 0},    {160, 3, 9}};
  for (const shape& s : shapes) {
    INFO("threads ", s.threads, " grid ", s.grid, " group_grid ", s.group_grid);
    require_same(run_gpu(gs, c, ctl, device::grad_pass_launch{s.threads, s.grid, s.group_grid}), cpu);
  }
}

TEST_CASE("GPU: non-finite gradients of every type, empty tensors and lists") {
  const std::uint32_t bad[3][4] = {{0x7f800000u, 0xff800000u, 0x7fc00000u, 0xffc01234u},
                                   {0x7f80u, 0xff80u, 0x7fc0u, 0xffc1u},
                                   {0x7c00u, 0xfc00u, 0x7e00u, 0xfe01u}};
  const dtype types[] = {dtype::f32, dtype::bf16, dtype::f16};
  for (int k = 0; k < 3; ++k)
    for (int b = 0; b < 4; ++b) {
      INFO("type ", to_string(types[k]), " value ", b);
      auto gs = mixed_list(5);
      host_grad g = make_grad(types[k], 70001, 1);
      fill_random(g, 9, 0.25f);
      g.set_bits(66000, bad[k][b]);
      gs.insert(gs.begin() + 3, std::move(g));
      grad_pass_config c;
      c.max_norm = (b % 2) ? 1.0 : std::numeric_limits<double>::infinity();
      const grad_control ctl = rule::initial_control(c);
      const results cpu = cpu_twin(gs, c, ctl);
      CHECK(cpu.control.skip == 1);
      require_same(run_gpu(gs, c, ctl, {}), cpu);
      require_same(run_gpu(gs, c, ctl, {64, 3, 1}), cpu);
    }
  SUBCASE("an empty list: the finalize still runs") {
    grad_pass_config c;
    const grad_control ctl = rule::initial_control(c);
    const results cpu = cpu_twin({}, c, ctl);
    require_same(run_gpu({}, c, ctl, {}), cpu);
    CHECK(cpu.control.growth_tracker == 1);
  }
  SUBCASE("only empty tensors") {
    std::vector<host_grad> gs;
    gs.push_back(make_grad(dtype::f32, 0));
    gs.push_back(make_grad(dtype::bf16, 0));
    grad_pass_config c;
    c.scaler.enabled = false;
    const grad_control ctl = rule::initial_control(c);
    require_same(run_gpu(gs, c, ctl, {}), cpu_twin(gs, c, ctl));
  }
}

TEST_CASE("GPU: captured in a CUDA graph, replayed while GradScaler's state evolves on the device") {
  auto gs = mixed_list(3);
  grad_pass_config c;
  c.max_norm = 2.0;
  c.scaler.growth_interval = 2;
  device_grads d(gs);
  device_outputs o(static_cast<std::int64_t>(gs.size()));
  device::grad_pass_plan plan;
  STATUS_OK(plan.build(d.list(), c, o.outputs(), {128, 0, 0}));
  cudaStream_t stream;
  GPU_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  STATUS_OK(plan.reset_control_async(stream));
  GPU_CHECK(cudaStreamSynchronize(stream));

  // Capture: no host synchronization, no allocation inside.
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  GPU_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
  STATUS_OK(plan.run_async(stream));
  GPU_CHECK(cudaStreamEndCapture(stream, &graph));
  GPU_CHECK(cudaGraphInstantiate(&exec, graph, 0));

  grad_control host_ctl = rule::initial_control(c);
  const bool inf_pattern[] = {false, false, true, false, false, false, true, true, false, false};
  int step = 0;
  for (bool has_inf : inf_pattern) {
    INFO("replay ", step++);
    // New gradients each step, as a backward would leave them.
    for (std::size_t i = 0; i < gs.size(); ++i) fill_random(gs[i], 1000 * step + i, 0.25f);
    if (has_inf) gs[14].set(77, std::numeric_limits<float>::infinity());
    d.upload(gs);
    GPU_CHECK(cudaGraphLaunch(exec, stream));
    GPU_CHECK(cudaStreamSynchronize(stream));
    const results cpu = cpu_twin(gs, c, host_ctl);
    host_ctl = cpu.control;
    const results gpu = read(o);
    require_same(gpu, cpu);
    CHECK(gpu.control.skip == (has_inf ? 1 : 0));
  }
  // By hand (interval 2): 65536 -> 131072 (step 2) -> 65536 (inf) -> 131072
  // (step 5) -> 65536, 32768 (two infs) -> 65536 (step 10), tracker 0.
  CHECK(host_ctl.loss_scale == 65536.0);
  CHECK(host_ctl.growth_tracker == 0);
  GPU_CHECK(cudaGraphExecDestroy(exec));
  GPU_CHECK(cudaGraphDestroy(graph));
  GPU_CHECK(cudaStreamDestroy(stream));
}

TEST_CASE("GPU: one tensor past 2^31 elements") {
  const std::int64_t n = (std::int64_t{1} << 31) + 40961;
  std::size_t free_bytes = 0, total_bytes = 0;
  GPU_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
  if (free_bytes < static_cast<std::size_t>(n) * 2 + (std::size_t{1} << 30)) {
    MESSAGE("skipped: not enough device memory");
    return;
  }
  host_grad g;
  g.type = dtype::bf16;
  g.size = n;
  g.bytes.resize(static_cast<std::size_t>(n) * 2 + 16);
  auto* p = reinterpret_cast<std::uint16_t*>(g.bytes.data());
  // A cheap hash of the index: distinct values everywhere, nothing that a
  // wrapped 32-bit index would reproduce.
#pragma omp parallel for schedule(static)
  for (std::int64_t i = 0; i < n; ++i) {
    std::uint64_t h = static_cast<std::uint64_t>(i) * 0x9E3779B97F4A7C15ull;
    h ^= h >> 29;
    const std::uint16_t e = static_cast<std::uint16_t>(0x3c00u + ((h >> 8) % 0x600u));  // |g| in [2^-7, 2^5)
    p[i] = static_cast<std::uint16_t>(e | ((h & 1) << 15));
  }
  std::vector<host_grad> gs;
  gs.push_back(std::move(g));
  grad_pass_config c;
  c.max_norm = 1.0;
  const grad_control ctl = rule::initial_control(c);
  const results cpu = cpu_twin(gs, c, ctl);
  CHECK(cpu.summary.elements == n);
  device_grads d(gs);
  for (device::grad_pass_launch launch : {device::grad_pass_launch{}, device::grad_pass_launch{1024, 77, 5}}) {
    device_outputs o(1);
    o.set_control(ctl);
    device::grad_pass_plan plan;
    STATUS_OK(plan.build(d.list(), c, o.outputs(), launch));
    STATUS_OK(plan.run_async(nullptr));
    GPU_CHECK(cudaDeviceSynchronize());
    require_same(read(o), cpu);
  }
  // A NaN past 2^31 is found.
  const std::uint16_t nan = 0x7fc0;
  GPU_CHECK(cudaMemcpy(static_cast<std::uint16_t*>(d.buffers[0]) + (std::int64_t{1} << 31) + 12345, &nan, 2,
                       cudaMemcpyHostToDevice));
  device_outputs o(1);
  o.set_control(ctl);
  device::grad_pass_plan plan;
  STATUS_OK(plan.build(d.list(), c, o.outputs()));
  STATUS_OK(plan.run_async(nullptr));
  GPU_CHECK(cudaDeviceSynchronize());
  const results r = read(o);
  CHECK(r.summary.non_finite == 1);
  CHECK(r.control.skip == 1);
}

TEST_CASE("GPU: bad input is refused at build, nothing launched") {
  auto gs = mixed_list(2);
  device_grads d(gs);
  device_outputs o(static_cast<std::int64_t>(gs.size()));
  const grad_pass_config c;
  device::grad_pass_plan plan;
  // Block sizes that are not whole warps, or too large.
  for (int threads : {0, 16, 48, 1056})
    CHECK(plan.build(d.list(), c, o.outputs(), {threads, 0, 0}).code() == status_code::invalid_argument);
  CHECK(plan.build(d.list(), c, o.outputs(), {256, -1, 0}).code() == status_code::invalid_argument);
  CHECK(!plan.built());
  CHECK(plan.run_async(nullptr).code() == status_code::invalid_argument);
  // Gradients in pageable host memory.
  const auto host = views(gs);
  CHECK(plan.build(grad_list{host.data(), static_cast<std::int64_t>(host.size())}, c, o.outputs()).code() ==
        status_code::invalid_argument);
  // An output in host memory.
  grad_summary on_host;
  device::grad_pass_outputs out = o.outputs();
  out.summary = &on_host;
  CHECK(plan.build(d.list(), c, out).code() == status_code::invalid_argument);
  // An output overlapping a gradient.
  out = o.outputs();
  out.tensor_norms = static_cast<double*>(d.buffers[4]);
  CHECK(plan.build(d.list(), c, out).code() == status_code::aliasing);
  // A configuration torch refuses.
  grad_pass_config b;
  b.scaler.backoff_factor = 2.0;
  CHECK(plan.build(d.list(), b, o.outputs()).code() == status_code::invalid_argument);
  CHECK(!plan.built());
  // reset before build / without a control output.
  CHECK(plan.reset_control_async(nullptr).code() == status_code::invalid_argument);
  out = o.outputs();
  out.control = nullptr;
  STATUS_OK(plan.build(d.list(), c, out));
  CHECK(plan.reset_control_async(nullptr).code() == status_code::null_pointer);
}
