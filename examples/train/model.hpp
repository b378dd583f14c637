// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// A byte-level language model with hand-written forward and backward passes:
// the previous `context` bytes, each embedded in `embed` dimensions, are
// concatenated and go through `layers` tanh layers of width `hidden` to 256
// logits for the next byte (Bengio et al.'s neural LM). Layers use the
// "NTK" parametrization: y = x W / sqrt(fan_in) with W ~ N(0, 1), so every
// weight is O(1), as in a real network's embeddings and norms, and a step of
// lr ~ 1e-3 is below bf16's half-ulp for most of them (the regime where bf16
// without a master stalls). All arithmetic is fp32.
//
// Tensors, in order: embedding [256 x embed]; per layer l: W_l [in_l x hidden],
// b_l [hidden]; output W [hidden x 256], b [256].
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace train {

struct model_shape {
  int context = 16;
  int embed = 24;
  int hidden = 256;
  int layers = 2;
  int batch = 64;       ///< training rows per step
  int eval_rows = 256;  ///< rows per validation call
  int max_rows() const { return batch > eval_rows ? batch : eval_rows; }
};

std::vector<std::int64_t> tensor_sizes(const model_shape& s);
std::vector<std::string> tensor_names(const model_shape& s);
/// Embedding and weights N(0, 1), biases zero, from `seed` (splitmix64 and
/// Box-Muller: the same numbers on every platform).
std::vector<std::vector<float>> init_weights(const model_shape& s, std::uint64_t seed);

class model {
 public:
  virtual ~model() = default;
  /// fp32 working copy of tensor i (host memory for the CPU model, device
  /// memory for the GPU one), filled from the optimizer's parameters before
  /// each forward pass.
  virtual float* weights(std::size_t i) = 0;
  /// fp32 gradient of tensor i after train_batch (same memory space).
  virtual const float* grads(std::size_t i) = 0;
  /// rows x (context + 1) bytes on the host: the context then the target.
  /// Mean cross-entropy (nats per byte) and the gradients.
  virtual double train_batch(const unsigned char* rows, int count) = 0;
  /// Sum of the rows' cross-entropies, no gradients.
  virtual double eval_batch(const unsigned char* rows, int count) = 0;
  virtual void sync() = 0;
  virtual std::string describe() const = 0;
};

/// `threads`: OpenMP threads of the matrix products (0: OpenMP's default).
/// Every output element is summed by one thread in a fixed order, so the
/// result does not depend on the thread count.
std::unique_ptr<model> make_cpu_model(const model_shape& s, int threads);
/// cuBLAS for the products, small kernels for the rest; nullptr and `error`
/// without a usable GPU or in a build without CUDA.
std::unique_ptr<model> make_gpu_model(const model_shape& s, std::string& error);
/// Whether a CUDA device is usable (false in a build without CUDA).
bool gpu_available(std::string* name);

/// splitmix64: the run's only random source (weights, batches).
struct rng {
  std::uint64_t state;
  std::uint64_t next() {
    std::uint64_t z = (state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
};

}  // namespace train
