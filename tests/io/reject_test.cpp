// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// C19, the rejection half: truncated, bit-flipped, wrong-dtype and
// wrong-configuration files are refused with a clear status, and the
// destination buffers, hyperparameters and step are left exactly as they were.
#include <cstdio>

#include "resume_check.hpp"

using namespace io_test;
namespace d = flashoptim::codec::defaults;
namespace p = flashoptim::codec::precision;

namespace {

using cfg = adamw_config<ulp_bf16_i8>;
const std::vector<std::int64_t> small_sizes = {1, 33, 40};

/// A saved checkpoint and a destination that must survive every bad load.
struct fixture {
  model<cfg> src{small_sizes};
  model<cfg> dst{small_sizes, 5};
  std::vector<unsigned char> image;
  std::vector<unsigned char> before;
  cfg::hyper hyper = adamw_hyper();
  std::string path = temp_path("reject.safetensors");

  fixture() {
    src.run(hyper, 1, 2);
    REQUIRE(io::save_checkpoint<cfg>(path, hyper, 2, src.refs.data(), src.names.data(), src.refs.size()).ok());
    image = read_all(path);
    dst.scribble(0x33);
    before = dst.snapshot();
  }
  ~fixture() { std::remove(path.c_str()); }

  /// Loads an image into dst; on failure checks that nothing was written.
  template <class C = cfg>
  status load(const std::vector<unsigned char>& bytes, std::size_t size, model<C>& into,
              const io::load_options& o = {}) {
    typename C::hyper h{};
    h.lr = 0.125;
    std::int64_t step = -7;
    const auto snap = into.snapshot();
    const status s = io::load_checkpoint_bytes<C>(bytes.data(), size, h, step, into.refs.data(), into.names.data(),
                                                  into.refs.size(), o);
    if (!s.ok()) {
      CHECK(into.snapshot() == snap);
      CHECK(h.lr == 0.125);
      CHECK(step == -7);
      CHECK(std::strlen(s.message()) > 0);
    }
    return s;
  }
  status load(const std::vector<unsigned char>& bytes, const io::load_options& o = {}) {
    return load(bytes, bytes.size(), dst, o);
  }
};

bool contains(const status& s, const char* text) { return std::strstr(s.message(), text) != nullptr; }

}  // namespace

TEST_CASE("C19 the intact file loads (control for the rejections below)") {
  fixture f;
  CHECK(f.load(f.image).ok());
  CHECK(f.dst.snapshot() == f.src.snapshot());
}

TEST_CASE("C19 every truncation is rejected, nothing written") {
  fixture f;
  std::size_t rejected = 0;
  for (std::size_t n = 0; n < f.image.size(); ++n) rejected += !f.load(f.image, n, f.dst).ok();
  CHECK(rejected == f.image.size());
  CHECK(f.dst.snapshot() == f.before);
  // And through the file path, as a crash of a non-atomic writer leaves it.
  for (std::size_t n : {std::size_t{0}, std::size_t{7}, f.image.size() / 2, f.image.size() - 1}) {
    write_all(f.path, std::vector<unsigned char>(f.image.begin(), f.image.begin() + static_cast<std::ptrdiff_t>(n)));
    cfg::hyper h = f.hyper;
    std::int64_t step = -1;
    const status s = io::load_checkpoint<cfg>(f.path, h, step, f.dst.refs.data(), f.dst.names.data(), 3);
    CHECK(!s.ok());
    CHECK(step == -1);
  }
  CHECK(f.dst.snapshot() == f.before);
}

TEST_CASE("C19 every single-bit flip anywhere in the file is rejected, nothing written") {
  fixture f;
  std::size_t trials = 0, rejected = 0;
  std::vector<unsigned char> bad = f.image;
  for (std::size_t i = 0; i < bad.size(); ++i) {
    for (int bit = 0; bit < 8; ++bit) {
      bad[i] ^= static_cast<unsigned char>(1u << bit);
      ++trials;
      rejected += !f.load(bad).ok();
      bad[i] ^= static_cast<unsigned char>(1u << bit);
    }
  }
  MESSAGE("bit flips tried: " << trials << ", file bytes: " << f.image.size());
  CHECK(rejected == trials);
  CHECK(f.dst.snapshot() == f.before);
}

TEST_CASE("C19 a flipped data byte names the tensor and its checksum") {
  fixture f;
  std::vector<unsigned char> bad = f.image;
  bad.back() ^= 1;  // the last byte belongs to some 1-byte tensor
  const status s = f.load(bad);
  CHECK(s.code() == status_code::corrupt_file);
  CHECK(contains(s, "checksum"));
}

