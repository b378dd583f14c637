// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// The safetensors container: an 8-byte little-endian header length n, n bytes
// of JSON, then the raw tensor bytes. The JSON maps each tensor name to
// {"dtype", "shape", "data_offsets": [begin, end]} (offsets into the data
// section) and may hold "__metadata__", a string -> string map.
//
// Parsing trusts nothing: every number is range-checked in 64 bits, tensors
// must tile the data section exactly (no gap, no overlap, no trailing byte,
// as the reference Rust implementation requires), duplicate keys are refused
// (JSON parsers silently keep the last one) and nesting is bounded. Everything
// here is independent of optimizer configurations; io/checkpoint.hpp gives the
// entries their meaning.
#pragma once

#include <algorithm>
#include <cinttypes>
#include <cstdint>
#include <cstring>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "flashoptim/format/dtype.hpp"
#include "flashoptim/status.hpp"

namespace flashoptim::io {

/// Largest JSON header accepted (the safetensors reference limit).
inline constexpr std::uint64_t max_header_bytes = 100'000'000;
/// Largest element count of one tensor or one dimension: products stay far
/// from 2^63 so byte counts never overflow.
inline constexpr std::uint64_t max_elements = std::uint64_t{1} << 56;

/// safetensors' dtype names for the element types the library stores.
inline const char* safetensors_dtype_name(dtype t) {
  switch (t) {
    case dtype::f32: return "F32";
    case dtype::bf16: return "BF16";
    case dtype::f16: return "F16";
    case dtype::f8_e4m3: return "F8_E4M3";
    case dtype::f8_e5m2: return "F8_E5M2";
    case dtype::i8: return "I8";
    case dtype::u8: return "U8";
    case dtype::i16: return "I16";
    case dtype::u16: return "U16";
    case dtype::i32: return "I32";
    case dtype::u32: return "U32";
    case dtype::none:
    case dtype::user: break;
  }
  return nullptr;
}

/// dtype::none for a name the library does not store (F64, BOOL, ...).
inline dtype dtype_from_safetensors_name(const std::string& name) {
  for (dtype t : {dtype::f32, dtype::bf16, dtype::f16, dtype::f8_e4m3, dtype::f8_e5m2, dtype::i8, dtype::u8, dtype::i16,
                  dtype::u16, dtype::i32, dtype::u32}) {
    if (name == safetensors_dtype_name(t)) return t;
  }
  return dtype::none;
}

/// One tensor of a safetensors file.
struct tensor_entry {
  std::string name;
  dtype type = dtype::none;
  std::vector<std::int64_t> shape;
  std::uint64_t begin = 0;  ///< byte offsets into the data section
  std::uint64_t end = 0;
  std::int64_t elements() const {
    std::int64_t n = 1;
    for (std::int64_t d : shape) n *= d;
    return n;
  }
  std::uint64_t bytes() const { return end - begin; }
};

/// A parsed header: the metadata, the tensors (in data order) and where the
/// data section lies in the file.
struct safetensors_header {
  std::map<std::string, std::string> metadata;
  std::vector<tensor_entry> tensors;
  std::uint64_t data_offset = 0;  ///< file offset of the data section (8 + header length)
  std::uint64_t data_size = 0;

