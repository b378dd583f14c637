// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// FP8 parameters with block scales on the CPU (docs/fp8-params.md): the
// serial write equals the fp64 model of the recipe byte for byte (values and
// scales; e4m3 and e5m2; 1-D, 1 x 128 and 128 x 128 blocks on shapes that
// are not multiples of 128; every master mode kind; plain and power-of-two
// scales); the threaded write equals the serial one at every thread count;
// every finite weight is within the format's precision of its block's amax;
// zero and non-finite blocks as documented; block-aligned shards; bad input
// refused with nothing written.
#include <doctest/doctest.h>

#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "common/fp8_param_cases.hpp"
#include "common/typed_tensor.hpp"
#include "flashoptim/cpu/fp8_param.hpp"
#include "flashoptim/flashoptim.hpp"
#include "flashoptim/layout/fp8_shard.hpp"

using namespace flashoptim;

namespace {

template <class Master, class F8>
struct fp8_buffers {
  fp8_model::master_tensor<Master> m;
  std::vector<F8> values;
  std::vector<float> scales;
  fp8_block_shape shape;
  fp8_buffers(const fp8_block_shape& s, const std::vector<float>& x)
      : m(x), values(static_cast<std::size_t>(s.size), F8{0xA5}), scales(static_cast<std::size_t>(s.scale_count()), -7.0f),
        shape(s) {}
  fp8_param_ref<Master, F8> ref() {
    fp8_param_ref<Master, F8> r;
    r.master = m.param.data();
    if constexpr (storage_bytes<typename Master::aux_type> != 0) r.aux = m.aux.data();
    r.values = values.data();
    r.scales = scales.data();
    r.shape = shape;
    return r;
  }
};

template <class F8>
std::vector<std::uint8_t> bytes_of(const std::vector<F8>& v) {
  std::vector<std::uint8_t> b(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) b[i] = v[i].bits;
  return b;
}

template <class Master, class F8>
void check_against_model(bool non_finite, bool pow2) {
  std::uint64_t seed = 11;
  for (const auto& s : fp8_model::shapes()) {
    CAPTURE(fp8_model::describe(s));
    CAPTURE(pow2);
    const auto x = fp8_model::values(s, ++seed, non_finite);
    fp8_buffers<Master, F8> b(s, x);
    auto r = b.ref();
    fp8_param_options o;
    o.pow2_scales = pow2;
    REQUIRE(cpu::fp8_param_write_serial(&r, 1, o).ok());
    const auto model = fp8_model::write<F8>(s, b.m.decoded, pow2);
    const auto got = bytes_of(b.values);
    std::int64_t value_diffs = 0, scale_diffs = 0;
    for (std::size_t i = 0; i < got.size(); ++i) value_diffs += got[i] != model.values[i];
    for (std::size_t i = 0; i < model.scales.size(); ++i)
      scale_diffs += fp8_model::bits(b.scales[i]) != fp8_model::bits(model.scales[i]);
    CHECK(value_diffs == 0);
    CHECK(scale_diffs == 0);

    // the threaded write: the same bytes at every thread count
    for (int threads : {1, 2, 3, 7}) {
      fp8_buffers<Master, F8> t(s, x);
      auto tr = t.ref();
      REQUIRE(cpu::fp8_param_write(&tr, 1, o, threads).ok());
      CHECK(bytes_of(t.values) == got);
      CHECK(std::memcmp(t.scales.data(), b.scales.data(), b.scales.size() * sizeof(float)) == 0);
    }
  }
}

}  // namespace

TEST_CASE_TEMPLATE("fp8 params: values and scales equal the fp64 model; threads change nothing", Master,
                   codec::native<float>, codec::ulp_correction<bf16, std::int8_t>, codec::rounded_split,
                   codec::exact_split) {
  for (bool pow2 : {false, true}) {
    check_against_model<Master, fp8_e4m3>(false, pow2);
    check_against_model<Master, fp8_e5m2>(false, pow2);
  }
  check_against_model<Master, fp8_e4m3>(true, false);
  check_against_model<Master, fp8_e5m2>(true, true);
}

