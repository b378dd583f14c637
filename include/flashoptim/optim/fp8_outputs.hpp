// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// FP8 copies written by the owning optimizers (docs/fp8-params.md, "In the
// owning optimizers"): a trainer whose model holds FP8 weights with block
// scales gives cpu::optimizer or device::optimizer one fp8_output per
// tensor, and after every step (and after a checkpoint load) the optimizer
// writes each tensor's FP8 values and scales from the master it keeps, with
// the recipe of format/fp8_blocks.hpp: the bytes of cpu::fp8_param_write on
// the stepped master. This header holds what both optimizers share: the
// output description, the form recorded in checkpoints, and the checks that
// turn outputs into fp8_param_ref lists.
#pragma once

#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "flashoptim/format/fp8_blocks.hpp"
#include "flashoptim/optim/params.hpp"
#include "flashoptim/rule/tensor.hpp"
#include "flashoptim/status.hpp"

namespace flashoptim::optim {

/// Where the optimizer writes tensor i's FP8 copy: caller-owned buffers in
/// the optimizer's memory space (host for cpu::optimizer, device for
/// device::optimizer). Null values and scales: the tensor has no copy.
template <class F8>
struct fp8_output {
  F8* values = nullptr;     ///< the tensor's size elements, its order
  float* scales = nullptr;  ///< fp8_block_shape::scale_count() fp32 scales
  /// 1 x 128 along rows (a 1-D tensor: 128 consecutive elements), or
  /// 128 x 128, which needs the tensor's 2-D shape (param_spec rows, cols).
  fp8_block_kind blocks = fp8_block_kind::row_1x128;
};

template <class F8>
inline const char* fp8_format_name() {
  return std::is_same<F8, fp8_e4m3>::value ? "e4m3" : "e5m2";
}

/// The FP8 form an optimizer writes, as checkpoints record it (metadata
/// "fp8_params", docs/io.md): the format, the scale option, and per tensor
/// its block kind (0: no copy, 1: 1 x 128, 128: 128 x 128) and the shape the
/// blocks tile (a 1-D tensor: 1 row of its size; no copy: 0 x 0).
struct fp8_form {
  std::string format;  ///< "e4m3" or "e5m2"; empty: the optimizer writes no FP8 copy
  bool pow2_scales = false;
  std::vector<std::int32_t> blocks;
  std::vector<std::int64_t> rows, cols;

