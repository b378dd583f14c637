// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// The checks device::fp8_step_plan runs on the FP8 outputs of the fused
// step before it touches the device (device/fp8_step_outputs.hpp): plain
// C++ on host buffers, so they run without a GPU. Accepted: the 1-D form,
// 1 x 128 rows of a multiple of 128 columns, tensors without a copy, empty
// tensors. Refused with a status naming the problem: 128 x 128 blocks
// (their amax spans 128 rows: the second pass's), rows of other widths, a
// shape of another size, a missing buffer, misaligned scales, and a
// written FP8 buffer over any buffer of the list.
#include <doctest/doctest.h>

#include <cstring>
#include <string>
#include <vector>

#include "common/configs.hpp"
#include "flashoptim/device/fp8_step_outputs.hpp"

using namespace flashoptim;
using C = testconfigs::adamw_default;
using out = device::fp8_step_output<fp8_e4m3>;

namespace {
struct host_tensor {
  std::int64_t n;
  std::vector<bf16> param, grad;
  std::vector<std::int8_t> aux, code0;
  std::vector<std::uint8_t> code1;
  std::vector<float> scale0, scale1;
  std::vector<fp8_e4m3> values;
  std::vector<float> scales;
  explicit host_tensor(std::int64_t size)
      : n(size),
        param(n),
        grad(n),
        aux(n),
        code0(n),
        code1(n),
        scale0((n + 31) / 32),
        scale1((n + 31) / 32),
        values(n),
        scales((n + 127) / 128 + 1) {}
  tensor_ref<C> ref() {
    tensor_ref<C> r;
    r.param = param.data(), r.aux = aux.data(), r.grad = grad.data(), r.size = n;
    slot_at<0>(r.states).codes = code0.data(), slot_at<0>(r.states).scales = scale0.data();
    slot_at<1>(r.states).codes = code1.data(), slot_at<1>(r.states).scales = scale1.data();
    if (n == 0) r = tensor_ref<C>{};
    return r;
  }
  out output(const fp8_block_shape& s) { return out{values.data(), scales.data(), s}; }
};

struct list {
  std::vector<host_tensor> ts;
  std::vector<tensor_ref<C>> refs;
  std::vector<out> outs;
  explicit list(const std::vector<std::int64_t>& sizes) {
    ts.reserve(sizes.size());
    for (auto n : sizes) ts.emplace_back(n);
    for (auto& t : ts) {
      refs.push_back(t.ref());
      outs.push_back(t.output(fp8_shape_1d(t.n)));
    }
  }
  status check() const { return device::validate_fp8_step_outputs<C, fp8_e4m3>(refs.data(), outs.data(), refs.size()); }
};
}  // namespace

TEST_CASE("fused fp8 outputs: the forms the step writes are accepted") {
  list l({768, 1, 0, 129, 5000});
  REQUIRE(validate_tensor_list(l.refs.data(), l.refs.size()).ok());
  CHECK(l.check().ok());
  l.outs[0].shape = fp8_shape_2d(3, 256, fp8_block_kind::row_1x128);  // rows of 256: 1 x 128 blocks are 128 in a row
  l.outs[4] = out{};                                                    // no copy for this tensor
  CHECK(l.check().ok());
  CHECK(device::validate_fp8_step_outputs<C, fp8_e4m3>(nullptr, nullptr, 0).ok());
}

TEST_CASE("fused fp8 outputs: refused with a clear status") {
  auto code = [](auto&& edit) {
    list l({768, 300, 1000});
    edit(l);
    const status st = l.check();
    INFO(st.what());
    return st.code();
  };
  // 128 x 128 blocks: their amax spans 128 rows, written by the second pass.
  CHECK(code([](list& l) { l.outs[0].shape = fp8_shape_2d(3, 256, fp8_block_kind::tile_128x128); }) ==
        status_code::invalid_argument);
  {
    list l({768});
    l.outs[0].shape = fp8_shape_2d(3, 256, fp8_block_kind::tile_128x128);
    CHECK(std::string(l.check().what()).find("kernel::fp8_param_plan") != std::string::npos);
  }
  // Rows of a width that is not a multiple of 128.
  CHECK(code([](list& l) { l.outs[0].shape = fp8_shape_2d(4, 192, fp8_block_kind::row_1x128); }) ==
        status_code::invalid_argument);
  // A shape of another size than the tensor's, or not holding its size.
  CHECK(code([](list& l) { l.outs[1].shape = fp8_shape_1d(299); }) == status_code::size_mismatch);
  CHECK(code([](list& l) { l.outs[0].shape = fp8_block_shape{768, 5, 128, 1}; }) == status_code::size_mismatch);
  // One buffer without the other; no list.
  CHECK(code([](list& l) { l.outs[1].scales = nullptr; }) == status_code::null_pointer);
  CHECK(code([](list& l) { l.outs[2].values = nullptr; }) == status_code::null_pointer);
  {
    list l({768});
    CHECK(device::validate_fp8_step_outputs<C, fp8_e4m3>(l.refs.data(), nullptr, 1).code() ==
          status_code::null_pointer);
  }
  // Misaligned scales.
  CHECK(code([](list& l) {
          l.outs[1].scales = reinterpret_cast<float*>(reinterpret_cast<char*>(l.ts[1].scales.data()) + 1);
        }) == status_code::misaligned);
  // Written FP8 buffers over any buffer of the list: the tensor's own
  // parameters, another tensor's (read-only) gradient, another tensor's
  // state scales, another output's values.
  CHECK(code([](list& l) { l.outs[0].values = reinterpret_cast<fp8_e4m3*>(l.ts[0].param.data()); }) ==
        status_code::aliasing);
  CHECK(code([](list& l) { l.outs[0].values = reinterpret_cast<fp8_e4m3*>(l.ts[2].grad.data()); }) ==
        status_code::aliasing);
  CHECK(code([](list& l) { l.outs[1].scales = l.ts[2].scale1.data(); }) == status_code::aliasing);
  CHECK(code([](list& l) { l.outs[2].values = l.outs[0].values + 100; }) == status_code::aliasing);
  // Two tensors' outputs may not share scales either.
  CHECK(code([](list& l) { l.outs[2].scales = l.outs[1].scales; }) == status_code::aliasing);
}
