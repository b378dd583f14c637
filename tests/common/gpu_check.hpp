// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// Assertions for GPU tests: a CUDA call that must succeed, a status that
// must be ok (doctest REQUIREs naming the expression).
#pragma once

#include <cuda_runtime.h>
#include <doctest/doctest.h>

#include <string>

#include "flashoptim/status.hpp"

#define GPU_CHECK(expr)                                                      \
  do {                                                                       \
    const cudaError_t e_ = (expr);                                           \
    REQUIRE_MESSAGE(e_ == cudaSuccess, #expr, ": ", cudaGetErrorString(e_)); \
  } while (0)

#define STATUS_OK(expr)                               \
  do {                                                \
    const ::flashoptim::status s_ = (expr);           \
    REQUIRE_MESSAGE(s_.ok(), #expr, ": ", std::string(s_.what())); \
  } while (0)
