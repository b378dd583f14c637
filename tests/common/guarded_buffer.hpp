// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// A device buffer with sentinel bytes on both sides, for GPU tests that
// check a kernel writes exactly its buffer (and nothing on a refusal).
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstring>
#include <vector>

#include "common/gpu_check.hpp"

namespace gpu_guard {

inline constexpr std::size_t guard = 64;           ///< sentinel bytes on each side of a buffer
inline constexpr unsigned char sentinel = 0xA5;    ///< what the guards (and an unwritten buffer) hold

/// `bytes` of device memory `offset` bytes into its allocation (a misaligned
/// start for the scalar paths), sentinels around it; the body starts as
/// `init`'s bytes, or as sentinels.
struct guarded {
  unsigned char* base = nullptr;
  std::size_t bytes = 0, offset = 0;
  guarded(std::size_t b, std::size_t off, const void* init = nullptr) : bytes(b), offset(off) {
    GPU_CHECK(cudaMalloc(&base, bytes + 2 * guard + off));
    std::vector<unsigned char> h(bytes + 2 * guard + off, sentinel);
    if (init != nullptr && bytes > 0) std::memcpy(h.data() + guard + off, init, bytes);
    GPU_CHECK(cudaMemcpy(base, h.data(), h.size(), cudaMemcpyHostToDevice));
  }
  ~guarded() { cudaFree(base); }
  guarded(const guarded&) = delete;
  guarded& operator=(const guarded&) = delete;
  void* ptr() const { return base + guard + offset; }
  std::vector<unsigned char> all() const {
    std::vector<unsigned char> h(bytes + 2 * guard + offset);
    GPU_CHECK(cudaMemcpy(h.data(), base, h.size(), cudaMemcpyDeviceToHost));
    return h;
  }
  bool guards_intact() const {
    const auto h = all();
    for (std::size_t i = 0; i < guard + offset; ++i)
      if (h[i] != sentinel) return false;
    for (std::size_t i = guard + offset + bytes; i < h.size(); ++i)
      if (h[i] != sentinel) return false;
    return true;
  }
  std::vector<unsigned char> body() const {
    const auto h = all();
    return std::vector<unsigned char>(h.begin() + guard + offset, h.begin() + guard + offset + bytes);
  }
};

}  // namespace gpu_guard
