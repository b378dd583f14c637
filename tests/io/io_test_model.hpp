// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// Test support for checkpoints: a list of tensors owning their buffers under
// one step configuration, deterministic gradients, a byte snapshot of every
// buffer a checkpoint holds, and a header forger that rewrites a file's JSON
// and recomputes its checksums (so tests reach the semantic checks behind
// them).
#pragma once

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <doctest/doctest.h>
#include <unistd.h>

#include <flashoptim/cpu/serial.hpp>
#include <flashoptim/io/checkpoint.hpp>

// A test that links flashoptim_test_instances takes the compiled CPU step of
// every configuration here that is one of common/configs.hpp's (adamw_config<
// ulp_bf16_i8> is its adamw_fp32_grad) instead of compiling it again. The
// sanitizer build's checkpoint tests do not link it and compile their own.
#if defined(FLASHOPTIM_TEST_EXTERN_STEPS)
#include "common/cpu_step_instances.hpp"
#endif

namespace io_test {

using namespace flashoptim;

/// A value in roughly [-scale, scale] from counter-based random bits.
inline float random_value(std::uint64_t seed, std::uint64_t step, std::uint64_t i, float scale) {
  const std::uint32_t r = format::random_bits(seed, step, i);
  return (static_cast<float>(r >> 8) * (1.0f / 16777216.0f) * 2.0f - 1.0f) * scale;
}

template <class Config>
struct model {
  using C = Config;
  using P = typename C::param_type;
  using A = typename C::aux_type;
  using G = typename C::grad_type;
  using Q0 = typename C::state0::code_type;
  using S0 = typename C::state0::scale_type;
  using Q1 = typename C::state1::code_type;
  using S1 = typename C::state1::scale_type;

  std::vector<std::int64_t> sizes;
  std::vector<std::string> names;
  std::vector<std::vector<P>> param;
  std::vector<std::vector<A>> aux;
  std::vector<std::vector<G>> grad;
  std::vector<std::vector<Q0>> code0;
  std::vector<std::vector<S0>> scale0;
  std::vector<std::vector<Q1>> code1;
  std::vector<std::vector<S1>> scale1;
  std::vector<tensor_ref<C>> refs;

  /// Tensors of the given sizes, parameters split from random fp32 values,
  /// states zero (what a fresh optimizer holds).
  explicit model(std::vector<std::int64_t> s, std::uint64_t seed = 1) : sizes(std::move(s)) {
    const std::size_t n = sizes.size();
    param.resize(n), aux.resize(n), grad.resize(n), code0.resize(n), scale0.resize(n), code1.resize(n),
        scale1.resize(n);
    for (std::size_t i = 0; i < n; ++i) {
      const std::int64_t m = sizes[i];
      names.push_back("layers." + std::to_string(i) + ".weight");
      param[i].resize(static_cast<std::size_t>(m));
      grad[i].resize(static_cast<std::size_t>(m));
      if constexpr (C::has_aux) aux[i].resize(static_cast<std::size_t>(m));
      if constexpr (C::state0::stores_state) code0[i].resize(static_cast<std::size_t>(m));
      if constexpr (C::state1::stores_state) code1[i].resize(static_cast<std::size_t>(m));
      if constexpr (codec::is_grouped<typename C::state0>::value)
        scale0[i].resize(static_cast<std::size_t>(codec::scale_count<typename C::state0>(m)));
      if constexpr (codec::is_grouped<typename C::state1>::value)
        scale1[i].resize(static_cast<std::size_t>(codec::scale_count<typename C::state1>(m)));
      std::vector<float> x(static_cast<std::size_t>(m));
      for (std::int64_t k = 0; k < m; ++k) x[k] = random_value(seed, 0, (i << 32) + k, 0.5f);
      REQUIRE(codec::split<typename C::master>(x.data(), m, param[i].data(), C::has_aux ? aux[i].data() : nullptr)
                  .ok());
    }
    rebuild_refs();
  }

  void rebuild_refs() {
    refs.clear();
    for (std::size_t i = 0; i < sizes.size(); ++i) {
      tensor_ref<C> t;
      t.param = param[i].data();
      if constexpr (C::has_aux) t.aux = aux[i].data();
      t.grad = grad[i].data();
      if constexpr (C::state0::stores_state) state_of<0>(t).codes = code0[i].data();
      if constexpr (codec::is_grouped<typename C::state0>::value) state_of<0>(t).scales = scale0[i].data();
      if constexpr (C::num_slots > 1) {
        if constexpr (C::state1::stores_state) state_of<1>(t).codes = code1[i].data();
        if constexpr (codec::is_grouped<typename C::state1>::value) state_of<1>(t).scales = scale1[i].data();
      }
      t.size = sizes[i];
      t.seed = 0x1234 + i;
      refs.push_back(t);
    }
  }

  /// Overwrites every stored byte with a pattern (a "fresh" process's garbage).
  void scribble(unsigned char pattern) {
    auto fill = [pattern](auto& vs) {
      for (auto& v : vs)
        if (!v.empty()) std::memset(static_cast<void*>(v.data()), pattern, v.size() * sizeof(v[0]));
    };
    fill(param), fill(aux), fill(code0), fill(scale0), fill(code1), fill(scale1);
  }

