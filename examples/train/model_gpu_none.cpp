// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// The GPU model in a build without CUDA: never available.
#include "model.hpp"

namespace train {

bool gpu_available(std::string*) { return false; }

std::unique_ptr<model> make_gpu_model(const model_shape&, std::string& error) {
  error = "this build has no CUDA (configure with nvcc on the PATH)";
  return nullptr;
}

}  // namespace train
