// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// The model on the GPU: the same layers as model_cpu.cpp, cuBLAS fp32
// products (row-major operands passed as their column-major transposes),
// small kernels for the rest. Every reduction has a fixed order (one thread
// per column sum, block tree reductions, the embedding gradient as a product
// with the one-hot matrix): no atomics, so a run repeats bit for bit.
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>
#include <vector>

#include "model.hpp"

namespace train {

bool gpu_available(std::string* name) {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) {
    cudaGetLastError();
    return false;
  }
  cudaDeviceProp p{};
  if (cudaGetDeviceProperties(&p, 0) != cudaSuccess) return false;
  if (name) *name = p.name;
  return true;
}

namespace {

int blocks_for(long n) { return static_cast<int>(std::min<long>((n + 255) / 256, 65535)); }

__global__ void gather_kernel(const unsigned char* rows, int R, int C, int E, const float* emb, float* x0) {
  const long n = static_cast<long>(R) * C * E;
  for (long i = blockIdx.x * long{blockDim.x} + threadIdx.x; i < n; i += long{gridDim.x} * blockDim.x) {
    const long rj = i / E;
    const int e = static_cast<int>(i % E), r = static_cast<int>(rj / C), j = static_cast<int>(rj % C);
    x0[i] = emb[rows[r * (C + 1) + j] * E + e];
  }
}

__global__ void bias_tanh_kernel(float* h, const float* b, long n, int H) {
  for (long i = blockIdx.x * long{blockDim.x} + threadIdx.x; i < n; i += long{gridDim.x} * blockDim.x)
    h[i] = tanhf(h[i] + b[i % H]);
}

__global__ void tanh_backward_kernel(float* d, const float* h, long n) {
  for (long i = blockIdx.x * long{blockDim.x} + threadIdx.x; i < n; i += long{gridDim.x} * blockDim.x)
    d[i] *= 1.0f - h[i] * h[i];
}

__global__ void column_sum_kernel(const float* d, int R, int N, float* b) {
  const int j = blockIdx.x * blockDim.x + threadIdx.x;
  if (j >= N) return;
  float s = 0;
  for (int r = 0; r < R; ++r) s += d[static_cast<long>(r) * N + j];
  b[j] = s;
}

/// One block of 256 threads per row: bias, log-softmax, loss, and (grads)
/// the mean loss's gradient in place.
__global__ void softmax_kernel(float* z, const float* bo, const unsigned char* rows, int C, int R, float* loss, bool grads) {
  __shared__ float red[256];
  const int r = blockIdx.x, j = threadIdx.x;
  float* zr = z + static_cast<long>(r) * 256;
  const float x = zr[j] + bo[j];
  red[j] = x;
  __syncthreads();
  for (int s = 128; s > 0; s >>= 1) {
    if (j < s) red[j] = fmaxf(red[j], red[j + s]);
    __syncthreads();
  }
  const float mx = red[0];
  __syncthreads();
  const float e = expf(x - mx);
  red[j] = e;
  __syncthreads();
  for (int s = 128; s > 0; s >>= 1) {
    if (j < s) red[j] += red[j + s];
    __syncthreads();
  }
  const float sum = red[0];
  const int target = rows[r * (C + 1) + C];
  if (j == target) loss[r] = logf(sum) - (x - mx);
  zr[j] = grads ? (e / sum - (j == target ? 1.0f : 0.0f)) / R : x;
}

__global__ void one_hot_kernel(const unsigned char* rows, int R, int C, float* oh) {
  const long n = static_cast<long>(R) * C * 256;
  for (long i = blockIdx.x * long{blockDim.x} + threadIdx.x; i < n; i += long{gridDim.x} * blockDim.x) {
    const long rj = i / 256;
    const int v = static_cast<int>(i % 256), r = static_cast<int>(rj / C), j = static_cast<int>(rj % C);
    oh[i] = rows[r * (C + 1) + j] == v ? 1.0f : 0.0f;
  }
}

template <class T>
T* dalloc(std::size_t n) {
  void* p = nullptr;
  if (cudaMalloc(&p, std::max<std::size_t>(1, n) * sizeof(T)) != cudaSuccess) return nullptr;
  return static_cast<T*>(p);
}

class gpu_model final : public model {
 public:
  explicit gpu_model(const model_shape& s) : s_(s) {}
  ~gpu_model() override {
    for (void* p : owned_) cudaFree(p);
    if (blas_) cublasDestroy(blas_);
  }
  std::string create() {
    if (cublasCreate(&blas_) != CUBLAS_STATUS_SUCCESS) return "cublasCreate failed";
    cublasSetMathMode(blas_, CUBLAS_PEDANTIC_MATH);  // fp32 products, no TF32 anywhere
    const int R = s_.max_rows(), in0 = s_.context * s_.embed;
    for (auto n : tensor_sizes(s_)) {
      w_.push_back(take(dalloc<float>(n)));
      g_.push_back(take(dalloc<float>(n)));
    }
    x0_ = take(dalloc<float>(static_cast<std::size_t>(R) * in0));
    dx0_ = take(dalloc<float>(static_cast<std::size_t>(R) * in0));
    for (int l = 0; l < s_.layers; ++l) h_.push_back(take(dalloc<float>(static_cast<std::size_t>(R) * s_.hidden)));
    dh_ = take(dalloc<float>(static_cast<std::size_t>(R) * s_.hidden));
    dh2_ = take(dalloc<float>(static_cast<std::size_t>(R) * s_.hidden));
    z_ = take(dalloc<float>(static_cast<std::size_t>(R) * 256));
    onehot_ = take(dalloc<float>(static_cast<std::size_t>(s_.batch) * s_.context * 256));
    loss_ = take(dalloc<float>(R));
    rows_ = take(dalloc<unsigned char>(static_cast<std::size_t>(R) * (s_.context + 1)));
    if (!ok_) return "cudaMalloc failed";
    host_loss_.resize(R);
    return {};
  }
  float* weights(std::size_t i) override { return w_[i]; }
  const float* grads(std::size_t i) override { return g_[i]; }
  void sync() override { cudaDeviceSynchronize(); }
  std::string describe() const override { return "GPU, cuBLAS fp32 products (pedantic math: no TF32)"; }

