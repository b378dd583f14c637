// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
// The demo's GPU part in a build without CUDA.
#include <cstdio>

#include "demo_gpu.hpp"

bool demo_gpu() {
  std::printf("  skipped: built without CUDA (configure where nvcc is found for the GPU path)\n");
  return true;
}
