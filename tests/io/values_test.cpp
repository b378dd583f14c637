// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// C19, the values behind the checksums: a consistent file (every checksum
// recomputed) whose stored values lie outside what the configuration can
// hold — an inf, NaN or negative scale, a code or correction out of range, a
// negative second moment — is refused naming the entry and the element, and
// nothing is written. What a run legitimately stores, including a state a
// non-finite gradient poisoned, still loads in every form.
#include <cstdio>
#include <limits>

#include "resume_check.hpp"

using namespace io_test;
namespace d = flashoptim::codec::defaults;
namespace p = flashoptim::codec::precision;
namespace r = flashoptim::codec::reference;

namespace {

const std::vector<std::int64_t> sizes = {1, 33, 40};
constexpr float inf = std::numeric_limits<float>::infinity();
const float qnan = std::numeric_limits<float>::quiet_NaN();

template <class C>
typename C::hyper hyper_for() {
  if constexpr (std::is_same<typename C::rule, rule::sgd>::value) {
    return sgd_hyper(0.9);
  } else {
    return adamw_hyper();
  }
}

/// A checkpoint of `sizes` after two steps, in one form, and a destination
/// whose bytes, hyperparameters and step a refused load must leave alone.
template <class C>
struct saved {
  model<C> src{sizes};
  model<C> dst{sizes, 5};
  std::vector<unsigned char> image;

  explicit saved(io::form f = io::form::compressed) {
    src.run(hyper_for<C>(), 1, 2);
    image = save(src, f);
    dst.scribble(0x33);
  }

  static std::vector<unsigned char> save(const model<C>& m, io::form f, std::int64_t step = 2) {
    const std::string path = temp_path("values.safetensors");
    io::save_options o;
    o.form = f;
    const status s =
        io::save_checkpoint<C>(path, hyper_for<C>(), step, m.refs.data(), m.names.data(), m.refs.size(), o);
    REQUIRE_MESSAGE(s.ok(), s.what());
    auto bytes = read_all(path);
    std::remove(path.c_str());
    return bytes;
  }

  status load(const std::vector<unsigned char>& bytes) {
    typename C::hyper h{};
    h.lr = 0.125;
    std::int64_t step = -7;
    const auto before = dst.snapshot();
    const status s = io::load_checkpoint_bytes<C>(bytes.data(), bytes.size(), h, step, dst.refs.data(),
                                                  dst.names.data(), dst.refs.size());
    if (!s.ok()) {
      MESSAGE(std::string(s.message()));
      CHECK(dst.snapshot() == before);  // byte-identical
      CHECK(h.lr == 0.125);
      CHECK(step == -7);
    }
    return s;
  }
};

/// The image with element `index` of entry `key` set to `value`, all
/// checksums recomputed.
template <class T>
std::vector<unsigned char> poke(const std::vector<unsigned char>& image, const std::string& key, std::int64_t index,
                                T value) {
  return forge(image, [&](nlohmann::json& root, std::vector<unsigned char>& data) {
    REQUIRE_MESSAGE(root.contains(key), key);
    const std::uint64_t b = root[key]["data_offsets"][0].get<std::uint64_t>();
    const std::uint64_t e = root[key]["data_offsets"][1].get<std::uint64_t>();
    REQUIRE(b + static_cast<std::uint64_t>(index + 1) * sizeof(T) <= e);
    std::memcpy(&data[b + static_cast<std::uint64_t>(index) * sizeof(T)], &value, sizeof(T));
    refresh_crc(root, data, key);
  });
}

bool has(const status& s, const std::string& text) { return std::strstr(s.message(), text.c_str()) != nullptr; }

/// Refused as corrupt, naming the entry and the element (or group).
void check_refused(const status& s, const std::string& key, const std::string& where) {
  CHECK(s.code() == status_code::corrupt_file);
  CHECK(has(s, "'" + key + "'"));
  CHECK(has(s, where));
}

}  // namespace

TEST_CASE("C19 default codecs: an inf, NaN or negative group scale is refused, naming the group") {
  using cfg = adamw_config<ulp_bf16_i8>;
  saved<cfg> f;
  REQUIRE(f.load(f.image).ok());  // control
  f.dst.scribble(0x33);
  for (const char* state : {"::exp_avg::scales", "::exp_avg_sq::scales"}) {
    const std::string key = f.src.names[2] + state;
    for (float v : {inf, -inf, qnan, -1.0f, -1e-30f}) {
      CAPTURE(v);
      check_refused(f.load(poke(f.image, key, 1, v)), key, "group 1");
    }
    // The file: +inf loaded, and a step later 32 parameters were NaN.
    const status s = f.load(poke(f.image, key, 0, inf));
    check_refused(s, key, "group 0");
    CHECK(has(s, "inf"));
    // Zero and any finite positive value are scales the encoder can store.
    CHECK(f.load(poke(f.image, key, 1, 0.0f)).ok());
    CHECK(f.load(poke(f.image, key, 1, 3e38f)).ok());
  }
}

