// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// Checkpoints of a whole optimizer with parameter groups (save_optimizer,
// load_optimizer; format version 3): round trips in every form, a resumed
// run bit-identical to an uninterrupted one, files of versions 1 and 2 as
// one group, and every wrong assignment, group count or hyperparameter
// refused with nothing written.
#include <cstdio>

#include "resume_check.hpp"

using namespace io_test;
namespace p = flashoptim::codec::precision;

namespace {

using cfg = adamw_config<ulp_bf16_i8>;

bool contains(const status& s, const char* text) { return std::strstr(s.message(), text) != nullptr; }

/// Two groups as a trainer builds them: weight decay, and none (biases, norms).
template <class C>
std::vector<typename C::hyper> two_groups(typename C::hyper decay) {
  typename C::hyper no_decay = decay;
  no_decay.weight_decay = 0.0;
  return {decay, no_decay};
}

/// resume_sizes' tensors {1, 33, 100, 1025, 0}, interleaved between the groups.
const std::vector<std::int32_t> assignment = {0, 1, 0, 1, 1};

/// Steps first..last, each group's tensors with its hyperparameters.
template <class C>
void run_groups(model<C>& m, const std::vector<typename C::hyper>& hypers, const std::vector<std::int32_t>& group,
                std::int64_t first, std::int64_t last) {
  for (std::int64_t s = first; s <= last; ++s) {
    m.set_grads(s);
    step_args a;
    a.step = s;
    for (std::size_t g = 0; g < hypers.size(); ++g) {
      std::vector<tensor_ref<C>> part;
      for (std::size_t i = 0; i < m.refs.size(); ++i)
        if (group[i] == static_cast<std::int32_t>(g)) part.push_back(m.refs[i]);
      if (!part.empty()) REQUIRE(cpu::step_serial<C>(hypers[g], a, part.data(), part.size()).ok());
    }
  }
}

template <class C>
std::vector<std::string> jsons(const std::vector<typename C::hyper>& hypers) {
  std::vector<std::string> out;
  for (const auto& h : hypers) out.push_back(io::detail::hyper_json<C>(h));
  return out;
}

std::map<std::string, std::string> metadata_of(const std::vector<unsigned char>& image) {
  io::safetensors_header h;
  REQUIRE(io::parse_safetensors(image.data(), image.size(), h).ok());
  return h.metadata;
}

std::vector<unsigned char> data_section(const std::vector<unsigned char>& image) {
  io::safetensors_header h;
  REQUIRE(io::parse_safetensors(image.data(), image.size(), h).ok());
  return std::vector<unsigned char>(image.begin() + static_cast<std::ptrdiff_t>(h.data_offset), image.end());
}

/// Saves src as an optimizer (two groups) and as a single-hyper checkpoint,
/// in form f; loads each into fresh buffers; the two loads must agree bit for
/// bit (the groups change the metadata only), and the data sections too.
template <class C>
void check_round_trip(const typename C::hyper& decay, io::form f, bool lossless) {
  const auto hypers = two_groups<C>(decay);
  model<C> src(resume_sizes);
  run_groups(src, hypers, assignment, 1, 3);
  io::save_options so;
  so.form = f;
  const std::string grouped = temp_path("groups.safetensors"), single = temp_path("single.safetensors");
  REQUIRE(io::save_optimizer<C>(grouped, hypers.data(), hypers.size(), assignment.data(), 3, src.refs.data(),
                                src.names.data(), src.refs.size(), so)
              .ok());
  REQUIRE(io::save_checkpoint<C>(single, hypers[0], 3, src.refs.data(), src.names.data(), src.refs.size(), so).ok());
  const auto gi = read_all(grouped), si = read_all(single);
  CHECK(data_section(gi) == data_section(si));
  const auto meta = metadata_of(gi);
  CHECK(meta.at("format_version") == "3");
  CHECK(meta.at("form") == io::to_string(f));
  CHECK(meta.count("hyper") == 0);
  CHECK(meta.at("tensor_groups") == "[0,1,0,1,1]");
  CHECK(meta.at("param_groups") == "[" + jsons<C>(hypers)[0] + "," + jsons<C>(hypers)[1] + "]");

  model<C> a(resume_sizes, 7), b(resume_sizes, 8);
  a.scribble(0x5a);
  b.scribble(0x5a);
  std::vector<typename C::hyper> loaded(1);
  loaded[0].lr = 0.5;
  std::int64_t sa = -1, sb = -1;
  typename C::hyper hb{};
  status s = io::load_optimizer<C>(grouped, loaded, assignment.data(), sa, a.refs.data(), a.names.data(),
                                   a.refs.size());
  REQUIRE_MESSAGE(s.ok(), std::string(s.message()));
  s = io::load_checkpoint<C>(single, hb, sb, b.refs.data(), b.names.data(), b.refs.size());
  REQUIRE_MESSAGE(s.ok(), std::string(s.message()));
  CHECK(sa == 3);
  CHECK(sb == 3);
  CHECK(jsons<C>(loaded) == jsons<C>(hypers));
  CHECK(a.snapshot() == b.snapshot());
  if (lossless) CHECK(a.snapshot() == src.snapshot());
  std::remove(grouped.c_str());
  std::remove(single.c_str());
}

template <class C>
void check_group_resume(const typename C::hyper& decay) {
  const auto hypers = two_groups<C>(decay);
  model<C> uninterrupted(resume_sizes), saver(resume_sizes), one_hyper(resume_sizes);
  run_groups(uninterrupted, hypers, assignment, 1, 6);
  run_groups(saver, hypers, assignment, 1, 3);
  one_hyper.run(hypers[0], 1, 6);
  // The groups matter: stepping every tensor under group 0's values differs.
  CHECK(one_hyper.snapshot() != uninterrupted.snapshot());

  const std::string path = temp_path("group_resume.safetensors");
  REQUIRE(io::save_optimizer<C>(path, hypers.data(), hypers.size(), assignment.data(), 3, saver.refs.data(),
                                saver.names.data(), saver.refs.size())
              .ok());
  model<C> resumed(resume_sizes, 77);
  resumed.scribble(0xa5);
  std::vector<typename C::hyper> loaded(5);  // restore resizes to the file's 2
  std::int64_t step = -1;
  const status s = io::load_optimizer<C>(path, loaded, assignment.data(), step, resumed.refs.data(),
                                         resumed.names.data(), resumed.refs.size());
  REQUIRE_MESSAGE(s.ok(), std::string(s.message()));
  CHECK(step == 3);
  CHECK(jsons<C>(loaded) == jsons<C>(hypers));
  CHECK(resumed.snapshot() == saver.snapshot());
  run_groups(resumed, loaded, assignment, step + 1, 6);
  CHECK(resumed.snapshot() == uninterrupted.snapshot());
  CHECK(resumed.snapshot() != saver.snapshot());
  std::remove(path.c_str());
}

/// A saved two-group optimizer and a destination that must survive every bad load.
struct fixture {
  const std::vector<std::int64_t> sizes = {1, 33, 40};
  const std::vector<std::int32_t> group = {0, 1, 1};
  std::vector<cfg::hyper> hypers = two_groups<cfg>(adamw_hyper());
  model<cfg> src{sizes};
  model<cfg> dst{sizes, 5};
  std::vector<unsigned char> image;
  std::string path = temp_path("groups_reject.safetensors");