TEST_CASE_TEMPLATE("fp8 params: every finite weight within the format's precision of its block's amax", F8, fp8_e4m3,
                   fp8_e5m2) {
  const int mant = std::is_same<F8, fp8_e4m3>::value ? 3 : 2;
  std::uint64_t seed = 99;
  for (bool pow2 : {false, true})
    for (const auto& s : fp8_model::shapes()) {
      CAPTURE(fp8_model::describe(s));
      const auto x = fp8_model::values(s, ++seed, true);
      fp8_buffers<codec::native<float>, F8> b(s, x);
      auto r = b.ref();
      fp8_param_options o;
      o.pow2_scales = pow2;
      REQUIRE(cpu::fp8_param_write(&r, 1, o).ok());
      for (std::int64_t br = 0; br < s.scale_rows(); ++br)
        for (std::int64_t bc = 0; bc < s.scale_cols(); ++bc) {
          double amax = 0;
          std::vector<std::int64_t> idx;
          for (std::int64_t row = br * s.block_rows; row < std::min<std::int64_t>(s.rows, (br + 1) * s.block_rows); ++row)
            for (std::int64_t c = bc * 128; c < std::min<std::int64_t>(s.cols, (bc + 1) * 128); ++c)
              if (row * s.cols + c < s.size) idx.push_back(row * s.cols + c);
          for (auto i : idx)
            if (std::isfinite(x[i])) amax = std::max(amax, std::fabs(static_cast<double>(x[i])));
          const float scale = b.scales[br * s.scale_cols() + bc];
          int e = 0;
          if (pow2) CHECK(std::frexp(scale, &e) == 0.5f);  // a power of two
          // subnormal amax, and amax near FLT_MAX (a value rounding up to the
          // next binade dequantizes past FLT_MAX): docs/fp8-params.md
          if (amax < FLT_MIN || amax > FLT_MAX / 2) continue;
          const double bound = amax * (std::ldexp(1.0, -(mant + 1)) + std::ldexp(1.0, -18));
          for (auto i : idx) {
            if (!std::isfinite(x[i])) continue;
            const double w = fp8_decode_scaled(b.values[i], scale);
            if (!(std::fabs(w - x[i]) <= bound)) {
              CAPTURE(i);
              CAPTURE(x[i]);
              CAPTURE(w);
              CAPTURE(amax);
              CAPTURE(scale);
              CAPTURE(int(b.values[i].bits));
              CAPTURE(pow2);
              FAIL("weight off by more than the format's precision at the block's amax");
            }
          }
        }
    }
}

