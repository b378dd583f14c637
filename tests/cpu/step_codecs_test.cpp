// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// docs/test-matrix.md C5 x C20 on the CPU paths, by state codec (fp8 codes and
// fp16 stochastic rounding included), and the edge values of those two at
// every lane position of a group.
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "common/configs.hpp"
#include "cpu/cpu_harness.hpp"

using namespace testconfigs;
using cpuharness::check_config;
using flashoptim::cpu::isa;

namespace {
template <class Config>
typename Config::hyper adamw_hyper() {
  typename Config::hyper h;
  h.lr = 1e-2;
  return h;
}
namespace c = flashoptim::codec;
using ulp8 = c::ulp_correction<bf16, std::int8_t>;
// scale formats and companders beyond the presets
using bf16_up_m = c::grouped<c::int8_code<true>, c::softsign, c::scale_rounded_up<bf16>, c::code_rounding::half_up>;
using fp16_up_v = c::grouped<c::uint8_code<true>, c::sqrt_compander, c::scale_rounded_up<fp16>,
                             c::code_rounding::half_up_nonzero>;
using rounded_up_scales = step_config<rule::adamw, ulp8, bf16, bf16_up_m, fp16_up_v>;
using identity_m = c::grouped<c::int8_code<false>, c::identity, c::scale_fp32, c::code_rounding::half_up_nonzero>;
using identity_u8 = c::grouped<c::uint8_code<false>, c::identity, c::scale_fp16_reference, c::code_rounding::stochastic>;
using identity_codes = step_config<rule::adamw, ulp8, bf16, identity_m, identity_u8>;
using sqrt_m = c::grouped<c::int8_code<true>, c::sqrt_compander, c::scale_fp32, c::code_rounding::half_up>;
using sgd_sqrt_state = step_config<rule::sgd, ulp8, bf16, sqrt_m>;
// fp8 beyond the presets: e5m2, stochastic codes, softsign
using e5m2_sr_m = c::grouped<c::fp8_code<flashoptim::fp8_e5m2>, c::softsign, c::scale_fp32, c::code_rounding::stochastic>;
using e4m3_sr_v = c::grouped<c::fp8_code<flashoptim::fp8_e4m3>, c::sqrt_compander, c::scale_fp32, c::code_rounding::stochastic>;
using fp8_e5m2_sr = step_config<rule::adamw, ulp8, bf16, e5m2_sr_m, e4m3_sr_v>;
}  // namespace

TEST_CASE("C5/C20: every state codec, every ISA and thread count equal step_serial") {
  check_config<adamw_reference>("adamw reference states", adamw_hyper<adamw_reference>());
  check_config<adamw_fp32_states>("adamw fp32 states", adamw_hyper<adamw_fp32_states>());
  check_config<adamw_bf16_states>("adamw bf16 states", adamw_hyper<adamw_bf16_states>());
  check_config<adamw_bf16_sr_states>("adamw bf16 sr states", adamw_hyper<adamw_bf16_sr_states>(), false);
  check_config<adamw_fp16_states>("adamw fp16 states", adamw_hyper<adamw_fp16_states>(), false);
  check_config<adamw_mixed_states>("adamw int8 m + bf16 sr v", adamw_hyper<adamw_mixed_states>(), false);
  check_config<adam_fp16_reference>("adam fp16 reference", adamw_hyper<adam_fp16_reference>(), false);
  check_config<adamw_sr_codes>("adamw stochastic codes", adamw_hyper<adamw_sr_codes>());
  check_config<rounded_up_scales>("adamw rounded-up 16-bit scales", adamw_hyper<rounded_up_scales>(), false);
  check_config<identity_codes>("adamw identity companders", adamw_hyper<identity_codes>(), false);
  rule::sgd::hyper s;
  s.lr = 1e-2;
  s.momentum = 0.9;
  check_config<sgd_sqrt_state>("sgd momentum through sqrt", s, false);
}

TEST_CASE("C5/C20: fp8 codes and fp16 stochastic rounding, every ISA and thread count equal step_serial") {
  static_assert(flashoptim::cpu::is_vectorized<adamw_fp8_states>, "fp8 codes take the vector paths");
  static_assert(flashoptim::cpu::is_vectorized<adamw_fp16_sr_states>, "fp16 stochastic rounding too");
  check_config<adamw_fp8_states>("adamw fp8 states", adamw_hyper<adamw_fp8_states>());
  check_config<adamw_fp16_sr_states>("adamw fp16 sr states", adamw_hyper<adamw_fp16_sr_states>());
  check_config<fp8_e5m2_sr>("adamw fp8 e5m2 stochastic codes", adamw_hyper<fp8_e5m2_sr>(), false);
  rule::sgdw::hyper w;
  w.lr = 1e-2;
  w.momentum = 0.9;
  check_config<sgdw_exact_fp8>("sgdw exact_split fp8", w, false);
}

