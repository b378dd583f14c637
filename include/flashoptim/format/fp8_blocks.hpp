// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// FP8 parameters with block scales (docs/fp8-params.md): e4m3 / e5m2
// values plus one fp32 dequantization factor per block of 1 x 128 or
// 128 x 128 elements, derived from the optimizer's master after each step.
// This header holds the form (block geometry), the recipe's scalar
// functions that the CPU write (cpu/fp8_param.hpp) and the GPU kernel
// (kernel/fp8_param_kernel.cuh) share, so both give the same bytes, and
// the validation every entry point runs before writing anything.
#pragma once

#include <algorithm>
#include <cinttypes>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "flashoptim/codec/master.hpp"
#include "flashoptim/format/dtype.hpp"
#include "flashoptim/rule/tensor.hpp"
#include "flashoptim/status.hpp"

namespace flashoptim {

/// Block shape: rows per block (1 or 128); blocks are always 128 wide.
enum class fp8_block_kind : int {
  row_1x128 = 1,       ///< 1 x 128 along a row: 1-D and activation-like tensors
  tile_128x128 = 128,  ///< 128 x 128: 2-D weights (DeepSeek-V3 / TE blockwise)
};

inline constexpr int fp8_block_cols = 128;

/// A tensor's geometry under the FP8 form. Element (r, c) is element
/// r * cols + c of the tensor and exists when that index is below `size`;
/// only the 1-D form (cols = 128, rows = ceil(size / 128)) has a partial
/// last row. Scales are row-major, scale_rows() x scale_cols().
struct fp8_block_shape {
  std::int64_t size = 0;
  std::int64_t rows = 0;
  std::int64_t cols = 0;
  int block_rows = 1;