TEST_CASE("fp8 params: zero blocks, non-finite elements, the largest and the tiniest amax") {
  // 1-D, three blocks: zeros (signed), a block with NaN / +inf / -inf among
  // finite values, a block of non-finite values only
  std::vector<float> x(3 * 128, 0.0f);
  for (int i = 0; i < 128; i += 2) x[i] = -0.0f;
  for (int i = 128; i < 256; ++i) x[i] = 0.01f * static_cast<float>(i - 192);
  x[130] = std::numeric_limits<float>::quiet_NaN();
  x[131] = std::numeric_limits<float>::infinity();
  x[132] = -std::numeric_limits<float>::infinity();
  x[133] = -2.0f;  // the infs left out, amax = 2 (not inf)
  for (int i = 256; i < 384; ++i)
    x[i] = i % 2 ? std::numeric_limits<float>::infinity() : std::numeric_limits<float>::quiet_NaN();
  const auto s = fp8_shape_1d(384);
  {
    fp8_buffers<codec::native<float>, fp8_e4m3> b(s, x);
    auto r = b.ref();
    REQUIRE(cpu::fp8_param_write_serial(&r, 1).ok());
    CHECK(b.scales[0] == 1.0f);
    for (int i = 0; i < 128; ++i) CHECK(b.values[i].bits == (i % 2 ? 0x00 : 0x80));
    CHECK(b.scales[1] == 2.0f / 448.0f);  // amax 2 (|x| <= 0.63 elsewhere)
    CHECK(b.values[130].bits == 0x7f);
    CHECK(b.values[131].bits == 0x7f);  // e4m3 has no infinity: NaN, never a saturated 448
    CHECK(b.values[132].bits == 0x7f);
    CHECK(b.values[133].bits == 0xfe);  // -448
    CHECK(b.scales[2] == 1.0f);
    for (int i = 256; i < 384; ++i) CHECK(b.values[i].bits == 0x7f);
  }
  {
    fp8_buffers<codec::native<float>, fp8_e5m2> b(s, x);
    auto r = b.ref();
    REQUIRE(cpu::fp8_param_write_serial(&r, 1).ok());
    CHECK(b.values[130].bits == 0x7f);
    CHECK(b.values[131].bits == 0x7c);
    CHECK(b.values[132].bits == 0xfc);
    CHECK(b.values[133].bits == 0xfb);  // -57344
    for (int i = 256; i < 384; ++i) CHECK(b.values[i].bits == (i % 2 ? 0x7c : 0x7f));
  }
  {
    // amax FLT_MAX: q = 448 / FLT_MAX, a normal float; amax the smallest
    // subnormal: the quotient overflows, q = FLT_MAX (2^127 with pow2)
    std::vector<float> y(256, 0.0f);
    y[0] = FLT_MAX;
    y[1] = -FLT_MAX / 2;
    y[128] = std::numeric_limits<float>::denorm_min();
    for (bool pow2 : {false, true}) {
      fp8_buffers<codec::native<float>, fp8_e4m3> b(fp8_shape_1d(256), y);
      auto r = b.ref();
      fp8_param_options o;
      o.pow2_scales = pow2;
      REQUIRE(cpu::fp8_param_write_serial(&r, 1, o).ok());
      CHECK(b.values[0].bits == (pow2 ? 0x78 : 0x7e));  // 448, or 256 (q = 2^-120 below 448/FLT_MAX)
      CHECK(std::isfinite(b.scales[0]));
      const float q = pow2 ? std::ldexp(1.0f, 127) : FLT_MAX;
      CHECK(fp8_model::bits(b.scales[1]) == fp8_model::bits(static_cast<float>(1.0 / q)));
      CHECK(b.scales[1] > 0.0f);
      CHECK(b.scales[1] < FLT_MIN);  // a subnormal scale, written with IEEE denormals
    }
  }
}

TEST_CASE("fp8 params: a block-aligned shard is a tensor of the same form") {
  for (auto s : {fp8_shape_2d(300, 200, fp8_block_kind::tile_128x128), fp8_shape_2d(300, 200, fp8_block_kind::row_1x128),
                 fp8_shape_1d(1000)}) {
    CAPTURE(fp8_model::describe(s));
    const auto x = fp8_model::values(s, 5, true);
    fp8_buffers<codec::native<float>, fp8_e4m3> whole(s, x);
    auto r = whole.ref();
    REQUIRE(cpu::fp8_param_write(&r, 1).ok());
    const std::int64_t a = fp8_shard_alignment(s);
    CHECK(fp8_shard_aligned(s, a, s.size));
    CHECK(!fp8_shard_aligned(s, a + 1, s.size));
    CHECK(!fp8_shard_aligned(s, 0, a - 1));
    // the second shard: rows from one block-row on, scales a slice
    fp8_block_shape tail = s;
    tail.rows = s.rows - a / s.cols;
    tail.size = s.size - a;
    REQUIRE(validate_fp8_shape(0, tail).ok());
    std::vector<float> xt(x.begin() + a, x.end());
    fp8_buffers<codec::native<float>, fp8_e4m3> part(tail, xt);
    auto pr = part.ref();
    REQUIRE(cpu::fp8_param_write(&pr, 1).ok());
    const std::int64_t scale_skip = s.scale_count() - tail.scale_count();
    for (std::int64_t i = 0; i < tail.size; ++i) CHECK(part.values[i].bits == whole.values[a + i].bits);
    for (std::int64_t i = 0; i < tail.scale_count(); ++i)
      CHECK(fp8_model::bits(part.scales[i]) == fp8_model::bits(whole.scales[scale_skip + i]));
  }
}

