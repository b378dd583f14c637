// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// device::optimizer in a training loop on the GPU: two parameter groups
// (weight decay on the matrix, none on the bias), the gradient pass
// (global-norm clipping and GradScaler's dynamic loss scale: skip on
// overflow, back off, grow), and the whole iteration -- backward, gradient
// pass, step, step count -- captured once in a CUDA graph and replayed. Only
// the learning rate changes between replays: set_lr writes the device value
// the captured step reads (a cosine schedule here); every other
// hyperparameter is baked into the graph (capture again after set_hyper).
//
// The "model" is a quadratic bowl, loss = 0.5 * sum (p - target)^2 over both
// tensors, so the backward pass is one small kernel. One replay gets an
// infinite gradient on purpose: the pass must skip that step and halve the
// loss scale, as torch.cuda.amp.GradScaler does.
//
// Exit status: 0 when the loss fell 10-fold and the skip happened as
// expected, 1 otherwise, 77 without a GPU (ctest: skipped).
#include <flashoptim/flashoptim.hpp>
#include <flashoptim/optim/device_optimizer.cuh>

#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

namespace fo = flashoptim;
using fo::bf16;

static void check(const fo::status& s) {
  if (!s.ok()) std::fprintf(stderr, "error: %s\n", s.what()), std::exit(1);
}
static void check(cudaError_t e) {
  if (e != cudaSuccess) std::fprintf(stderr, "CUDA error: %s\n", cudaGetErrorString(e)), std::exit(1);
}

// The backward pass of 0.5 * sum (p - target)^2, times the loss scale the
// gradient pass chose for this backward (read from device memory, so the
// captured graph follows the scaler). `poison` != 0 makes one gradient inf.
__global__ void backward(const bf16* p, const float* target, bf16* grad, std::int64_t n, const double* loss_scale,
                         const int* poison, double* loss) {
  const std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x;
  if (i >= n) return;
  const float r = fo::format::to_float(p[i]) - target[i];
  float g = r * static_cast<float>(*loss_scale);
  if (*poison != 0 && i == 0) g = INFINITY;
  grad[i] = fo::format::from_float<bf16>(g);
  atomicAdd(loss, 0.5 * double(r) * r);
}

