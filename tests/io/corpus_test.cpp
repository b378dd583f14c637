// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// The committed fuzz corpus stays meaningful: its valid files load into the
// fuzzer's configurations (so the fuzzer starts past every check), its
// broken files are refused. Fails after a format change until the corpus is
// regenerated (fuzz/make_corpus.cpp).
#include <doctest/doctest.h>

#include "../../fuzz/fuzz_targets.hpp"

namespace {

template <class Config>
flashoptim::status load(const std::string& leaf) {
  std::vector<unsigned char> image;
  const std::string path = std::string(FLASHOPTIM_SOURCE_DIR) + "/fuzz/corpus/" + leaf;
  REQUIRE_MESSAGE(flashoptim::io::read_file(path, image).ok(), path);
  fuzz::target<Config> t;
  typename Config::hyper h{};
  std::int64_t step = 0;
  const auto s = flashoptim::io::load_checkpoint_bytes<Config>(image.data(), image.size(), h, step, t.refs.data(),
                                                               fuzz::names.data(), t.refs.size());
  if (s.ok()) CHECK(step == 5);
  if (!s.ok()) CHECK(t.untouched());
  return s;
}

}  // namespace

TEST_CASE("fuzz corpus: valid files load, broken files are refused") {
  for (const char* f : {"compressed", "state16", "fp32"}) {
    CHECK(load<fuzz::adamw_cfg>(std::string("valid_adamw_") + f + ".safetensors").ok());
    CHECK(load<fuzz::sgd_cfg>(std::string("valid_sgd_") + f + ".safetensors").ok());
    CHECK(load<fuzz::lion_cfg>(std::string("valid_lion_") + f + ".safetensors").ok());
  }
  for (const char* b : {"broken_truncated_", "broken_header_bit_", "broken_data_bit_", "broken_header_only_"}) {
    CHECK(!load<fuzz::adamw_cfg>(std::string(b) + "adamw").ok());
    CHECK(!load<fuzz::sgd_cfg>(std::string(b) + "sgd").ok());
  }
  // The optimizer of two groups (format version 3): load_optimizer reads it,
  // load_checkpoint refuses it.
  CHECK(load<fuzz::adamw_cfg>("valid_adamw_groups.safetensors").code() == flashoptim::status_code::config_mismatch);
  {
    std::vector<unsigned char> image;
    REQUIRE(flashoptim::io::read_file(std::string(FLASHOPTIM_SOURCE_DIR) + "/fuzz/corpus/valid_adamw_groups.safetensors",
                                      image)
                .ok());
    fuzz::target<fuzz::adamw_cfg> t;
    std::vector<fuzz::adamw_cfg::hyper> h;
    std::int64_t step = 0;
    const auto s = flashoptim::io::load_optimizer_bytes<fuzz::adamw_cfg>(
        image.data(), image.size(), h, fuzz::tensor_group.data(), step, t.refs.data(), fuzz::names.data(),
        t.refs.size());
    CHECK_MESSAGE(s.ok(), std::string(s.message()));
    CHECK(step == 5);
    CHECK(h.size() == 2);
  }
  // A file of one configuration is refused by the others.
  CHECK(load<fuzz::sgd_cfg>("valid_adamw_compressed.safetensors").code() == flashoptim::status_code::config_mismatch);
}