namespace {
/// One lane of every group of 32 gets the edge values (fp32 subnormals,
/// signed zeros, NaN, infinities, fp16's subnormal and overflow boundaries as
/// gradients; subnormal, largest, sentinel and non-finite codes as states;
/// zero, subnormal and huge scales), the others ordinary values; the tensor
/// ends in a partial group. cpu::step on each instruction set must equal
/// step_serial after each of 3 steps, for the lane at every position.
template <class Config>
void check_lane_edges(const char* name) {
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  const float grad_edges[] = {1e-40f, -1e-45f, 0.0f, -0.0f, nan, inf, -inf, 3e38f, 1e-30f, 5.9604645e-8f, 2.9802322e-8f,
                              -6.1e-5f, 65504.0f, 65520.0f, 1e-3f, -0.5f};
  const std::uint16_t half_edges[] = {0x0001, 0x8001, 0x03ff, 0x0400, 0x7bff, 0xfbff, 0x7c00, 0x7e00, 0x0000, 0x8000, 0x3c00};
  const std::uint8_t fp8_edges[] = {0x01, 0x81, 0x07, 0x08, 0x7e, 0xfe, 0x7f, 0xff, 0x7b, 0x7c, 0x00, 0x80, 0x38};
  const float scale_edges[] = {1.0f, 1e-40f, 0.0f, 3e38f, 1e-20f, 5.0f};
  const ref::model md = ref::describe<Config>(adamw_hyper<Config>());
  const std::int64_t n = 32 * 40 + 7;
  for (int lane = 0; lane < 32; ++lane) {
    testdata::generator gen(100 + lane);
    cpuharness::profile pr;
    pr.special = 0;
    ref::tensor serial;
    serial.allocate(md, n);
    serial.seed = 77;
    cpuharness::init_params(md, serial, gen, pr);
    for (int k = 0; k < 2; ++k) {
      const ref::codec_desc& c = md.state[k];
      for (std::int64_t i = 0; i < n; ++i) {
        const std::int64_t g = i / 32;
        const bool edge = i % 32 == lane;
        if (c.code_bytes() == 2) {
          const std::uint16_t h = edge ? half_edges[(g + k) % 11] : static_cast<std::uint16_t>(0x1000 + gen.u32() % 0x2000);
          std::memcpy(serial.code[k].data() + 2 * i, &h, 2);
        } else if (c.code_bytes() == 1) {
          // ordinary codes: finite, below the sentinel (0x7f) of both formats' magnitudes
          serial.code[k][i] = edge ? fp8_edges[(g + k) % 13] : static_cast<std::uint8_t>(gen.u32() % 0x70 | (gen.u32() & 0x80));
        }
      }
      const std::size_t sb = c.scale_bytes();
      for (std::size_t g = 0; sb && g < serial.scale[k].size() / sb; ++g)
        ref::store_float(flashoptim::dtype::f32, serial.scale[k].data() + g * sb, scale_edges[(g / 2 + k) % 6]);
    }
    std::vector<ref::tensor> runs;
    std::vector<isa> paths;
    for (isa p : {isa::avx512, isa::avx2})
      if (flashoptim::cpu::isa_available(p)) {
        paths.push_back(p);
        runs.push_back(serial);
      }
    for (int s = 1; s <= 3; ++s) {
      for (std::int64_t i = 0; i < n; ++i) {
        const float g = i % 32 == lane ? grad_edges[(i / 32 + s) % 16] : static_cast<float>(gen.normal()) * 1e-2f;
        ref::store_float(md.grad, serial.grad.data() + i * flashoptim::size_of(md.grad), g);
      }
      flashoptim::step_args a;
      a.step = s;
      auto sv = ref::view<Config>(serial);
      sv.index_base = 4099;
      REQUIRE(flashoptim::cpu::step_serial<Config>(adamw_hyper<Config>(), a, &sv, 1).ok());
      for (std::size_t r = 0; r < runs.size(); ++r) {
        runs[r].grad = serial.grad;
        flashoptim::cpu::step_options o;
        o.instruction_set = paths[r];
        o.threads = 1;
        o.min_groups_per_thread = 1;
        auto v = ref::view<Config>(runs[r]);
        v.index_base = 4099;
        REQUIRE(flashoptim::cpu::step<Config>(adamw_hyper<Config>(), a, &v, 1, o).ok());
        std::string where;
        const bool same = harness::same_bytes(serial, runs[r], where);
        INFO(name, " ", flashoptim::cpu::to_string(paths[r]), " lane ", lane, " step ", s, ": ", where);
        CHECK(same);
      }
    }
  }
}
}  // namespace

TEST_CASE("fp8 codes and fp16 stochastic states: edge values at every lane position, tails") {
  check_lane_edges<adamw_fp8_states>("adamw fp8 states");
  check_lane_edges<adamw_fp16_sr_states>("adamw fp16 sr states");
  check_lane_edges<fp8_e5m2_sr>("adamw fp8 e5m2 stochastic codes");
}