int main() {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("no usable CUDA device: skipping\n");
    return 77;
  }
  constexpr std::int64_t n_w = 256 * 256, n_b = 256;
  constexpr int steps = 200, poison_at = 50;
  constexpr double lr_max = 5e-2, lr_min = 5e-4;

  // Device buffers: params and grads (the trainer's), the target, fp32
  // initial weights for w, the loss and the poison flag.
  bf16 *w, *dw, *b, *db;
  float *w_init, *target;
  double* loss;
  int* poison;
  check(cudaMalloc(&w, n_w * sizeof(bf16)));
  check(cudaMalloc(&dw, n_w * sizeof(bf16)));
  check(cudaMalloc(&b, n_b * sizeof(bf16)));
  check(cudaMalloc(&db, n_b * sizeof(bf16)));
  check(cudaMalloc(&w_init, n_w * sizeof(float)));
  check(cudaMalloc(&target, (n_w + n_b) * sizeof(float)));
  check(cudaMalloc(&loss, sizeof(double)));
  check(cudaMalloc(&poison, sizeof(int)));
  std::mt19937 rng(1);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> host(n_w + n_b);
  for (auto& v : host) v = normal(rng);
  check(cudaMemcpy(target, host.data(), host.size() * sizeof(float), cudaMemcpyHostToDevice));
  for (auto& v : host) v = 0.02f * normal(rng);
  check(cudaMemcpy(w_init, host.data(), n_w * sizeof(float), cudaMemcpyHostToDevice));
  check(cudaMemset(b, 0, n_b * sizeof(bf16)));  // bf16 zero is all-zero bits
  check(cudaMemset(poison, 0, sizeof(int)));
  cudaStream_t stream;
  check(cudaStreamCreate(&stream));

  // [adopt-gpu]
  using cfg = fo::step_config<fo::rule::adamw, fo::codec::rounded_split, bf16,
                              fo::codec::defaults::momentum, fo::codec::defaults::second_moment>;
  cfg::hyper decay, no_decay;      // torch's AdamW defaults (lr 1e-3, weight_decay 1e-2, ...)
  no_decay.weight_decay = 0.0;
  fo::device::optimizer<cfg> opt;  // device memory: allocates and owns the corrections and 8-bit states
  check(opt.init({{decay, {{w, dw, n_w, "w", 256, 256, w_init}}},   // param, grad, size, name, shape, fp32 init
                  {no_decay, {{b, db, n_b, "b"}}}}));
  // [adopt-gpu]
  fo::grad_pass_config pass;
  pass.max_norm = 1.0;             // clip_grad_norm_(params, 1.0); the scaler keeps GradScaler's defaults
  check(opt.set_grad_pass(pass, stream));
  std::printf("%s", opt.memory().to_string().c_str());

  // Capture one iteration. Nothing in it allocates or waits for the host.
  const double* loss_scale = &opt.device_control()->control.loss_scale;
  const unsigned blocks_w = unsigned((n_w + 255) / 256), blocks_b = unsigned((n_b + 255) / 256);
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  check(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  check(cudaMemsetAsync(loss, 0, sizeof(double), stream));
  backward<<<blocks_w, 256, 0, stream>>>(w, target, dw, n_w, loss_scale, poison, loss);
  backward<<<blocks_b, 256, 0, stream>>>(b, target + n_w, db, n_b, loss_scale, poison, loss);
  // [adopt-gpu]
  check(opt.step_async(stream));   // gradient pass, every group in one launch, step count (capturable)
  // [adopt-gpu]
  check(cudaStreamEndCapture(stream, &graph));
  check(cudaGraphInstantiate(&exec, graph, 0));

  double first_loss = 0.0, last_loss = 0.0;
  for (int t = 0; t < steps; ++t) {
    // Cosine schedule: the only value that changes between replays.
    const double lr = lr_min + 0.5 * (lr_max - lr_min) * (1.0 + std::cos(M_PI * t / steps));
    for (std::size_t g = 0; g < opt.group_count(); ++g) check(opt.set_lr(g, lr, stream));
    const int bad = t == poison_at ? 1 : 0;
    check(cudaMemcpyAsync(poison, &bad, sizeof(int), cudaMemcpyHostToDevice, stream));
    check(cudaGraphLaunch(exec, stream));
    check(cudaMemcpyAsync(&last_loss, loss, sizeof(double), cudaMemcpyDeviceToHost, stream));
    check(cudaStreamSynchronize(stream));  // only to print; a trainer need not wait here
    if (t == 0) first_loss = last_loss;
    if (t % 25 == 0 || t == poison_at || t == steps - 1) {
      fo::device::optimizer_control c;
      check(opt.read_control(c, stream));
      std::printf("replay %3d  lr %.5f  loss %10.3f  grad norm %9.3f  skip %d  loss scale %.0f  steps %lld\n", t, lr,
                  last_loss, c.control.total_norm, c.control.skip, c.control.loss_scale,
                  static_cast<long long>(c.next_step - 1));
    }
  }

  // One replay was skipped: one step fewer, and the scale halved once.
  fo::device::optimizer_control c;
  check(opt.read_control(c, stream));
  const bool fell = last_loss < first_loss / 10.0;
  const bool skipped = c.next_step - 1 == steps - 1 && c.control.loss_scale == 65536.0 / 2;
  std::printf("loss %.3f -> %.3f (%s); steps taken %lld of %d replays, loss scale %.0f (%s)\n", first_loss, last_loss,
              fell ? "fell 10-fold" : "DID NOT FALL", static_cast<long long>(c.next_step - 1), steps,
              c.control.loss_scale, skipped ? "one skip, as expected" : "UNEXPECTED");

  check(cudaGraphExecDestroy(exec));
  check(cudaGraphDestroy(graph));
  check(cudaStreamDestroy(stream));
  for (void* p : {(void*)w, (void*)dw, (void*)b, (void*)db, (void*)w_init, (void*)target, (void*)loss, (void*)poison})
    check(cudaFree(p));
  return fell && skipped ? 0 : 1;
}
