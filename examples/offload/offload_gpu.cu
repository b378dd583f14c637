// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// Off-loading half of the optimizer state to host RAM with
// device::offload_plan. Parameters and gradients stay on the GPU; for the
// first tensors (Megatron's rule: tensors in order, while fewer than half of
// all elements went) the correction and 8-bit states live in pinned host
// memory, with a host copy of the bf16 parameter. Each step the GPU steps its
// tensors while the off-loaded gradients stream to the host in chunks, are
// stepped on CPU threads (AVX2/AVX-512) as they land, and their parameters
// stream back; `stream` then waits for them.
//
// The CPU path and the GPU kernel are bit-identical, so the same training
// with everything on the GPU (fraction 0) must end with the same bytes: this
// example runs both and compares. Exit 0 when they match and the loss fell,
// 1 otherwise, 77 without a GPU.
#include <flashoptim/device/offload.cuh>
#include <flashoptim/flashoptim.hpp>

#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace fo = flashoptim;
using fo::bf16;
using cfg = fo::step_config<fo::rule::adamw, fo::codec::rounded_split, bf16,
                            fo::codec::defaults::momentum, fo::codec::defaults::second_moment>;
using layout = fo::state_layout<cfg>;

static void check(const fo::status& s) {
  if (!s.ok()) std::fprintf(stderr, "error: %s\n", s.what()), std::exit(1);
}
static void check(cudaError_t e) {
  if (e != cudaSuccess) std::fprintf(stderr, "CUDA error: %s\n", cudaGetErrorString(e)), std::exit(1);
}

// Backward of 0.5 * sum (p - t)^2 with t = sin(0.001 i): the gradient p - t.
__global__ void backward(const bf16* p, bf16* g, std::int64_t n, double* loss) {
  const std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x;
  if (i >= n) return;
  const float r = fo::format::to_float(p[i]) - sinf(0.001f * float(i));
  g[i] = fo::format::from_float<bf16>(r);
  atomicAdd(loss, 0.5 * double(r) * r);
}

struct result {
  std::vector<bf16> params;  // every parameter's final bytes
  double first_loss = 0.0, last_loss = 0.0;
};

// Trains `steps` steps with `fraction` of the elements' state on the host.
static result train(double fraction, const std::vector<std::int64_t>& sizes, int steps) {
  result r;
  const std::size_t count = sizes.size();
  cudaStream_t stream;
  check(cudaStreamCreate(&stream));
  double* loss;
  check(cudaMalloc(&loss, sizeof(double)));
  std::vector<void*> device_buffers, host_buffers;  // freed at the end
  auto dev = [&](std::size_t bytes) {  // zeroed device memory
    void* p;
    check(cudaMalloc(&p, bytes));
    check(cudaMemset(p, 0, bytes));
    device_buffers.push_back(p);
    return p;
  };
  auto pinned = [&](std::size_t bytes) {  // zeroed pinned host memory (offload_plan refuses pageable memory)
    void* p;
    check(cudaMallocHost(&p, bytes));
    std::memset(p, 0, bytes);
    host_buffers.push_back(p);
    return p;
  };

  // Every tensor: bf16 parameter (zero weights: correction and states zero
  // too) and gradient on the device.
  std::vector<fo::tensor_ref<cfg>> views(count);
  for (std::size_t i = 0; i < count; ++i) {
    views[i].param = static_cast<bf16*>(dev(sizes[i] * sizeof(bf16)));
    views[i].grad = static_cast<bf16*>(dev(sizes[i] * sizeof(bf16)));
    views[i].size = sizes[i];
    views[i].seed = i;
  }
  // Tensors [0, k) go to the host: pinned parameter copy, correction, states.
  const std::size_t k = fo::device::offload_plan<cfg>::host_tensor_count(views.data(), count, fraction);
  std::vector<fo::tensor_ref<cfg>> host(k);
  std::int64_t host_elements = 0, host_bytes = 0;
  for (std::size_t i = 0; i < count; ++i) {
    const layout l = layout::for_size(sizes[i]);
    if (i < k) {
      host[i].param = static_cast<bf16*>(pinned(sizes[i] * sizeof(bf16)));
      l.carve(pinned(l.bytes), host[i]);
      host_elements += sizes[i];
      host_bytes += sizes[i] * 2 + fo::state_bytes<cfg>(sizes[i]);  // unpadded, as layout/ counts them
    } else {
      l.carve(dev(l.bytes), views[i]);  // the GPU part's correction and states
    }
  }
  {  // the plan (its staging buffers, streams and events) goes before the buffers it points at
    fo::device::offload_plan<cfg> plan;
    check(plan.build(views.data(), count, fraction, host.data(), k));
    std::printf("fraction %.1f: %zu of %zu tensors off-loaded, host RAM %.2f B per off-loaded parameter\n", fraction, k,
                count, host_elements ? double(host_bytes) / double(host_elements) : 0.0);

    cfg::hyper h;
    h.lr = 1e-2;
    for (int step = 1; step <= steps; ++step) {
      check(cudaMemsetAsync(loss, 0, sizeof(double), stream));
      for (const auto& v : views)
        backward<<<unsigned((v.size + 255) / 256), 256, 0, stream>>>(v.param, const_cast<bf16*>(v.grad), v.size, loss);
      check(plan.step(h, fo::step_args{step}, views.data(), count, stream));  // GPU part + CPU part
      double l = 0.0;
      check(cudaMemcpyAsync(&l, loss, sizeof(double), cudaMemcpyDeviceToHost, stream));
      check(cudaStreamSynchronize(stream));
      if (step == 1) r.first_loss = l;
      r.last_loss = l;
      if (step == 1 || step % 50 == 0) std::printf("  step %3d  loss %.2f\n", step, l);
    }
  }

  for (const auto& v : views) {
    const std::size_t at = r.params.size();
    r.params.resize(at + v.size);
    check(cudaMemcpy(r.params.data() + at, v.param, v.size * sizeof(bf16), cudaMemcpyDeviceToHost));
  }
  for (void* p : device_buffers) check(cudaFree(p));
  for (void* p : host_buffers) check(cudaFreeHost(p));
  check(cudaFree(loss));
  check(cudaStreamDestroy(stream));
  return r;
}

int main() {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("no usable CUDA device: skipping\n");
    return 77;
  }
  const std::vector<std::int64_t> sizes = {1 << 20, 4096, 1 << 20, 4096, 1 << 19};
  const result on_gpu = train(0.0, sizes, 200);
  const result half = train(0.5, sizes, 200);
  std::size_t differ = 0;
  for (std::size_t i = 0; i < on_gpu.params.size(); ++i) differ += on_gpu.params[i].bits != half.params[i].bits;
  const bool fell = half.last_loss < half.first_loss / 10.0;
  std::printf("half off-loaded vs all on the GPU: %zu of %zu parameters differ (%s); loss %.2f -> %.2f (%s)\n",
              differ, on_gpu.params.size(), differ == 0 ? "bit-identical" : "MISMATCH", half.first_loss,
              half.last_loss, fell ? "fell 10-fold" : "DID NOT FALL");
  return differ == 0 && fell ? 0 : 1;
}
