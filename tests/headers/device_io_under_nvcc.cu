// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// A trainer's .cu that saves and loads a device::optimizer, compiled with
// nvcc's own warnings as errors (tests/headers/CMakeLists.txt): the
// checkpoint code hands for_each_slot host-only lambdas, for which nvcc
// warned four times (#20011, #20014) in such a file until the slot helpers
// took FLASHOPTIM_EXEC_CHECK_DISABLE (config.hpp).
#include "flashoptim/codec/presets.hpp"
#include "flashoptim/optim/device_optimizer_io.cuh"

namespace fo = flashoptim;
using paper_split = fo::step_config<fo::rule::adamw, fo::codec::ulp_correction<fo::bf16, std::int8_t>, fo::bf16,
                                    fo::codec::defaults::momentum, fo::codec::defaults::second_moment>;

fo::status flashoptim_header_check_save(const fo::device::optimizer<paper_split>& opt, const std::string& path) {
  return fo::device::save(opt, path);
}
fo::status flashoptim_header_check_load(fo::device::optimizer<paper_split>& opt, const std::string& path) {
  return fo::device::load(opt, path);
}