  bool empty() const { return format.empty(); }
  /// One line of JSON: {"format":"e4m3","pow2_scales":false,"blocks":[1,0,128],"rows":[..],"cols":[..]}.
  std::string json() const {
    auto list = [](const auto& v) {
      std::string s = "[";
      for (std::size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
      return s + "]";
    };
    return "{\"format\":\"" + format + "\",\"pow2_scales\":" + (pow2_scales ? "true" : "false") +
           ",\"blocks\":" + list(blocks) + ",\"rows\":" + list(rows) + ",\"cols\":" + list(cols) + "}";
  }
};

/// Turns `count` outputs (one per tensor, the optimizer's order) into the
/// fp8_param_ref list of the tensors that have a copy (`index` maps each
/// ref back to its tensor) and the form. Refuses, naming the tensor: a
/// count other than the tensor count, one of values / scales null without
/// the other, a block kind that is neither, 128 x 128 blocks on a tensor
/// without a 2-D shape, misaligned or overlapping buffers, an FP8 buffer
/// over any buffer the optimizer reads or writes (`others`: parameters,
/// corrections, states, gradients). Writes nothing.
template <class Config, class F8>
status build_fp8_refs(const std::vector<tensor_ref<Config>>& tensors, const std::vector<param_spec>& specs,
                      const std::vector<std::string>& names, const fp8_output<F8>* outputs, std::size_t count,
                      bool pow2_scales, std::vector<fp8_param_ref<typename Config::master, F8>>& refs,
                      std::vector<std::size_t>& index, fp8_form& form) {
  using ref = fp8_param_ref<typename Config::master, F8>;
  if (count != tensors.size())
    return status(status_code::size_mismatch, "fp8 outputs: %zu given for %zu tensors (one per tensor, null for none)",
                  count, tensors.size());
  if (count > 0 && outputs == nullptr) return status(status_code::null_pointer, "fp8 outputs: the list is null");
  std::vector<ref> r;
  std::vector<std::size_t> ix;
  fp8_form f;
  f.format = fp8_format_name<F8>();
  f.pow2_scales = pow2_scales;
  f.blocks.assign(count, 0);
  f.rows.assign(count, 0);
  f.cols.assign(count, 0);
  std::vector<::flashoptim::detail::list_span> spans;
  for (std::size_t i = 0; i < count; ++i) {
    const fp8_output<F8>& o = outputs[i];
    const tensor_ref<Config>& t = tensors[i];
    if (o.values == nullptr && o.scales == nullptr) continue;
    if (o.values == nullptr || o.scales == nullptr)
      return status(status_code::null_pointer, "fp8 outputs: tensor %zu ('%.80s'): %s is null but %s is not", i,
                    names[i].c_str(), o.values == nullptr ? "values" : "scales",
                    o.values == nullptr ? "scales" : "values");
    if (o.blocks != fp8_block_kind::row_1x128 && o.blocks != fp8_block_kind::tile_128x128)
      return status(status_code::invalid_argument, "fp8 outputs: tensor %zu ('%.80s'): block kind %d is neither 1 (1 x 128) nor 128 (128 x 128)",
                    i, names[i].c_str(), static_cast<int>(o.blocks));
    const param_spec& s = specs[i];
    const bool two_d = s.rows > 0 || s.cols > 0;
    if (o.blocks == fp8_block_kind::tile_128x128 && !two_d)
      return status(status_code::invalid_argument,
                    "fp8 outputs: tensor %zu ('%.80s') has 128 x 128 blocks but no 2-D shape (param_spec rows, cols)", i,
                    names[i].c_str());
    ref x;
    x.master = t.param;
    if constexpr (storage_bytes<typename Config::aux_type> != 0) x.aux = t.aux;
    x.values = o.values;
    x.scales = o.scales;
    x.shape = two_d ? fp8_shape_2d(s.rows, s.cols, o.blocks) : fp8_shape_1d(t.size);
    f.blocks[i] = static_cast<std::int32_t>(o.blocks);
    // 1-D: one row of `size` (the same blocks: 128 consecutive elements)
    f.rows[i] = two_d ? s.rows : 1;
    f.cols[i] = two_d ? s.cols : t.size;
    r.push_back(x);
    ix.push_back(i);
  }
  // each copy's own checks (shape, null, alignment, values / scales over its master)
  for (std::size_t k = 0; k < r.size(); ++k) {
    const status v = validate_fp8_param(ix[k], r[k]);
    if (!v.ok()) return status(v.code(), "fp8 outputs ('%.80s'): %s", names[ix[k]].c_str(), v.message());
  }
  // ...and every written FP8 buffer against every buffer of every tensor
  for (std::size_t k = 0; k < r.size(); ++k) {
    spans.push_back({reinterpret_cast<std::uintptr_t>(r[k].values),
                     reinterpret_cast<std::uintptr_t>(r[k].values) + static_cast<std::size_t>(r[k].shape.size),
                     ix[k], "fp8 values", true});
    spans.push_back({reinterpret_cast<std::uintptr_t>(r[k].scales),
                     reinterpret_cast<std::uintptr_t>(r[k].scales) +
                         static_cast<std::size_t>(r[k].shape.scale_count()) * sizeof(float),
                     ix[k], "fp8 scales", true});
  }
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    const tensor_ref<Config>& t = tensors[i];
    if (t.size == 0) continue;
    auto add = [&](const void* p, std::size_t bytes, const char* what) {
      if (p != nullptr && bytes > 0)
        spans.push_back({reinterpret_cast<std::uintptr_t>(p), reinterpret_cast<std::uintptr_t>(p) + bytes, i, what, false});
    };
    const auto n = static_cast<std::size_t>(t.size);
    add(t.param, n * sizeof(typename Config::param_type), "param");
    add(t.grad, n * sizeof(typename Config::grad_type), "grad");
    add(t.aux, n * storage_bytes<typename Config::aux_type>, "correction");
    for_each_slot<Config::num_slots>([&](auto sl) {
      constexpr int I = decltype(sl)::value;
      using S = typename Config::template state<I>;
      const auto& st = slot_at<I>(t.states);
      add(st.codes, n * storage_bytes<typename S::code_type>, slot_code_name(I));
      add(st.scales, static_cast<std::size_t>(codec::scale_count<S>(t.size)) * storage_bytes<typename S::scale_type>,
          slot_scale_name(I));
    });
  }
  const status o = ::flashoptim::detail::check_list_overlaps(spans);
  if (!o.ok()) return status(o.code(), "fp8 outputs: %s", o.message());
  refs = std::move(r);
  index = std::move(ix);
  form = std::move(f);
  return status();
}

}  // namespace flashoptim::optim