TEST_CASE("fp8 params: a list of tensors in one call, as each alone") {
  const auto shapes = fp8_model::shapes();
  std::vector<fp8_buffers<codec::ulp_correction<bf16, std::int8_t>, fp8_e4m3>> list, alone;
  for (std::size_t k = 0; k < shapes.size(); ++k) {
    const auto x = fp8_model::values(shapes[k], 1000 + k, true);
    list.emplace_back(shapes[k], x);
    alone.emplace_back(shapes[k], x);
  }
  std::vector<fp8_param_ref<codec::ulp_correction<bf16, std::int8_t>, fp8_e4m3>> refs;
  for (auto& b : list) refs.push_back(b.ref());
  REQUIRE(cpu::fp8_param_write(refs.data(), refs.size(), {}, 3).ok());
  for (std::size_t k = 0; k < shapes.size(); ++k) {
    auto r = alone[k].ref();
    REQUIRE(cpu::fp8_param_write_serial(&r, 1).ok());
    CHECK(bytes_of(alone[k].values) == bytes_of(list[k].values));
    CHECK(std::memcmp(alone[k].scales.data(), list[k].scales.data(), list[k].scales.size() * 4) == 0);
  }
}

TEST_CASE("fp8 params: bad input is refused and nothing is written") {
  const auto s = fp8_shape_2d(130, 129, fp8_block_kind::tile_128x128);
  const auto x = fp8_model::values(s, 3, false);
  fp8_buffers<codec::native<float>, fp8_e4m3> b(s, x);
  auto untouched = [&] {
    for (const auto& v : b.values)
      if (v.bits != 0xA5) return false;
    for (float f : b.scales)
      if (f != -7.0f) return false;
    return true;
  };
  auto expect = [&](fp8_param_ref<codec::native<float>, fp8_e4m3> r, status_code code) {
    const status st1 = cpu::fp8_param_write_serial(&r, 1);
    const status st2 = cpu::fp8_param_write(&r, 1, {}, 2);
    CHECK(st1.code() == code);
    CHECK(st2.code() == code);
    CHECK(std::strlen(st1.message()) > 0);
    CHECK(untouched());
  };
  {
    auto r = b.ref();
    r.shape.block_rows = 64;
    expect(r, status_code::invalid_argument);
  }
  {
    auto r = b.ref();
    r.shape.cols = 128;  // 130 x 128 != 16770
    expect(r, status_code::size_mismatch);
  }
  {
    auto r = b.ref();
    r.shape = fp8_shape_2d(std::int64_t{1} << 40, std::int64_t{1} << 40, fp8_block_kind::tile_128x128);
    expect(r, status_code::invalid_argument);
  }
  {
    auto r = b.ref();
    r.shape.block_rows = 128;
    r.shape.cols = 128;
    r.shape.rows = (s.size + 127) / 128;  // the 1-D form is 1 x 128 only
    expect(r, status_code::size_mismatch);
  }
  {
    auto r = b.ref();
    r.scales = nullptr;
    expect(r, status_code::null_pointer);
  }
  {
    auto r = b.ref();
    r.scales = reinterpret_cast<float*>(reinterpret_cast<char*>(b.scales.data()) + 1);
    expect(r, status_code::misaligned);
  }
  {
    auto r = b.ref();
    r.scales = reinterpret_cast<float*>(b.values.data() + 4);  // overlaps the values
    expect(r, status_code::aliasing);
  }
  {
    // a list whose second tensor writes into the first's master
    std::vector<float> other(b.m.param.size());
    auto r1 = b.ref();
    r1.master = other.data();
    r1.values = reinterpret_cast<fp8_e4m3*>(b.m.param.data());
    std::vector<float> other_scales(b.scales.size());
    r1.scales = other_scales.data();
    fp8_param_ref<codec::native<float>, fp8_e4m3> list[] = {b.ref(), r1};
    CHECK(cpu::fp8_param_write(list, 2).code() == status_code::aliasing);
    CHECK(untouched());
  }
  CHECK(cpu::fp8_param_write(static_cast<const fp8_param_ref<codec::native<float>, fp8_e4m3>*>(nullptr), 1).code() ==
        status_code::null_pointer);
  {
    auto r = b.ref();
    CHECK(cpu::fp8_param_write(&r, 1, {}, -1).code() == status_code::invalid_argument);
    CHECK(untouched());
  }
}