  fixture() {
    run_groups(src, hypers, group, 1, 2);
    REQUIRE(io::save_optimizer<cfg>(path, hypers.data(), 2, group.data(), 2, src.refs.data(), src.names.data(), 3)
                .ok());
    image = read_all(path);
    dst.scribble(0x33);
  }
  ~fixture() { std::remove(path.c_str()); }

  /// load_optimizer_bytes into dst; on failure checks that nothing was written.
  status load(const std::vector<unsigned char>& bytes, std::vector<cfg::hyper> into_hypers,
              const std::int32_t* tensor_group, const io::load_options& o = {}) {
    const auto before_hypers = jsons<cfg>(into_hypers);
    const auto snap = dst.snapshot();
    std::int64_t step = -7;
    const status s = io::load_optimizer_bytes<cfg>(bytes.data(), bytes.size(), into_hypers, tensor_group, step,
                                                   dst.refs.data(), dst.names.data(), dst.refs.size(), o);
    if (!s.ok()) {
      CHECK(dst.snapshot() == snap);
      CHECK(jsons<cfg>(into_hypers) == before_hypers);
      CHECK(step == -7);
      CHECK(std::strlen(s.message()) > 0);
    }
    return s;
  }
  status load(const std::vector<unsigned char>& bytes, const io::load_options& o = {}) {
    return load(bytes, junk_hypers(2), group.data(), o);
  }
  static std::vector<cfg::hyper> junk_hypers(std::size_t n) {
    std::vector<cfg::hyper> h(n);
    for (auto& x : h) x.lr = 0.125;
    return h;
  }
};

/// A forged copy with metadata key `key` set to `value` (erased when null).
std::vector<unsigned char> with_meta(const std::vector<unsigned char>& image, const char* key, const char* value) {
  return forge(image, [&](nlohmann::json& root, std::vector<unsigned char>&) {
    if (value) root["__metadata__"][key] = value; else root["__metadata__"].erase(key);
  });
}

}  // namespace

