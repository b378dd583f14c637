// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// The owning optimizer's step beside the plain fused step it wraps (same
// process, same buffers), AdamW with the default layout (bf16 + int8
// rounded split, 8-bit states):
//   plain        step_plan::step_async with host scalars: the kernel alone
//   optimizer    device::optimizer::step_async without the gradient pass
//                (device lr and step count, the count advanced on the device)
//   pass+step    with the gradient pass: statistics, clip, skip, GradScaler
//                update, then the step reading its multiplier and skip flag
//   graph        the same pass+step sequence captured once in a CUDA graph
//                and replayed
// on 268M parameters in one tensor and on the Llama-3.2-1B list (147
// tensors). Time: CUDA events around 20 steps, median of 7 repetitions.
// Prints a markdown table; with an argument, also writes it as CSV there.
//   bench_gpu_optimizer [out.csv]
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "bench_timing.cuh"
#include "flashoptim/flashoptim.hpp"
#include "flashoptim/optim/device_optimizer.cuh"

using namespace flashoptim;

namespace {

using cfg = step_config<rule::adamw, codec::rounded_split, bf16, codec::defaults::momentum, codec::defaults::second_moment>;

__global__ void fill(bf16* p, bf16* g, std::int64_t n, std::uint64_t seed) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    std::uint64_t x = (static_cast<std::uint64_t>(i) + seed) * 0x9e3779b97f4a7c15ull;
    x ^= x >> 31;
    const float u = static_cast<float>(x >> 40) * (1.0f / 16777216.0f) - 0.5f;
    p[i] = format::from_float<bf16>(0.1f * u);
    g[i] = format::from_float<bf16>(1e-3f * (0.25f - u));
  }
}

struct model {
  std::vector<std::int64_t> sizes;
  std::vector<bf16*> p, g;
  explicit model(std::vector<std::int64_t> s) : sizes(std::move(s)) {
    for (std::size_t i = 0; i < sizes.size(); ++i) {
      bf16 *dp = nullptr, *dg = nullptr;
      BENCH_CUDA(cudaMalloc(&dp, sizes[i] * sizeof(bf16)));
      BENCH_CUDA(cudaMalloc(&dg, sizes[i] * sizeof(bf16)));
      fill<<<132 * 8, 256>>>(dp, dg, sizes[i], i);
      p.push_back(dp);
      g.push_back(dg);
    }
    BENCH_CUDA(cudaDeviceSynchronize());
  }
  ~model() {
    for (auto* x : p) cudaFree(x);
    for (auto* x : g) cudaFree(x);
  }
  /// Two groups: matrices with decay, vectors (norms) without.
  std::vector<optim::param_group<cfg>> groups() const {
    std::vector<optim::param_group<cfg>> out(2);
    out[0].hyper.lr = 1e-3;
    out[0].hyper.weight_decay = 0.1;
    out[1].hyper.lr = 1e-3;
    out[1].hyper.weight_decay = 0.0;
    for (std::size_t i = 0; i < sizes.size(); ++i) {
      optim::param_spec s;
      s.param = p[i];
      s.grad = g[i];
      s.size = sizes[i];
      out[sizes[i] > 65536 || sizes.size() == 1 ? 0 : 1].params.push_back(s);
    }
    return out;
  }
};

using bench_gpu::time_ms;

struct row {
  std::string shape, what;
  double ms;
};

