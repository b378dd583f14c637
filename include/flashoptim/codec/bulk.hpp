// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// Host functions over whole arrays, for checkpoint converters and
// initialization: split fp32 weights into (param, correction) and back,
// quantize a state tensor with any codec and back. With the `reference`
// codecs and ulp_correction these reproduce the FlashOptim reference
// implementation's bytes (compute_ecc_bits, reconstruct_fp32_param,
// quantize, dequantize). Threaded with OpenMP when the caller builds with it.
// Arguments are checked first; on error nothing is written.
#pragma once

#include <cinttypes>
#include <cstdint>

#include "flashoptim/codec/master.hpp"
#include "flashoptim/codec/state.hpp"
#include "flashoptim/status.hpp"

namespace flashoptim::codec {

namespace detail {
template <class T>
status check_array(const char* what, const T* p, std::int64_t n) {
  if (n < 0) return status(status_code::size_mismatch, "%s: negative element count %" PRId64, what, n);
  if (n == 0 || storage_bytes<T> == 0) return status();
  if (p == nullptr) return status(status_code::null_pointer, "%s is null for %" PRId64 " elements", what, n);
  if (reinterpret_cast<std::uintptr_t>(p) % alignof(T) != 0)
    return status(status_code::misaligned, "%s at %p is not aligned to %zu bytes", what, static_cast<const void*>(p),
                  alignof(T));
  return status();
}
}  // namespace detail

/// x[0, n) -> (param, aux) under a master-weight mode.
template <class Master>
status split(const float* x, std::int64_t n, typename Master::param_type* param, typename Master::aux_type* aux) {
  FLASHOPTIM_RETURN_IF_ERROR(detail::check_array("fp32 input", x, n));
  FLASHOPTIM_RETURN_IF_ERROR(detail::check_array("param", param, n));
  FLASHOPTIM_RETURN_IF_ERROR(detail::check_array("correction", aux, n));
FLASHOPTIM_OMP_PARALLEL_FOR
  for (std::int64_t i = 0; i < n; ++i) {
    typename Master::aux_type a{};
    Master::encode(x[i], param[i], a);
    if constexpr (storage_bytes<typename Master::aux_type> != 0) aux[i] = a;
  }
  return status();
}

/// (param, aux)[0, n) -> the fp32 master values.
template <class Master>
status reconstruct(const typename Master::param_type* param, const typename Master::aux_type* aux, std::int64_t n,
                   float* out) {
  FLASHOPTIM_RETURN_IF_ERROR(detail::check_array("param", param, n));
  FLASHOPTIM_RETURN_IF_ERROR(detail::check_array("correction", aux, n));
  FLASHOPTIM_RETURN_IF_ERROR(detail::check_array("fp32 output", out, n));
FLASHOPTIM_OMP_PARALLEL_FOR
  for (std::int64_t i = 0; i < n; ++i) {
    typename Master::aux_type a{};
    if constexpr (storage_bytes<typename Master::aux_type> != 0) a = aux[i];
    out[i] = Master::decode(param[i], a);
  }
  return status();
}

/// x[0, n) -> codes[0, n) and scales[0, scale_count(n)). `key` seeds
/// stochastic rounding (index is added per element); ignored otherwise.
template <class Codec>
status quantize(const float* x, std::int64_t n, typename Codec::code_type* codes, typename Codec::scale_type* scales,
                rounding_key key = {}) {
  FLASHOPTIM_RETURN_IF_ERROR(detail::check_array("fp32 input", x, n));
  FLASHOPTIM_RETURN_IF_ERROR(detail::check_array("codes", codes, n));
  FLASHOPTIM_RETURN_IF_ERROR(detail::check_array("scales", scales, scale_count<Codec>(n)));
  constexpr int G = Codec::group_size;
  const std::int64_t groups = (n + G - 1) / G;
FLASHOPTIM_OMP_PARALLEL_FOR
  for (std::int64_t g = 0; g < groups; ++g) {
    const std::int64_t begin = g * G;
    const int valid = static_cast<int>(n - begin < G ? n - begin : G);
    float in[G] = {};
    typename Codec::code_type q[G] = {};
    typename Codec::scale_type s{};
    for (int i = 0; i < valid; ++i) in[i] = x[begin + i];
    rounding_key k = key;
    k.index = key.index + static_cast<std::uint64_t>(begin);
    Codec::encode_tile(in, q, s, whole_group{}, k);
    for (int i = 0; i < valid; ++i) codes[begin + i] = q[i];
    if constexpr (storage_bytes<typename Codec::scale_type> != 0) scales[g] = s;
  }
  return status();
}

/// codes and scales -> x[0, n).
template <class Codec>
status dequantize(const typename Codec::code_type* codes, const typename Codec::scale_type* scales, std::int64_t n,
                  float* out) {
  FLASHOPTIM_RETURN_IF_ERROR(detail::check_array("codes", codes, n));
  FLASHOPTIM_RETURN_IF_ERROR(detail::check_array("scales", scales, scale_count<Codec>(n)));
  FLASHOPTIM_RETURN_IF_ERROR(detail::check_array("fp32 output", out, n));
  constexpr int G = Codec::group_size;
  const std::int64_t groups = (n + G - 1) / G;
FLASHOPTIM_OMP_PARALLEL_FOR
  for (std::int64_t g = 0; g < groups; ++g) {
    const std::int64_t begin = g * G;
    const int valid = static_cast<int>(n - begin < G ? n - begin : G);
    typename Codec::code_type q[G] = {};
    typename Codec::scale_type s{};
    float o[G];
    for (int i = 0; i < valid; ++i) q[i] = codes[begin + i];
    if constexpr (storage_bytes<typename Codec::scale_type> != 0) s = scales[g];
    Codec::decode_tile(q, s, o);
    for (int i = 0; i < valid; ++i) out[begin + i] = o[i];
  }
  return status();
}

}  // namespace flashoptim::codec