TEST_CASE("C19 wrong dtypes are rejected (consistent files, checksums recomputed)") {
  fixture f;
  const std::string name = f.src.names[1];
  auto forged = forge(f.image, [&](nlohmann::json& root, std::vector<unsigned char>&) {
    root[name + "::error_bits"]["dtype"] = "U8";
  });
  status s = f.load(forged);
  CHECK(s.code() == status_code::dtype_mismatch);
  CHECK(contains(s, "error_bits"));
  CHECK(contains(s, "uint8"));

  forged = forge(f.image, [&](nlohmann::json& root, std::vector<unsigned char>&) {
    root[name + "::exp_avg::scales"]["dtype"] = "I32";
  });
  s = f.load(forged);
  CHECK(s.code() == status_code::dtype_mismatch);
  CHECK(contains(s, "exp_avg::scales"));

  forged = forge(f.image, [&](nlohmann::json& root, std::vector<unsigned char>&) {
    root[name]["dtype"] = "F64";
  });
  s = f.load(forged);
  CHECK(s.code() == status_code::dtype_mismatch);
  CHECK(contains(s, "F64"));
}

TEST_CASE("C19 another configuration is refused, saying what differs") {
  fixture f;
  {
    model<adamw_config<ulp_bf16_i16>> other(small_sizes);
    const status s = f.load(f.image, f.image.size(), other);
    CHECK(s.code() == status_code::config_mismatch);
    CHECK(contains(s, "master"));
    CHECK(contains(s, "ulp_correction<bf16,int8>"));
    CHECK(contains(s, "ulp_correction<bf16,int16>"));
  }
  {
    model<adamw_config<ulp_bf16_i8, codec::reference::momentum, codec::reference::second_moment>> other(small_sizes);
    const status s = f.load(f.image, f.image.size(), other);
    CHECK(s.code() == status_code::config_mismatch);
    CHECK(contains(s, "state0"));
    CHECK(contains(s, "fp16_reference"));
  }
  {
    model<adamw_config<ulp_bf16_i8, d::momentum, p::bf16>> other(small_sizes);
    const status s = f.load(f.image, f.image.size(), other);
    CHECK(s.code() == status_code::config_mismatch);
    CHECK(contains(s, "state1"));
  }
  {
    model<step_config<rule::adam, ulp_bf16_i8, float, d::momentum, d::second_moment>> other(small_sizes);
    const status s = f.load(f.image, f.image.size(), other);
    CHECK(s.code() == status_code::config_mismatch);
    CHECK(contains(s, "rule"));
    CHECK(contains(s, "adamw"));
  }
  {
    model<step_config<rule::lion, ulp_bf16_i8, float, d::momentum>> other(small_sizes);
    CHECK(f.load(f.image, f.image.size(), other).code() == status_code::config_mismatch);
  }
}

TEST_CASE("C19 another tensor list is refused") {
  fixture f;
  {
    model<cfg> other({1, 33, 41});
    const status s = f.load(f.image, f.image.size(), other);
    CHECK(s.code() == status_code::size_mismatch);
    CHECK(contains(s, "layers.2.weight"));
  }
  {
    model<cfg> other({1, 33});
    const status s = f.load(f.image, f.image.size(), other);
    CHECK(s.code() == status_code::config_mismatch);
    CHECK(contains(s, "not in the list"));
  }
  {
    model<cfg> other({1, 33, 40, 5});
    const status s = f.load(f.image, f.image.size(), other);
    CHECK(s.code() == status_code::config_mismatch);
    CHECK(contains(s, "layers.3.weight"));
  }
  {
    model<cfg> other(small_sizes);
    other.names[0] = "embed";
    CHECK(f.load(f.image, f.image.size(), other).code() == status_code::config_mismatch);
  }
  {
    // Same names in another order load by name.
    model<cfg> other({40, 33, 1});
    std::swap(other.names[0], other.names[2]);
    CHECK(f.load(f.image, f.image.size(), other).ok());
    CHECK(std::memcmp(other.param[0].data(), f.src.param[2].data(), 40 * sizeof(bf16)) == 0);
  }
}

