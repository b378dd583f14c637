// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// cpu::optimizer writing FP8 copies (optim/fp8_outputs.hpp,
// docs/fp8-params.md "In the owning optimizers"): after every step --
// plain, with the gradient pass, a release step's end -- each tensor's FP8
// values and block scales equal cpu::fp8_param_write_serial over the master
// the optimizer keeps, for both block kinds, both formats, power-of-two
// scales, a compressed and an fp32 master; a skipped step leaves them; a
// tensor without an output is never written; bad outputs are refused with
// nothing written; save records the form and load re-derives the copy.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <cstring>
#include <string>
#include <unistd.h>
#include <vector>

#include <doctest/doctest.h>

#include "common/configs.hpp"
#include "common/data.hpp"
#include "fp8_outputs_model.hpp"
#include "flashoptim/io/file.hpp"
#include "flashoptim/io/safetensors.hpp"
#include "flashoptim/optim/cpu_optimizer_io.hpp"

using namespace flashoptim;
namespace tc = testconfigs;

namespace {

std::string temp_path(const std::string& leaf) {
  static int counter = 0;
  const char* dir = std::getenv("TMPDIR");
  return std::string(dir ? dir : "/tmp") + "/flashoptim_fp8opt_" + std::to_string(::getpid()) + "_" +
         std::to_string(counter++) + "_" + leaf;
}

using fp8_outputs_test::descs;
using fp8_outputs_test::fp8_model;
using fp8_outputs_test::shape_of;

/// cpu::fp8_param_write_serial over the optimizer's master into fresh buffers.
template <class Config, class F8>
void expected_copy(const cpu::optimizer<Config>& opt, bool pow2, std::vector<std::vector<F8>>& values,
                   std::vector<std::vector<float>>& scales) {
  std::vector<fp8_param_ref<typename Config::master, F8>> refs;
  values.assign(descs.size(), {});
  scales.assign(descs.size(), {});
  for (std::size_t i = 0; i < descs.size(); ++i) {
    if (!descs[i].copy) continue;
    const auto& t = opt.tensors()[i];
    fp8_param_ref<typename Config::master, F8> r;
    r.master = t.param;
    if constexpr (Config::has_aux) r.aux = t.aux;
    r.shape = shape_of(descs[i]);
    values[i].resize(static_cast<std::size_t>(r.shape.size));
    scales[i].resize(static_cast<std::size_t>(r.shape.scale_count()));
    r.values = values[i].data();
    r.scales = scales[i].data();
    refs.push_back(r);
  }
  fp8_param_options o;
  o.pow2_scales = pow2;
  REQUIRE(cpu::fp8_param_write_serial(refs.data(), refs.size(), o).ok());
}

template <class T>
bool same_bytes(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0;
}

template <class Config, class F8>
void require_copy(const cpu::optimizer<Config>& opt, fp8_model<Config, F8>& m, bool pow2, const char* when) {
  std::vector<std::vector<F8>> v;
  std::vector<std::vector<float>> s;
  expected_copy<Config, F8>(opt, pow2, v, s);
  const std::string stage = when;  // doctest prints a char pointer as an address
  for (std::size_t i = 0; i < descs.size(); ++i) {
    CAPTURE(stage);
    CAPTURE(i);
    if (!descs[i].copy) {  // never written: still the sentinels
      for (const auto& x : m.values[i]) REQUIRE(x.bits == 0x5a);
      for (float x : m.scales[i]) REQUIRE(x == -7.0f);
      continue;
    }
    REQUIRE(same_bytes(m.values[i], v[i]));
    REQUIRE(same_bytes(m.scales[i], s[i]));
  }
}

optim::optimizer_options quiet() {
  optim::optimizer_options o;
  o.lr_check = optim::lr_check_mode::off;
  return o;
}

}  // namespace