TEST_CASE("groups: two groups round-trip in every form, as the single-hyper save does") {
  using sgd_cfg = step_config<rule::sgd, ulp_bf16_i8, float, codec::reference::momentum>;
  using lion_cfg = step_config<rule::lion, ulp_bf16_i16, float, p::bf16>;
  using lossless = adamw_config<codec::exact_split, p::fp32, p::fp32>;
  for (io::form f : {io::form::compressed, io::form::state16, io::form::fp32}) {
    CAPTURE(io::to_string(f));
    check_round_trip<cfg>(adamw_hyper(), f, f == io::form::compressed);
    check_round_trip<sgd_cfg>(sgd_hyper(0.9), f, f == io::form::compressed);
    check_round_trip<lion_cfg>(lion_hyper(), f, f == io::form::compressed);
    check_round_trip<lossless>(adamw_hyper(), f, f != io::form::state16);
  }
}

TEST_CASE("groups: a resumed run is bit-identical to an uninterrupted one") {
  check_group_resume<cfg>(adamw_hyper());
  check_group_resume<adamw_config<ulp_bf16_i8, p::bf16_sr, p::bf16_sr>>(adamw_hyper());  // seeds per tensor
  check_group_resume<step_config<rule::sgd, codec::native<bf16>, float, p::bf16>>(sgd_hyper(0.9, true));
}

TEST_CASE("groups: tensors load by name in any order, their groups with them") {
  fixture f;
  model<cfg> other({40, 33, 1}, 9);
  std::swap(other.names[0], other.names[2]);
  const std::vector<std::int32_t> permuted = {1, 1, 0};
  std::vector<cfg::hyper> h;
  std::int64_t step = 0;
  const status s = io::load_optimizer<cfg>(f.path, h, permuted.data(), step, other.refs.data(), other.names.data(), 3);
  REQUIRE_MESSAGE(s.ok(), std::string(s.message()));
  CHECK(std::memcmp(other.param[0].data(), f.src.param[2].data(), 40 * sizeof(bf16)) == 0);
  CHECK(h.size() == 2);
}

TEST_CASE("groups: a wrong tensor->group assignment is refused, naming the first tensor that differs") {
  fixture f;
  CHECK(f.load(f.image).ok());  // control
  f.dst.scribble(0x33);
  {
    const std::int32_t g[3] = {0, 1, 0};
    const status s = f.load(f.image, fixture::junk_hypers(2), g);
    CHECK(s.code() == status_code::config_mismatch);
    CHECK(contains(s, "layers.2.weight"));
    CHECK(contains(s, "parameter group 1 in the file, group 0"));
  }
  {
    const std::int32_t g[3] = {1, 0, 0};
    const status s = f.load(f.image, fixture::junk_hypers(2), g);
    CHECK(s.code() == status_code::config_mismatch);
    CHECK(contains(s, "layers.0.weight"));
  }
  {
    // A group the file does not have (restore would have resized to 2).
    const std::int32_t g[3] = {0, 1, 2};
    const status s = f.load(f.image, fixture::junk_hypers(3), g);
    CHECK(s.code() == status_code::config_mismatch);
    CHECK(contains(s, "layers.2.weight"));
  }
  {
    const std::int32_t g[3] = {0, -1, 1};
    CHECK(f.load(f.image, fixture::junk_hypers(2), g).code() == status_code::invalid_argument);
    CHECK(f.load(f.image, fixture::junk_hypers(2), nullptr).code() == status_code::null_pointer);
  }
}

