// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// AdamW with bf16 parameters, int8 ULP corrections and 8-bit states on the
// GPU: allocate state with state_layout, initialize it from fp32 weights,
// build a plan once, then step, plain and inside a captured CUDA graph with
// skip-on-overflow. Exits 0 without a GPU.
#include <cuda_runtime.h>

#include <cstdio>
#include <stdexcept>
#include <vector>

#include "flashoptim/device/state_init.cuh"
#include "flashoptim/device/step_plan.cuh"
#include "flashoptim/flashoptim.hpp"

namespace fo = flashoptim;
using config = fo::step_config<fo::rule::adamw, fo::codec::ulp_correction<fo::bf16, std::int8_t>, fo::bf16,
                               fo::codec::defaults::momentum, fo::codec::defaults::second_moment>;

// Throwing helpers belong to examples and tests; the library returns statuses.
static void check(const fo::status& s) {
  if (!s.ok()) throw std::runtime_error(s.what());
}
static void check(cudaError_t e) {
  if (e != cudaSuccess) throw std::runtime_error(cudaGetErrorString(e));
}

int main() {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("no GPU: nothing to do\n");
    return 0;
  }
  const std::vector<std::int64_t> sizes = {4096 * 4096, 4096, 1000};
  std::vector<fo::tensor_ref<config>> tensors;
  std::vector<void*> allocations;
  for (std::int64_t n : sizes) {
    const auto layout = fo::state_layout<config>::for_size(n);
    void *param, *grad, *state, *fp32;
    check(cudaMalloc(&param, n * sizeof(fo::bf16)));
    check(cudaMalloc(&grad, n * sizeof(fo::bf16)));
    check(cudaMalloc(&state, layout.bytes));
    check(cudaMalloc(&fp32, n * sizeof(float)));
    check(cudaMemset(fp32, 0, n * sizeof(float)));  // your initial fp32 weights
    check(cudaMemset(grad, 0, n * sizeof(fo::bf16)));
    fo::tensor_ref<config> t;
    t.param = static_cast<fo::bf16*>(param);
    t.grad = static_cast<const fo::bf16*>(grad);
    layout.carve(state, t);  // correction, codes and scales in one allocation
    t.seed = tensors.size();
    check(fo::device::init_tensor_async<config>(static_cast<const float*>(fp32), t, nullptr));
    tensors.push_back(t);
    allocations.insert(allocations.end(), {param, grad, state, fp32});
  }

  fo::device::step_plan<config> plan;  // validates and uploads the table once
  check(plan.build(tensors.data(), tensors.size()));
  config::hyper hyper;
  hyper.lr = 1e-3;
  hyper.weight_decay = 0.1;

  cudaStream_t stream;
  check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  for (std::int64_t step = 1; step <= 3; ++step) {
    fo::step_args args;
    args.step = step;
    check(plan.step_async(hyper, args, stream));
  }

  // Graph-capturable: lr and the step count live on the device; the step is
  // skipped when any gradient is non-finite, and then not counted.
  double* lr;
  std::int64_t* step;
  fo::device::grad_stats* stats;
  check(cudaMalloc(&lr, sizeof(double)));
  check(cudaMalloc(&step, sizeof(std::int64_t)));
  check(cudaMalloc(&stats, sizeof(*stats)));
  const std::int64_t next = 4;
  check(cudaMemcpy(lr, &hyper.lr, sizeof(double), cudaMemcpyHostToDevice));
  check(cudaMemcpy(step, &next, sizeof next, cudaMemcpyHostToDevice));
  fo::device::device_inputs in;
  in.lr = lr;
  in.step = step;
  in.skip = &stats->non_finite;
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  check(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  check(plan.grad_stats_async(stats, stream));
  check(plan.step_async(hyper, fo::step_args{}, in, stream));
  check(fo::device::advance_step_async(step, &stats->non_finite, stream));
  check(cudaStreamEndCapture(stream, &graph));
  check(cudaGraphInstantiate(&exec, graph, 0));
  for (int i = 0; i < 3; ++i) check(cudaGraphLaunch(exec, stream));
  check(cudaStreamSynchronize(stream));
  std::int64_t done = 0;
  check(cudaMemcpy(&done, step, sizeof done, cudaMemcpyDeviceToHost));
  std::printf("stepped %zu tensors; next step %lld\n", tensors.size(), static_cast<long long>(done));

  check(cudaGraphExecDestroy(exec));
  check(cudaGraphDestroy(graph));
  check(cudaStreamDestroy(stream));
  for (void* p : {static_cast<void*>(lr), static_cast<void*>(step), static_cast<void*>(stats)}) cudaFree(p);
  for (void* p : allocations) cudaFree(p);
  return 0;
}
