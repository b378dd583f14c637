// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// The model on the CPU: a blocked matrix product on OpenMP threads, written
// here rather than taken from a BLAS so the build needs no new package and
// the result is the same for every thread count (each output element is
// one thread's sum over k in increasing order; no reduction is split). The
// product's inner loop is compiled twice (AVX2 and baseline x86-64, chosen
// at run time); with contraction off both give the same bits.
#include <algorithm>
#include <cmath>
#include <cstring>

#if defined(_OPENMP)
#include <omp.h>
#endif

#include "model.hpp"

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
#define TRAIN_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define TRAIN_CLONES
#endif

namespace train {

std::vector<std::int64_t> tensor_sizes(const model_shape& s) {
  std::vector<std::int64_t> v = {256LL * s.embed};
  std::int64_t in = static_cast<std::int64_t>(s.context) * s.embed;
  for (int l = 0; l < s.layers; ++l) {
    v.push_back(in * s.hidden);
    v.push_back(s.hidden);
    in = s.hidden;
  }
  v.push_back(in * 256);
  v.push_back(256);
  return v;
}

std::vector<std::string> tensor_names(const model_shape& s) {
  std::vector<std::string> v = {"embedding"};
  for (int l = 0; l < s.layers; ++l) {
    v.push_back("layer" + std::to_string(l) + ".weight");
    v.push_back("layer" + std::to_string(l) + ".bias");
  }
  v.push_back("out.weight");
  v.push_back("out.bias");
  return v;
}

std::vector<std::vector<float>> init_weights(const model_shape& s, std::uint64_t seed) {
  rng r{seed};
  std::vector<std::vector<float>> w;
  const auto sizes = tensor_sizes(s);
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    std::vector<float> t(static_cast<std::size_t>(sizes[i]), 0.0f);
    const bool bias = i > 0 && (i % 2 == 0);  // embedding, (W, b) pairs
    if (!bias)
      for (auto& x : t) {  // Box-Muller, one value per pair of uniforms
        const double u1 = 1.0 - r.uniform(), u2 = r.uniform();
        x = static_cast<float>(std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2));
      }
    w.push_back(std::move(t));
  }
  return w;
}