TEST_CASE("groups: a group count other than the file's is refused under require_equal and keep") {
  fixture f;
  io::load_options o;
  for (io::hyper_policy policy : {io::hyper_policy::require_equal, io::hyper_policy::keep}) {
    o.hyper = policy;
    for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{3}}) {
      auto h = f.hypers;
      h.resize(n, f.hypers[0]);
      const status s = f.load(f.image, h, f.group.data(), o);
      CHECK(s.code() == status_code::config_mismatch);
      CHECK(contains(s, "the file has 2 parameter groups"));
    }
  }
  // require_equal names the group and field that differ; equal groups load.
  o.hyper = io::hyper_policy::require_equal;
  auto h = f.hypers;
  h[1].weight_decay = 0.01;
  const status s = f.load(f.image, h, f.group.data(), o);
  CHECK(s.code() == status_code::config_mismatch);
  CHECK(contains(s, "parameter group 1"));
  CHECK(contains(s, "weight_decay"));
  CHECK(f.load(f.image, f.hypers, f.group.data(), o).ok());
  // keep leaves the caller's values.
  o.hyper = io::hyper_policy::keep;
  std::vector<cfg::hyper> kept = fixture::junk_hypers(2);
  std::int64_t step = -1;
  CHECK(io::load_optimizer_bytes<cfg>(f.image.data(), f.image.size(), kept, f.group.data(), step, f.dst.refs.data(),
                                      f.dst.names.data(), 3, o)
            .ok());
  CHECK(kept[0].lr == 0.125);
  CHECK(kept[1].lr == 0.125);
  CHECK(step == 2);
}

TEST_CASE("groups: load_checkpoint refuses a file of several groups, nothing written") {
  fixture f;
  const auto before = f.dst.snapshot();
  cfg::hyper h{};
  h.lr = 0.125;
  std::int64_t step = -7;
  const status s = io::load_checkpoint<cfg>(f.path, h, step, f.dst.refs.data(), f.dst.names.data(), 3);
  CHECK(s.code() == status_code::config_mismatch);
  CHECK(contains(s, "saved with 2 parameter groups: use load_optimizer"));
  CHECK(f.dst.snapshot() == before);
  CHECK(h.lr == 0.125);
  CHECK(step == -7);
}

TEST_CASE("groups: a version-3 file of one group loads through load_checkpoint too") {
  fixture f;
  const std::int32_t zeros[3] = {0, 0, 0};
  REQUIRE(io::save_optimizer<cfg>(f.path, f.hypers.data(), 1, zeros, 2, f.src.refs.data(), f.src.names.data(), 3)
              .ok());
  CHECK(metadata_of(read_all(f.path)).at("format_version") == "3");
  cfg::hyper h{};
  std::int64_t step = -1;
  const status s = io::load_checkpoint<cfg>(f.path, h, step, f.dst.refs.data(), f.dst.names.data(), 3);
  REQUIRE_MESSAGE(s.ok(), std::string(s.message()));
  CHECK(io::detail::hyper_json<cfg>(h) == io::detail::hyper_json<cfg>(f.hypers[0]));
  CHECK(f.dst.snapshot() == f.src.snapshot());
}

