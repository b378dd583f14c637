// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// The lr check's sweeps of the split modes: ULP corrections, exact_split and rounded_split (lr_check_sweep.hpp).
#include "lr_check_sweep.hpp"

namespace lr_check_test {

void sweep_split_modes(tally& tl) {
  sweep_mode<ulp8>("bf16 + int8", tl);
  sweep_mode<ulp16>("bf16 + int16", tl);
  sweep_mode<hulp8>("fp16 + int8", tl);
  sweep_mode<hulp16>("fp16 + int16", tl);
  sweep_mode<c::exact_split>("exact_split", tl);
  sweep_mode<c::rounded_split>("rounded_split", tl);
}

void sweep_split_modes_decay(tally& tl) {
  sweep_mode_decay<ulp8>("bf16 + int8", tl);
  sweep_mode_decay<ulp16>("bf16 + int16", tl);
  sweep_mode_decay<hulp8>("fp16 + int8", tl);
  sweep_mode_decay<hulp16>("fp16 + int16", tl);
  sweep_mode_decay<c::exact_split>("exact_split", tl);
  sweep_mode_decay<c::rounded_split>("rounded_split", tl);
}

}  // namespace lr_check_test