namespace {

/// c[r][0, n) (+)= sum_k (alpha a(r, k)) b[k][0, n) for rows r < rows (<= 4),
/// a(r, k) = A[r * sai + k * sak], b[k] = B + k * ldb. k in increasing order.
TRAIN_CLONES void block_product(int rows, int n, int K, float alpha, const float* A, long sai, long sak,
                                const float* B, long ldb, float* C, long ldc) {
  float* __restrict c0 = C;
  float* __restrict c1 = C + (rows > 1 ? ldc : 0);
  float* __restrict c2 = C + (rows > 2 ? 2 * ldc : 0);
  float* __restrict c3 = C + (rows > 3 ? 3 * ldc : 0);
  for (int r = 0; r < rows; ++r) std::memset(C + r * ldc, 0, sizeof(float) * n);
  for (int k = 0; k < K; ++k) {
    const float* __restrict b = B + k * ldb;
    if (rows == 4) {
      const float a0 = alpha * A[k * sak], a1 = alpha * A[sai + k * sak], a2 = alpha * A[2 * sai + k * sak],
                  a3 = alpha * A[3 * sai + k * sak];
      for (int j = 0; j < n; ++j) {
        c0[j] += a0 * b[j];
        c1[j] += a1 * b[j];
        c2[j] += a2 * b[j];
        c3[j] += a3 * b[j];
      }
    } else {
      for (int r = 0; r < rows; ++r) {
        const float a = alpha * A[r * sai + k * sak];
        float* __restrict c = C + r * ldc;
        for (int j = 0; j < n; ++j) c[j] += a * b[j];
      }
    }
  }
}

/// C[M x N] = alpha sum_k A(i, k) B[k x N], A(i, k) = A[i * sai + k * sak].
void product(int M, int N, int K, float alpha, const float* A, long sai, long sak, const float* B, float* C) {
  constexpr int cols = 256;  // 4 rows x 256 columns of C stay in L1
  const int row_blocks = (M + 3) / 4, col_blocks = (N + cols - 1) / cols;
#pragma omp parallel for schedule(static)
  for (int blk = 0; blk < row_blocks * col_blocks; ++blk) {
    const int i0 = blk / col_blocks * 4, j0 = blk % col_blocks * cols;
    block_product(std::min(4, M - i0), std::min(cols, N - j0), K, alpha, A + i0 * sai, sai, sak, B + j0, N,
                  C + static_cast<long>(i0) * N + j0, N);
  }
}

void transpose(int rows, int cols, const float* in, float* out) {
#pragma omp parallel for schedule(static)
  for (int c = 0; c < cols; ++c)
    for (int r = 0; r < rows; ++r) out[static_cast<long>(c) * rows + r] = in[static_cast<long>(r) * cols + c];
}

class cpu_model final : public model {
 public:
  cpu_model(const model_shape& s, int threads) : s_(s), threads_(threads) {
    const auto sizes = tensor_sizes(s);
    for (auto n : sizes) {
      w_.emplace_back(n);
      g_.emplace_back(n);
    }
    const int R = s.max_rows(), in0 = s.context * s.embed;
    x0_.resize(static_cast<std::size_t>(R) * in0);
    dx0_.resize(x0_.size());
    for (int l = 0; l < s.layers; ++l) h_.emplace_back(static_cast<std::size_t>(R) * s.hidden);
    dh_.resize(static_cast<std::size_t>(R) * s.hidden);
    dh2_.resize(dh_.size());
    logits_.resize(static_cast<std::size_t>(R) * 256);
    std::size_t biggest = 0;
    for (auto n : sizes) biggest = std::max<std::size_t>(biggest, n);
    wt_.resize(biggest);
    loss_.resize(R);
  }
  float* weights(std::size_t i) override { return w_[i].data(); }
  const float* grads(std::size_t i) override { return g_[i].data(); }
  void sync() override {}
  std::string describe() const override { return "CPU, hand-written blocked fp32 matrix products"; }

  double train_batch(const unsigned char* rows, int count) override {
    scoped_threads t(threads_);
    forward(rows, count, true);
    backward(rows, count);
    double sum = 0;
    for (int r = 0; r < count; ++r) sum += loss_[r];
    return sum / count;
  }
  double eval_batch(const unsigned char* rows, int count) override {
    scoped_threads t(threads_);
    forward(rows, count, false);
    double sum = 0;
    for (int r = 0; r < count; ++r) sum += loss_[r];
    return sum;
  }

 private:
  struct scoped_threads {
#if defined(_OPENMP)
    int saved;
    explicit scoped_threads(int n) : saved(omp_get_max_threads()) {
      if (n > 0) omp_set_num_threads(n);
    }
    ~scoped_threads() { omp_set_num_threads(saved); }
#else
    explicit scoped_threads(int) {}
#endif
  };

  int in_dim(int l) const { return l == 0 ? s_.context * s_.embed : s_.hidden; }
  const float* layer_input(int l) const { return l == 0 ? x0_.data() : h_[l - 1].data(); }