TEST_CASE("C19 shapes are checked when given") {
  fixture f;
  const std::vector<std::int64_t> shapes[3] = {{1}, {33}, {40}};
  io::load_options o;
  o.shapes = shapes;
  CHECK(f.load(f.image, o).ok());
  const std::vector<std::int64_t> wrong[3] = {{1}, {33}, {8, 5}};
  o.shapes = wrong;
  f.dst.scribble(0x33);
  const status s = f.load(f.image, o);
  CHECK(s.code() == status_code::size_mismatch);
  CHECK(contains(s, "rank"));
}

TEST_CASE("C19 hyperparameter policies") {
  fixture f;
  io::load_options o;
  o.hyper = io::hyper_policy::require_equal;
  {
    cfg::hyper h = f.hyper;
    h.beta2 = 0.98;
    std::int64_t step = -1;
    const status s = io::load_checkpoint_bytes<cfg>(f.image.data(), f.image.size(), h, step, f.dst.refs.data(),
                                                    f.dst.names.data(), 3, o);
    CHECK(s.code() == status_code::config_mismatch);
    CHECK(contains(s, "beta2"));
    CHECK(h.beta2 == 0.98);
    CHECK(f.dst.snapshot() == f.before);
  }
  {
    cfg::hyper h = f.hyper;
    std::int64_t step = -1;
    CHECK(io::load_checkpoint_bytes<cfg>(f.image.data(), f.image.size(), h, step, f.dst.refs.data(),
                                         f.dst.names.data(), 3, o)
              .ok());
    CHECK(step == 2);
  }
  {
    o.hyper = io::hyper_policy::keep;
    cfg::hyper h{};
    h.lr = 0.25;
    std::int64_t step = -1;
    CHECK(io::load_checkpoint_bytes<cfg>(f.image.data(), f.image.size(), h, step, f.dst.refs.data(),
                                         f.dst.names.data(), 3, o)
              .ok());
    CHECK(h.lr == 0.25);
  }
  {
    // Invalid values in a consistent file are refused by the rule's validation.
    auto forged = forge(f.image, [](nlohmann::json& root, std::vector<unsigned char>&) {
      auto h = nlohmann::json::parse(root["__metadata__"]["hyper"].get<std::string>());
      h["beta1"] = 1.5;
      root["__metadata__"]["hyper"] = h.dump();
    });
    const status s = f.load(forged);
    CHECK(s.code() == status_code::corrupt_file);
    CHECK(contains(s, "beta1"));
  }
  {
    // Valid in double, not as the step uses it: eps = 1e-46 is 0 in fp32
    // (docs/finite-arithmetic.md).
    auto forged = forge(f.image, [](nlohmann::json& root, std::vector<unsigned char>&) {
      auto h = nlohmann::json::parse(root["__metadata__"]["hyper"].get<std::string>());
      h["eps"] = 1e-46;
      root["__metadata__"]["hyper"] = h.dump();
    });
    const status s = f.load(forged);
    CHECK(s.code() == status_code::corrupt_file);
    CHECK(contains(s, "eps"));
    CHECK(contains(s, "fp32"));
  }
}

TEST_CASE("C19 seeds must match under stochastic rounding") {
  using sr = adamw_config<ulp_bf16_i8, p::bf16_sr, p::bf16_sr>;
  model<sr> a(small_sizes), b(small_sizes);
  a.run(adamw_hyper(), 1, 2);
  const std::string path = temp_path("seeds.safetensors");
  REQUIRE(io::save_checkpoint<sr>(path, adamw_hyper(), 2, a.refs.data(), a.names.data(), 3).ok());
  b.refs[1].seed = 999;
  sr::hyper h;
  std::int64_t step = 0;
  const auto before = b.snapshot();
  status s = io::load_checkpoint<sr>(path, h, step, b.refs.data(), b.names.data(), 3);
  CHECK(s.code() == status_code::config_mismatch);
  CHECK(contains(s, "seed"));
  CHECK(b.snapshot() == before);
  b.refs[1].seed = a.refs[1].seed;
  b.refs[2].index_base = 64;  // a shard elsewhere in the tensor draws other bits
  s = io::load_checkpoint<sr>(path, h, step, b.refs.data(), b.names.data(), 3);
  CHECK(s.code() == status_code::config_mismatch);
  CHECK(contains(s, "index_base"));
  CHECK(b.snapshot() == before);
  io::load_options o;
  o.check_seeds = false;
  CHECK(io::load_checkpoint<sr>(path, h, step, b.refs.data(), b.names.data(), 3, o).ok());
  std::remove(path.c_str());
}