TEST_CASE_TEMPLATE("FP8 copies after every step == the second pass over the kept master", Config, tc::adamw_default,
                   tc::adamw_rounded, tc::adamw_fp32_native) {
  for (const bool pow2 : {false, true}) {
    CAPTURE(pow2);
    fp8_model<Config, fp8_e4m3> m(11);
    fp8_model<Config, fp8_e5m2> m5(11);
    cpu::optimizer<Config> opt, opt5;
    REQUIRE(opt.init(m.groups(), quiet()).ok());
    REQUIRE(opt5.init(m5.groups(), quiet()).ok());
    fp8_param_options po;
    po.pow2_scales = pow2;
    REQUIRE(opt.set_fp8_outputs(m.outputs(), po).ok());
    REQUIRE(opt5.set_fp8_outputs(m5.outputs(), po).ok());
    CHECK(opt.has_fp8_outputs());
    CHECK(opt.fp8_form().format == "e4m3");
    CHECK(opt5.fp8_form().format == "e5m2");
    CHECK(opt.fp8_form().blocks == std::vector<std::int32_t>{128, 1, 1, 0});
    require_copy(opt, m, pow2, "set_fp8_outputs writes the copy at once");
    for (int s = 1; s <= 3; ++s) {
      m.set_grads(100 + s);
      m5.set_grads(100 + s);
      REQUIRE(opt.step().ok());
      REQUIRE(opt5.step().ok());
      require_copy(opt, m, pow2, "step()");
      require_copy(opt5, m5, pow2, "step(), e5m2");
    }
    // the gradient pass: a clipped step writes the copy; a skipped one leaves it
    grad_pass_config cfg;
    cfg.max_norm = 0.25;
    grad_control ctl = rule::initial_control(cfg);  // GradScaler's initial scale (the pass's default scaler)
    m.set_grads(200);
    REQUIRE(opt.step(cfg, ctl).ok());
    REQUIRE(ctl.skip == 0);
    require_copy(opt, m, pow2, "step with the gradient pass");
    const auto before_v = m.values;
    const auto before_s = m.scales;
    m.set_grads(201, /*non_finite=*/true);
    REQUIRE(opt.step(cfg, ctl).ok());
    REQUIRE(ctl.skip != 0);
    for (std::size_t i = 0; i < descs.size(); ++i) {
      CHECK(same_bytes(m.values[i], before_v[i]));
      CHECK(same_bytes(m.scales[i], before_s[i]));
    }
    // a release step: the copies are written when it ends
    m.set_grads(300);
    REQUIRE(opt.begin_step().ok());
    for (std::size_t i = descs.size(); i-- > 0;) REQUIRE(opt.step_tensor(i).ok());
    REQUIRE(opt.end_step().ok());
    require_copy(opt, m, pow2, "end_step()");
    // cleared: steps no longer write
    opt.clear_fp8_outputs();
    CHECK_FALSE(opt.has_fp8_outputs());
    CHECK(opt.fp8_form().empty());
    const auto kept = m.values;
    m.set_grads(400);
    REQUIRE(opt.step().ok());
    for (std::size_t i = 0; i < descs.size(); ++i) CHECK(same_bytes(m.values[i], kept[i]));
  }
}

TEST_CASE("FP8 copies equal to a second pass within the released step's bytes: bf16/bf16 (no correction)") {
  using C = tc::adamw_bf16_native;
  fp8_model<C, fp8_e4m3> m(21);
  cpu::optimizer<C> opt;
  REQUIRE(opt.init(m.groups(), quiet()).ok());
  REQUIRE(opt.set_fp8_outputs(m.outputs()).ok());
  m.set_grads(22);
  REQUIRE(opt.step().ok());
  require_copy(opt, m, false, "bf16 master, no correction");
}