TEST_CASE("C19 reference codecs: their fp16 scale may be inf (a group above 65504), never NaN or negative") {
  using cfg = adamw_config<ulp_bf16_i8, r::momentum, r::second_moment>;
  saved<cfg> f;
  const std::string key = f.src.names[1] + "::exp_avg::scales";
  CHECK(f.load(poke(f.image, key, 1, fp16{0x7c00})).ok());  // +inf: what the reference stores
  f.dst.scribble(0x33);
  check_refused(f.load(poke(f.image, key, 1, fp16{0x7e00})), key, "group 1");  // NaN
  check_refused(f.load(poke(f.image, key, 0, fp16{0xbc00})), key, "group 0");  // -1
  check_refused(f.load(poke(f.image, key, 0, fp16{0xfc00})), key, "group 0");  // -inf
}

TEST_CASE("C19 a correction outside [-M, M] is refused, naming the element") {
  SUBCASE("int8") {
    using cfg = adamw_config<ulp_bf16_i8>;
    saved<cfg> f;
    const std::string key = f.src.names[1] + "::error_bits";
    const status s = f.load(poke(f.image, key, 5, std::int8_t{-128}));
    check_refused(s, key, "element 5");
    CHECK(has(s, "correction -128"));
    CHECK(f.load(poke(f.image, key, 5, std::int8_t{-127})).ok());
    CHECK(f.load(poke(f.image, key, 5, std::int8_t{127})).ok());
  }
  SUBCASE("int16") {
    using cfg = adamw_config<ulp_bf16_i16>;
    saved<cfg> f;
    const std::string key = f.src.names[2] + "::error_bits";
    check_refused(f.load(poke(f.image, key, 39, std::int16_t{-32768})), key, "element 39");
    CHECK(f.load(poke(f.image, key, 39, std::int16_t{32767})).ok());
  }
}

TEST_CASE("C19 a code the codec never writes is refused; its sentinel is not") {
  SUBCASE("int8 without a sentinel (reference): -128") {
    using cfg = adamw_config<ulp_bf16_i8, r::momentum, r::second_moment>;
    saved<cfg> f;
    const std::string key = f.src.names[1] + "::exp_avg::quantized";
    check_refused(f.load(poke(f.image, key, 3, std::int8_t{-128})), key, "element 3");
    CHECK(f.load(poke(f.image, key, 3, std::int8_t{-127})).ok());
  }
  SUBCASE("int8 with a sentinel (defaults): -128 is a poisoned element") {
    using cfg = adamw_config<ulp_bf16_i8>;
    saved<cfg> f;
    CHECK(f.load(poke(f.image, f.src.names[1] + "::exp_avg::quantized", 3, std::int8_t{-128})).ok());
    CHECK(f.load(poke(f.image, f.src.names[1] + "::exp_avg_sq::quantized", 3, std::uint8_t{255})).ok());
  }
  SUBCASE("fp8: beyond 2^K, inf, a negative second moment") {
    using cfg = adamw_config<ulp_bf16_i8, p::fp8_momentum, p::fp8_second_moment>;
    saved<cfg> f;
    const std::string m = f.src.names[2] + "::exp_avg::quantized";
    const std::string v = f.src.names[2] + "::exp_avg_sq::quantized";
    check_refused(f.load(poke(f.image, m, 7, fp8_e4m3{0x7e})), m, "element 7");  // 448: y = 1.75
    CHECK(f.load(poke(f.image, m, 7, fp8_e4m3{0x78})).ok());                       // 256: y = 1
    CHECK(f.load(poke(f.image, m, 7, fp8_e4m3{0xff})).ok());                       // the sentinel (NaN)
    const status s = f.load(poke(f.image, v, 7, fp8_e4m3{0xb8}));                  // -1: y = -2^-8
    check_refused(s, v, "element 7");
    CHECK(has(s, "negative"));
    CHECK(f.load(poke(f.image, v, 7, fp8_e4m3{0x38})).ok());
  }
}

