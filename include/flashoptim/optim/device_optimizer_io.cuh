// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// Checkpoints of a whole device::optimizer, one call each way: every
// parameter group's hyperparameters, every tensor's parameters, corrections
// and states, seeds and the step count, through io::save_optimizer /
// io::load_optimizer (format version 3, docs/io.md). Part of the io
// component (nlohmann-json, zlib): find_package(flashoptim COMPONENTS io),
// link flashoptim::io. Both calls are set-up: they copy through host memory
// and synchronize.
//
//   FLASHOPTIM_RETURN_IF_ERROR(flashoptim::device::save(opt, "run.fo"));
//   ... a new process, the same model and groups ...
//   FLASHOPTIM_RETURN_IF_ERROR(flashoptim::device::load(opt, "run.fo"));  // resumes bit-identically
#pragma once

#include <string>
#include <vector>

#include "flashoptim/io/checkpoint.hpp"
#include "flashoptim/optim/device_optimizer.cuh"

namespace flashoptim::device {

/// Writes `opt` to `path` after the work queued on `stream`.
template <class Config, class Policy, class Allocator>
status save(const optimizer<Config, Policy, Allocator>& opt, const std::string& path,
            const io::save_options& options = {}, cudaStream_t stream = nullptr) {
  typename optimizer<Config, Policy, Allocator>::host_copy h;
  FLASHOPTIM_RETURN_IF_ERROR(opt.copy_to_host(h, stream));
  std::vector<typename Config::hyper> hypers;
  for (std::size_t g = 0; g < opt.group_count(); ++g) hypers.push_back(opt.hyper(g));
  io::save_options o = options;
  if (o.fp8_params.empty() && opt.has_fp8_outputs()) o.fp8_params = opt.fp8_form().json();  // the form, for readers
  return io::save_optimizer<Config>(path, hypers.data(), hypers.size(), opt.tensor_group().data(), h.step_count,
                                    h.tensors.data(), opt.names().data(), h.tensors.size(), o);
}

/// Loads `path` (saved from an optimizer over the same tensors, names and
/// groups) into `opt`: parameters, corrections, states, the step count and
/// (per options.hyper) every group's hyperparameters, the device lr
/// included. On any error nothing is written.
template <class Config, class Policy, class Allocator>
status load(optimizer<Config, Policy, Allocator>& opt, const std::string& path, const io::load_options& options = {},
            cudaStream_t stream = nullptr) {
  typename optimizer<Config, Policy, Allocator>::host_copy h;
  FLASHOPTIM_RETURN_IF_ERROR(opt.copy_to_host(h, stream));
  std::vector<typename Config::hyper> hypers;
  for (std::size_t g = 0; g < opt.group_count(); ++g) hypers.push_back(opt.hyper(g));
  std::int64_t step = 0;
  FLASHOPTIM_RETURN_IF_ERROR(io::load_optimizer<Config>(path, hypers, opt.tensor_group().data(), step,
                                                        h.tensors.data(), opt.names().data(), h.tensors.size(),
                                                        options));
  if (hypers.size() != opt.group_count())
    return status(status_code::config_mismatch, "load: the file has %zu parameter groups, the optimizer %zu",
                  hypers.size(), opt.group_count());
  h.step_count = step;
  return opt.copy_from_host(h, hypers.data(), stream);
}

}  // namespace flashoptim::device