  FLASHOPTIM_HOST_DEVICE std::int64_t scale_rows() const { return (rows + block_rows - 1) / block_rows; }
  FLASHOPTIM_HOST_DEVICE std::int64_t scale_cols() const { return (cols + fp8_block_cols - 1) / fp8_block_cols; }
  FLASHOPTIM_HOST_DEVICE std::int64_t scale_count() const { return scale_rows() * scale_cols(); }
};

/// A 1-D tensor of n elements: blocks [128 b, 128 b + 128), ceil(n / 128) scales.
inline fp8_block_shape fp8_shape_1d(std::int64_t n) {
  return fp8_block_shape{n, n > 0 ? (n + fp8_block_cols - 1) / fp8_block_cols : 0, fp8_block_cols, 1};
}
/// A row-major rows x cols tensor with blocks of the given kind.
/// (A product out of range gives size -1, which validation refuses.)
inline fp8_block_shape fp8_shape_2d(std::int64_t rows, std::int64_t cols, fp8_block_kind kind) {
  const bool fits = rows >= 0 && cols >= 0 && (cols == 0 || rows <= max_elements / cols);
  return fp8_block_shape{fits ? rows * cols : -1, rows, cols, static_cast<int>(kind)};
}

/// The element count a shard boundary must be a multiple of, so that no
/// block crosses ranks (docs/fp8-params.md, Sharding): a block-row.
inline std::int64_t fp8_shard_alignment(const fp8_block_shape& s) {
  return static_cast<std::int64_t>(s.block_rows) * s.cols;
}
/// Whether elements [begin, end) of the tensor are whole block-rows (or end
/// at the tensor's end), i.e. a tensor of the same form on its own.
inline bool fp8_shard_aligned(const fp8_block_shape& s, std::int64_t begin, std::int64_t end) {
  const std::int64_t a = fp8_shard_alignment(s);
  if (begin < 0 || end < begin || end > s.size || a <= 0) return false;
  return begin % a == 0 && (end % a == 0 || end == s.size);
}

/// The form of a block-aligned shard [begin, end) (fp8_shard_aligned): the
/// same columns and blocks, (end - begin) / cols rows (the 1-D form for a
/// 1-D tensor). Its scales are the tensor's from fp8_shard_scale_offset(s, begin).
inline fp8_block_shape fp8_shard_shape(const fp8_block_shape& s, std::int64_t begin, std::int64_t end) {
  fp8_block_shape out = s;
  out.size = end - begin;
  out.rows = s.cols > 0 ? (out.size + s.cols - 1) / s.cols : 0;
  return out;
}
inline std::int64_t fp8_shard_scale_offset(const fp8_block_shape& s, std::int64_t begin) {
  const std::int64_t a = fp8_shard_alignment(s);
  return a > 0 ? begin / a * s.scale_cols() : 0;
}

/// Checks a shape: sizes in [0, max_elements], block_rows 1 or 128, and
/// either rows * cols == size or the 1-D form (block_rows 1).
inline status validate_fp8_shape(std::size_t index, const fp8_block_shape& s) {
  if (s.size < 0 || s.size > max_elements || s.rows < 0 || s.cols < 0 || s.rows > max_elements ||
      s.cols > max_elements)
    return status(status_code::invalid_argument,
                  "tensor %zu: fp8 shape size %" PRId64 ", rows %" PRId64 ", cols %" PRId64
                  " outside [0, 2^56] (flashoptim::max_elements)",
                  index, s.size, s.rows, s.cols);
  if (s.block_rows != 1 && s.block_rows != 128)
    return status(status_code::invalid_argument, "tensor %zu: fp8 block rows %d is neither 1 nor 128", index,
                  s.block_rows);
  // rows * cols formed only once it cannot overflow
  const bool product_fits = s.cols == 0 || s.rows <= max_elements / s.cols;
  if (product_fits && s.rows * s.cols == s.size) return status();
  const std::int64_t rows_1d = (s.size + fp8_block_cols - 1) / fp8_block_cols;
  if (s.block_rows == 1 && s.cols == fp8_block_cols && s.rows == rows_1d) return status();
  return status(status_code::size_mismatch,
                "tensor %zu: fp8 shape %" PRId64 " x %" PRId64 " does not hold %" PRId64
                " elements (rows * cols == size, or the 1-D form fp8_shape_1d)",
                index, s.rows, s.cols, s.size);
}

// ---- The recipe, shared by every path

/// Formats the form stores: the largest finite value and the NaN / inf
/// encodings a non-finite master value becomes.
template <class F8>
struct fp8_param_format;
template <>
struct fp8_param_format<fp8_e4m3> {
  static constexpr float max = 448.0f;
  static constexpr std::uint8_t nan_bits = 0x7f;
  static constexpr std::uint8_t inf_bits = 0x7f;  // no infinity: NaN, never a saturated +-448
  static constexpr bool has_inf = false;
};
template <>
struct fp8_param_format<fp8_e5m2> {
  static constexpr float max = 57344.0f;
  static constexpr std::uint8_t nan_bits = 0x7f;
  static constexpr std::uint8_t inf_bits = 0x7c;
  static constexpr bool has_inf = true;
};

/// One more element into a block's amax, kept as |x|'s bit pattern: for
/// finite non-negative floats the bit order is the value order, so the
/// maximum is exact and independent of the reduction's order. Non-finite
/// values do not take part.
FLASHOPTIM_HOST_DEVICE FLASHOPTIM_INLINE std::uint32_t fp8_amax_add(std::uint32_t amax_bits, float x) {
  const std::uint32_t a = format::bits_of(x) & 0x7fffffffu;
  return (a < 0x7f800000u && a > amax_bits) ? a : amax_bits;
}

/// The quantization factor q = fmt_max / amax, rounded to nearest even in
/// fp32: 1 for amax 0 (a block of zeros or of non-finite values), FLT_MAX
/// where the quotient overflows; with pow2, its mantissa cleared (2^floor(log2 q)).
/// q is always a normal float (amax <= FLT_MAX), so the power of two is too.
template <class F8>
FLASHOPTIM_HOST_DEVICE FLASHOPTIM_INLINE float fp8_quant_factor(std::uint32_t amax_bits, bool pow2) {
  if (amax_bits == 0) return 1.0f;
  float q = format::div_rn(fp8_param_format<F8>::max, format::float_from_bits(amax_bits));
  if (!format::is_finite(q)) q = format::float_from_bits(format::max_finite_bits);
  if (pow2) q = format::float_from_bits(format::bits_of(q) & 0xff800000u);
  return q;
}

/// The stored dequantization factor of a block: 1 / q in fp32.
FLASHOPTIM_HOST_DEVICE FLASHOPTIM_INLINE float fp8_block_scale(float q) { return format::div_rn(1.0f, q); }

/// One master value as stored: fp8(x * q) rounded to nearest even and
/// saturated; a non-finite x is the format's NaN, or e5m2's signed infinity.
template <class F8>
FLASHOPTIM_HOST_DEVICE FLASHOPTIM_INLINE F8 fp8_encode_scaled(float x, float q) {
  using P = fp8_param_format<F8>;
  const std::uint32_t u = format::bits_of(x);
  if ((u & 0x7f800000u) == 0x7f800000u) {
    if ((u & 0x7fffffffu) > 0x7f800000u || !P::has_inf) return F8{P::nan_bits};
    return F8{static_cast<std::uint8_t>(P::inf_bits | ((u >> 24) & 0x80u))};
  }
  return format::from_float<F8>(format::mul_rn(x, q));
}

/// The weight a stored value stands for: float(value) * scale.
template <class F8>
FLASHOPTIM_HOST_DEVICE FLASHOPTIM_INLINE float fp8_decode_scaled(F8 v, float scale) {
  return format::mul_rn(format::to_float(v), scale);
}

// ---- One tensor's buffers

/// The master the step keeps (Master::param_type / aux_type, any master
/// mode, read only) and the FP8 copy written from it: shape.size values,
/// shape.scale_count() scales.
template <class Master, class F8>
struct fp8_param_ref {
  static_assert(codec::is_master_mode<Master>::value, "Master must be a codec master-weight mode");
  static_assert(std::is_same<F8, fp8_e4m3>::value || std::is_same<F8, fp8_e5m2>::value,
                "FP8 parameters are fp8_e4m3 or fp8_e5m2");
  using master_mode = Master;
  using param_type = typename Master::param_type;
  using aux_type = typename Master::aux_type;
  using value_type = F8;

