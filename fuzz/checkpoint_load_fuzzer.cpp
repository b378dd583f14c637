// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// libFuzzer target for the checkpoint loader: any byte string, loaded into
// three configurations. Besides what the sanitizers catch (out-of-bounds
// reads, leaks, undefined behaviour), it traps when a failed load wrote to a
// destination buffer, the step or the hyperparameters.
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
    t.fill();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  load_into<fuzz::adamw_cfg>(data, size);
  load_into<fuzz::sgd_cfg>(data, size);
  load_into<fuzz::lion_cfg>(data, size);
  return 0;
}
