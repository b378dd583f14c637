// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// The gradient-statistics pass's inputs (a list of gradient tensors) and its
// reduction order, shared by the CPU (cpu/grad_pass.hpp) and the GPU
// (kernel/grad_pass_kernel.cuh). The sum of squares is defined by a fixed
// tree over the elements that depends on the tensor sizes only, never on
// threads, blocks or the device, so every path that follows it gives the
// same bits (docs/grad-passes.md):
//
//   element   q = double(g) * double(g), g the gradient widened to fp32: exact
//             (a 24-bit significand squared has at most 48 bits).
//   lane      a chunk of chunk_elements = 1024 consecutive elements is read
//             as rows of 128; lane l (0..31) of row r owns elements
//             r*128 + 4l + k, k = 0..3, and adds its 32 squares in the order
//             r = 0..7, k = 0..3 into an accumulator that starts at +0.
//   chunk     the 32 lane sums are combined by warp_tree: for o = 16, 8, 4,
//             2, 1: v[j] = v[j] + v[j + o] for j < o; the result is v[0].
//   tensor    the chunk sums of a tensor, in order, are combined 32 at a time
//             by warp_tree (a short last group padded with +0), level after
//             level, until one value is left (+0 for an empty tensor). The
//             first level's groups are segments: segment_elements = 32768.
//   list      the tensor sums, in list order, are combined the same way.
//
// Absent elements (past a tensor's end) and padding are +0; every partial
// sum is >= +0 or NaN, and x + (+0) = x exactly, so padding never changes a
// bit: the tree is a function of the tensor sizes and values alone.
#pragma once

#include <cstdint>
#include <cstring>

#include "flashoptim/config.hpp"
#include "flashoptim/format/bits.hpp"
#include "flashoptim/format/dtype.hpp"
#include "flashoptim/status.hpp"

