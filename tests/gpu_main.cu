// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// main() of every GPU test: exit 77 (ctest: skipped) when no GPU is usable.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cuda_runtime.h>

#include <cstdio>

int main(int argc, char** argv) {
  int count = 0;
  // Without a driver the call fails and leaves count unset: check both.
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess || count == 0) {
    std::printf("no usable CUDA device (%s): skipping\n", err != cudaSuccess ? cudaGetErrorString(err) : "0 devices");
    return 77;
  }
  doctest::Context ctx;
  ctx.applyCommandLine(argc, argv);
  return ctx.run();
}