TEST_CASE("set_fp8_outputs refuses bad outputs and writes nothing; the previous outputs stay") {
  using C = tc::adamw_default;
  using F8 = fp8_e4m3;
  fp8_model<C, F8> m(31);
  cpu::optimizer<C> opt;
  CHECK(opt.set_fp8_outputs(m.outputs()).code() == status_code::invalid_argument);  // before init
  REQUIRE(opt.init(m.groups(), quiet()).ok());
  auto o = m.outputs();
  auto untouched = [&] {
    for (std::size_t i = 0; i < descs.size(); ++i) {
      for (const auto& x : m.values[i]) REQUIRE(x.bits == 0x5a);
      for (float x : m.scales[i]) REQUIRE(x == -7.0f);
    }
  };
  std::vector<optim::fp8_output<F8>> short_list(o.begin(), o.end() - 1);
  CHECK(opt.set_fp8_outputs(short_list).code() == status_code::size_mismatch);
  auto bad = o;
  bad[1].scales = nullptr;  // values without scales
  CHECK(opt.set_fp8_outputs(bad).code() == status_code::null_pointer);
  bad = o;
  bad[2].blocks = fp8_block_kind::tile_128x128;  // 1-D tensor: no 2-D shape for 128 x 128 blocks
  CHECK(opt.set_fp8_outputs(bad).code() == status_code::invalid_argument);
  bad = o;
  bad[1].blocks = static_cast<fp8_block_kind>(7);
  CHECK(opt.set_fp8_outputs(bad).code() == status_code::invalid_argument);
  bad = o;
  bad[2].values = reinterpret_cast<F8*>(m.params[0].data());  // over a parameter
  CHECK(opt.set_fp8_outputs(bad).code() == status_code::aliasing);
  bad = o;
  bad[2].scales = reinterpret_cast<float*>(m.grads[3].data());  // over a gradient
  CHECK(opt.set_fp8_outputs(bad).code() == status_code::aliasing);
  bad = o;
  bad[2].values = m.values[1].data();  // over another copy
  CHECK(opt.set_fp8_outputs(bad).code() == status_code::aliasing);
  bad = o;
  bad[0].values = reinterpret_cast<F8*>(const_cast<std::int8_t*>(opt.tensors()[3].aux));  // into the arena
  CHECK(opt.set_fp8_outputs(bad).code() == status_code::aliasing);
  bad = o;
  bad[1].scales = reinterpret_cast<float*>(reinterpret_cast<char*>(m.scales[1].data()) + 2);
  CHECK_FALSE(opt.set_fp8_outputs(bad).ok());  // misaligned scales
  untouched();
  CHECK_FALSE(opt.has_fp8_outputs());
  // with outputs set, a refused call keeps them
  REQUIRE(opt.set_fp8_outputs(o).ok());
  CHECK(opt.set_fp8_outputs(short_list).code() == status_code::size_mismatch);
  CHECK(opt.has_fp8_outputs());
  m.set_grads(32);
  REQUIRE(opt.step().ok());
  require_copy(opt, m, false, "after a refused replacement");
  REQUIRE(opt.begin_step().ok());
  CHECK(opt.set_fp8_outputs(o).code() == status_code::invalid_argument);  // inside a release step
}

TEST_CASE("save records the FP8 form; load re-derives the copy from the loaded master") {
  using C = tc::adamw_default;
  using F8 = fp8_e4m3;
  fp8_model<C, F8> a(41), b(41);
  cpu::optimizer<C> src, dst;
  REQUIRE(src.init(a.groups(), quiet()).ok());
  REQUIRE(src.set_fp8_outputs(a.outputs()).ok());
  for (int s = 1; s <= 2; ++s) {
    a.set_grads(42 + s);
    REQUIRE(src.step().ok());
  }
  const std::string path = temp_path("fp8.safetensors");
  REQUIRE(cpu::save(src, path).ok());
  std::vector<unsigned char> image;
  REQUIRE(io::read_file(path, image).ok());
  io::safetensors_header h;
  REQUIRE(io::parse_safetensors(image.data(), image.size(), h).ok());
  REQUIRE(h.metadata.count("fp8_params") == 1);
  CHECK(h.metadata.at("fp8_params") == src.fp8_form().json());
  CHECK(src.fp8_form().json() ==
        "{\"format\":\"e4m3\",\"pow2_scales\":false,\"blocks\":[128,1,1,0],\"rows\":[200,64,1,0],"
        "\"cols\":[300,256,1000,0]}");
  // the destination writes its copy from its own (different) weights first...
  REQUIRE(dst.init(b.groups(), quiet()).ok());
  REQUIRE(dst.set_fp8_outputs(b.outputs()).ok());
  b.set_grads(99);
  REQUIRE(dst.step().ok());
  // ...and after the load its copy is the source's, byte for byte
  REQUIRE(cpu::load(dst, path).ok());
  for (std::size_t i = 0; i < descs.size(); ++i) {
    CAPTURE(i);
    CHECK(same_bytes(a.values[i], b.values[i]));
    CHECK(same_bytes(a.scales[i], b.scales[i]));
  }
  // without outputs: no metadata key
  cpu::optimizer<C> plain;
  fp8_model<C, F8> c(41);
  REQUIRE(plain.init(c.groups(), quiet()).ok());
  const std::string p2 = temp_path("plain.safetensors");
  REQUIRE(cpu::save(plain, p2).ok());
  REQUIRE(io::read_file(p2, image).ok());
  REQUIRE(io::parse_safetensors(image.data(), image.size(), h).ok());
  CHECK(h.metadata.count("fp8_params") == 0);
  // a caller's fp8_params must be a JSON object
  io::save_options bad;
  bad.fp8_params = "not json";
  const std::string p3 = temp_path("bad.safetensors");
  CHECK(cpu::save(plain, p3, bad).code() == status_code::invalid_argument);
  std::FILE* f = std::fopen(p3.c_str(), "rb");
  CHECK(f == nullptr);  // nothing written
  if (f != nullptr) std::fclose(f);
  std::remove(path.c_str());
  std::remove(p2.c_str());
}
