// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// Checkpoints of a whole cpu::optimizer, one call each way: every parameter
// group's hyperparameters, every tensor's parameters, corrections and
// states, and the step count, through io::save_optimizer /
// io::load_optimizer's format (version 3, docs/io.md). The files are the
// device optimizer's (optim/device_optimizer_io.cuh): a run saved on one
// resumes on the other. Part of the io component (nlohmann-json, zlib):
// find_package(flashoptim COMPONENTS io), link flashoptim::io.
//
//   FLASHOPTIM_RETURN_IF_ERROR(flashoptim::cpu::save(opt, "run.fo"));
//   ... a new process, the same model, groups and optimizer seed ...
//   FLASHOPTIM_RETURN_IF_ERROR(flashoptim::cpu::load(opt, "run.fo"));  // resumes bit-identically
#pragma once

#include <string>
#include <vector>

#include "flashoptim/io/checkpoint.hpp"
#include "flashoptim/io/file.hpp"
#include "flashoptim/optim/cpu_optimizer.hpp"

namespace flashoptim::cpu {

/// Writes `opt` to `path` (the file appears only complete). Refused before
/// init and inside a release step (the tensors are then between steps).
template <class Config, class Allocator>
status save(const optimizer<Config, Allocator>& opt, const std::string& path, const io::save_options& options = {}) {
  if (!opt.initialized()) return status(status_code::invalid_argument, "save: the optimizer has no successful init()");
  if (opt.in_release_step())
    return status(status_code::invalid_argument,
                  "save: a release step is open (begin_step .. end_step): some tensors have taken step %lld, others "
                  "not; save after end_step()",
                  static_cast<long long>(opt.step_count() + 1));
  std::vector<typename Config::hyper> hypers;
  for (std::size_t g = 0; g < opt.group_count(); ++g) hypers.push_back(opt.hyper(g));
  io::save_options o = options;
  if (o.fp8_params.empty() && opt.has_fp8_outputs()) o.fp8_params = opt.fp8_form().json();  // the form, for readers
  return io::save_optimizer<Config>(path, hypers.data(), hypers.size(), opt.tensor_group().data(), opt.step_count(),
                                    opt.tensors().data(), opt.names().data(), opt.tensor_count(), o);
}

/// Loads `path`, saved from an optimizer over the same tensors (names,
/// sizes, groups; with stochastic-rounding codecs the same seed), into
/// `opt`: parameters (the trainer's buffers), corrections, states, the
/// step count and, per options.hyper, every group's hyperparameters
/// (restore, the default, needs the file to have the optimizer's group
/// count). On any error nothing is written. Refused before init and inside
/// a release step.
template <class Config, class Allocator>
status load(optimizer<Config, Allocator>& opt, const std::string& path, const io::load_options& options = {}) {
  if (!opt.initialized()) return status(status_code::invalid_argument, "load: the optimizer has no successful init()");
  if (opt.in_release_step())
    return status(status_code::invalid_argument, "load: a release step is open (begin_step .. end_step)");
  const std::size_t count = opt.tensor_count();
  FLASHOPTIM_RETURN_IF_ERROR(io::detail::validate_names(opt.tensors().data(), opt.names().data(), count, nullptr));
  std::vector<typename Config::hyper> current;
  for (std::size_t g = 0; g < opt.group_count(); ++g) current.push_back(opt.hyper(g));
  std::vector<unsigned char> image;
  FLASHOPTIM_RETURN_IF_ERROR(io::read_file(path, image, options.max_file_bytes));
  // "restore" as "keep" for the loader: keep has it check, before writing
  // anything, that the file has exactly the optimizer's groups (restore
  // would accept other counts, which the optimizer cannot take); the file's
  // values come back either way and are applied here.
  io::load_options o = options;
  if (o.hyper == io::hyper_policy::restore) o.hyper = io::hyper_policy::keep;
  std::vector<typename Config::hyper> file_hypers;
  std::int64_t step = 0;
  FLASHOPTIM_RETURN_IF_ERROR(io::detail::load_image<Config>(image.data(), image.size(), true, opt.tensor_group().data(),
                                                            current.data(), current.size(), file_hypers, step,
                                                            opt.tensors().data(), opt.names().data(), count, o));
  // The loader validated the file's hyperparameters and step: these cannot fail.
  if (options.hyper == io::hyper_policy::restore)
    for (std::size_t g = 0; g < file_hypers.size() && g < opt.group_count(); ++g)
      (void)opt.set_hyper(g, file_hypers[g]);
  (void)opt.set_step_count(step);
  (void)opt.refresh_lr_check();  // the weights are the file's now
  return opt.write_fp8();         // and so is the master the FP8 copy comes from
}

}  // namespace flashoptim::cpu
