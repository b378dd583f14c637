// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// The CUDA half's interface, in plain C++ (no nanobind, no CUDA header):
// device_engine.cu implements it over device::optimizer and is compiled by
// nvcc, which never sees nanobind's headers; binding.hpp's cuda_opt adapts
// it to the Python object. Streams travel as integers (torch's
// torch.cuda.current_stream().cuda_stream; 0 is the legacy default stream).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "flashoptim/optim/lr_check.hpp"
#include "flashoptim/optim/params.hpp"
#include "flashoptim/rule/grad_scale.hpp"
#include "flashoptim/status.hpp"

namespace flashoptim::python {

/// Hyperparameters by name; bools as 0 / 1.
using hyper_values = std::vector<std::pair<std::string, double>>;
/// A tensor's buffers by name ("correction", "state0", "state0_scales", ...), as bytes.
using byte_buffers = std::vector<std::pair<std::string, std::vector<std::uint8_t>>>;

struct device_group {
  hyper_values hyper;
  std::vector<optim::param_spec> params;  ///< device memory of the current device; every grad set
};

class device_engine {
 public:
  virtual ~device_engine() = default;
  virtual status init(const std::vector<device_group>& groups, const optim::optimizer_options& o,
                      std::uintptr_t stream) = 0;
  virtual std::size_t group_count() const = 0;
  virtual std::size_t tensor_count() const = 0;
  virtual std::vector<std::string> names() const = 0;
  virtual std::vector<std::int32_t> tensor_group() const = 0;
  virtual std::int64_t tensor_size(std::size_t i) const = 0;
  virtual hyper_values hyper(std::size_t g) const = 0;
  /// Keys not given keep their values; an unknown key is an error.
  virtual status set_hyper(std::size_t g, const hyper_values& h, std::uintptr_t stream) = 0;
  virtual status set_lr(std::size_t g, double lr, std::uintptr_t stream) = 0;
  /// Rebinds tensor i's gradient by a write ordered on `stream` (no
  /// rebuild); null unbinds it; nothing when it is the bound one.
  virtual status set_grad(std::size_t i, const void* grad, std::uintptr_t stream) = 0;
  virtual status step(std::uintptr_t stream) = 0;
  /// The gradient pass (set again when cfg changed: that resets the loss
  /// scale), the step, then the control block read back (synchronous).
  virtual status step_grad_pass(const grad_pass_config& cfg, std::uintptr_t stream, grad_control& out) = 0;
  virtual status begin_step(double inv_grad_scale) = 0;
  virtual status step_tensor(std::size_t i, std::uintptr_t stream) = 0;
  virtual status end_step(std::uintptr_t stream) = 0;
  virtual bool in_release_step() const = 0;
  virtual status step_count(std::int64_t& out, std::uintptr_t stream) const = 0;
  virtual status state(std::size_t i, byte_buffers& out, std::uintptr_t stream) const = 0;
  /// Every buffer of tensor i (the names and sizes state() gives) and the
  /// step count (one for every tensor on the device); checked first.
  virtual status set_state(std::size_t i, const byte_buffers& in, std::int64_t step, std::uintptr_t stream) = 0;
  /// Tensor i's decoded fp32 weights / param and correction split from fp32 weights (host arrays; synchronous).
  virtual status fp32_param(std::size_t i, std::vector<float>& out, std::uintptr_t stream) const = 0;
  virtual status set_fp32_param(std::size_t i, const float* x, std::int64_t n, std::uintptr_t stream) = 0;
  virtual optim::memory_report memory() const = 0;
  virtual optim::lr_report lr_report() const = 0;
};

using device_factory = std::function<std::unique_ptr<device_engine>()>;
using device_registry = std::map<std::string, device_factory>;

/// The CUDA configurations (device_engine.cu; the CPU list's names).
void register_cuda(device_registry& r);

}  // namespace flashoptim::python