TEST_CASE("groups: invalid hyperparameters and malformed groups in a file are refused, nothing written") {
  fixture f;
  auto edit_group = [&](std::size_t g, const char* field, double value) {
    return forge(f.image, [&](nlohmann::json& root, std::vector<unsigned char>&) {
      auto groups = nlohmann::json::parse(root["__metadata__"]["param_groups"].get<std::string>());
      groups[g][field] = value;
      root["__metadata__"]["param_groups"] = groups.dump();
    });
  };
  status s = f.load(edit_group(1, "beta1", 1.5));
  CHECK(s.code() == status_code::corrupt_file);
  CHECK(contains(s, "parameter group 1"));
  CHECK(contains(s, "beta1"));
  s = f.load(edit_group(0, "eps", 1e-46));  // valid in double, 0 in fp32: the step's check
  CHECK(s.code() == status_code::corrupt_file);
  CHECK(contains(s, "parameter group 0"));
  CHECK(contains(s, "eps"));

  CHECK(f.load(with_meta(f.image, "param_groups", "[]")).code() == status_code::corrupt_file);
  CHECK(f.load(with_meta(f.image, "param_groups", "{}")).code() == status_code::corrupt_file);
  CHECK(f.load(with_meta(f.image, "param_groups", "[1,2]")).code() == status_code::corrupt_file);
  CHECK(f.load(with_meta(f.image, "param_groups", nullptr)).code() == status_code::corrupt_file);
  CHECK(f.load(with_meta(f.image, "tensor_groups", nullptr)).code() == status_code::corrupt_file);
  for (const char* bad : {"[0,1]", "[0,1,1,0]", "[0,1,2]", "[0,-1,1]", "[0,1,0.5]", "[0,\"1\",1]", "{}", "x"}) {
    CAPTURE(bad);
    s = f.load(with_meta(f.image, "tensor_groups", bad));
    CHECK(s.code() == status_code::corrupt_file);
    CHECK(contains(s, "tensor_groups"));
  }
  // Version 3 has param_groups instead of hyper: both is ambiguous.
  const std::string one = io::detail::hyper_json<cfg>(f.hypers[0]);
  CHECK(f.load(with_meta(f.image, "hyper", one.c_str())).code() == status_code::corrupt_file);
  // A group the file has but no tensor of the list uses still needs valid values.
  CHECK(f.load(with_meta(f.image, "param_groups", ("[" + one + "," + one + ",{\"lr\":1}]").c_str())).code() ==
        status_code::corrupt_file);
  // Every truncation and every single-bit flip: refused, nothing written.
  std::size_t rejected = 0;
  for (std::size_t n = 0; n < f.image.size(); ++n)
    rejected += !f.load(std::vector<unsigned char>(f.image.begin(), f.image.begin() + static_cast<std::ptrdiff_t>(n)))
                     .ok();
  CHECK(rejected == f.image.size());
  std::size_t trials = 0;
  rejected = 0;
  std::vector<unsigned char> bad = f.image;
  for (std::size_t i = 0; i < bad.size(); ++i) {
    for (int bit = 0; bit < 8; ++bit) {
      bad[i] ^= static_cast<unsigned char>(1u << bit);
      ++trials;
      rejected += !f.load(bad).ok();
      bad[i] ^= static_cast<unsigned char>(1u << bit);
    }
  }
  CHECK(rejected == trials);
}

TEST_CASE("groups: files of versions 1 and 2 (one hyperparameter set) load as one group") {
  fixture f;
  const std::string path = temp_path("v2.safetensors");
  REQUIRE(io::save_checkpoint<cfg>(path, f.hypers[0], 2, f.src.refs.data(), f.src.names.data(), 3).ok());
  const auto v2 = read_all(path);
  std::remove(path.c_str());
  const auto meta = metadata_of(v2);
  CHECK(meta.at("format_version") == "2");  // save_checkpoint's file is unchanged
  CHECK(meta.count("param_groups") == 0);
  CHECK(meta.count("tensor_groups") == 0);

  const std::int32_t zeros[3] = {0, 0, 0};
  const std::int32_t not_zero[3] = {0, 0, 1};
  status s = f.load(v2, fixture::junk_hypers(2), not_zero);
  CHECK(s.code() == status_code::config_mismatch);
  CHECK(contains(s, "layers.2.weight"));
  // A version-2 file with groups metadata is forged: refused.
  CHECK(f.load(with_meta(v2, "tensor_groups", "[0,0,0]"), fixture::junk_hypers(1), zeros).code() ==
        status_code::corrupt_file);
  CHECK(f.load(with_meta(v2, "param_groups", "[]"), fixture::junk_hypers(1), zeros).code() ==
        status_code::corrupt_file);
  io::load_options o;
  o.hyper = io::hyper_policy::require_equal;
  CHECK(f.load(v2, f.hypers, zeros, o).code() == status_code::config_mismatch);  // 2 groups, the file 1

  for (const char* version : {"2", "1"}) {
    CAPTURE(version);
    f.dst.scribble(0x33);
    std::vector<cfg::hyper> h = fixture::junk_hypers(3);
    std::int64_t step = -1;
    const auto image = with_meta(v2, "format_version", version);
    s = io::load_optimizer_bytes<cfg>(image.data(), image.size(), h, zeros, step, f.dst.refs.data(),
                                      f.dst.names.data(), 3);
    REQUIRE_MESSAGE(s.ok(), std::string(s.message()));
    CHECK(h.size() == 1);
    CHECK(io::detail::hyper_json<cfg>(h[0]) == io::detail::hyper_json<cfg>(f.hypers[0]));
    CHECK(step == 2);
    CHECK(f.dst.snapshot() == f.src.snapshot());
  }
}

