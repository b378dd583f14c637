// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// Setting up optimizer state on the device: split fp32 weights into the
// parameter and its correction (or fp32 master), reconstruct them, zero a
// tensor's states, and advance a device step counter in captured graphs.
// Bitwise the host's codec::split / codec::reconstruct (same functions).
// Sizes: state_layout<Config> (layout/state_layout.hpp) says how many bytes a
// tensor's state needs and cuts one allocation into its buffers. Every
// call is stream-ordered and returns a status; nothing is written on error.
#pragma once

#include <cstring>
#include <cuda_runtime.h>

#include <algorithm>
#include <cinttypes>

#include "flashoptim/codec/bulk.hpp"
#include "flashoptim/layout/state_layout.hpp"
#include "flashoptim/device/step_plan.cuh"
#include "flashoptim/kernel/init_kernels.cuh"
#include "flashoptim/tuning/step_policy.hpp"

namespace flashoptim::device {

namespace detail {
inline int elementwise_grid(std::int64_t n) {
  int dev = 0, sms = 132;
  if (cudaGetDevice(&dev) == cudaSuccess) cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
  const std::int64_t blocks = (n + tuning::elementwise_threads - 1) / tuning::elementwise_threads;
  return static_cast<int>(std::max<std::int64_t>(
      1, std::min<std::int64_t>(blocks, std::int64_t{sms} * tuning::elementwise_blocks_per_sm)));
}

inline bool overlaps(const void* a, std::int64_t a_bytes, const void* b, std::int64_t b_bytes) {
  if (a == nullptr || b == nullptr || a_bytes <= 0 || b_bytes <= 0) return false;
  const auto x = reinterpret_cast<std::uintptr_t>(a), y = reinterpret_cast<std::uintptr_t>(b);
  return x < y + static_cast<std::uintptr_t>(b_bytes) && y < x + static_cast<std::uintptr_t>(a_bytes);
}
}  // namespace detail

/// (param, aux)[0, n) = Master::encode(x[0, n)) on the device.
template <class Master>
status split_async(const float* x, std::int64_t n, typename Master::param_type* param,
                   typename Master::aux_type* aux, cudaStream_t stream) {
  FLASHOPTIM_RETURN_IF_ERROR(codec::detail::check_array("fp32 input", x, n));
  FLASHOPTIM_RETURN_IF_ERROR(codec::detail::check_array("param", param, n));
  FLASHOPTIM_RETURN_IF_ERROR(codec::detail::check_array("correction", aux, n));
  const std::int64_t pb = n * static_cast<std::int64_t>(sizeof(*param));
  const std::int64_t ab = n * static_cast<std::int64_t>(storage_bytes<typename Master::aux_type>);
  if (detail::overlaps(x, n * 4, param, pb) || detail::overlaps(x, n * 4, aux, ab) ||
      detail::overlaps(param, pb, aux, ab))
    return status(status_code::aliasing, "split: input, param and correction overlap");
  if (n == 0) return status();
  kernel::split_kernel<Master><<<detail::elementwise_grid(n), tuning::elementwise_threads, 0, stream>>>(x, n, param, aux);
  return detail::cuda_status(cudaGetLastError(), "split launch");
}

/// out[0, n) = Master::decode(param, aux) on the device.
template <class Master>
status reconstruct_async(const typename Master::param_type* param, const typename Master::aux_type* aux,
                         std::int64_t n, float* out, cudaStream_t stream) {
  FLASHOPTIM_RETURN_IF_ERROR(codec::detail::check_array("param", param, n));
  FLASHOPTIM_RETURN_IF_ERROR(codec::detail::check_array("correction", aux, n));
  FLASHOPTIM_RETURN_IF_ERROR(codec::detail::check_array("fp32 output", out, n));
  const std::int64_t pb = n * static_cast<std::int64_t>(sizeof(*param));
  const std::int64_t ab = n * static_cast<std::int64_t>(storage_bytes<typename Master::aux_type>);
  if (detail::overlaps(out, n * 4, param, pb) || detail::overlaps(out, n * 4, aux, ab))
    return status(status_code::aliasing, "reconstruct: output overlaps its inputs");
  if (n == 0) return status();
  kernel::reconstruct_kernel<Master>
      <<<detail::elementwise_grid(n), tuning::elementwise_threads, 0, stream>>>(param, aux, n, out);
  return detail::cuda_status(cudaGetLastError(), "reconstruct launch");
}

/// aux[0, n) from the 16-bit parameters alone: the correction (or fp32
/// master) each parameter's value has (zero for the ULP corrections); the
/// parameters are not written. A fresh optimizer over weights a trainer
/// already holds in 16 bits (cpu::optimizer does the same on the host).
template <class Master>
status resplit_async(const typename Master::param_type* param, typename Master::aux_type* aux, std::int64_t n,
                     cudaStream_t stream) {
  if (n < 0) return status(status_code::invalid_argument, "resplit: negative size %lld", static_cast<long long>(n));
  if (n == 0 || storage_bytes<typename Master::aux_type> == 0) return status();
  if (param == nullptr || aux == nullptr) return status(status_code::null_pointer, "resplit: param or correction is null");
  kernel::resplit_kernel<Master><<<detail::elementwise_grid(n), tuning::elementwise_threads, 0, stream>>>(param, aux, n);
  return detail::cuda_status(cudaGetLastError(), "resplit launch");
}

/// A fresh tensor from fp32 weights x: param and correction / master from
/// x (split), every state code and scale zero. The gradient is not touched.
template <class Config>
status init_tensor_async(const float* x, const tensor_ref<Config>& t, cudaStream_t stream) {
  FLASHOPTIM_RETURN_IF_ERROR(validate_tensor(0, t, false));
  // every buffer but the gradient, which is not touched
  bool overlap = false;
  for_each_buffer(t, [&](const char* name, const void* p, std::size_t bytes, bool) {
    if (std::strcmp(name, "grad") != 0)
      overlap = overlap || detail::overlaps(x, t.size * 4, p, static_cast<std::int64_t>(bytes));
  });
  if (overlap) return status(status_code::aliasing, "init_tensor: the fp32 input overlaps the tensor's buffers");
  FLASHOPTIM_RETURN_IF_ERROR(split_async<typename Config::master>(x, t.size, t.param, t.aux, stream));
  status st;
  for_each_slot<Config::num_slots>([&](auto s) {
    constexpr int I = decltype(s)::value;
    using S = typename Config::template state<I>;
    const auto& r = slot_at<I>(t.states);
    const std::pair<void*, std::size_t> pieces[] = {
        {static_cast<void*>(r.codes), static_cast<std::size_t>(t.size) * storage_bytes<typename S::code_type>},
        {static_cast<void*>(r.scales),
         static_cast<std::size_t>(codec::scale_count<S>(t.size)) * storage_bytes<typename S::scale_type>}};
    for (const auto& pc : pieces) {
      if (st.ok() && pc.first != nullptr && pc.second > 0)
        st = detail::cuda_status(cudaMemsetAsync(pc.first, 0, pc.second, stream), "zeroing states");
    }
  });
  FLASHOPTIM_RETURN_IF_ERROR(st);
  return status();
}

/// *step += 1 on the device unless *skip (may be null) is set. Capture it
/// after step_async(..., device_inputs{.step = step, .skip = skip}).
inline status advance_step_async(std::int64_t* step, const std::int32_t* skip, cudaStream_t stream) {
  if (step == nullptr) return status(status_code::null_pointer, "advance_step: step counter is null");
  FLASHOPTIM_RETURN_IF_ERROR(detail::check_device_scalar("step", step));
  FLASHOPTIM_RETURN_IF_ERROR(detail::check_device_scalar("skip", skip));
  kernel::advance_step_kernel<<<1, 32, 0, stream>>>(step, skip);
  return detail::cuda_status(cudaGetLastError(), "advance_step launch");
}

}  // namespace flashoptim::device