void run(const std::string& name, const std::vector<std::int64_t>& sizes, std::vector<row>& rows) {
  model m(sizes);
  cudaStream_t stream;
  BENCH_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  device::optimizer<cfg> opt;
  optim::optimizer_options o;
  o.lr_check = optim::lr_check_mode::off;
  BENCH_OK(opt.init(m.groups(), o, stream));

  // The plain step over the same buffers (one group, host scalars).
  device::step_plan<cfg> plan;
  BENCH_OK(plan.build(opt.tensors().data(), opt.tensors().size()));
  cfg::hyper h;
  h.lr = 1e-3;
  std::int64_t step = 0;
  const double plain = time_ms(stream, [&] {
    step_args a;
    a.step = ++step;
    BENCH_OK(plan.step_async(h, a, stream));
  });
  rows.push_back({name, "plain step (step_plan, host scalars)", plain});
  // The same plan, lr and step count read from device memory (the kernel's
  // device-inputs variant alone: no count advance, one group).
  {
    double* d_lr = nullptr;
    std::int64_t* d_step = nullptr;
    BENCH_CUDA(cudaMalloc(&d_lr, sizeof(double)));
    BENCH_CUDA(cudaMalloc(&d_step, sizeof(std::int64_t)));
    const double lr = 1e-3;
    const std::int64_t one = 1;
    BENCH_CUDA(cudaMemcpy(d_lr, &lr, sizeof lr, cudaMemcpyHostToDevice));
    BENCH_CUDA(cudaMemcpy(d_step, &one, sizeof one, cudaMemcpyHostToDevice));
    device::device_inputs in;
    in.lr = d_lr;
    in.step = d_step;
    rows.push_back({name, "plain step, device inputs (lr, step read on the GPU)", time_ms(stream, [&] {
                      BENCH_OK(plan.step_async(h, step_args{}, in, stream));
                    })});
    BENCH_CUDA(cudaStreamSynchronize(stream));
    BENCH_CUDA(cudaFree(d_lr));
    BENCH_CUDA(cudaFree(d_step));
  }
  rows.push_back({name, "optimizer step (device lr and count)", time_ms(stream, [&] { BENCH_OK(opt.step_async(stream)); })});

  grad_pass_config pc;
  pc.max_norm = 1.0;  // clip; GradScaler on (skip on overflow, scale update)
  BENCH_OK(opt.set_grad_pass(pc, stream));
  rows.push_back({name, "pass + step (stats, clip, skip, scaler, step)", time_ms(stream, [&] { BENCH_OK(opt.step_async(stream)); })});

  cudaGraph_t graph;
  cudaGraphExec_t exec;
  BENCH_CUDA(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  const status captured = opt.step_async(stream);
  BENCH_CUDA(cudaStreamEndCapture(stream, &graph));
  BENCH_OK(captured);
  BENCH_CUDA(cudaGraphInstantiate(&exec, graph, 0));
  rows.push_back({name, "pass + step, CUDA graph replay", time_ms(stream, [&] { BENCH_CUDA(cudaGraphLaunch(exec, stream)); })});
  BENCH_CUDA(cudaGraphExecDestroy(exec));
  BENCH_CUDA(cudaGraphDestroy(graph));
  BENCH_CUDA(cudaStreamDestroy(stream));
}

std::vector<std::int64_t> llama() {
  std::vector<std::int64_t> s;
  const std::int64_t d = 2048, kv = 512, ff = 8192, vocab = 128256;
  s.push_back(vocab * d);
  for (int l = 0; l < 16; ++l)
    for (std::int64_t n : {d * d, kv * d, kv * d, d * d, ff * d, ff * d, d * ff, d, d}) s.push_back(n);
  s.push_back(d);
  s.push_back(vocab * d);
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) {
    std::printf("no usable CUDA device: nothing to benchmark\n");
    return 0;
  }
  cudaDeviceProp prop{};
  BENCH_CUDA(cudaGetDeviceProperties(&prop, 0));
  std::vector<row> rows;
  run("flat268M", {std::int64_t{1} << 28}, rows);
  run("llama1B (147 tensors)", llama(), rows);
  std::printf("device: %s\n\n| shape | what | ms | x plain |\n|---|---|---:|---:|\n", prop.name);
  double plain = 0;
  for (const auto& r : rows) {
    if (r.what.rfind("plain", 0) == 0) plain = r.ms;
    std::printf("| %s | %s | %.4f | %.3f |\n", r.shape.c_str(), r.what.c_str(), r.ms, r.ms / plain);
  }
  if (argc > 1) {
    FILE* f = std::fopen(argv[1], "w");
    if (f == nullptr) return 1;
    std::fprintf(f, "device,shape,what,ms\n");
    for (const auto& r : rows) std::fprintf(f, "\"%s\",\"%s\",\"%s\",%.5f\n", prop.name, r.shape.c_str(), r.what.c_str(), r.ms);
    std::fclose(f);
  }
  return 0;
}
