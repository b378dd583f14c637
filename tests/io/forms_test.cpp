// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// The state16 and fp32 forms: what they store, that import is exactly
// "split the weights, quantize the states" with the loading configuration,
// that lossless configurations round-trip bit for bit, and that the data
// section has exactly the bytes layout::bytes predicts.
#include <flashoptim/layout/bytes.hpp>

#include "resume_check.hpp"

using namespace io_test;
namespace d = flashoptim::codec::defaults;
namespace p = flashoptim::codec::precision;

namespace {

template <class C>
std::vector<float> masters(const model<C>& m, std::size_t i) {
  std::vector<float> x(static_cast<std::size_t>(m.sizes[i]));
  REQUIRE(codec::reconstruct<typename C::master>(m.param[i].data(), C::has_aux ? m.aux[i].data() : nullptr,
                                                 m.sizes[i], x.data())
              .ok());
  return x;
}

template <class C, int Slot>
std::vector<float> states(const model<C>& m, std::size_t i) {
  using S = std::conditional_t<Slot == 0, typename C::state0, typename C::state1>;
  std::vector<float> x(static_cast<std::size_t>(m.sizes[i]));
  if constexpr (Slot == 0) {
    REQUIRE(codec::dequantize<S>(m.code0[i].data(), m.scale0[i].data(), m.sizes[i], x.data()).ok());
  } else {
    REQUIRE(codec::dequantize<S>(m.code1[i].data(), m.scale1[i].data(), m.sizes[i], x.data()).ok());
  }
  return x;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * 4) == 0);
}

template <class From, class To>
status save_load(const model<From>& a, model<To>& b, io::form f, std::int64_t step) {
  const std::string path = temp_path("form.safetensors");
  io::save_options so;
  so.form = f;
  REQUIRE(io::save_checkpoint<From>(path, adamw_hyper(), step, a.refs.data(), a.names.data(), a.refs.size(), so).ok());
  typename To::hyper h;
  std::int64_t s = 0;
  const status st = io::load_checkpoint<To>(path, h, s, b.refs.data(), b.names.data(), b.refs.size());
  std::remove(path.c_str());
  return st;
}

template <class C>
std::uint64_t data_bytes(const model<C>& m, io::form f) {
  const std::string path = temp_path("size.safetensors");
  io::save_options so;
  so.form = f;
  REQUIRE(io::save_checkpoint<C>(path, adamw_hyper(), 1, m.refs.data(), m.names.data(), m.refs.size(), so).ok());
  const auto image = read_all(path);
  std::remove(path.c_str());
  io::safetensors_header h;
  REQUIRE(io::parse_safetensors(image.data(), image.size(), h).ok());
  return h.data_size;
}

}  // namespace

TEST_CASE("fp32 form: lossless configurations round-trip and resume bit for bit") {
  using lossless = adamw_config<codec::exact_split, p::fp32, p::fp32>;
  model<lossless> a(resume_sizes), b(resume_sizes), c(resume_sizes, 3);
  a.run(adamw_hyper(), 1, 5);
  b.run(adamw_hyper(), 1, 3);
  c.scribble(0x77);
  REQUIRE(save_load(b, c, io::form::fp32, 3).ok());
  CHECK(c.snapshot() == b.snapshot());
  c.run(adamw_hyper(), 4, 5);
  CHECK(c.snapshot() == a.snapshot());
}

