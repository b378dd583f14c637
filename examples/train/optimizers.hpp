// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// The training run's only contact with flashoptim: a small optimizer
// interface over the library's owning optimizers (cpu::optimizer,
// device::optimizer, its offload_fraction for --offload), and the list of
// configurations this example instantiates. The model and the driver see
// parameters as fp32 (decoded from the parameter dtype) and hand back fp32
// gradients (encoded into the gradient dtype); what lives between the steps
// (parameter, correction, states) is exactly what the configuration stores.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace train {

enum class place { cpu, gpu };

/// One instantiated configuration.
struct config_info {
  const char* name;         ///< --configs key
  const char* rule;         ///< adamw, sgd or lion
  const char* description;  ///< parameter + correction, gradients, states
  double lr_multiplier;     ///< this rule's learning rate = --lr x this
};
const std::vector<config_info>& configurations();
const config_info* find_configuration(const std::string& name);

/// One model tensor as the optimizer sees it.
struct tensor_info {
  std::int64_t size = 0;
  std::string name;
  std::int64_t rows = 0, cols = 0;  ///< 2-D shape of a matrix; 0, 0 for a vector
  /// In the weight-decay group (matrices and the embedding); biases are in
  /// the group without decay.
  bool decay = true;
};

/// Bytes per kind, summed over tensors: from the optimizer's memory()
/// report (what it allocated, beside the model's parameter and gradient
/// bytes), or under --offload from the state layouts of what the adapter
/// allocated.
struct optimizer_memory {
  std::int64_t params = 0;  ///< elements
  std::int64_t param_bytes = 0, correction_bytes = 0, state_bytes = 0, grad_bytes = 0;
  /// Parameters + what the optimizer allocated: its arena (corrections and
  /// states with their 256-byte padding) and, on the GPU, its step tables
  /// and control block.
  std::int64_t allocated_bytes = 0;
  std::int64_t host_bytes = 0;  ///< of those, in pinned host memory (off-load)
};

struct hyper_params {
  double lr = 1e-3;  ///< AdamW's; other rules scale it (config_info::lr_multiplier)
  double weight_decay = 0.0;  ///< on the tensors with tensor_info::decay
  int cpu_threads = 0;  ///< threads of the CPU step (0: OpenMP's default); the result does not depend on it
  std::uint64_t seed = 1;  ///< the optimizer's: tensor i's stochastic rounding is optim::tensor_seed(seed, i)
};

class optimizer {
 public:
  virtual ~optimizer() = default;
  virtual const config_info& info() const = 0;
  /// Parameters and corrections from fp32 weights (host), states zero.
  /// Returns an error message, empty on success (as do the others).
  virtual std::string init(const std::vector<std::vector<float>>& weights) = 0;
  /// Tensor i's parameters as the model sees them, in fp32: host memory on
  /// the CPU, device memory on the GPU (stream-ordered on the default stream).
  virtual void param_to_float(std::size_t i, float* dst) = 0;
  /// Tensor i's master weights as fp32 (the parameter with its correction
  /// or fp32 master: what the optimizer updates), same memory space.
  virtual std::string master_to_float(std::size_t i, float* dst) = 0;
  /// Tensor i's fp32 gradient into the configuration's gradient dtype.
  virtual void grad_from_float(std::size_t i, const float* src) = 0;
  /// Step `step` (1, 2, ...: the optimizer counts them too) at learning rate
  /// `lr` (AdamW's scale; the multiplier applies).
  virtual std::string step(double lr, std::int64_t step) = 0;
  virtual optimizer_memory memory() const = 0;
};

/// `offload`: fraction of the states in pinned host memory, stepped by the
/// CPU (device::optimizer's offload_fraction); GPU only.
std::unique_ptr<optimizer> make_optimizer(const std::string& name, place where, const std::vector<tensor_info>& tensors,
                                          double offload, const hyper_params& hp, std::string& error);

}  // namespace train