  double train_batch(const unsigned char* rows, int R) override {
    forward(rows, R, true);
    backward(R);
    return loss_sum(R) / R;
  }
  double eval_batch(const unsigned char* rows, int R) override {
    forward(rows, R, false);
    return loss_sum(R);
  }

 private:
  template <class T>
  T* take(T* p) {
    if (p == nullptr) ok_ = false;
    owned_.push_back(p);
    return p;
  }
  /// Row-major C[M x N] = alpha op(A) op(B), as cuBLAS's column-major C^T = op(B)^T op(A)^T.
  /// ta: A is stored [K x M] (use A^T); tb: B is stored [N x K] (use B^T).
  void gemm(bool ta, bool tb, int M, int N, int K, float alpha, const float* A, const float* B, float* C) {
    const float beta = 0.0f;
    cublasSgemm(blas_, tb ? CUBLAS_OP_T : CUBLAS_OP_N, ta ? CUBLAS_OP_T : CUBLAS_OP_N, N, M, K, &alpha, B, tb ? K : N,
                A, ta ? M : K, &beta, C, N);
  }
  int in_dim(int l) const { return l == 0 ? s_.context * s_.embed : s_.hidden; }
  const float* layer_input(int l) const { return l == 0 ? x0_ : h_[l - 1]; }

  void forward(const unsigned char* rows, int R, bool grads) {
    const int C = s_.context, E = s_.embed, H = s_.hidden, L = s_.layers;
    cudaMemcpy(rows_, rows, static_cast<std::size_t>(R) * (C + 1), cudaMemcpyHostToDevice);
    gather_kernel<<<blocks_for(static_cast<long>(R) * C * E), 256>>>(rows_, R, C, E, w_[0], x0_);
    for (int l = 0; l < L; ++l) {
      const int in = in_dim(l);
      gemm(false, false, R, H, in, 1.0f / std::sqrt(static_cast<float>(in)), layer_input(l), w_[1 + 2 * l], h_[l]);
      bias_tanh_kernel<<<blocks_for(static_cast<long>(R) * H), 256>>>(h_[l], w_[2 + 2 * l], static_cast<long>(R) * H, H);
    }
    gemm(false, false, R, 256, H, 1.0f / std::sqrt(static_cast<float>(H)), h_[L - 1], w_[1 + 2 * L], z_);
    softmax_kernel<<<R, 256>>>(z_, w_[2 + 2 * L], rows_, C, R, loss_, grads);
  }

  void backward(int R) {
    const int C = s_.context, E = s_.embed, H = s_.hidden, L = s_.layers;
    const float ao = 1.0f / std::sqrt(static_cast<float>(H));
    gemm(true, false, H, 256, R, ao, h_[L - 1], z_, g_[1 + 2 * L]);  // h^T dz
    column_sum_kernel<<<1, 256>>>(z_, R, 256, g_[2 + 2 * L]);
    gemm(false, true, R, H, 256, ao, z_, w_[1 + 2 * L], dh_);  // dz W^T
    for (int l = L - 1; l >= 0; --l) {
      const int in = in_dim(l);
      const float alpha = 1.0f / std::sqrt(static_cast<float>(in));
      tanh_backward_kernel<<<blocks_for(static_cast<long>(R) * H), 256>>>(dh_, h_[l], static_cast<long>(R) * H);
      gemm(true, false, in, H, R, alpha, layer_input(l), dh_, g_[1 + 2 * l]);
      column_sum_kernel<<<(H + 255) / 256, 256>>>(dh_, R, H, g_[2 + 2 * l]);
      gemm(false, true, R, in, H, alpha, dh_, w_[1 + 2 * l], l == 0 ? dx0_ : dh2_);
      if (l > 0) std::swap(dh_, dh2_);
    }
    // embedding gradient = onehot^T [256 x R*C] dx0 [R*C x E]
    one_hot_kernel<<<blocks_for(static_cast<long>(R) * C * 256), 256>>>(rows_, R, C, onehot_);
    gemm(true, false, 256, E, R * C, 1.0f, onehot_, dx0_, g_[0]);
  }

  double loss_sum(int R) {
    cudaMemcpy(host_loss_.data(), loss_, sizeof(float) * R, cudaMemcpyDeviceToHost);
    double s = 0;
    for (int r = 0; r < R; ++r) s += host_loss_[r];
    return s;
  }

  model_shape s_;
  cublasHandle_t blas_ = nullptr;
  bool ok_ = true;
  std::vector<void*> owned_;
  std::vector<float*> w_, g_, h_;
  float *x0_ = nullptr, *dx0_ = nullptr, *dh_ = nullptr, *dh2_ = nullptr, *z_ = nullptr, *onehot_ = nullptr,
        *loss_ = nullptr;
  unsigned char* rows_ = nullptr;
  std::vector<float> host_loss_;
};

}  // namespace

std::unique_ptr<model> make_gpu_model(const model_shape& s, std::string& error) {
  if (!gpu_available(nullptr)) {
    error = "no CUDA device";
    return nullptr;
  }
  auto m = std::make_unique<gpu_model>(s);
  error = m->create();
  if (!error.empty()) return nullptr;
  return m;
}

}  // namespace train