TEST_CASE("C19 forged metadata and values are refused") {
  fixture f;
  auto meta_edit = [&](const char* key, const char* value) {
    return forge(f.image, [&](nlohmann::json& root, std::vector<unsigned char>&) {
      if (value) root["__metadata__"][key] = value; else root["__metadata__"].erase(key);
    });
  };
  // Version 2 is written; any version but 1, 2 and 3 (parameter groups,
  // tests/io/groups_test.cpp) is refused (version 1, library 0.1, still
  // loads: checked last, since a load writes).
  CHECK(f.load(meta_edit("format_version", "4")).code() == status_code::not_supported);
  // A version-2 file relabelled 3 lacks the groups: refused, not read as one.
  CHECK(f.load(meta_edit("format_version", "3")).code() == status_code::corrupt_file);
  CHECK(f.load(meta_edit("format_version", "")).code() == status_code::not_supported);
  CHECK(f.load(meta_edit("format_version", nullptr)).code() == status_code::not_supported);
  CHECK(f.load(meta_edit("format", "something.else")).code() == status_code::corrupt_file);
  CHECK(f.load(meta_edit("step", "-3")).code() == status_code::corrupt_file);
  CHECK(f.load(meta_edit("step", "12x")).code() == status_code::corrupt_file);
  CHECK(f.load(meta_edit("step", "99999999999999999999")).code() == status_code::corrupt_file);
  CHECK(f.load(meta_edit("form", "fp64")).code() == status_code::corrupt_file);
  CHECK(f.load(meta_edit("hyper", "[1,2]")).code() == status_code::corrupt_file);
  CHECK(f.load(meta_edit("hyper", "{\"lr\": 0.1}")).code() == status_code::corrupt_file);
  CHECK(f.load(meta_edit("tensors", "[\"a\"]")).code() == status_code::corrupt_file);
  CHECK(f.load(meta_edit("seeds", nullptr)).code() == status_code::corrupt_file);
  CHECK(f.load(meta_edit("index_bases", "[\"0\"]")).code() == status_code::corrupt_file);
  CHECK(f.load(meta_edit("rule", nullptr)).code() == status_code::corrupt_file);
  const std::string scales = f.src.names[2] + "::exp_avg_sq::scales";
  CHECK(f.load(meta_edit(("crc32/" + scales).c_str(), nullptr)).code() == status_code::corrupt_file);
  CHECK(f.load(meta_edit(("crc32/" + scales).c_str(), "0000000G")).code() == status_code::corrupt_file);

  // A NaN scale with a matching checksum: refused before anything is written.
  auto nan_scale = forge(f.image, [&](nlohmann::json& root, std::vector<unsigned char>& data) {
    const std::uint64_t b = root[scales]["data_offsets"][0].get<std::uint64_t>();
    const float nan = std::numeric_limits<float>::quiet_NaN();
    std::memcpy(&data[b + 4], &nan, 4);
    refresh_crc(root, data, scales);
  });
  status s = f.load(nan_scale);
  CHECK(s.code() == status_code::corrupt_file);
  CHECK(contains(s, "scale"));
  CHECK(contains(s, "group 1"));
  auto negative_scale = forge(f.image, [&](nlohmann::json& root, std::vector<unsigned char>& data) {
    const std::uint64_t b = root[scales]["data_offsets"][0].get<std::uint64_t>();
    const float v = -1.0f;
    std::memcpy(&data[b], &v, 4);
    refresh_crc(root, data, scales);
  });
  CHECK(f.load(negative_scale).code() == status_code::corrupt_file);

  // A tensor renamed (so one is missing and one unknown).
  auto renamed = forge(f.image, [&](nlohmann::json& root, std::vector<unsigned char>&) {
    root["extra"] = root[scales];
    root.erase(scales);
  });
  s = f.load(renamed);
  CHECK(s.code() == status_code::config_mismatch);
  CHECK(contains(s, "missing"));

  // Bytes after the last tensor.
  std::vector<unsigned char> trailing = f.image;
  trailing.push_back(0);
  CHECK(f.load(trailing).code() == status_code::corrupt_file);
  CHECK(f.dst.snapshot() == f.before);

  // Version 1 (library 0.1: the same keys and bytes for two-state rules) loads.
  CHECK(f.load(meta_edit("format_version", "1")).ok());
  CHECK(f.dst.snapshot() != f.before);
}