namespace flashoptim {

/// One gradient tensor of the statistics pass: `size` elements of `type`
/// (fp32, bf16 or fp16) at `data` (host memory for the CPU pass, device
/// memory for the GPU pass). `data` may be null when `size` is 0.
struct grad_tensor {
  const void* data = nullptr;
  dtype type = dtype::f32;
  std::int64_t size = 0;
};

/// A list of gradient tensors (a view: the caller owns the array).
struct grad_list {
  const grad_tensor* tensors = nullptr;
  std::int64_t count = 0;
};

/// What the statistics pass measures, over the raw gradients as stored
/// (still multiplied by the loss scale, if one is used).
struct grad_summary {
  double sum_squares = 0.0;       ///< the fixed-order sum of g^2 (NaN or +inf with non-finite gradients)
  double norm = 0.0;              ///< sqrt(sum_squares)
  std::int64_t elements = 0;      ///< elements of all tensors
  std::uint32_t max_abs_bits = 0;  ///< largest |g| as fp32 bits (0x7f800000 inf, 0x7fc00000 any NaN)
  std::int32_t non_finite = 0;    ///< 1 when any gradient is NaN or +-inf
};

namespace grad_order {

inline constexpr int lanes = 32;                                   ///< accumulators of a chunk
inline constexpr int items = 4;                                    ///< consecutive elements a lane owns in a row
inline constexpr int row_elements = lanes * items;                 ///< 128
inline constexpr int rows = 8;                                     ///< rows of a chunk
inline constexpr int chunk_elements = row_elements * rows;         ///< 1024
inline constexpr int fan_in = 32;                                  ///< values warp_tree combines
inline constexpr std::int64_t segment_elements = std::int64_t{chunk_elements} * fan_in;  ///< 32768

/// The canonical NaN of the pass's double outputs: a NaN's payload depends
/// on the operand order and the processor (x86 makes 0xfff8... from
/// inf - inf, the GPU 0x7fff...), so every stored NaN is this one.
inline constexpr std::uint64_t canonical_nan_bits = 0x7fffffffffffffffull;

FLASHOPTIM_HOST_DEVICE FLASHOPTIM_INLINE double canonical(double x) {
  if (x == x) return x;
#if FLASHOPTIM_DEVICE_CODE
  return __longlong_as_double(static_cast<long long>(canonical_nan_bits));
#else
  double r;
  std::memcpy(&r, &canonical_nan_bits, sizeof r);
  return r;
#endif
}

/// |g| as the bits the maximum is taken over: the magnitude of a finite or
/// infinite value, every NaN as 0x7fc00000 (the widening of an fp16 NaN keeps
/// a payload on one path and not the other; the maximum must not see it).
FLASHOPTIM_HOST_DEVICE FLASHOPTIM_INLINE std::uint32_t magnitude_bits(float g) {
  const std::uint32_t m = format::bits_of(g) & 0x7fffffffu;
  return m > 0x7f800000u ? 0x7fc00000u : m;
}

/// Segments (groups of fan_in chunks) of a tensor of n >= 0 elements.
FLASHOPTIM_HOST_DEVICE FLASHOPTIM_INLINE std::int64_t segments(std::int64_t n) {
  return n / segment_elements + (n % segment_elements != 0 ? 1 : 0);
}

/// warp_tree on a host array of fan_in values (in place; the result is v[0]):
/// the order the GPU's shuffle-down reduction follows.
inline double warp_tree(double* v) {
  for (int o = fan_in / 2; o > 0; o >>= 1)
    for (int j = 0; j < o; ++j) v[j] = format::add_rn(v[j], v[j + o]);
  return v[0];
}

/// The tree over n values in order (in place, v is overwritten; +0 for
/// n == 0): groups of fan_in combined by warp_tree, level after level.
inline double tree_reduce(double* v, std::int64_t n) {
  if (n == 0) return 0.0;
  while (n > 1) {
    const std::int64_t groups = n / fan_in + (n % fan_in != 0 ? 1 : 0);
    for (std::int64_t g = 0; g < groups; ++g) {
      double w[fan_in];
      for (int j = 0; j < fan_in; ++j) {
        const std::int64_t i = g * fan_in + j;
        w[j] = i < n ? v[i] : 0.0;
      }
      v[g] = warp_tree(w);  // g <= g * fan_in: never a value a later group still reads
    }
    n = groups;
  }
  return v[0];
}

/// Whether the pass supports gradients of type t.
FLASHOPTIM_HOST_DEVICE FLASHOPTIM_INLINE bool supported(dtype t) {
  return t == dtype::f32 || t == dtype::bf16 || t == dtype::f16;
}

/// Checks a list before anything is read: a non-negative count with tensors
/// when non-zero, every size in [0, max_elements], data non-null and aligned
/// to its element type when size > 0, and a supported dtype. `who` prefixes
/// the messages.
inline status check_list(const grad_list& list, const char* who) {
  if (list.count < 0) return status(status_code::invalid_argument, "%s: tensor count %lld is negative", who,
                                    static_cast<long long>(list.count));
  if (list.count > 0 && list.tensors == nullptr)
    return status(status_code::null_pointer, "%s: %lld tensors but the tensor array is null", who,
                  static_cast<long long>(list.count));
  for (std::int64_t i = 0; i < list.count; ++i) {
    const grad_tensor& t = list.tensors[i];
    const long long ti = static_cast<long long>(i);
    if (!supported(t.type))
      return status(status_code::dtype_mismatch, "%s: tensor %lld: gradient type %s is not fp32, bf16 or fp16", who,
                    ti, to_string(t.type));
    if (t.size < 0 || t.size > max_elements)
      return status(status_code::invalid_argument, "%s: tensor %lld: size %lld is outside [0, 2^56]", who, ti,
                    static_cast<long long>(t.size));
    if (t.size == 0) continue;
    if (t.data == nullptr)
      return status(status_code::null_pointer, "%s: tensor %lld: %lld elements at a null pointer", who, ti,
                    static_cast<long long>(t.size));
    if (reinterpret_cast<std::uintptr_t>(t.data) % size_of(t.type) != 0)
      return status(status_code::misaligned, "%s: tensor %lld: %s data at %p is not %zu-byte aligned", who, ti,
                    to_string(t.type), t.data, size_of(t.type));
    if (!detail::within_address_space(t.data, t.size, size_of(t.type)))
      return status(status_code::invalid_argument, "%s: tensor %lld: %lld elements at %p run past the address space",
                    who, ti, static_cast<long long>(t.size), t.data);
  }
  return status();
}

/// An output buffer of a pass, for check_outputs.
struct output_span {
  const char* name;
  const void* data;  ///< null: not written (not checked)
  std::size_t bytes;
};

inline bool overlaps(const void* a, std::size_t a_bytes, const void* b, std::size_t b_bytes) {
  if (a == nullptr || b == nullptr || a_bytes == 0 || b_bytes == 0) return false;
  const auto x = reinterpret_cast<std::uintptr_t>(a), y = reinterpret_cast<std::uintptr_t>(b);
  return x < y + b_bytes && y < x + a_bytes;
}

/// Outputs are 8-byte aligned and overlap neither one another nor a
/// gradient of `list` (which check_list has accepted).
inline status check_outputs(const grad_list& list, const output_span* outs, int n, const char* who) {
  for (int i = 0; i < n; ++i) {
    if (outs[i].data == nullptr) continue;
    if (reinterpret_cast<std::uintptr_t>(outs[i].data) % alignof(double) != 0)
      return status(status_code::misaligned, "%s: %s at %p is not 8-byte aligned", who, outs[i].name, outs[i].data);
    for (int j = i + 1; j < n; ++j)
      if (overlaps(outs[i].data, outs[i].bytes, outs[j].data, outs[j].bytes))
        return status(status_code::aliasing, "%s: outputs %s and %s overlap", who, outs[i].name, outs[j].name);
    for (std::int64_t t = 0; t < list.count; ++t) {
      const grad_tensor& g = list.tensors[t];
      if (overlaps(outs[i].data, outs[i].bytes, g.data, static_cast<std::size_t>(g.size) * size_of(g.type)))
        return status(status_code::aliasing, "%s: output %s overlaps the gradient of tensor %lld", who, outs[i].name,
                      static_cast<long long>(t));
    }
  }
  return status();
}

}  // namespace grad_order
}  // namespace flashoptim