TEST_CASE("C19 a negative second moment is refused in the fp32, state16 and plain forms; NaN (the marker) loads") {
  using cfg = adamw_config<ulp_bf16_i8>;
  SUBCASE("fp32") {
    saved<cfg> f(io::form::fp32);
    const std::string key = f.src.names[2] + "::exp_avg_sq";
    const status s = f.load(poke(f.image, key, 7, -1.0f));
    check_refused(s, key, "element 7");
    CHECK(has(s, "never negative"));
    check_refused(f.load(poke(f.image, key, 0, -inf)), key, "element 0");
    // A momentum may be negative, a second moment NaN (a poisoned element):
    // both load, the NaN as the codec's sentinel.
    CHECK(f.load(poke(f.image, f.src.names[2] + "::exp_avg", 7, -1.0f)).ok());
    REQUIRE(f.load(poke(f.image, key, 7, qnan)).ok());
    CHECK(f.dst.code1[2][7] == 255);
    CHECK(f.load(poke(f.image, key, 7, inf)).ok());
    CHECK(f.load(poke(f.image, key, 7, -0.0f)).ok());
  }
  SUBCASE("state16") {
    saved<cfg> f(io::form::state16);
    const std::string key = f.src.names[1] + "::exp_avg_sq";
    check_refused(f.load(poke(f.image, key, 32, bf16{0xbf80})), key, "element 32");  // -1
    CHECK(f.load(poke(f.image, key, 32, bf16{0x7fc0})).ok());                         // NaN
  }
  SUBCASE("plain fp32 and bf16 codecs, compressed") {
    using plain32 = adamw_config<ulp_bf16_i8, p::fp32, p::fp32>;
    saved<plain32> f;
    const std::string key = f.src.names[1] + "::exp_avg_sq";
    check_refused(f.load(poke(f.image, key, 2, -1e-20f)), key, "element 2");
    CHECK(f.load(poke(f.image, f.src.names[1] + "::exp_avg", 2, -1e-20f)).ok());
    using plain16 = adamw_config<ulp_bf16_i8, p::bf16, p::bf16>;
    saved<plain16> g;
    check_refused(g.load(poke(g.image, key, 0, bf16{0x8001})), key, "element 0");
  }
}

TEST_CASE("C19 a step that leaves no next step is refused; saving one is refused") {
  using cfg = adamw_config<ulp_bf16_i8>;
  saved<cfg> f;
  auto with_step = [&](const char* text) {
    return forge(f.image, [&](nlohmann::json& root, std::vector<unsigned char>&) {
      root["__metadata__"]["step"] = text;
    });
  };
  const status s = f.load(with_step("9223372036854775807"));
  CHECK(s.code() == status_code::corrupt_file);
  CHECK(has(s, "step"));
  CHECK(f.load(with_step("9223372036854775806")).ok());
  CHECK(f.load(with_step("0")).ok());
  const std::string path = temp_path("step.safetensors");
  CHECK(io::save_checkpoint<cfg>(path, adamw_hyper(), INT64_MAX, f.src.refs.data(), f.src.names.data(), 3).code() ==
        status_code::invalid_argument);
  FILE* file = std::fopen(path.c_str(), "rb");
  CHECK(file == nullptr);
  if (file) std::fclose(file);
}

namespace {

/// One step in which element `k` of tensor `t` sees gradient `g`.
template <class C>
void poisoned_step(model<C>& m, std::int64_t step, std::size_t t, std::int64_t k, float g) {
  m.set_grads(step);
  m.grad[t][static_cast<std::size_t>(k)] = format::from_float<typename C::grad_type>(g);
  step_args a;
  a.step = step;
  REQUIRE(cpu::step_serial<C>(hyper_for<C>(), a, m.refs.data(), m.refs.size()).ok());
}

/// Saves `m` in every form and loads each back into fresh buffers.
template <class C>
void check_loads_in_every_form(const model<C>& m) {
  for (io::form f : {io::form::compressed, io::form::state16, io::form::fp32}) {
    CAPTURE(io::to_string(f));
    const auto image = saved<C>::save(m, f);
    model<C> into(sizes, 9);
    typename C::hyper h{};
    std::int64_t step = -1;
    const status s = io::load_checkpoint_bytes<C>(image.data(), image.size(), h, step, into.refs.data(),
                                                  into.names.data(), into.refs.size());
    CHECK_MESSAGE(s.ok(), s.what());
    if (f == io::form::compressed) CHECK(into.snapshot() == m.snapshot());
  }
}

}  // namespace

TEST_CASE("C19 a state a non-finite gradient poisoned is saved and loads again, in every form") {
  SUBCASE("defaults: an inf gradient makes a sentinel and a NaN parameter") {
    using cfg = adamw_config<ulp_bf16_i8>;
    model<cfg> m(sizes);
    m.run(adamw_hyper(), 1, 1);
    poisoned_step(m, 2, 2, 5, inf);
    CHECK(m.code0[2][5] == -128);  // the sentinels
    CHECK(m.code1[2][5] == 255);
    CHECK(!format::is_finite(format::to_float(m.param[2][5])));
    check_loads_in_every_form(m);
  }
  SUBCASE("reference: a gradient of 1e7 makes an inf fp16 scale") {
    using cfg = adamw_config<ulp_bf16_i8, r::momentum, r::second_moment>;
    model<cfg> m(sizes);
    m.run(adamw_hyper(), 1, 1);
    poisoned_step(m, 2, 1, 3, 1e7f);
    CHECK(format::to_float(m.scale0[1][0]) == inf);
    check_loads_in_every_form(m);
  }
  SUBCASE("SGD: an inf gradient makes an infinite weight") {
    using cfg = step_config<rule::sgd, ulp_bf16_i8, float, d::momentum>;
    model<cfg> m(sizes);
    m.run(sgd_hyper(0.9), 1, 1);
    poisoned_step(m, 2, 0, 0, inf);
    CHECK(format::to_float(m.param[0][0]) == -inf);
    check_loads_in_every_form(m);
  }
}
