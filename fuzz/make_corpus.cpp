// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// Writes the fuzzer's seed corpus: a valid file per configuration and form,
// and broken variants of one (truncated, a flipped header byte, a flipped
// data byte). Usage: make_corpus <dir>. The committed fuzz/corpus/ came from
// this program; rerun it after a format change.
#include <cstdio>

#include "fuzz_targets.hpp"

namespace {

int failures = 0;

void write(const std::string& path, const std::vector<unsigned char>& bytes) {
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f || std::fwrite(bytes.data(), 1, bytes.size(), f) != bytes.size()) ++failures;
  if (f) std::fclose(f);
}

template <class Config>
void emit(const std::string& dir, const char* tag, bool broken_variants) {
  using namespace flashoptim;
  fuzz::target<Config> t;
  // Plausible contents: small finite values everywhere, valid scales.
  for (auto& r : t.refs) {
    std::vector<float> x(static_cast<std::size_t>(r.size));
    for (std::size_t i = 0; i < x.size(); ++i) x[i] = 0.01f * static_cast<float>(i) - 0.1f;
    typename Config::aux_type* aux = nullptr;
    if constexpr (Config::has_aux) aux = r.aux;
    (void)codec::split<typename Config::master>(x.data(), r.size, r.param, aux);
    const auto quantize_slot = [&](auto s) {
      constexpr int I = decltype(s)::value;
      using S = typename Config::template state<I>;
      if constexpr (S::stores_state)
        (void)codec::quantize<S>(x.data(), r.size, r.template state<I>().codes, r.template state<I>().scales);
    };
    quantize_slot(slot_index<0>{});
    for (auto& v : x) v = v * v;
    if constexpr (Config::num_slots > 1) quantize_slot(slot_index<1>{});
  }
  typename Config::hyper h{};
  if (std::string(tag) == "adamw") {
    // A whole optimizer of two groups (format version 3, io::save_optimizer).
    const std::string path = dir + "/valid_" + tag + "_groups.safetensors";
    typename Config::hyper hypers[2] = {h, h};
    hypers[1].weight_decay = 0.0;
    hypers[1].lr = 0.25;
    const status s = io::save_optimizer<Config>(path, hypers, 2, fuzz::tensor_group.data(), 5, t.refs.data(),
                                                fuzz::names.data(), t.refs.size());
    if (!s.ok()) {
      std::fprintf(stderr, "%s: %s\n", path.c_str(), s.what());
      ++failures;
    }
  }
  for (io::form f : {io::form::compressed, io::form::state16, io::form::fp32}) {
    const std::string path = dir + "/valid_" + tag + "_" + io::to_string(f) + ".safetensors";
    io::save_options o;
    o.form = f;
    const status s = io::save_checkpoint<Config>(path, h, 5, t.refs.data(), fuzz::names.data(), t.refs.size(), o);
    if (!s.ok()) {
      std::fprintf(stderr, "%s: %s\n", path.c_str(), s.what());
      ++failures;
      continue;
    }
    if (!broken_variants || f != io::form::compressed) continue;
    std::vector<unsigned char> image;
    if (!io::read_file(path, image).ok()) { ++failures; continue; }
    io::safetensors_header hd;
    if (!io::parse_safetensors(image.data(), image.size(), hd).ok()) { ++failures; continue; }
    write(dir + "/broken_truncated_" + tag, std::vector<unsigned char>(image.begin(), image.begin() + image.size() / 2));
    auto flipped = image;
    flipped[hd.data_offset / 2] ^= 0x04;
    write(dir + "/broken_header_bit_" + tag, flipped);
    flipped = image;
    flipped[image.size() - 3] ^= 0x80;
    write(dir + "/broken_data_bit_" + tag, flipped);
    write(dir + "/broken_header_only_" + tag,
          std::vector<unsigned char>(image.begin(), image.begin() + static_cast<std::ptrdiff_t>(hd.data_offset)));
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s <corpus dir>\n", argv[0]);
    return 2;
  }
  emit<fuzz::adamw_cfg>(argv[1], "adamw", true);
  emit<fuzz::sgd_cfg>(argv[1], "sgd", true);
  emit<fuzz::lion_cfg>(argv[1], "lion", false);
  return failures == 0 ? 0 : 1;
}