  const param_type* master = nullptr;
  const aux_type* aux = nullptr;  ///< null when the mode has none
  F8* values = nullptr;
  float* scales = nullptr;
  fp8_block_shape shape{};

  FLASHOPTIM_HOST_DEVICE FLASHOPTIM_INLINE float master_at(std::int64_t i) const {
    aux_type a{};
    if constexpr (storage_bytes<aux_type> != 0) a = aux[i];
    return Master::decode(master[i], a);
  }
};

/// Options of the write.
struct fp8_param_options {
  /// Power-of-two quantization factors (exact dequantization factors).
  bool pow2_scales = false;
};

/// Writes block (br, bc) of t: the amax of its finite master values, the
/// factor, the values and the scale. The reference every path equals.
template <class Master, class F8>
FLASHOPTIM_HOST_DEVICE inline void fp8_write_block(const fp8_param_ref<Master, F8>& t, std::int64_t br,
                                                   std::int64_t bc, bool pow2) {
  const fp8_block_shape& s = t.shape;
  const std::int64_t r0 = br * s.block_rows, c0 = bc * fp8_block_cols;
  const std::int64_t r1 = r0 + s.block_rows < s.rows ? r0 + s.block_rows : s.rows;
  const std::int64_t c1 = c0 + fp8_block_cols < s.cols ? c0 + fp8_block_cols : s.cols;
  std::uint32_t amax = 0;
  for (std::int64_t r = r0; r < r1; ++r)
    for (std::int64_t c = c0; c < c1; ++c) {
      const std::int64_t i = r * s.cols + c;
      if (i < s.size) amax = fp8_amax_add(amax, t.master_at(i));
    }
  const float q = fp8_quant_factor<F8>(amax, pow2);
  for (std::int64_t r = r0; r < r1; ++r)
    for (std::int64_t c = c0; c < c1; ++c) {
      const std::int64_t i = r * s.cols + c;
      if (i < s.size) t.values[i] = fp8_encode_scaled<F8>(t.master_at(i), q);
    }
  t.scales[br * s.scale_cols() + bc] = fp8_block_scale(q);
}

/// Checks one tensor: its shape, null pointers, alignment, and that neither
/// written buffer (values, scales) overlaps another buffer of the tensor.
template <class Master, class F8>
status validate_fp8_param(std::size_t index, const fp8_param_ref<Master, F8>& t) {
  FLASHOPTIM_RETURN_IF_ERROR(validate_fp8_shape(index, t.shape));
  const std::int64_t n = t.shape.size;
  detail::buffer_span spans[4];
  FLASHOPTIM_RETURN_IF_ERROR(detail::check_buffer(index, "master", t.master, n, spans[0], false));
  FLASHOPTIM_RETURN_IF_ERROR(detail::check_buffer(index, "correction", t.aux, n, spans[1], false));
  FLASHOPTIM_RETURN_IF_ERROR(detail::check_buffer(index, "fp8 values", t.values, n, spans[2], true));
  FLASHOPTIM_RETURN_IF_ERROR(detail::check_buffer(index, "fp8 scales", t.scales, t.shape.scale_count(), spans[3], true));
  for (int i = 0; i < 4; ++i)
    for (int j = i + 1; j < 4; ++j) {
      const auto& a = spans[i];
      const auto& b = spans[j];
      if (a.begin == a.end || b.begin == b.end || !(a.written || b.written)) continue;
      if (a.begin < b.end && b.begin < a.end)
        return status(status_code::aliasing, "tensor %zu: %s and %s overlap", index, a.name, b.name);
    }
  return status();
}

/// Checks every tensor, then that no written buffer overlaps any buffer of
/// the list (sorted sweep, as validate_tensor_list).
template <class Master, class F8>
status validate_fp8_param_list(const fp8_param_ref<Master, F8>* tensors, std::size_t count) {
  if (count > 0 && tensors == nullptr) return status(status_code::null_pointer, "fp8 tensor list is null");
  std::vector<detail::list_span> spans;
  spans.reserve(count * 4);
  for (std::size_t i = 0; i < count; ++i) {
    const auto& t = tensors[i];
    FLASHOPTIM_RETURN_IF_ERROR(validate_fp8_param(i, t));
    detail::buffer_span b[4];
    (void)detail::check_buffer(i, "master", t.master, t.shape.size, b[0], false);
    (void)detail::check_buffer(i, "correction", t.aux, t.shape.size, b[1], false);
    (void)detail::check_buffer(i, "fp8 values", t.values, t.shape.size, b[2], true);
    (void)detail::check_buffer(i, "fp8 scales", t.scales, t.shape.scale_count(), b[3], true);
    for (const auto& x : b)
      if (x.begin != x.end) spans.push_back({x.begin, x.end, i, x.name, x.written});
  }
  return detail::check_list_overlaps(spans);
}

/// Bytes of the FP8 copy of a tensor (values + scales): what the memory
/// table adds to the master and states, and what an all-gather moves.
inline std::int64_t fp8_param_bytes(const fp8_block_shape& s) { return s.size + 4 * s.scale_count(); }

}  // namespace flashoptim