TEST_CASE("fp32 form: export to another precision is exact, import is split + quantize") {
  using compact = adamw_config<ulp_bf16_i8>;                                // bf16 + int8, 8-bit states
  using wide = adamw_config<codec::exact_split, p::fp32, p::fp32>;         // lossless
  model<compact> a(resume_sizes);
  a.run(adamw_hyper(), 1, 3);

  // compact -> fp32 file -> wide: the wide model holds exactly the decoded values.
  model<wide> b(resume_sizes, 9);
  b.scribble(0x11);
  REQUIRE(save_load(a, b, io::form::fp32, 3).ok());
  for (std::size_t i = 0; i < resume_sizes.size(); ++i) {
    CHECK(same_bits(masters(b, i), masters(a, i)));
    CHECK(same_bits(states<wide, 0>(b, i), states<compact, 0>(a, i)));
    CHECK(same_bits(states<wide, 1>(b, i), states<compact, 1>(a, i)));
  }

  // wide -> fp32 file -> compact: exactly codec::split and codec::quantize of those values.
  model<compact> c(resume_sizes, 4);
  c.scribble(0x22);
  REQUIRE(save_load(b, c, io::form::fp32, 3).ok());
  model<compact> expect(resume_sizes, 4);
  std::size_t differing = 0, total = 0;
  for (std::size_t i = 0; i < resume_sizes.size(); ++i) {
    const std::int64_t n = resume_sizes[i];
    const auto x = masters(a, i), m = states<compact, 0>(a, i), v = states<compact, 1>(a, i);
    REQUIRE(codec::split<compact::master>(x.data(), n, expect.param[i].data(), expect.aux[i].data()).ok());
    const std::uint64_t seed = c.refs[i].seed;
    REQUIRE(codec::quantize<compact::state0>(m.data(), n, expect.code0[i].data(), expect.scale0[i].data(),
                                             {seed ^ flashoptim::detail::slot_salt[0], 3, 0})
                .ok());
    REQUIRE(codec::quantize<compact::state1>(v.data(), n, expect.code1[i].data(), expect.scale1[i].data(),
                                             {seed ^ flashoptim::detail::slot_salt[1], 3, 0})
                .ok());
  }
  CHECK(c.snapshot() == expect.snapshot());
  const auto sa = a.snapshot(), sc = c.snapshot();
  for (std::size_t k = 0; k < sa.size(); ++k) differing += sa[k] != sc[k], ++total;
  MESSAGE("bf16+int8/8-bit state bytes changed by an fp32 export/import: " << differing << " of " << total);
}

TEST_CASE("state16 form: parameters and corrections as stored, states through bf16") {
  using cfg = adamw_config<ulp_bf16_i8>;
  model<cfg> a(resume_sizes), b(resume_sizes, 8);
  a.run(adamw_hyper(), 1, 3);
  b.scribble(0x44);
  REQUIRE(save_load(a, b, io::form::state16, 3).ok());
  model<cfg> expect(resume_sizes);
  for (std::size_t i = 0; i < resume_sizes.size(); ++i) {
    const std::int64_t n = resume_sizes[i];
    CHECK(std::memcmp(b.param[i].data(), a.param[i].data(), static_cast<std::size_t>(n) * 2) == 0);
    CHECK(std::memcmp(b.aux[i].data(), a.aux[i].data(), static_cast<std::size_t>(n)) == 0);
    auto m = states<cfg, 0>(a, i), v = states<cfg, 1>(a, i);
    for (auto* s : {&m, &v})
      for (float& x : *s) x = format::to_float(format::from_float<bf16>(x));
    REQUIRE(codec::quantize<cfg::state0>(m.data(), n, expect.code0[i].data(), expect.scale0[i].data()).ok());
    REQUIRE(codec::quantize<cfg::state1>(v.data(), n, expect.code1[i].data(), expect.scale1[i].data()).ok());
    CHECK(expect.code0[i] == b.code0[i]);
    CHECK(expect.code1[i] == b.code1[i]);
    CHECK(expect.scale0[i] == b.scale0[i]);
    CHECK(expect.scale1[i] == b.scale1[i]);
  }

  // With bf16 states the state16 form is the compressed form: bitwise resume.
  using bf16_states = adamw_config<ulp_bf16_i8, p::bf16, p::bf16>;
  model<bf16_states> u(resume_sizes), s(resume_sizes), r(resume_sizes, 2);
  u.run(adamw_hyper(), 1, 6);
  s.run(adamw_hyper(), 1, 3);
  r.scribble(0x55);
  REQUIRE(save_load(s, r, io::form::state16, 3).ok());
  r.run(adamw_hyper(), 4, 6);
  CHECK(r.snapshot() == u.snapshot());
}