TEST_CASE("C19 a duplicated JSON key is refused (parsers would keep the last)") {
  fixture f;
  io::safetensors_header h;
  REQUIRE(io::parse_safetensors(f.image.data(), f.image.size(), h).ok());
  std::string json(f.image.begin() + 8, f.image.begin() + static_cast<std::ptrdiff_t>(h.data_offset));
  const std::string key = "\"" + f.src.names[0] + "\":";
  const auto at = json.find(key);
  REQUIRE(at != std::string::npos);
  const auto end = json.find('}', at);
  const std::string entry = json.substr(at, end - at + 1);
  json.insert(at, entry + ",");
  std::vector<unsigned char> bad(8 + json.size() + (f.image.size() - h.data_offset));
  io::detail::store_le64(json.size(), bad.data());
  std::memcpy(bad.data() + 8, json.data(), json.size());
  std::memcpy(bad.data() + 8 + json.size(), f.image.data() + h.data_offset, f.image.size() - h.data_offset);
  const status s = f.load(bad);
  CHECK(s.code() == status_code::corrupt_file);
  CHECK(contains(s, "twice"));
}

TEST_CASE("C14 bad arguments: a clear error before anything is written") {
  model<cfg> m(small_sizes);
  const std::string path = temp_path("args.safetensors");
  cfg::hyper h = adamw_hyper();
  std::vector<std::string> names = m.names;
  names[1] = "a::b";
  CHECK(io::save_checkpoint<cfg>(path, h, 1, m.refs.data(), names.data(), 3).code() == status_code::invalid_argument);
  names[1] = names[0];
  CHECK(io::save_checkpoint<cfg>(path, h, 1, m.refs.data(), names.data(), 3).code() == status_code::invalid_argument);
  names[1] = "";
  CHECK(io::save_checkpoint<cfg>(path, h, 1, m.refs.data(), names.data(), 3).code() == status_code::invalid_argument);
  names[1] = "__metadata__";
  CHECK(io::save_checkpoint<cfg>(path, h, 1, m.refs.data(), names.data(), 3).code() == status_code::invalid_argument);
  names[1] = std::string("bad\xff utf8");
  CHECK(io::save_checkpoint<cfg>(path, h, 1, m.refs.data(), names.data(), 3).code() == status_code::invalid_argument);
  CHECK(io::save_checkpoint<cfg>(path, h, -1, m.refs.data(), m.names.data(), 3).code() == status_code::invalid_argument);
  CHECK(io::save_checkpoint<cfg>(path, h, 1, nullptr, m.names.data(), 3).code() == status_code::null_pointer);
  auto bad_h = h;
  bad_h.lr = -1;
  CHECK(io::save_checkpoint<cfg>(path, bad_h, 1, m.refs.data(), m.names.data(), 3).code() ==
        status_code::hyperparameter_out_of_range);
  auto refs = m.refs;
  flashoptim::state_of<1>(refs[2]).codes = nullptr;
  CHECK(io::save_checkpoint<cfg>(path, h, 1, refs.data(), m.names.data(), 3).code() == status_code::null_pointer);
  const std::vector<std::int64_t> shapes[3] = {{1}, {3, 11}, {4, 11}};
  io::save_options so;
  so.shapes = shapes;
  CHECK(io::save_checkpoint<cfg>(path, h, 1, m.refs.data(), m.names.data(), 3, so).code() ==
        status_code::size_mismatch);
  CHECK(io::save_checkpoint<cfg>("/nonexistent_dir_flashoptim/x.safetensors", h, 1, m.refs.data(), m.names.data(), 3)
            .code() == status_code::io_error);
  FILE* exists = std::fopen(path.c_str(), "rb");
  CHECK(exists == nullptr);  // no call above created the file
  if (exists) std::fclose(exists);

  // Loading into overlapping destination buffers is refused.
  REQUIRE(io::save_checkpoint<cfg>(path, h, 1, m.refs.data(), m.names.data(), 3).ok());
  refs = m.refs;
  flashoptim::state_of<0>(refs[2]).codes = reinterpret_cast<std::int8_t*>(m.code1[2].data());
  std::int64_t step = 0;
  status s = io::load_checkpoint<cfg>(path, h, step, refs.data(), m.names.data(), 3);
  CHECK(s.code() == status_code::aliasing);
  refs = m.refs;
  flashoptim::state_of<0>(refs[2]).codes = m.code0[1].data();  // across tensors
  s = io::load_checkpoint<cfg>(path, h, step, refs.data(), m.names.data(), 3);
  CHECK(s.code() == status_code::aliasing);
  CHECK(io::load_checkpoint<cfg>(path + ".missing", h, step, m.refs.data(), m.names.data(), 3).code() ==
        status_code::io_error);
  std::remove(path.c_str());
}
