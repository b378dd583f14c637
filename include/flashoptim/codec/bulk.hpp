// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// Host functions over whole arrays, for checkpoint converters and
// initialization: split fp32 weights into (param, correction) and back,
// quantize a state tensor with any codec and back. With the `reference`
// codecs and ulp_correction these reproduce the FlashOptim reference
// implementation's bytes (compute_ecc_bits, reconstruct_fp32_param,
// quantize, dequantize). Threaded with OpenMP when the caller builds with it.
// Arguments are checked first (counts, null pointers, alignment, and no
// written buffer overlapping any other buffer of the call: the loops read
// and write in any order on any thread); on error nothing is written.
#pragma once

#include <cinttypes>
#include <cstdint>

#include "flashoptim/codec/master.hpp"
#include "flashoptim/codec/state.hpp"
#include "flashoptim/format/dtype.hpp"
#include "flashoptim/status.hpp"

namespace flashoptim::codec {

namespace detail {
template <class T>
status check_array(const char* what, const T* p, std::int64_t n) {
  if (n < 0) return status(status_code::size_mismatch, "%s: negative element count %" PRId64, what, n);
  // before any group count or byte extent is formed from n
  if (n > max_elements)
    return status(status_code::invalid_argument,
                  "%s: %" PRId64 " elements is above the largest supported count, 2^56 (flashoptim::max_elements)",
                  what, n);
  if (n == 0 || storage_bytes<T> == 0) return status();
  if (p == nullptr) return status(status_code::null_pointer, "%s is null for %" PRId64 " elements", what, n);
  if (reinterpret_cast<std::uintptr_t>(p) % alignof(T) != 0)
    return status(status_code::misaligned, "%s at %p is not aligned to %zu bytes", what, static_cast<const void*>(p),
                  alignof(T));
  if (!::flashoptim::detail::within_address_space(p, n, sizeof(T)))
    return status(status_code::invalid_argument, "%s at %p with %" PRId64 " %zu-byte elements runs past the end of the address space",
                  what, static_cast<const void*>(p), n, sizeof(T));
  return status();
}

/// One buffer of a bulk call, as a byte range (empty for absent buffers).
struct array_span {
  const char* what;
  std::uintptr_t begin, end;
  bool written;
};
template <class T>
array_span span_of(const char* what, const T* p, std::int64_t n, bool written) {
  if (p == nullptr || n <= 0 || storage_bytes<T> == 0) return {what, 0, 0, written};
  const auto b = reinterpret_cast<std::uintptr_t>(p);
  return {what, b, b + static_cast<std::uintptr_t>(n) * sizeof(T), written};  // check_array bounded both
}
/// An aliasing error naming the first two overlapping buffers of which one
/// is written; call after check_array accepted each of them.
template <std::size_t K>
status check_no_overlap(const char* function, const array_span (&s)[K]) {
  for (std::size_t i = 0; i < K; ++i)
    for (std::size_t j = i + 1; j < K; ++j) {
      if (s[i].begin == s[i].end || s[j].begin == s[j].end || !(s[i].written || s[j].written)) continue;
      if (s[i].begin < s[j].end && s[j].begin < s[i].end)
        return status(status_code::aliasing, "%s: %s and %s overlap", function, s[i].what, s[j].what);
    }
  return status();
}
}  // namespace detail

/// x[0, n) -> (param, aux) under a master-weight mode.
template <class Master>
status split(const float* x, std::int64_t n, typename Master::param_type* param, typename Master::aux_type* aux) {
  FLASHOPTIM_RETURN_IF_ERROR(detail::check_array("fp32 input", x, n));
  FLASHOPTIM_RETURN_IF_ERROR(detail::check_array("param", param, n));
  FLASHOPTIM_RETURN_IF_ERROR(detail::check_array("correction", aux, n));
  const detail::array_span spans[] = {detail::span_of("fp32 input", x, n, false),
                                      detail::span_of("param", param, n, true),
                                      detail::span_of("correction", aux, n, true)};
  FLASHOPTIM_RETURN_IF_ERROR(detail::check_no_overlap("codec::split", spans));
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
  const detail::array_span spans[] = {detail::span_of("param", param, n, false),
                                      detail::span_of("correction", aux, n, false),
                                      detail::span_of("fp32 output", out, n, true)};
  FLASHOPTIM_RETURN_IF_ERROR(detail::check_no_overlap("codec::reconstruct", spans));
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
  const detail::array_span spans[] = {detail::span_of("fp32 input", x, n, false),
                                      detail::span_of("codes", codes, n, true),
                                      detail::span_of("scales", scales, scale_count<Codec>(n), true)};
  FLASHOPTIM_RETURN_IF_ERROR(detail::check_no_overlap("codec::quantize", spans));
  constexpr int G = Codec::group_size;
  const std::int64_t groups = (n + G - 1) / G;  // n <= max_elements (check_array): no overflow
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
  const detail::array_span spans[] = {detail::span_of("codes", codes, n, false),
                                      detail::span_of("scales", scales, scale_count<Codec>(n), false),
                                      detail::span_of("fp32 output", out, n, true)};
  FLASHOPTIM_RETURN_IF_ERROR(detail::check_no_overlap("codec::dequantize", spans));
  constexpr int G = Codec::group_size;
  const std::int64_t groups = (n + G - 1) / G;  // n <= max_elements (check_array): no overflow
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