TEST_CASE("groups: empty groups are allowed and keep their hyperparameters") {
  fixture f;
  std::vector<cfg::hyper> three = {f.hypers[1], f.hypers[0], adamw_hyper()};
  three[2].lr = 3e-3;
  const std::int32_t g[3] = {1, 2, 2};  // group 0 holds no tensor
  REQUIRE(io::save_optimizer<cfg>(f.path, three.data(), 3, g, 2, f.src.refs.data(), f.src.names.data(), 3).ok());
  std::vector<cfg::hyper> h;
  std::int64_t step = -1;
  status s = io::load_optimizer<cfg>(f.path, h, g, step, f.dst.refs.data(), f.dst.names.data(), 3);
  REQUIRE_MESSAGE(s.ok(), std::string(s.message()));
  CHECK(jsons<cfg>(h) == jsons<cfg>(three));
  CHECK(f.dst.snapshot() == f.src.snapshot());
  // No tensor at all: one group of hyperparameters and a step still save and load.
  REQUIRE(io::save_optimizer<cfg>(f.path, three.data(), 2, nullptr, 9, f.src.refs.data(), f.src.names.data(), 0).ok());
  s = io::load_optimizer<cfg>(f.path, h, nullptr, step, f.dst.refs.data(), f.dst.names.data(), 0);
  REQUIRE_MESSAGE(s.ok(), std::string(s.message()));
  CHECK(h.size() == 2);
  CHECK(step == 9);
}

TEST_CASE("groups: bad save arguments are refused before anything is written") {
  model<cfg> m({1, 33, 40});
  const std::string path = temp_path("groups_args.safetensors");
  auto hypers = two_groups<cfg>(adamw_hyper());
  const std::int32_t g[3] = {0, 1, 1};
  auto save = [&](const cfg::hyper* h, std::size_t n, const std::int32_t* tg) {
    return io::save_optimizer<cfg>(path, h, n, tg, 1, m.refs.data(), m.names.data(), 3);
  };
  CHECK(save(hypers.data(), 0, g).code() == status_code::invalid_argument);
  CHECK(save(hypers.data(), io::max_param_groups + 1, g).code() == status_code::invalid_argument);
  CHECK(save(nullptr, 2, g).code() == status_code::null_pointer);
  CHECK(save(hypers.data(), 2, nullptr).code() == status_code::null_pointer);
  const std::int32_t out_of_range[3] = {0, 2, 1}, negative[3] = {0, -1, 1};
  status s = save(hypers.data(), 2, out_of_range);
  CHECK(s.code() == status_code::invalid_argument);
  CHECK(contains(s, "layers.1.weight"));
  CHECK(save(hypers.data(), 2, negative).code() == status_code::invalid_argument);
  hypers[1].lr = -1;
  s = save(hypers.data(), 2, g);
  CHECK(s.code() == status_code::hyperparameter_out_of_range);
  CHECK(contains(s, "parameter group 1"));
  FILE* exists = std::fopen(path.c_str(), "rb");
  CHECK(exists == nullptr);  // no call above created the file
  if (exists) std::fclose(exists);
}