TEST_CASE("fp8 params: the memory table counts master, FP8 copy and states") {
  using cfg = step_config<rule::adamw, codec::ulp_correction<bf16, std::int8_t>, bf16, codec::defaults::momentum,
                          codec::defaults::second_moment>;
  using B = layout::bytes<cfg>;
  using F = layout::fp8_weight_bytes<cfg>;
  static_assert(F::master_per_param == 3.0, "bf16 + int8 master");
  CHECK(F::copy_per_param(16384) == 1.0 + 4.0 / 16384);
  CHECK(F::copy_per_param(128) == 1.03125);
  CHECK(F::resident_per_param(128) == 3.0 + 1.03125 + 2.0 + B::states::per_element);
  CHECK(F::resident_per_param(128, false) == 3.0 + 1.03125 + B::states::per_element);
  CHECK(F::moved_per_param(16384) == B::moved_per_param + 3.0 + 1.0 + 4.0 / 16384);
  // the copy of a tensor: values + scales
  CHECK(fp8_param_bytes(fp8_shape_2d(300, 200, fp8_block_kind::tile_128x128)) == 60000 + 4 * 3 * 2);
  CHECK(fp8_param_bytes(fp8_shape_1d(129)) == 129 + 4 * 2);
}

TEST_CASE_TEMPLATE("fp8 params: after a step, the FP8 copy is the recipe on the new master; a skipped step moves "
                   "no byte",
                   Master, codec::native<float>, codec::ulp_correction<bf16, std::int8_t>, codec::rounded_split) {
  using cfg = step_config<rule::adamw, Master, bf16, codec::defaults::momentum, codec::defaults::second_moment>;
  const auto s = fp8_shape_2d(200, 300, fp8_block_kind::tile_128x128);
  testutil::typed_tensor<cfg> t(s.size);
  std::mt19937_64 rng(3);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  for (std::int64_t i = 0; i < s.size; ++i) {
    t.set_master(i, 0.02f * nd(rng) * (i % 300 < 128 ? 1.0f : 100.0f));  // blocks of two magnitudes
    t.set_grad(i, 1e-3f * nd(rng));
  }
  std::vector<fp8_e4m3> values(static_cast<std::size_t>(s.size));
  std::vector<float> scales(static_cast<std::size_t>(s.scale_count()));
  auto write = [&] {
    fp8_param_ref<Master, fp8_e4m3> r;
    r.master = t.param.data();
    if constexpr (cfg::has_aux) r.aux = t.aux.data();
    r.values = values.data();
    r.scales = scales.data();
    r.shape = s;
    REQUIRE(cpu::fp8_param_write(&r, 1).ok());
  };
  typename cfg::hyper h;
  h.lr = 1e-2;
  h.weight_decay = 0.1;
  auto view = t.view(1);
  std::vector<std::uint8_t> first;
  for (std::int64_t step = 1; step <= 3; ++step) {
    step_args a;
    a.step = step;
    REQUIRE(cpu::step<cfg>(h, a, &view, 1).ok());
    write();
    std::vector<float> m(static_cast<std::size_t>(s.size));
    for (std::int64_t i = 0; i < s.size; ++i) m[i] = t.master(i);
    const auto model = fp8_model::write<fp8_e4m3>(s, m, false);
    CHECK(bytes_of(values) == model.values);
    CHECK(std::memcmp(scales.data(), model.scales.data(), scales.size() * 4) == 0);
    if (step == 1) first = bytes_of(values);
  }
  CHECK(bytes_of(values) != first);  // the steps moved FP8 weights
  const auto before = bytes_of(values);
  const auto before_scales = scales;
  step_args skipped;
  skipped.step = 4;
  skipped.skip = true;
  REQUIRE(cpu::step<cfg>(h, skipped, &view, 1).ok());
  write();
  CHECK(bytes_of(values) == before);
  CHECK(std::memcmp(scales.data(), before_scales.data(), scales.size() * 4) == 0);
}

