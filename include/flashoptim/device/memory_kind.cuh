// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// What kind of memory a pointer is, asked of the CUDA runtime once at set-up
// (plans' build()), so that a kernel never faults on a pointer the device
// cannot read: a fault loses the CUDA context, and with it the trainer's run.
//
// The step kernel's buffers must be memory the plan's device reads at full
// speed:
//   accepted  cudaMalloc'd memory of the plan's device (cudaMemoryTypeDevice),
//             and managed memory (cudaMallocManaged: migrates on demand; by design)
//   refused   pageable host memory and system-allocated memory (malloc, new,
//             std::vector: cudaMemoryTypeUnregistered) even where the driver
//             could page it in (HMM), freed device memory (also unregistered),
//             pinned host memory (cudaHostAlloc / cudaHostRegister, mapped or
//             not: the kernel would step it across PCIe; off-load is the way to
//             step states in host RAM, see device/offload.cuh), and another
//             GPU's memory (peer access is not assumed).
// Both ends of each buffer are checked, so a buffer that runs off the end of
// its allocation into another kind is caught at its last byte.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>

#include "flashoptim/status.hpp"

namespace flashoptim::device {

namespace detail {
inline status cuda_status(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return status();
  return status(status_code::cuda_error, "%s: %s (%s)", what, cudaGetErrorString(e), cudaGetErrorName(e));
}

inline const char* memory_type_name(cudaMemoryType t) {
  switch (t) {
    case cudaMemoryTypeUnregistered: return "pageable or unregistered host memory (or freed memory)";
    case cudaMemoryTypeHost: return "pinned host memory";
    case cudaMemoryTypeDevice: return "device memory";
    case cudaMemoryTypeManaged: return "managed memory";
  }
  return "memory of an unknown kind";
}
}  // namespace detail

/// Where a buffer must live.
enum class memory_need {
  device,       ///< read and written by a kernel on device `device_id`: device or managed memory
  pinned_host,  ///< copied asynchronously and stepped by CPU threads: pinned host memory
};

/// Checks that [p, p + bytes) is memory of the kind `need` says, at both
/// ends; `tensor` and `name` go into the message. Host only; may not be
/// called while a stream is being captured on the legacy default stream.
inline status check_memory_kind(std::size_t tensor, const char* name, const void* p, std::size_t bytes,
                                memory_need need, int device_id) {
  if (p == nullptr || bytes == 0) return status();
  const void* ends[2] = {p, static_cast<const char*>(p) + (bytes - 1)};
  for (const void* q : ends) {
    cudaPointerAttributes a{};
    const cudaError_t e = cudaPointerGetAttributes(&a, q);
    if (e != cudaSuccess) {
      (void)cudaGetLastError();  // not sticky: clear it so the next call does not report it
      return detail::cuda_status(e, "cudaPointerGetAttributes");
    }
    const char* where = q == p ? "" : " (at its last byte)";
    if (need == memory_need::device) {
      if (a.type == cudaMemoryTypeManaged) continue;
      if (a.type != cudaMemoryTypeDevice) {
        const char* hint = a.type == cudaMemoryTypeHost
                               ? ": the step reads its buffers at device speed; keep states in host RAM "
                                 "through device::offload_plan"
                               : ": allocate it with cudaMalloc (or cudaMallocManaged)";
        return status(status_code::invalid_argument, "tensor %zu: %s at %p%s is %s, not device memory%s", tensor,
                      name, q, where, detail::memory_type_name(a.type), hint);
      }
      if (a.device != device_id)
        return status(status_code::invalid_argument,
                      "tensor %zu: %s at %p%s is memory of device %d; the plan is built on device %d", tensor, name,
                      q, where, a.device, device_id);
    } else if (a.type != cudaMemoryTypeHost) {
      return status(status_code::invalid_argument,
                    "tensor %zu: %s at %p%s is %s, not pinned host memory (allocate it with cudaHostAlloc or "
                    "register it with cudaHostRegister)",
                    tensor, name, q, where, detail::memory_type_name(a.type));
    }
  }
  return status();
}

}  // namespace flashoptim::device
