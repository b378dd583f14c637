// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// libFuzzer target for the checkpoint loader: any byte string, loaded into
// three configurations, and into one as an optimizer with parameter groups
// (io::load_optimizer_bytes). Besides what the sanitizers catch (out-of-bounds
// reads, leaks, undefined behaviour), it traps when a failed load wrote to a
// destination buffer, the step or the hyperparameters, and when a successful
// one left a step or hyperparameters that the next step would refuse.
#include <cstdint>

#include "fuzz_targets.hpp"

namespace {

template <class Config>
void load_into(const std::uint8_t* data, std::size_t size) {
  static fuzz::target<Config> t;
  typename Config::hyper h{};
  h.lr = 0.125;
  std::int64_t step = -1;
  const flashoptim::status s = flashoptim::io::load_checkpoint_bytes<Config>(
      data, size, h, step, t.refs.data(), fuzz::names.data(), t.refs.size());
  if (!s.ok()) {
    if (!t.untouched() || step != -1 || h.lr != 0.125) __builtin_trap();
    if (s.message()[0] == '\0') __builtin_trap();  // every failure says why
  } else {
    // What a successful load promises: the run can go on at step + 1 with
    // the restored hyperparameters, which pass the rule's per-step checks.
    flashoptim::step_args next;
    if (step < 0 || step == INT64_MAX) __builtin_trap();
    next.step = step + 1;
    if (!flashoptim::validate_step_args<Config>(h, next).ok()) __builtin_trap();
    t.fill();
  }
}

/// The same through io::load_optimizer_bytes (parameter groups, format version 3).
template <class Config>
void load_groups_into(const std::uint8_t* data, std::size_t size) {
  static fuzz::target<Config> t;
  std::vector<typename Config::hyper> h(1);
  h[0].lr = 0.125;
  std::int64_t step = -1;
  const flashoptim::status s = flashoptim::io::load_optimizer_bytes<Config>(
      data, size, h, fuzz::tensor_group.data(), step, t.refs.data(), fuzz::names.data(), t.refs.size());
  if (!s.ok()) {
    if (!t.untouched() || step != -1 || h.size() != 1 || h[0].lr != 0.125) __builtin_trap();
    if (s.message()[0] == '\0') __builtin_trap();
  } else {
    flashoptim::step_args next;
    if (step < 0 || step == INT64_MAX || h.empty()) __builtin_trap();
    next.step = step + 1;
    for (const auto& g : h)
      if (!flashoptim::validate_step_args<Config>(g, next).ok()) __builtin_trap();
    t.fill();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  load_into<fuzz::adamw_cfg>(data, size);
  load_groups_into<fuzz::adamw_cfg>(data, size);
  load_into<fuzz::sgd_cfg>(data, size);
  load_into<fuzz::lion_cfg>(data, size);
  return 0;
}