TEST_CASE("fp8 params: shard plans whose blocks do not cross ranks") {
  const auto shapes = fp8_model::shapes();
  std::vector<std::vector<float>> xs;
  std::vector<fp8_buffers<codec::native<float>, fp8_e4m3>> whole;
  for (std::size_t k = 0; k < shapes.size(); ++k) {
    xs.push_back(fp8_model::values(shapes[k], 77 + k, true));
    whole.emplace_back(shapes[k], xs.back());
    auto r = whole.back().ref();
    REQUIRE(cpu::fp8_param_write(&r, 1).ok());
  }
  for (int ranks : {1, 2, 3, 8, 64}) {
    CAPTURE(ranks);
    layout::shard_plan plan;
    REQUIRE(layout::fp8_packed_plan(shapes.data(), shapes.size(), ranks, plan).ok());
    CHECK(plan.group_aligned());
    CHECK(plan.total_elements() == [&] {
      std::int64_t t = 0;
      for (const auto& s : shapes) t += s.size;
      return t;
    }());
    std::int64_t largest = 0;
    for (int r = 0; r < ranks; ++r) largest = std::max(largest, plan.shard_size(r));
    if (ranks == 2) CHECK(largest < plan.total_elements() * 3 / 4);  // the cuts still balance
    for (const auto& p : plan.all_pieces()) {
      const auto& s = shapes[p.tensor];
      CAPTURE(fp8_model::describe(s));
      CAPTURE(p.begin);
      CAPTURE(p.end);
      REQUIRE(fp8_shard_aligned(s, p.begin, p.end));
      // the piece written as its own tensor: the slice of the whole write
      const auto ps = fp8_shard_shape(s, p.begin, p.end);
      REQUIRE(validate_fp8_shape(0, ps).ok());
      std::vector<float> xp(xs[p.tensor].begin() + p.begin, xs[p.tensor].begin() + p.end);
      fp8_buffers<codec::native<float>, fp8_e4m3> part(ps, xp);
      auto pr = part.ref();
      REQUIRE(cpu::fp8_param_write(&pr, 1).ok());
      const auto& w = whole[p.tensor];
      const std::int64_t so = fp8_shard_scale_offset(s, p.begin);
      REQUIRE(so + ps.scale_count() <= s.scale_count());
      bool same = true;
      for (std::int64_t i = 0; i < ps.size; ++i) same = same && part.values[i].bits == w.values[p.begin + i].bits;
      for (std::int64_t i = 0; i < ps.scale_count(); ++i)
        same = same && fp8_model::bits(part.scales[i]) == fp8_model::bits(w.scales[so + i]);
      CHECK(same);
    }
  }
  layout::shard_plan plan;
  CHECK(layout::fp8_packed_plan(shapes.data(), shapes.size(), 0, plan).code() == status_code::invalid_argument);
  fp8_block_shape bad = shapes[0];
  bad.block_rows = 3;
  CHECK(layout::fp8_packed_plan(&bad, 1, 2, plan).code() == status_code::invalid_argument);
}
