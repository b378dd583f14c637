// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// Run-time names of element types, for validation messages, type-erased
// views (bindings, checkpoints) and metadata.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "flashoptim/format/types.hpp"

namespace flashoptim {

/// `user`: a storage type the library does not name (a format added through
/// format_traits); usable in typed views, not through run-time typed buffers.
enum class dtype : int { none = 0, f32, bf16, f16, f8_e4m3, f8_e5m2, i8, u8, i16, u16, i32, u32, user };

FLASHOPTIM_HOST_DEVICE inline const char* to_string(dtype t) {
  switch (t) {
    case dtype::none: return "none";
    case dtype::f32: return "fp32";
    case dtype::bf16: return "bf16";
    case dtype::f16: return "fp16";
    case dtype::f8_e4m3: return "fp8_e4m3";
    case dtype::f8_e5m2: return "fp8_e5m2";
    case dtype::i8: return "int8";
    case dtype::u8: return "uint8";
    case dtype::i16: return "int16";
    case dtype::u16: return "uint16";
    case dtype::i32: return "int32";
    case dtype::u32: return "uint32";
    case dtype::user: return "user-defined";
  }
  return "unknown";
}

FLASHOPTIM_HOST_DEVICE constexpr std::size_t size_of(dtype t) {
  switch (t) {
    case dtype::none: return 0;
    case dtype::f32: case dtype::i32: case dtype::u32: return 4;
    case dtype::bf16: case dtype::f16: case dtype::i16: case dtype::u16: return 2;
    case dtype::f8_e4m3: case dtype::f8_e5m2: case dtype::i8: case dtype::u8: return 1;
    case dtype::user: return 0;
  }
  return 0;
}

template <class T>
struct dtype_of {
  static constexpr dtype value = dtype::user;
};
template <> struct dtype_of<none_t> { static constexpr dtype value = dtype::none; };
template <> struct dtype_of<float> { static constexpr dtype value = dtype::f32; };
template <> struct dtype_of<bf16> { static constexpr dtype value = dtype::bf16; };
template <> struct dtype_of<fp16> { static constexpr dtype value = dtype::f16; };
template <> struct dtype_of<fp8_e4m3> { static constexpr dtype value = dtype::f8_e4m3; };
template <> struct dtype_of<fp8_e5m2> { static constexpr dtype value = dtype::f8_e5m2; };
template <> struct dtype_of<std::int8_t> { static constexpr dtype value = dtype::i8; };
template <> struct dtype_of<std::uint8_t> { static constexpr dtype value = dtype::u8; };
template <> struct dtype_of<std::int16_t> { static constexpr dtype value = dtype::i16; };
template <> struct dtype_of<std::uint16_t> { static constexpr dtype value = dtype::u16; };
template <> struct dtype_of<std::int32_t> { static constexpr dtype value = dtype::i32; };
template <> struct dtype_of<std::uint32_t> { static constexpr dtype value = dtype::u32; };

template <class T>
inline constexpr dtype dtype_v = dtype_of<T>::value;

/// Bytes of storage per element; 0 for `none_t` (an absent slot).
template <class T>
inline constexpr std::size_t storage_bytes = std::is_same<T, none_t>::value ? 0 : sizeof(T);

/// The most elements one tensor or array may have at any entry point: 2^56.
/// Every count derived from it (bytes at up to 8 per element, group counts,
/// sizes padded to a group, sums of the buffers of a tensor) fits int64_t
/// with room, so the checks that refuse larger sizes run before any of that
/// arithmetic can overflow; no machine holds 2^56 elements of even a byte.
inline constexpr std::int64_t max_elements = std::int64_t{1} << 56;

namespace detail {
/// Whether `count` elements of `bytes` each from address `p` fit below the
/// top of the address space (count in [0, max_elements], bytes <= 8, so the
/// product cannot overflow).
inline bool within_address_space(const void* p, std::int64_t count, std::size_t bytes) {
  const auto addr = reinterpret_cast<std::uintptr_t>(p);
  return static_cast<std::uintptr_t>(count) * bytes <= UINTPTR_MAX - addr;
}
}  // namespace detail

}  // namespace flashoptim