  void forward(const unsigned char* rows, int R, bool grads) {
    const int C = s_.context, E = s_.embed, H = s_.hidden, L = s_.layers;
    for (int r = 0; r < R; ++r)
      for (int j = 0; j < C; ++j)
        std::memcpy(&x0_[(static_cast<std::size_t>(r) * C + j) * E], &w_[0][rows[r * (C + 1) + j] * E], sizeof(float) * E);
    for (int l = 0; l < L; ++l) {
      const int in = in_dim(l);
      float* h = h_[l].data();
      product(R, H, in, 1.0f / std::sqrt(static_cast<float>(in)), layer_input(l), in, 1, w_[1 + 2 * l].data(), h);
      const float* b = w_[2 + 2 * l].data();
#pragma omp parallel for schedule(static)
      for (int r = 0; r < R; ++r)
        for (int j = 0; j < H; ++j) h[r * H + j] = std::tanh(h[r * H + j] + b[j]);
    }
    const float* wo = w_[1 + 2 * L].data();
    const float* bo = w_[2 + 2 * L].data();
    product(R, 256, H, 1.0f / std::sqrt(static_cast<float>(H)), h_[L - 1].data(), H, 1, wo, logits_.data());
#pragma omp parallel for schedule(static)
    for (int r = 0; r < R; ++r) {
      float* z = &logits_[static_cast<std::size_t>(r) * 256];
      float mx = -INFINITY;
      for (int j = 0; j < 256; ++j) mx = std::max(mx, z[j] += bo[j]);
      float sum = 0;
      for (int j = 0; j < 256; ++j) sum += std::exp(z[j] - mx);
      const int target = rows[r * (C + 1) + C];
      loss_[r] = std::log(sum) - (z[target] - mx);
      if (grads) {  // z becomes d loss / d z of the mean loss
        for (int j = 0; j < 256; ++j) z[j] = (std::exp(z[j] - mx) / sum - (j == target ? 1.0f : 0.0f)) / R;
      }
    }
  }

  /// b[j] = sum over rows of d[r][j], rows in order.
  static void column_sums(int R, int N, const float* d, float* b) {
#pragma omp parallel for schedule(static)
    for (int j = 0; j < N; ++j) {
      float s = 0;
      for (int r = 0; r < R; ++r) s += d[static_cast<long>(r) * N + j];
      b[j] = s;
    }
  }

  void backward(const unsigned char* rows, int R) {
    const int C = s_.context, E = s_.embed, H = s_.hidden, L = s_.layers;
    // output layer: dz [R x 256] in logits_
    {
      const float alpha = 1.0f / std::sqrt(static_cast<float>(H));
      product(H, 256, R, alpha, h_[L - 1].data(), 1, H, logits_.data(), g_[1 + 2 * L].data());  // h^T dz
      column_sums(R, 256, logits_.data(), g_[2 + 2 * L].data());
      transpose(H, 256, w_[1 + 2 * L].data(), wt_.data());
      product(R, H, 256, alpha, logits_.data(), 256, 1, wt_.data(), dh_.data());  // dz W^T
    }
    for (int l = L - 1; l >= 0; --l) {
      const int in = in_dim(l);
      const float alpha = 1.0f / std::sqrt(static_cast<float>(in));
      const float* h = h_[l].data();
#pragma omp parallel for schedule(static)
      for (int i = 0; i < R * H; ++i) dh_[i] *= 1.0f - h[i] * h[i];  // through tanh
      product(in, H, R, alpha, layer_input(l), 1, in, dh_.data(), g_[1 + 2 * l].data());
      column_sums(R, H, dh_.data(), g_[2 + 2 * l].data());
      transpose(in, H, w_[1 + 2 * l].data(), wt_.data());
      product(R, in, H, alpha, dh_.data(), H, 1, wt_.data(), l == 0 ? dx0_.data() : dh2_.data());
      if (l > 0) std::swap(dh_, dh2_);
    }
    // embedding: rows and positions in order
    float* ge = g_[0].data();
    std::fill(g_[0].begin(), g_[0].end(), 0.0f);
    for (int r = 0; r < R; ++r)
      for (int j = 0; j < C; ++j) {
        float* dst = ge + rows[r * (C + 1) + j] * E;
        const float* src = &dx0_[(static_cast<std::size_t>(r) * C + j) * E];
        for (int e = 0; e < E; ++e) dst[e] += src[e];
      }
  }

  model_shape s_;
  int threads_;
  std::vector<std::vector<float>> w_, g_, h_;
  std::vector<float> x0_, dx0_, dh_, dh2_, logits_, wt_, loss_;
};

}  // namespace

std::unique_ptr<model> make_cpu_model(const model_shape& s, int threads) { return std::make_unique<cpu_model>(s, threads); }

}  // namespace train