TEST_CASE("state16 form keeps tiny second moments that fp16 would zero (the peer's defect)") {
  using cfg = adamw_config<codec::native<float>, p::fp32, p::fp32>;
  model<cfg> a({4}), b({4});
  const float tiny[4] = {1e-12f, 3e-9f, 1e-20f, 2e-8f};
  for (int k = 0; k < 4; ++k) {
    a.code1[0][k] = tiny[k];
    CHECK(format::to_float(format::from_float<fp16>(tiny[k])) == 0.0f);  // fp16 flushes them
  }
  REQUIRE(save_load(a, b, io::form::state16, 1).ok());
  for (int k = 0; k < 4; ++k) {
    CHECK(b.code1[0][k] > 0.0f);
    CHECK(std::fabs(b.code1[0][k] - tiny[k]) <= tiny[k] * 0x1p-8f);
  }
}

TEST_CASE("forms are loaded across configurations only where they can be") {
  using a_cfg = adamw_config<ulp_bf16_i8>;
  using other_codec = adamw_config<ulp_bf16_i8, p::bf16, p::fp32>;
  using other_master = adamw_config<ulp_bf16_i16>;
  model<a_cfg> a(resume_sizes);
  a.run(adamw_hyper(), 1, 2);
  model<other_codec> oc(resume_sizes);
  model<other_master> om(resume_sizes);
  CHECK(save_load(a, oc, io::form::state16, 2).ok());  // states are re-encoded
  CHECK(save_load(a, om, io::form::state16, 2).code() == status_code::config_mismatch);  // corrections are not
  CHECK(save_load(a, om, io::form::fp32, 2).ok());
  CHECK(save_load(a, oc, io::form::compressed, 2).code() == status_code::config_mismatch);
  // A state the file lacks cannot be invented: sgd without momentum -> with momentum.
  using plain_sgd = step_config<rule::sgd, ulp_bf16_i8, float>;
  using momentum_sgd = step_config<rule::sgd, ulp_bf16_i8, float, d::momentum>;
  model<plain_sgd> s(resume_sizes);
  model<momentum_sgd> t(resume_sizes);
  const std::string path = temp_path("sgd.safetensors");
  io::save_options so;
  so.form = io::form::fp32;
  REQUIRE(io::save_checkpoint<plain_sgd>(path, sgd_hyper(0.0), 1, s.refs.data(), s.names.data(), 5, so).ok());
  momentum_sgd::hyper h;
  std::int64_t step = 0;
  const status st = io::load_checkpoint<momentum_sgd>(path, h, step, t.refs.data(), t.names.data(), 5);
  CHECK(st.code() == status_code::config_mismatch);
  CHECK(std::strstr(st.message(), "momentum_buffer") != nullptr);
  std::remove(path.c_str());
}

TEST_CASE("a checkpoint of the paper's bf16 + int8 split reaches the rounded split only through fp32") {
  // the same bytes per element, different meanings: the file's master name
  // ("ulp_correction<bf16,int8>" against "rounded_split") refuses the forms
  // that carry corrections, and the fp32 form re-splits
  using ulp = adamw_config<ulp_bf16_i8>;
  using rounded = adamw_config<codec::rounded_split>;
  model<ulp> a(resume_sizes);
  a.run(adamw_hyper(), 1, 2);
  model<rounded> r(resume_sizes);
  CHECK(save_load(a, r, io::form::compressed, 2).code() == status_code::config_mismatch);
  CHECK(save_load(a, r, io::form::state16, 2).code() == status_code::config_mismatch);
  CHECK(save_load(a, r, io::form::fp32, 2).ok());
}

TEST_CASE("data section bytes equal layout::bytes, per form") {
  using cfg = adamw_config<ulp_bf16_i8>;
  const std::vector<std::int64_t> sizes = {1, 33, 1000, 4096};
  model<cfg> m(sizes);
  std::int64_t compressed = 0, n = 0;
  for (std::int64_t s : sizes) {
    compressed += s * static_cast<std::int64_t>(layout::bytes<cfg>::param) + layout::bytes<cfg>::state_for_size(s);
    n += s;
  }
  CHECK(data_bytes(m, io::form::compressed) == static_cast<std::uint64_t>(compressed));
  CHECK(data_bytes(m, io::form::state16) == static_cast<std::uint64_t>(n * (2 + 1 + 2 + 2)));
  CHECK(data_bytes(m, io::form::fp32) == static_cast<std::uint64_t>(n * 12));
}
