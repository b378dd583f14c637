// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// The lr check's sweeps of the native and fp32_master modes (lr_check_sweep.hpp).
#include "lr_check_sweep.hpp"

namespace lr_check_test {

void sweep_native_modes(tally& tl) {
  sweep_mode<c::native<float>>("native fp32", tl);
  sweep_mode<c::native<bf16>>("native bf16", tl);
  sweep_mode<c::native<fp16>>("native fp16", tl);
  sweep_mode<c::fp32_master<bf16>>("fp32_master bf16", tl);
  sweep_mode<c::fp32_master<fp16>>("fp32_master fp16", tl);
}

void sweep_native_modes_decay(tally& tl) {
  sweep_mode_decay<c::native<float>>("native fp32", tl);
  sweep_mode_decay<c::native<bf16>>("native bf16", tl);
  sweep_mode_decay<c::native<fp16>>("native fp16", tl);
  sweep_mode_decay<c::fp32_master<bf16>>("fp32_master bf16", tl);
}

}  // namespace lr_check_test