  void set_grads(std::int64_t step) {
    for (std::size_t i = 0; i < sizes.size(); ++i)
      for (std::int64_t k = 0; k < sizes[i]; ++k)
        grad[i][k] = format::from_float<G>(random_value(99, static_cast<std::uint64_t>(step), (i << 32) + k, 1.0f));
  }

  /// Steps first..last inclusive with deterministic gradients.
  void run(const typename C::hyper& h, std::int64_t first, std::int64_t last) {
    for (std::int64_t s = first; s <= last; ++s) {
      set_grads(s);
      step_args a;
      a.step = s;
      REQUIRE(cpu::step_serial<C>(h, a, refs.data(), refs.size()).ok());
    }
  }

  /// Every byte a checkpoint holds, in a fixed order.
  std::vector<unsigned char> snapshot() const {
    std::vector<unsigned char> out;
    auto add = [&out](const auto& vs) {
      for (const auto& v : vs) {
        const auto* p = reinterpret_cast<const unsigned char*>(v.data());
        out.insert(out.end(), p, p + v.size() * sizeof(v[0]));
      }
    };
    add(param), add(aux), add(code0), add(scale0), add(code1), add(scale1);
    return out;
  }
};

/// A unique path under the build's temporary directory.
inline std::string temp_path(const std::string& leaf) {
  static int counter = 0;
  const char* dir = std::getenv("TMPDIR");
  return std::string(dir ? dir : "/tmp") + "/flashoptim_io_" + std::to_string(::getpid()) + "_" +
         std::to_string(counter++) + "_" + leaf;
}

inline std::vector<unsigned char> read_all(const std::string& path) {
  std::vector<unsigned char> v;
  REQUIRE(io::read_file(path, v).ok());
  return v;
}

inline void write_all(const std::string& path, const std::vector<unsigned char>& bytes) {
  FILE* f = std::fopen(path.c_str(), "wb");
  REQUIRE(f != nullptr);
  if (!bytes.empty()) REQUIRE(std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size());  // data() may be null
  std::fclose(f);
}

/// Rewrites a checkpoint image's header through `edit(json)` and recomputes
/// the header checksum (tensor checksums are kept unless edited), so the
/// result is a consistent file with whatever semantic defect `edit` made.
template <class Edit>
std::vector<unsigned char> forge(const std::vector<unsigned char>& image, Edit&& edit) {
  io::safetensors_header h;
  REQUIRE(io::parse_safetensors(image.data(), image.size(), h).ok());
  const std::uint64_t n = h.data_offset - 8;
  nlohmann::json root = nlohmann::json::parse(image.begin() + 8, image.begin() + 8 + static_cast<std::ptrdiff_t>(n));
  std::vector<unsigned char> data(image.begin() + static_cast<std::ptrdiff_t>(h.data_offset), image.end());
  edit(root, data);
  // Recompute the header checksum over the edited header.
  std::map<std::string, std::string> meta;
  for (auto it = root["__metadata__"].begin(); it != root["__metadata__"].end(); ++it)
    meta[it.key()] = it.value().get<std::string>();
  std::vector<io::tensor_entry> entries;
  for (auto it = root.begin(); it != root.end(); ++it) {
    if (it.key() == "__metadata__") continue;
    io::tensor_entry e;
    e.name = it.key();
    e.type = io::dtype_from_safetensors_name(it.value()["dtype"].get<std::string>());
    e.shape = it.value()["shape"].get<std::vector<std::int64_t>>();
    e.begin = it.value()["data_offsets"][0].get<std::uint64_t>();
    e.end = it.value()["data_offsets"][1].get<std::uint64_t>();
    entries.push_back(e);
  }
  std::vector<const io::tensor_entry*> refs;
  for (const auto& e : entries) refs.push_back(&e);
  char hex[9];
  std::snprintf(hex, sizeof hex, "%08x", io::header_checksum(meta, refs));
  root["__metadata__"]["header_crc32"] = hex;
  std::string json = root.dump();
  while ((8 + json.size()) % 8) json.push_back(' ');
  std::vector<unsigned char> out(8 + json.size() + data.size());
  io::detail::store_le64(json.size(), out.data());
  std::memcpy(out.data() + 8, json.data(), json.size());
  if (!data.empty()) std::memcpy(out.data() + 8 + json.size(), data.data(), data.size());
  return out;
}

/// Sets metadata "crc32/<key>" to the checksum of the tensor's bytes in `data`.
inline void refresh_crc(nlohmann::json& root, const std::vector<unsigned char>& data, const std::string& key) {
  const auto& off = root[key]["data_offsets"];
  const std::uint64_t b = off[0].get<std::uint64_t>(), e = off[1].get<std::uint64_t>();
  char hex[9];
  std::snprintf(hex, sizeof hex, "%08x", io::crc32_of(data.data() + b, e - b));
  root["__metadata__"]["crc32/" + key] = hex;
}

}  // namespace io_test