  const tensor_entry* find(const std::string& name) const {
    for (const auto& t : tensors)
      if (t.name == name) return &t;
    return nullptr;
  }
};

namespace detail {

inline std::uint64_t load_le64(const unsigned char* p) {
  std::uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

inline void store_le64(std::uint64_t v, unsigned char* p) {
  for (int i = 0; i < 8; ++i) p[i] = static_cast<unsigned char>(v >> (8 * i));
}

/// Thrown from the parser callback to stop on structure no header has.
struct header_rejected {
  const char* why;
};

/// A JSON integer in [0, limit] as uint64, or false.
inline bool json_to_u64(const nlohmann::json& j, std::uint64_t limit, std::uint64_t& out) {
  if (j.is_number_unsigned()) {
    out = j.get<std::uint64_t>();
  } else if (j.is_number_integer()) {
    const std::int64_t v = j.get<std::int64_t>();
    if (v < 0) return false;
    out = static_cast<std::uint64_t>(v);
  } else {
    return false;
  }
  return out <= limit;
}

inline status parse_entry(const std::string& name, const nlohmann::json& v, std::uint64_t data_size,
                          tensor_entry& e) {
  const char* n = name.c_str();
  if (!v.is_object()) return status(status_code::corrupt_file, "tensor '%.80s': entry is not an object", n);
  for (auto it = v.begin(); it != v.end(); ++it) {
    if (it.key() != "dtype" && it.key() != "shape" && it.key() != "data_offsets")
      return status(status_code::corrupt_file, "tensor '%.80s': unknown field '%.40s'", n, it.key().c_str());
  }
  const auto dt = v.find("dtype");
  const auto sh = v.find("shape");
  const auto off = v.find("data_offsets");
  if (dt == v.end() || sh == v.end() || off == v.end())
    return status(status_code::corrupt_file, "tensor '%.80s': needs dtype, shape and data_offsets", n);
  if (!dt->is_string()) return status(status_code::corrupt_file, "tensor '%.80s': dtype is not a string", n);
  e.name = name;
  e.type = dtype_from_safetensors_name(dt->get_ref<const std::string&>());
  if (e.type == dtype::none)
    return status(status_code::dtype_mismatch, "tensor '%.80s': unsupported dtype '%.20s'", n,
                  dt->get_ref<const std::string&>().c_str());
  if (!sh->is_array() || sh->size() > 16)
    return status(status_code::corrupt_file, "tensor '%.80s': shape is not an array of at most 16 dimensions", n);
  std::uint64_t elements = 1;
  for (const auto& d : *sh) {
    std::uint64_t dim = 0;
    if (!json_to_u64(d, max_elements, dim))
      return status(status_code::corrupt_file, "tensor '%.80s': a dimension is not an integer in [0, 2^56]", n);
    e.shape.push_back(static_cast<std::int64_t>(dim));
    // Both factors are <= 2^56 and the product is checked before it grows:
    // elements stays <= 2^56, so elements * dim cannot wrap.
    if (dim != 0 && elements > max_elements / dim)
      return status(status_code::corrupt_file, "tensor '%.80s': more than 2^56 elements", n);
    elements *= dim;
  }
  if (!off->is_array() || off->size() != 2 || !json_to_u64((*off)[0], data_size, e.begin) ||
      !json_to_u64((*off)[1], data_size, e.end))
    return status(status_code::corrupt_file,
                  "tensor '%.80s': data_offsets must be two integers within the %" PRIu64 "-byte data section", n,
                  data_size);
  if (e.begin > e.end) return status(status_code::corrupt_file, "tensor '%.80s': data_offsets are reversed", n);
  const std::uint64_t want = elements * size_of(e.type);  // <= 2^56 * 4
  if (e.end - e.begin != want)
    return status(status_code::size_mismatch, "tensor '%.80s': %" PRIu64 " bytes for %" PRIu64 " %s elements", n,
                  e.end - e.begin, elements, to_string(e.type));
  return status();
}

}  // namespace detail

/// Parses and validates the header of a safetensors image of `size` bytes.
/// Only the header is read; tensor bytes are located, not inspected.
inline status parse_safetensors(const unsigned char* bytes, std::uint64_t size, safetensors_header& out) {
  if (bytes == nullptr && size != 0) return status(status_code::null_pointer, "file image is null");
  if (size < 8) return status(status_code::corrupt_file, "%" PRIu64 " bytes: too short for a header length", size);
  const std::uint64_t n = detail::load_le64(bytes);
  if (n < 2 || n > max_header_bytes || n > size - 8)
    return status(status_code::corrupt_file, "header length %" PRIu64 " does not fit a %" PRIu64 "-byte file", n, size);
  // JSON text never holds a raw NUL, and nlohmann's lexer would stop at one
  // and ignore the rest of the header.
  if (std::memchr(bytes + 8, 0, static_cast<std::size_t>(n)) != nullptr)
    return status(status_code::corrupt_file, "header contains a NUL byte");
  safetensors_header h;
  h.data_offset = 8 + n;
  h.data_size = size - h.data_offset;

  nlohmann::json root;
  try {
    // Keys of each open object, to refuse duplicates; depth bounds nesting
    // (a checkpoint header is three levels deep).
    std::vector<std::set<std::string>> keys;
    const nlohmann::json::parser_callback_t cb = [&keys](int depth, nlohmann::json::parse_event_t event,
                                                         nlohmann::json& parsed) {
      if (depth > 4) throw detail::header_rejected{"nesting deeper than 4 levels"};
      if (event == nlohmann::json::parse_event_t::object_start) keys.emplace_back();
      if (event == nlohmann::json::parse_event_t::object_end && !keys.empty()) keys.pop_back();
      if (event == nlohmann::json::parse_event_t::key && !keys.empty() &&
          !keys.back().insert(parsed.get<std::string>()).second)
        throw detail::header_rejected{"a key appears twice in one object"};
      return true;
    };
    const char* first = reinterpret_cast<const char*>(bytes + 8);
    root = nlohmann::json::parse(first, first + n, cb, /*allow_exceptions=*/true);
  } catch (const detail::header_rejected& r) {
    return status(status_code::corrupt_file, "header JSON: %s", r.why);
  } catch (const nlohmann::json::exception& e) {
    return status(status_code::corrupt_file, "header is not valid JSON (%.160s)", e.what());
  }
  if (!root.is_object()) return status(status_code::corrupt_file, "header JSON is not an object");

  for (auto it = root.begin(); it != root.end(); ++it) {
    if (it.key() == "__metadata__") {
      if (!it.value().is_object()) return status(status_code::corrupt_file, "__metadata__ is not an object");
      for (auto m = it.value().begin(); m != it.value().end(); ++m) {
        if (!m.value().is_string())
          return status(status_code::corrupt_file, "__metadata__['%.80s'] is not a string", m.key().c_str());
        h.metadata.emplace(m.key(), m.value().get<std::string>());
      }
      continue;
    }
    tensor_entry e;
    FLASHOPTIM_RETURN_IF_ERROR(detail::parse_entry(it.key(), it.value(), h.data_size, e));
    h.tensors.push_back(std::move(e));
  }

  std::sort(h.tensors.begin(), h.tensors.end(), [](const tensor_entry& a, const tensor_entry& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  std::uint64_t expected = 0;
  for (const auto& t : h.tensors) {
    if (t.begin != expected)
      return status(status_code::corrupt_file, "tensor '%.80s' starts at byte %" PRIu64 ", expected %" PRIu64
                    " (tensors must tile the data section)", t.name.c_str(), t.begin, expected);
    expected = t.end;
  }
  if (expected != h.data_size)
    return status(status_code::corrupt_file, "data section has %" PRIu64 " bytes, tensors cover %" PRIu64,
                  h.data_size, expected);
  out = std::move(h);
  return status();
}

/// A tensor to be written: name, dtype and shape; offsets are assigned by
/// plan_safetensors.
struct tensor_spec {
  std::string name;
  dtype type = dtype::none;
  std::vector<std::int64_t> shape;
};

/// Orders tensors as the safetensors Python writer does (wider elements
/// first, then by name) so every tensor starts aligned to its element size,
/// and assigns offsets. Returns the entries in data order.
inline std::vector<tensor_entry> plan_safetensors(std::vector<tensor_spec> specs) {
  std::stable_sort(specs.begin(), specs.end(), [](const tensor_spec& a, const tensor_spec& b) {
    const std::size_t sa = size_of(a.type), sb = size_of(b.type);
    return sa != sb ? sa > sb : a.name < b.name;
  });
  std::vector<tensor_entry> out;
  std::uint64_t offset = 0;
  for (auto& s : specs) {
    tensor_entry e;
    e.name = std::move(s.name);
    e.type = s.type;
    e.shape = std::move(s.shape);
    e.begin = offset;
    offset += static_cast<std::uint64_t>(e.elements()) * size_of(e.type);
    e.end = offset;
    out.push_back(std::move(e));
  }
  return out;
}

/// Serializes a header: the 8-byte length, the JSON, and spaces up to a
/// multiple of 8 bytes so the data section starts aligned. Fails with
/// invalid_argument when a name or value is not valid UTF-8.
inline status serialize_safetensors_header(const std::map<std::string, std::string>& metadata,
                                           const std::vector<tensor_entry>& tensors, std::string& out) {
  try {
    nlohmann::json root = nlohmann::json::object();
    if (!metadata.empty()) {
      nlohmann::json m = nlohmann::json::object();
      for (const auto& kv : metadata) m[kv.first] = kv.second;
      root["__metadata__"] = std::move(m);
    }
    for (const auto& t : tensors) {
      nlohmann::json e = nlohmann::json::object();
      e["dtype"] = safetensors_dtype_name(t.type);
      e["shape"] = t.shape;
      e["data_offsets"] = {t.begin, t.end};
      root[t.name] = std::move(e);
    }
    std::string json = root.dump(-1, ' ', false, nlohmann::json::error_handler_t::strict);
    while ((8 + json.size()) % 8 != 0) json.push_back(' ');
    out.assign(8, '\0');
    detail::store_le64(json.size(), reinterpret_cast<unsigned char*>(&out[0]));
    out += json;
  } catch (const nlohmann::json::exception& e) {
    return status(status_code::invalid_argument, "cannot write header (%.160s)", e.what());
  }
  return status();
}

}  // namespace flashoptim::io
