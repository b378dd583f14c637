// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// Checkpoints of a list of tensors' parameters and optimizer state, as
// safetensors files that Python's `safetensors` package reads.
//
//   io::save_checkpoint<Config>(path, hyper, step, tensors, names, count, {form})
//   io::load_checkpoint<Config>(path, hyper, step, tensors, names, count, {options})
//   io::save_optimizer<Config>(path, hypers, groups, tensor_group, step, tensors, names, count, {form})
//   io::load_optimizer<Config>(path, hypers, tensor_group, step, tensors, names, count, {options})
//
// The *_optimizer pair saves a whole optimizer: parameter groups, each with
// its own hyperparameters, tensor i in group tensor_group[i] (format version
// 3, below). save_checkpoint still writes version 2, byte for byte as before.
//
// Three forms (docs/io.md has the byte counts):
//   compressed  everything as stored: parameter, correction, codes, scales.
//               Loading it back is bit-exact; a resumed run is bit-identical.
//   state16     parameter and correction as stored, each state decoded and
//               rounded to bf16 (bf16, not fp16: fp16 flushes second moments
//               below 6e-8 to zero). Loading re-encodes the states.
//   fp32        the export: reconstructed fp32 master weights and decoded fp32
//               states. Loading (the import) re-splits the weights and
//               re-quantizes the states with the loading configuration's own
//               master mode and codecs: the way to move between precisions.
//
// Tensor names: for a tensor called N and a rule state K (exp_avg,
// exp_avg_sq, momentum_buffer: the reference implementation's state keys)
//   N                   the parameter (fp32 master weights in the fp32 form)
//   N::error_bits       ulp_correction's int8/int16 correction (reference name)
//   N::low_bits         exact_split's lower 16 bits;  N::master  fp32_master's copy
//   N::low_byte         rounded_split's int8 remainder
//   N::K::quantized     grouped codes;  N::K::scales  one scale per group
//   N::K                a plain state, or any state in the state16/fp32 forms
// so "N::..." minus the prefix is the per-parameter state dict of the
// reference, and N alone is the model's state dict entry.
//
// Metadata ("__metadata__") records the library version, form, rule,
// hyperparameters (JSON), step, master mode, codecs (with scale format and
// group size), tensor names, seeds and index bases, a zlib crc32 per tensor and one over
// the header itself. Loading refuses any file that does not match the
// configuration it loads into, naming what differs.
//
// Safety. Saving writes a temporary file, fsyncs, renames and fsyncs the
// directory (io/file.hpp): a crash never leaves a broken file under the final
// name. Loading refuses a path that is not a regular file (a FIFO is never
// waited on), reads the file into a staging buffer, checks every size,
// offset, dtype, shape, group count, checksum, the configuration and every
// stored value against its codec's domain (check_values), and only then
// copies into the caller's buffers: on any error nothing (buffers,
// hyperparameters, step) is written. The staging buffer costs as much memory
// as the file. Nothing throws; every failure is a status with a message.
//
// Hyperparameters: saved as given. On load, `hyper_policy::restore` (the
// default) replaces the caller's hyperparameters with the file's, which are
// validated by the rule first; `require_equal` refuses a file whose values
// differ (naming the first field); `keep` ignores them.
// Step: the number of completed steps; the next step's step_args.step is
// step + 1. Host code only: GPU users copy state to host buffers first.
#pragma once

#include <cinttypes>
#include <cstdint>
#include <cstring>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <zlib.h>

#include "flashoptim/codec/bulk.hpp"
#include "flashoptim/io/describe.hpp"
#include "flashoptim/io/file.hpp"
#include "flashoptim/io/safetensors.hpp"
#include "flashoptim/rule/step_args.hpp"
#include "flashoptim/rule/tensor.hpp"
#include "flashoptim/rule/tile.hpp"
#include "flashoptim/version.hpp"

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "safetensors files are little-endian");

namespace flashoptim::io {

enum class form : int { compressed, state16, fp32 };

inline const char* to_string(form f) {
  switch (f) {
    case form::compressed: return "compressed";
    case form::state16: return "state16";
    case form::fp32: return "fp32";
  }
  return "unknown";
}

/// What load_checkpoint does with the file's hyperparameters.
enum class hyper_policy : int {
  restore,        ///< overwrite the caller's with the file's (validated) values
  require_equal,  ///< refuse the file when any field differs
  keep,           ///< leave the caller's untouched
};

struct save_options {
  io::form form = io::form::compressed;
  /// Optional: `count` shapes, one per tensor (product = tensor size), so
  /// readers see the parameters' real shapes. Null: 1-D tensors.
  const std::vector<std::int64_t>* shapes = nullptr;
  /// Optional: the FP8 copy the optimizer writes (optim::fp8_form::json(),
  /// docs/fp8-params.md), stored as metadata "fp8_params" so that readers
  /// know the model's weights are FP8 with block scales. It must be a JSON
  /// object; it adds no tensor and changes no byte (the copy is a function
  /// of the master and is re-derived after a load), so the format version
  /// does not move. cpu::save and device::save fill it from the optimizer.
  std::string fp8_params;
};

struct load_options {
  hyper_policy hyper = hyper_policy::restore;
  /// With a stochastic-rounding codec, the tensors' seeds and index bases
  /// must equal the recorded ones (else the resumed run draws other bits).
  bool check_seeds = true;
  /// Optional: `count` shapes that the file's must equal. Null: sizes only.
  const std::vector<std::int64_t>* shapes = nullptr;
  /// Files larger than this are refused before being staged.
  std::uint64_t max_file_bytes = std::uint64_t{1} << 62;
};

/// The metadata schema written. Version 2 (library 0.2) names state slots
/// past the second (AMSGrad's max_exp_avg_sq) and records `maximize` when
/// set; for every configuration version 1 could hold, its keys, metadata and
/// bytes are version 1's, so version-1 files load unchanged. save_checkpoint
/// writes version 2.
///
/// Version 3 (save_optimizer) is version 2 with parameter groups: metadata
/// "param_groups" (a JSON list, one hyperparameter object per group, each
/// what "hyper" holds) and "tensor_groups" (a JSON list of group indices, one
/// per entry of "tensors", in that order) replace "hyper"; tensors and their
/// bytes are unchanged. It is a new version so that a reader that knows only
/// one hyperparameter set refuses the file instead of ignoring the groups.
/// Loading refuses any other version.
inline constexpr const char* format_name = "flashoptim.checkpoint";
inline constexpr const char* format_version = "2";
inline constexpr const char* grouped_format_version = "3";
/// Versions this library reads.
inline bool readable_format_version(const std::string& v) { return v == "1" || v == "2" || v == "3"; }
/// Most parameter groups a file may have: group indices are int32, and the
/// bound keeps the header (about 150 bytes a group) far below the 100 MB that
/// safetensors readers accept.
inline constexpr std::size_t max_param_groups = std::size_t{1} << 20;

/// crc32 (zlib) of a byte range, 64-bit lengths.
inline std::uint32_t crc32_of(const void* data, std::uint64_t bytes, std::uint32_t crc = 0) {
  const auto* p = static_cast<const unsigned char*>(data);
  uLong c = crc;
  while (bytes > 0) {
    const std::uint64_t n = bytes < (std::uint64_t{1} << 30) ? bytes : (std::uint64_t{1} << 30);
    c = ::crc32_z(c, p, static_cast<z_size_t>(n));
    p += n;
    bytes -= n;
  }
  return static_cast<std::uint32_t>(c);
}

/// The checksum stored as metadata "header_crc32": crc32 over the metadata
/// (except that key), sorted by key, as key\0value\0, then over the tensors,
/// sorted by name, as name\0DTYPE\0d0,d1,...\0begin\0end\0. It makes any
/// change to the header (a digit of the step or of a hyperparameter) an error.
inline std::uint32_t header_checksum(const std::map<std::string, std::string>& metadata,
                                     std::vector<const tensor_entry*> tensors) {
  std::string s;
  for (const auto& kv : metadata) {
    if (kv.first == "header_crc32") continue;
    s += kv.first;
    s.push_back('\0');
    s += kv.second;
    s.push_back('\0');
  }
  std::sort(tensors.begin(), tensors.end(), [](const tensor_entry* a, const tensor_entry* b) { return a->name < b->name; });
  for (const tensor_entry* t : tensors) {
    s += t->name;
    s.push_back('\0');
    const char* type = safetensors_dtype_name(t->type);
    s += type ? type : "?";
    s.push_back('\0');
    for (std::size_t d = 0; d < t->shape.size(); ++d) {
      if (d) s.push_back(',');
      s += std::to_string(t->shape[d]);
    }
    s.push_back('\0');
    s += std::to_string(t->begin);
    s.push_back('\0');
    s += std::to_string(t->end);
    s.push_back('\0');
  }
  return crc32_of(s.data(), s.size());
}

namespace detail {

inline std::string hex8(std::uint32_t v) {
  char buf[9];
  std::snprintf(buf, sizeof buf, "%08x", v);
  return buf;
}

/// Strict parsers for metadata values: exactly the text the writer produces.
inline bool parse_hex8(const std::string& s, std::uint32_t& out) {
  if (s.size() != 8) return false;
  std::uint32_t v = 0;
  for (char c : s) {
    int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
    if (d < 0) return false;
    v = (v << 4) | static_cast<std::uint32_t>(d);
  }
  out = v;
  return true;
}
inline bool parse_decimal(const std::string& s, std::uint64_t limit, std::uint64_t& out) {
  if (s.empty() || s.size() > 20 || (s.size() > 1 && s[0] == '0')) return false;
  std::uint64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    const std::uint64_t d = static_cast<std::uint64_t>(c - '0');
    if (v > (limit - d) / 10) return false;
    v = v * 10 + d;
  }
  out = v;
  return true;
}

/// Which buffer of a tensor a file entry holds.
enum class role : int { param, aux, codes, scales, master_fp32, state_wide };

/// One entry of a checkpoint, tied to a tensor of the caller's list.
struct piece {
  std::string key;
  dtype type;
  std::vector<std::int64_t> shape;
  std::int64_t count;
  std::size_t tensor;
  role what;
  int slot = -1;  ///< the state slot of codes, scales and state_wide entries
};

/// Whether slot I of Config rounds stochastically.
template <class Config>
struct stochastic_slot {
  template <int I>
  struct slot : std::bool_constant<uses_stochastic_rounding<typename Config::template state<I>>> {};
};

/// Calls f(slot_index<I>{}) for the slot I == slot of a configuration.
template <class Config, class F>
void with_slot(int slot, F&& f) {
  for_each_slot<Config::num_slots>([&](auto s) {
    if (decltype(s)::value == slot) f(s);
  });
}

/// Slots described in a file's metadata: every slot of the rule, and at
/// least state0 and state1 (version-1 files always named two; slots past
/// the rule's are codec::none).
template <class Config>
inline constexpr int described_slots = Config::num_slots > 2 ? Config::num_slots : 2;

template <class Config, int Slot>
struct slot {
  using codec_type = typename Config::template state<Slot>;
  static auto* codes(const tensor_ref<Config>& t) { return slot_at<Slot>(t.states).codes; }
  static auto* scales(const tensor_ref<Config>& t) { return slot_at<Slot>(t.states).scales; }
};

inline std::vector<std::int64_t> flat_shape(std::int64_t n) { return {n}; }

/// The entries of every tensor under a form, in list order.
template <class Config>
std::vector<piece> plan_pieces(form f, const tensor_ref<Config>* tensors, const std::string* names, std::size_t count,
                               const std::vector<std::int64_t>* shapes) {
  using C = Config;
  std::vector<piece> out;
  const dtype wide = f == form::fp32 ? dtype::f32 : dtype::bf16;
  for (std::size_t i = 0; i < count; ++i) {
    const std::int64_t n = tensors[i].size;
    const auto shape = shapes ? shapes[i] : flat_shape(n);
    const std::string& name = names[i];
    if (f == form::fp32) {
      out.push_back({name, dtype::f32, shape, n, i, role::master_fp32});
    } else {
      out.push_back({name, dtype_v<typename C::param_type>, shape, n, i, role::param});
      if constexpr (C::has_aux)
        out.push_back({name + "::" + aux_key<typename C::master>(), dtype_v<typename C::aux_type>, shape, n, i,
                       role::aux});
    }
    for_each_slot<C::num_slots>([&](auto s) {
      constexpr int index = decltype(s)::value;
      using S = typename slot<C, index>::codec_type;
      if constexpr (S::stores_state) {
        const std::string key = name + "::" + rule_io<typename C::rule>::state_names[index];
        if (f != form::compressed) {
          out.push_back({key, wide, shape, n, i, role::state_wide, index});
        } else if constexpr (codec::is_grouped<S>::value) {
          out.push_back({key + "::quantized", dtype_v<typename S::code_type>, shape, n, i, role::codes, index});
          const std::int64_t groups = codec::scale_count<S>(n);
          out.push_back({key + "::scales", dtype_v<typename S::scale_type>, flat_shape(groups), groups, i,
                         role::scales, index});
        } else {
          out.push_back({key, dtype_v<typename S::code_type>, shape, n, i, role::codes, index});
        }
      }
    });
  }
  return out;
}

/// Address of a stored buffer (raw roles only).
template <class Config>
unsigned char* raw_buffer(const tensor_ref<Config>& t, const piece& p) {
  unsigned char* out = nullptr;
  switch (p.what) {
    case role::param: return reinterpret_cast<unsigned char*>(t.param);
    case role::aux: return reinterpret_cast<unsigned char*>(t.aux);
    case role::codes:
    case role::scales:
      with_slot<Config>(p.slot, [&](auto s) {
        const auto& r = slot_at<decltype(s)::value>(t.states);
        out = p.what == role::codes ? reinterpret_cast<unsigned char*>(r.codes)
                                    : reinterpret_cast<unsigned char*>(r.scales);
      });
      return out;
    default: return nullptr;
  }
}

inline bool is_raw(role r) { return r != role::master_fp32 && r != role::state_wide; }

/// Elements converted per chunk: a multiple of every group size.
inline constexpr std::int64_t chunk_elements = std::int64_t{1} << 18;

/// Decoded values of elements [b, b + n) of a state slot.
template <class Config, int Slot>
void decode_state(const tensor_ref<Config>& t, std::int64_t b, std::int64_t n, float* out) {
  using S = typename slot<Config, Slot>::codec_type;
  if constexpr (S::stores_state) {
    typename S::scale_type* scales = nullptr;
    if constexpr (codec::is_grouped<S>::value) scales = slot<Config, Slot>::scales(t) + b / S::group_size;
    (void)codec::dequantize<S>(slot<Config, Slot>::codes(t) + b, scales, n, out);
  }
}

/// Encodes elements [b, b + n) of a state slot as a step at `step` would.
template <class Config, int Slot>
void encode_state(const tensor_ref<Config>& t, std::int64_t b, std::int64_t n, const float* in, std::int64_t step) {
  using S = typename slot<Config, Slot>::codec_type;
  if constexpr (S::stores_state) {
    typename S::scale_type* scales = nullptr;
    if constexpr (codec::is_grouped<S>::value) scales = slot<Config, Slot>::scales(t) + b / S::group_size;
    const codec::rounding_key key{t.seed ^ flashoptim::detail::slot_salt_of(Slot), static_cast<std::uint64_t>(step),
                                  t.index_base + static_cast<std::uint64_t>(b)};
    (void)codec::quantize<S>(in, n, slot<Config, Slot>::codes(t) + b, scales, key);
  }
}

template <class Config>
status validate_names(const tensor_ref<Config>* tensors, const std::string* names, std::size_t count,
                      const std::vector<std::int64_t>* shapes) {
  if (count > 0 && (tensors == nullptr || names == nullptr))
    return status(status_code::null_pointer, "tensor or name list is null for %zu tensors", count);
  std::set<std::string> seen;
  for (std::size_t i = 0; i < count; ++i) {
    const std::string& n = names[i];
    if (n.empty() || n == "__metadata__" || n.find("::") != std::string::npos)
      return status(status_code::invalid_argument,
                    "tensor %zu: name '%.80s' must be non-empty, not __metadata__ and without '::'", i, n.c_str());
    if (!seen.insert(n).second)
      return status(status_code::invalid_argument, "tensor %zu: name '%.80s' appears twice", i, n.c_str());
    if (shapes) {
      std::int64_t product = 1;
      for (std::int64_t d : shapes[i]) {
        if (d < 0 || (d != 0 && product > static_cast<std::int64_t>(max_elements) / d))
          return status(status_code::invalid_argument, "tensor '%.80s': shape has a negative or huge dimension",
                        n.c_str());
        product *= d;
      }
      if (product != tensors[i].size)
        return status(status_code::size_mismatch, "tensor '%.80s': shape has %" PRId64 " elements, tensor %" PRId64,
                      n.c_str(), product, tensors[i].size);
    }
    if (tensors[i].size > static_cast<std::int64_t>(max_elements))
      return status(status_code::size_mismatch, "tensor '%.80s': %" PRId64 " elements exceed 2^56", n.c_str(),
                    tensors[i].size);
    FLASHOPTIM_RETURN_IF_ERROR(validate_tensor(i, tensors[i], /*with_grad=*/false));
  }
  return status();
}

template <class Config>
std::map<std::string, std::string> config_metadata(form f) {
  using C = Config;
  using R = rule_io<typename C::rule>;
  std::map<std::string, std::string> m;
  m["format"] = format_name;
  m["format_version"] = format_version;
  m["library_version"] = version_string;
  m["form"] = to_string(f);
  m["rule"] = C::rule::name;
  m["master"] = describe_master<typename C::master>();
  m["param_dtype"] = to_string(dtype_v<typename C::param_type>);
  m["grad_dtype"] = to_string(dtype_v<typename C::grad_type>);
  m["group_size"] = std::to_string(C::group_size);
  auto slot_meta = [&](const char* prefix, auto slot_tag, const char* key) {
    using S = typename decltype(slot_tag)::codec_type;
    m[prefix] = describe_codec<S>();
    m[std::string(prefix) + ".key"] = S::stores_state && key ? key : "";
    if constexpr (codec::is_grouped<S>::value) {
      m[std::string(prefix) + ".scale"] = S::scale_format::name;
    } else {
      m[std::string(prefix) + ".scale"] = "none";
    }
    m[std::string(prefix) + ".group_size"] = std::to_string(S::group_size);
  };
  for_each_slot<described_slots<C>>([&](auto s) {
    constexpr int I = decltype(s)::value;
    slot_meta(slot_code_name(I), slot<C, I>{}, I < C::num_slots ? R::state_names[I < C::num_slots ? I : 0] : nullptr);
  });
  return m;
}

/// Hyperparameters with a `maximize` flag (every rule of the library).
/// It is stored only when set, so files of runs that descend keep the
/// version-1 "hyper" text, and a file without it descends.
template <class H, class = void>
struct has_maximize : std::false_type {};
template <class H>
struct has_maximize<H, std::void_t<decltype(std::declval<H&>().maximize)>> : std::true_type {};

template <class Config>
std::string hyper_json(const typename Config::hyper& h) {
  nlohmann::json j = nlohmann::json::object();
  auto copy = h;
  rule_io<typename Config::rule>::visit(copy, [&](const char* k, auto& v) { j[k] = v; });
  if constexpr (has_maximize<typename Config::hyper>::value) {
    if (h.maximize) j["maximize"] = true;
  }
  return j.dump();
}

/// One hyperparameter object of the metadata: "hyper" (group < 0) or entry
/// `group` of "param_groups". Every field, of the right JSON type, no other
/// field, then Rule::validate.
template <class Config>
status parse_hyper_value(const nlohmann::json& j, typename Config::hyper& out, long group = -1) {
  using Rule = typename Config::rule;
  char label[64];
  if (group < 0) std::snprintf(label, sizeof label, "metadata 'hyper'");
  else std::snprintf(label, sizeof label, "metadata 'param_groups' entry %ld", group);
  if (!j.is_object()) return status(status_code::corrupt_file, "%s is not a JSON object", label);
  typename Config::hyper h{};
  const char* bad = nullptr;
  std::size_t fields = 0;
  rule_io<Rule>::visit(h, [&](const char* k, auto& v) {
    ++fields;
    const auto it = j.find(k);
    using V = std::remove_reference_t<decltype(v)>;
    if (it == j.end()) {
      if (!bad) bad = k;
    } else if constexpr (std::is_same<V, bool>::value) {
      if (it->is_boolean()) v = it->template get<bool>(); else if (!bad) bad = k;
    } else {
      if (it->is_number()) v = it->template get<double>(); else if (!bad) bad = k;
    }
  });
  if constexpr (has_maximize<typename Config::hyper>::value) {
    const auto it = j.find("maximize");
    if (it != j.end()) {
      ++fields;
      if (it->is_boolean()) h.maximize = it->template get<bool>(); else if (!bad) bad = "maximize";
    }
  }
  if (bad) return status(status_code::corrupt_file, "%s: field '%s' missing or of the wrong type", label, bad);
  if (j.size() != fields)
    return status(status_code::config_mismatch, "%s has %zu fields, %s has %zu", label, j.size(), Rule::name, fields);
  const status v = Rule::validate(h);
  if (!v.ok() && group < 0)
    return status(status_code::corrupt_file, "hyperparameters in the file are invalid: %s", v.message());
  if (!v.ok())
    return status(status_code::corrupt_file, "hyperparameters of parameter group %ld in the file are invalid: %s",
                  group, v.message());
  out = h;
  return status();
}

template <class Config>
status parse_hyper(const std::string& text, typename Config::hyper& out) {
  return parse_hyper_value<Config>(nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false), out);
}

template <class Config>
status compare_hyper(const typename Config::hyper& file, const typename Config::hyper& expected) {
  auto a = file;
  auto b = expected;
  std::vector<std::pair<const char*, std::pair<double, double>>> values;
  rule_io<typename Config::rule>::visit(a, [&](const char* k, auto& v) { values.push_back({k, {double(v), 0.0}}); });
  std::size_t i = 0;
  rule_io<typename Config::rule>::visit(b, [&](const char*, auto& v) { values[i++].second.second = double(v); });
  if constexpr (has_maximize<typename Config::hyper>::value)
    values.push_back({"maximize", {double(file.maximize), double(expected.maximize)}});
  for (const auto& v : values) {
    if (v.second.first != v.second.second)
      return status(status_code::config_mismatch, "hyperparameter %s: file has %.17g, expected %.17g", v.first,
                    v.second.first, v.second.second);
  }
  return status();
}

inline const std::string* find_meta(const std::map<std::string, std::string>& m, const std::string& key) {
  const auto it = m.find(key);
  return it == m.end() ? nullptr : &it->second;
}

/// A metadata value that must equal the configuration's.
inline status require_meta(const std::map<std::string, std::string>& file, const std::map<std::string, std::string>& mine,
                           const char* key) {
  const std::string* f = find_meta(file, key);
  const std::string& want = mine.at(key);
  if (!f) return status(status_code::corrupt_file, "metadata '%s' is missing", key);
  if (*f != want)
    return status(status_code::config_mismatch, "%s: file has '%.90s', configuration has '%.90s'", key, f->c_str(),
                  want.c_str());
  return status();
}

// Semantic checks of stored values, after the checksums and before anything
// is written. A checksum proves the bytes are the ones that were written, not
// that the writer (a bug, a converter, a crafted file) wrote values this
// configuration can hold. The rule for each value: refuse what the
// configuration's own encoders can never produce, accept everything they can,
// including what a state poisoned by a non-finite gradient legitimately holds
// (a sentinel code, a reference scale of inf, a NaN or inf plain state or
// master weight), so such a state still saves and loads. Each refusal names
// the entry and the element.

/// Scales of grouped codec S: never negative; +inf or NaN only where the
/// encoder itself stores one. The default codecs (fp32 scale over the finite
/// elements, non-finite elements as sentinels) store finite scales only; the
/// reference's fp16 scale is +inf for a group above 65504, and a code without
/// sentinel lets an inf element into the group max.
template <class S>
status check_scales(const unsigned char* bytes, std::int64_t count, const std::string& key) {
  using Scale = typename S::scale_format;
  using Code = typename S::code_format;
  const float inf = format::float_from_bits(0x7f800000u);
  const float nan = format::float_from_bits(format::canonical_nan_bits);
  const float largest = format::float_from_bits(0x7f7fffffu);
  // What the encoder stores for a finite group max that overflows the scale
  // format, and (without a sentinel) for an inf or NaN group max.
  const bool overflow_gives_inf = Scale::load(Scale::store(largest)) == inf;
  const bool inf_ok = overflow_gives_inf || (!Code::has_sentinel && Scale::load(Scale::store(inf)) == inf);
  const bool nan_ok = !Code::has_sentinel && format::is_nan(Scale::load(Scale::store(nan)));
  for (std::int64_t g = 0; g < count; ++g) {
    typename Scale::storage s;
    std::memcpy(&s, bytes + g * static_cast<std::int64_t>(sizeof(s)), sizeof(s));
    const float v = Scale::load(s);
    const char* why = format::is_nan(v) ? (nan_ok ? nullptr : "this codec never stores a NaN scale")
                      : v < 0.0f          ? "a scale is never negative"
                      : v == inf          ? (inf_ok ? nullptr : "this codec never stores an inf scale")
                                          : nullptr;
    if (why)
      return status(status_code::corrupt_file, "'%.100s' group %" PRId64 ": scale %g, but %s", key.c_str(), g,
                    static_cast<double>(v), why);
  }
  return status();
}

/// Codes of grouped codec S: the sentinel, or a code whose normalized value
/// lies in [-1, 1] (what quantizing any |y| <= 1 gives: int8 -128 without a
/// sentinel, fp8 inf or a NaN other than the sentinel, fp8 beyond 2^K are
/// not). For a never-negative state, no negative code (every compander maps
/// v >= 0 to a normalized value >= 0).
template <class S>
status check_codes(const unsigned char* bytes, std::int64_t count, const std::string& key, bool nonnegative) {
  using Code = typename S::code_format;
  for (std::int64_t i = 0; i < count; ++i) {
    typename Code::storage q;
    std::memcpy(&q, bytes + i * static_cast<std::int64_t>(sizeof(q)), sizeof(q));
    if (Code::is_sentinel(q)) continue;
    const float y = Code::value(q);
    if (!(y >= -1.0f && y <= 1.0f))
      return status(status_code::corrupt_file, "'%.100s' element %" PRId64 ": code of value %g is outside [-1, 1]",
                    key.c_str(), i, static_cast<double>(y));
    if (nonnegative && S::code_value(q) < 0.0f)
      return status(status_code::corrupt_file,
                    "'%.100s' element %" PRId64 ": negative code (%g) for a state that is never negative",
                    key.c_str(), i, static_cast<double>(y));
  }
  return status();
}

/// Values of a never-negative state (plain codes, state16 and fp32 forms):
/// >= 0, or NaN, the marker of an element a non-finite gradient poisoned.
template <class T>
status check_nonnegative(const unsigned char* bytes, std::int64_t count, const std::string& key) {
  for (std::int64_t i = 0; i < count; ++i) {
    T q;
    std::memcpy(&q, bytes + i * static_cast<std::int64_t>(sizeof(q)), sizeof(q));
    const float v = format::to_float(q);
    if (v < 0.0f)
      return status(status_code::corrupt_file, "'%.100s' element %" PRId64 ": %g, but this state is never negative",
                    key.c_str(), i, static_cast<double>(v));
  }
  return status();
}

template <class M>
struct is_ulp_correction : std::false_type {};
template <class T, class A>
struct is_ulp_correction<codec::ulp_correction<T, A>> : std::true_type {};

/// ulp_correction's corrections lie in [-M, M] (the encoder clamps e / h to
/// [-1, 1]); -M - 1 is never written. The other modes' aux values (exact_split's
/// low halves, rounded_split's remainders, fp32_master's copies) and every parameter and fp32 master
/// weight are in domain whatever their bits: a poisoned weight is NaN or inf.
template <class Master>
status check_corrections(const unsigned char* bytes, std::int64_t count, const std::string& key) {
  if constexpr (is_ulp_correction<Master>::value) {
    for (std::int64_t i = 0; i < count; ++i) {
      typename Master::aux_type c;
      std::memcpy(&c, bytes + i * static_cast<std::int64_t>(sizeof(c)), sizeof(c));
      if (c < -Master::max_code || c > Master::max_code)
        return status(status_code::corrupt_file, "'%.100s' element %" PRId64 ": correction %d is outside [-%d, %d]",
                      key.c_str(), i, static_cast<int>(c), Master::max_code, Master::max_code);
    }
  } else {
    (void)bytes, (void)count, (void)key;
  }
  return status();
}

/// The stored values of one state slot's entry (codes, scales or a wide form).
template <class Config, int Slot>
status check_slot_values(const piece& p, const unsigned char* bytes, const std::string& key) {
  using S = typename slot<Config, Slot>::codec_type;
  constexpr bool nonnegative = rule_state_domain<typename Config::rule>::nonnegative[Slot];
  if constexpr (S::stores_state) {
    const bool is_code = p.what == role::codes;
    const bool is_scale = p.what == role::scales;
    if constexpr (codec::is_grouped<S>::value) {
      if (is_scale) return check_scales<S>(bytes, p.count, key);
      if (is_code) return check_codes<S>(bytes, p.count, key, nonnegative);
    } else if constexpr (nonnegative) {
      if (is_code) return check_nonnegative<typename S::code_type>(bytes, p.count, key);
    }
    if constexpr (nonnegative) {
      if (p.what == role::state_wide)
        return p.type == dtype::bf16 ? check_nonnegative<bf16>(bytes, p.count, key)
                                     : check_nonnegative<float>(bytes, p.count, key);
    }
  }
  return status();
}

template <class Config>
status check_values(const piece& p, const unsigned char* bytes, const std::string& key) {
  switch (p.what) {
    case role::aux: return check_corrections<typename Config::master>(bytes, p.count, key);
    case role::codes:
    case role::scales:
    case role::state_wide: {
      status st;
      with_slot<Config>(p.slot, [&](auto s) { st = check_slot_values<Config, decltype(s)::value>(p, bytes, key); });
      return st;
    }
    default: return status();  // parameters and fp32 master weights: every value is one a run can hold
  }
}

/// save_optimizer's arguments, beyond save_checkpoint's: `groups` hypers,
/// tensor i in group tensor_group[i].
template <class Config>
status validate_groups(const typename Config::hyper* hypers, std::size_t groups, const std::int32_t* tensor_group,
                       const std::string* names, std::size_t count) {
  if (groups == 0) return status(status_code::invalid_argument, "an optimizer has at least one parameter group, got 0");
  if (groups > max_param_groups)
    return status(status_code::invalid_argument, "%zu parameter groups, at most %zu", groups, max_param_groups);
  if (hypers == nullptr) return status(status_code::null_pointer, "hyperparameters of %zu groups are null", groups);
  if (count > 0 && tensor_group == nullptr)
    return status(status_code::null_pointer, "tensor_group is null for %zu tensors", count);
  for (std::size_t g = 0; g < groups; ++g) {
    const status v = Config::rule::validate(hypers[g]);
    if (!v.ok()) return status(v.code(), "parameter group %zu: %s", g, v.message());
  }
  for (std::size_t i = 0; i < count; ++i) {
    if (tensor_group[i] < 0 || static_cast<std::size_t>(tensor_group[i]) >= groups)
      return status(status_code::invalid_argument, "tensor %zu ('%.80s'): group %d is outside [0, %zu)", i,
                    names ? names[i].c_str() : "", static_cast<int>(tensor_group[i]), groups);
  }
  return status();
}

/// save_checkpoint (grouped false: one hyper, version 2, metadata
/// "hyper") and save_optimizer (version 3, "param_groups", "tensor_groups").
template <class Config>
status save_image(const std::string& path, const typename Config::hyper* hypers, std::size_t groups,
                  const std::int32_t* tensor_group, bool grouped, std::int64_t step, const tensor_ref<Config>* tensors,
                  const std::string* names, std::size_t count, const save_options& options) {
  using C = Config;
  if (options.form != form::compressed && options.form != form::state16 && options.form != form::fp32)
    return status(status_code::invalid_argument, "unknown checkpoint form %d", static_cast<int>(options.form));
  if (step < 0) return status(status_code::invalid_argument, "step %" PRId64 " is negative", step);
  if (step == INT64_MAX)
    return status(status_code::invalid_argument, "step %" PRId64 " leaves no next step to resume at", step);
  if (grouped) {
    FLASHOPTIM_RETURN_IF_ERROR(validate_groups<C>(hypers, groups, tensor_group, names, count));
  } else {
    FLASHOPTIM_RETURN_IF_ERROR(C::rule::validate(hypers[0]));
  }
  FLASHOPTIM_RETURN_IF_ERROR(validate_names(tensors, names, count, options.shapes));

  try {
    const std::vector<piece> pieces = plan_pieces<C>(options.form, tensors, names, count, options.shapes);
    std::vector<tensor_spec> specs;
    std::map<std::string, std::size_t> by_key;
    for (std::size_t i = 0; i < pieces.size(); ++i) {
      specs.push_back({pieces[i].key, pieces[i].type, pieces[i].shape});
      by_key[pieces[i].key] = i;
    }
    const std::vector<tensor_entry> entries = plan_safetensors(std::move(specs));

    auto meta = config_metadata<C>(options.form);
    if (grouped) {
      // hyper_json's text, so each group reads exactly as a version-2 "hyper".
      std::string list = "[";
      for (std::size_t g = 0; g < groups; ++g) list += (g ? "," : "") + hyper_json<C>(hypers[g]);
      meta["param_groups"] = list + "]";
      nlohmann::json index = nlohmann::json::array();
      for (std::size_t i = 0; i < count; ++i) index.push_back(tensor_group[i]);
      meta["tensor_groups"] = index.dump();
      meta["format_version"] = grouped_format_version;
    } else {
      meta["hyper"] = hyper_json<C>(hypers[0]);
    }
    meta["step"] = std::to_string(step);
    if (!options.fp8_params.empty()) {
      const nlohmann::json j = nlohmann::json::parse(options.fp8_params, nullptr, /*allow_exceptions=*/false);
      if (!j.is_object())
        return status(status_code::invalid_argument, "save_options::fp8_params is not a JSON object: '%.80s'",
                      options.fp8_params.c_str());
      meta["fp8_params"] = options.fp8_params;  // as given (a reader's parser takes it as is)
    }
    nlohmann::json list = nlohmann::json::array(), seeds = nlohmann::json::array(), bases = nlohmann::json::array();
    for (std::size_t i = 0; i < count; ++i) {
      list.push_back(names[i]);
      seeds.push_back(std::to_string(tensors[i].seed));
      bases.push_back(std::to_string(tensors[i].index_base));
    }
    meta["tensors"] = list.dump(-1, ' ', false, nlohmann::json::error_handler_t::strict);
    meta["seeds"] = seeds.dump();
    meta["index_bases"] = bases.dump();
    for (const auto& e : entries) meta["crc32/" + e.name] = "00000000";
    meta["header_crc32"] = "00000000";

    std::string header;
    FLASHOPTIM_RETURN_IF_ERROR(serialize_safetensors_header(meta, entries, header));
    atomic_file_writer out;
    FLASHOPTIM_RETURN_IF_ERROR(out.open(path));
    FLASHOPTIM_RETURN_IF_ERROR(out.write(header.data(), header.size()));

    std::vector<float> values;
    std::vector<unsigned char> bytes;
    for (const auto& e : entries) {
      const piece& p = pieces[by_key.at(e.name)];
      const tensor_ref<C>& t = tensors[p.tensor];
      std::uint32_t crc = 0;
      if (is_raw(p.what)) {
        const std::uint64_t n = e.bytes();
        const unsigned char* src = raw_buffer(t, p);
        crc = crc32_of(src, n);
        FLASHOPTIM_RETURN_IF_ERROR(out.write(src, n));
      } else {
        const std::size_t width = size_of(p.type);
        for (std::int64_t b = 0; b < p.count; b += chunk_elements) {
          const std::int64_t n = std::min(chunk_elements, p.count - b);
          values.resize(static_cast<std::size_t>(n));
          if (p.what == role::master_fp32) {
            typename C::aux_type* aux = nullptr;
            if constexpr (C::has_aux) aux = t.aux + b;
            (void)codec::reconstruct<typename C::master>(t.param + b, aux, n, values.data());
          } else {
            with_slot<C>(p.slot, [&](auto s) { decode_state<C, decltype(s)::value>(t, b, n, values.data()); });
          }
          bytes.resize(static_cast<std::size_t>(n) * width);
          if (p.type == dtype::bf16) {
            for (std::int64_t i = 0; i < n; ++i) {
              const bf16 v = format::from_float<bf16>(values[i]);
              std::memcpy(&bytes[static_cast<std::size_t>(i) * 2], &v, 2);
            }
          } else {
            std::memcpy(bytes.data(), values.data(), bytes.size());
          }
          crc = crc32_of(bytes.data(), bytes.size(), crc);
          FLASHOPTIM_RETURN_IF_ERROR(out.write(bytes.data(), bytes.size()));
        }
      }
      meta["crc32/" + e.name] = hex8(crc);
    }

    std::vector<const tensor_entry*> refs;
    for (const auto& e : entries) refs.push_back(&e);
    meta["header_crc32"] = hex8(header_checksum(meta, refs));
    std::string final_header;
    FLASHOPTIM_RETURN_IF_ERROR(serialize_safetensors_header(meta, entries, final_header));
    if (final_header.size() != header.size())
      return status(status_code::invalid_argument, "internal: header changed size when checksums were filled in");
    FLASHOPTIM_RETURN_IF_ERROR(out.write_at(0, final_header.data(), final_header.size()));
    return out.commit();
  } catch (const std::bad_alloc&) {
    return status(status_code::capacity_exceeded, "out of memory while writing '%.120s'", path.c_str());
  } catch (const std::exception& e) {
    return status(status_code::invalid_argument, "cannot write '%.100s': %.100s", path.c_str(), e.what());
  }
}

/// load_optimizer's tensor_group: one non-negative group index per tensor.
inline status validate_tensor_group(const std::int32_t* tensor_group, std::size_t count) {
  if (count > 0 && tensor_group == nullptr)
    return status(status_code::null_pointer, "tensor_group is null for %zu tensors", count);
  for (std::size_t i = 0; i < count; ++i)
    if (tensor_group[i] < 0)
      return status(status_code::invalid_argument, "tensor %zu: group %d is negative", i,
                    static_cast<int>(tensor_group[i]));
  return status();
}

/// Loads an image for load_checkpoint_bytes (optimizer false: the file
/// must have one group) and load_optimizer_bytes (optimizer true: the file's
/// tensor->group assignment must equal tensor_group). `current` (current_groups of them)
/// are the caller's hyperparameters, compared under require_equal. On
/// success writes the buffers and `step`, and leaves the file's
/// hyperparameters in `file_hypers` (the caller applies options.hyper);
/// on failure writes nothing.
template <class Config>
status load_image(const unsigned char* file, std::uint64_t size, bool optimizer, const std::int32_t* tensor_group,
                  const typename Config::hyper* current, std::size_t current_groups,
                  std::vector<typename Config::hyper>& file_hypers, std::int64_t& step,
                  const tensor_ref<Config>* tensors, const std::string* names, std::size_t count,
                  const load_options& options) {
  using C = Config;
  FLASHOPTIM_RETURN_IF_ERROR(validate_names(tensors, names, count, options.shapes));
  // The aliasing check of validate_tensor covers one tensor; loading also
  // writes every tensor, so buffers of different tensors must not overlap.
  {
    std::vector<std::pair<std::uintptr_t, std::uintptr_t>> spans;
    for (std::size_t i = 0; i < count; ++i) {
      const std::vector<piece> ps = plan_pieces<C>(form::compressed, tensors + i, names + i, 1, nullptr);
      for (const piece& p : ps) {
        const auto b = reinterpret_cast<std::uintptr_t>(raw_buffer(tensors[i], p));
        const std::uint64_t bytes = static_cast<std::uint64_t>(p.count) * size_of(p.type);
        if (bytes) spans.push_back({b, b + bytes});
      }
    }
    std::sort(spans.begin(), spans.end());
    for (std::size_t i = 1; i < spans.size(); ++i)
      if (spans[i].first < spans[i - 1].second)
        return status(status_code::aliasing, "two destination buffers of the tensor list overlap");
  }

  try {
    safetensors_header h;
    FLASHOPTIM_RETURN_IF_ERROR(parse_safetensors(file, size, h));
    const auto& fm = h.metadata;

    // The header checksum first: everything below reads the header.
    {
      const std::string* hc = find_meta(fm, "header_crc32");
      std::uint32_t stored = 0;
      if (!hc || !parse_hex8(*hc, stored))
        return status(status_code::corrupt_file, "metadata 'header_crc32' is missing or malformed");
      std::vector<const tensor_entry*> refs;
      for (const auto& e : h.tensors) refs.push_back(&e);
      const std::uint32_t actual = header_checksum(fm, refs);
      if (actual != stored)
        return status(status_code::corrupt_file, "header checksum %08x does not match the stored %08x", actual, stored);
    }
    const std::string* fmt = find_meta(fm, "format");
    if (!fmt || *fmt != format_name)
      return status(status_code::corrupt_file, "not a flashoptim checkpoint (metadata 'format' is '%.60s')",
                    fmt ? fmt->c_str() : "missing");
    const std::string* ver = find_meta(fm, "format_version");
    if (!ver || !readable_format_version(*ver))
      return status(status_code::not_supported,
                    "checkpoint format version '%.20s', this library reads versions 1, 2 and 3 (it writes 2, and 3 "
                    "with parameter groups)",
                    ver ? ver->c_str() : "missing");
    const bool grouped_file = *ver == grouped_format_version;
    const std::string* form_text = find_meta(fm, "form");
    form f;
    if (form_text && *form_text == "compressed") f = form::compressed;
    else if (form_text && *form_text == "state16") f = form::state16;
    else if (form_text && *form_text == "fp32") f = form::fp32;
    else return status(status_code::corrupt_file, "metadata 'form' is missing or unknown");

    // Configuration: what each form needs to match.
    const auto mine = config_metadata<C>(f);
    FLASHOPTIM_RETURN_IF_ERROR(require_meta(fm, mine, "rule"));
    if (f != form::fp32) FLASHOPTIM_RETURN_IF_ERROR(require_meta(fm, mine, "master"));
    if (f == form::compressed) {
      for (int i = 0; i < described_slots<C>; ++i) FLASHOPTIM_RETURN_IF_ERROR(require_meta(fm, mine, slot_code_name(i)));
      FLASHOPTIM_RETURN_IF_ERROR(require_meta(fm, mine, "group_size"));
    }
    for (int i = 0; i < described_slots<C>; ++i)
      FLASHOPTIM_RETURN_IF_ERROR(require_meta(fm, mine, (std::string(slot_code_name(i)) + ".key").c_str()));

    std::uint64_t file_step = 0;
    const std::string* step_text = find_meta(fm, "step");
    if (!step_text || !parse_decimal(*step_text, static_cast<std::uint64_t>(INT64_MAX), file_step))
      return status(status_code::corrupt_file, "metadata 'step' is missing or not a decimal count");
    // Hyperparameters: "hyper" (versions 1, 2: one group) or "param_groups"
    // (version 3); a file with both, or the wrong one, is refused.
    std::vector<typename C::hyper> hypers;
    const std::string* hyper_text = find_meta(fm, "hyper");
    const std::string* groups_text = find_meta(fm, "param_groups");
    const std::string* tensor_groups_text = find_meta(fm, "tensor_groups");
    if (!grouped_file) {
      if (groups_text || tensor_groups_text)
        return status(status_code::corrupt_file, "metadata 'param_groups'/'tensor_groups' in a version-%s file",
                      ver->c_str());
      if (!hyper_text) return status(status_code::corrupt_file, "metadata 'hyper' is missing");
      hypers.resize(1);
      FLASHOPTIM_RETURN_IF_ERROR(parse_hyper<C>(*hyper_text, hypers[0]));
    } else {
      if (hyper_text)
        return status(status_code::corrupt_file, "metadata 'hyper' in a version-3 file (it has 'param_groups')");
      if (!groups_text || !tensor_groups_text)
        return status(status_code::corrupt_file, "metadata 'param_groups' or 'tensor_groups' is missing");
      const nlohmann::json list = nlohmann::json::parse(*groups_text, nullptr, false);
      if (!list.is_array() || list.empty() || list.size() > max_param_groups)
        return status(status_code::corrupt_file, "metadata 'param_groups' is not a list of 1 to %zu groups",
                      max_param_groups);
      hypers.resize(list.size());
      for (std::size_t g = 0; g < list.size(); ++g)
        FLASHOPTIM_RETURN_IF_ERROR(parse_hyper_value<C>(list[g], hypers[g], static_cast<long>(g)));
    }
    if (!optimizer && hypers.size() != 1)
      return status(status_code::config_mismatch,
                    "the checkpoint was saved with %zu parameter groups: use load_optimizer", hypers.size());
    // The run resumes at step file_step + 1: that step must exist and pass the
    // rule's validation of hyperparameters and step arguments, the one every
    // step runs (parse_hyper ran Rule::validate already; this adds the step).
    if (file_step >= static_cast<std::uint64_t>(INT64_MAX))
      return status(status_code::corrupt_file, "metadata 'step' %" PRIu64 " leaves no next step", file_step);
    for (std::size_t g = 0; g < hypers.size(); ++g) {
      step_args next;
      next.step = static_cast<std::int64_t>(file_step) + 1;
      const status v = validate_step_args<C>(hypers[g], next);
      if (!v.ok() && !grouped_file)
        return status(status_code::corrupt_file, "the file's step or hyperparameters are invalid: %s", v.message());
      if (!v.ok())
        return status(status_code::corrupt_file, "the file's step or parameter group %zu are invalid: %s", g,
                      v.message());
    }
    // The caller's groups must be the file's where they are compared or kept.
    if (options.hyper != hyper_policy::restore && current_groups != hypers.size())
      return status(status_code::config_mismatch, "the file has %zu parameter groups, the optimizer %zu (hyper_policy::%s)",
                    hypers.size(), current_groups, options.hyper == hyper_policy::keep ? "keep" : "require_equal");
    if (options.hyper == hyper_policy::require_equal) {
      for (std::size_t g = 0; g < hypers.size(); ++g) {
        const status c = compare_hyper<C>(hypers[g], current[g]);
        if (!c.ok() && !optimizer) return c;
        if (!c.ok()) return status(c.code(), "parameter group %zu: %s", g, c.message());
      }
    }

    // Tensor list and seeds.
    const std::string* list_text = find_meta(fm, "tensors");
    const std::string* seeds_text = find_meta(fm, "seeds");
    const std::string* bases_text = find_meta(fm, "index_bases");
    if (!list_text || !seeds_text || !bases_text)
      return status(status_code::corrupt_file, "metadata 'tensors', 'seeds' or 'index_bases' is missing");
    const nlohmann::json list = nlohmann::json::parse(*list_text, nullptr, false);
    const nlohmann::json seeds = nlohmann::json::parse(*seeds_text, nullptr, false);
    const nlohmann::json bases = nlohmann::json::parse(*bases_text, nullptr, false);
    if (!list.is_array() || !seeds.is_array() || !bases.is_array() || list.size() != seeds.size() ||
        list.size() != bases.size())
      return status(status_code::corrupt_file, "metadata 'tensors', 'seeds', 'index_bases': arrays of one length");
    // Per tensor name: (seed, index_base), the stochastic-rounding stream.
    std::map<std::string, std::pair<std::uint64_t, std::uint64_t>> file_seeds;
    for (std::size_t i = 0; i < list.size(); ++i) {
      std::uint64_t seed = 0, base = 0;
      if (!list[i].is_string() || !seeds[i].is_string() || !bases[i].is_string() ||
          !parse_decimal(seeds[i].get<std::string>(), UINT64_MAX, seed) ||
          !parse_decimal(bases[i].get<std::string>(), UINT64_MAX, base) ||
          !file_seeds.emplace(list[i].get<std::string>(), std::make_pair(seed, base)).second)
        return status(status_code::corrupt_file, "metadata 'tensors'/'seeds'/'index_bases' entry %zu is malformed",
                      i);
    }
    // Per tensor name: its parameter group (0 in a file without groups).
    std::map<std::string, std::size_t> file_group;
    {
      nlohmann::json index = nlohmann::json::array();
      if (grouped_file) {
        index = nlohmann::json::parse(*tensor_groups_text, nullptr, false);
        if (!index.is_array() || index.size() != list.size())
          return status(status_code::corrupt_file, "metadata 'tensor_groups' is not a list of one index per tensor");
      }
      for (std::size_t i = 0; i < list.size(); ++i) {
        std::size_t g = 0;
        if (grouped_file) {
          if (!index[i].is_number_unsigned() || index[i].get<std::uint64_t>() >= hypers.size())
            return status(status_code::corrupt_file,
                          "metadata 'tensor_groups' entry %zu is not a group index below %zu", i, hypers.size());
          g = static_cast<std::size_t>(index[i].get<std::uint64_t>());
        }
        file_group[list[i].get<std::string>()] = g;
      }
    }
    const std::set<std::string> listed(names, names + count);
    for (std::size_t i = 0; i < count; ++i) {
      if (!file_seeds.count(names[i]))
        return status(status_code::config_mismatch, "tensor '%.80s' is not in the file", names[i].c_str());
    }
    for (const auto& kv : file_seeds) {
      if (!listed.count(kv.first))
        return status(status_code::config_mismatch, "the file has tensor '%.80s', which is not in the list",
                      kv.first.c_str());
    }
    if (optimizer) {
      for (std::size_t i = 0; i < count; ++i) {
        const std::size_t g = file_group[names[i]];
        if (g != static_cast<std::size_t>(tensor_group[i]))
          return status(status_code::config_mismatch,
                        "tensor '%.80s' is in parameter group %zu in the file, group %d in the optimizer",
                        names[i].c_str(), g, static_cast<int>(tensor_group[i]));
      }
    }
    constexpr bool stochastic = any_of_slots<C::num_slots, stochastic_slot<C>::template slot>;
    if (stochastic && options.check_seeds) {
      for (std::size_t i = 0; i < count; ++i) {
        const auto recorded = file_seeds[names[i]];
        if (recorded.first != tensors[i].seed || recorded.second != tensors[i].index_base)
          return status(status_code::config_mismatch,
                        "tensor '%.80s': seed/index_base %" PRIu64 "/%" PRIu64 " in the file, %" PRIu64 "/%" PRIu64
                        " in the tensor (stochastic rounding would diverge)",
                        names[i].c_str(), recorded.first, recorded.second, tensors[i].seed, tensors[i].index_base);
      }
    }

    // Entries: exactly the expected ones, with the expected dtype and shape.
    const std::vector<piece> pieces = plan_pieces<C>(f, tensors, names, count, options.shapes);
    std::map<std::string, const tensor_entry*> in_file;
    for (const auto& e : h.tensors) in_file[e.name] = &e;
    std::vector<const tensor_entry*> found(pieces.size(), nullptr);
    for (std::size_t i = 0; i < pieces.size(); ++i) {
      const piece& p = pieces[i];
      const auto it = in_file.find(p.key);
      const tensor_entry* e = it == in_file.end() ? nullptr : it->second;
      if (!e) return status(status_code::config_mismatch, "tensor '%.100s' is missing from the file", p.key.c_str());
      if (e->type != p.type)
        return status(status_code::dtype_mismatch, "'%.100s': file has %s, configuration needs %s", p.key.c_str(),
                      to_string(e->type), to_string(p.type));
      if (e->elements() != p.count || (options.shapes && e->shape != p.shape))
        return status(status_code::size_mismatch, "'%.100s': file has %" PRId64 " elements (rank %zu), expected %" PRId64
                      " (rank %zu)", p.key.c_str(), e->elements(), e->shape.size(), p.count, p.shape.size());
      found[i] = e;
    }
    if (h.tensors.size() != pieces.size()) {
      std::set<std::string> expected;
      for (const auto& p : pieces) expected.insert(p.key);
      for (const auto& e : h.tensors) {
        if (!expected.count(e.name))
          return status(status_code::config_mismatch, "the file has '%.100s', which this configuration does not store",
                        e.name.c_str());
      }
    }

    // Content: checksums, then the values themselves (check_values).
    const unsigned char* data = file + h.data_offset;
    for (std::size_t i = 0; i < pieces.size(); ++i) {
      const tensor_entry& e = *found[i];
      const std::string* c = find_meta(fm, "crc32/" + e.name);
      std::uint32_t stored = 0;
      if (!c || !parse_hex8(*c, stored))
        return status(status_code::corrupt_file, "metadata 'crc32/%.100s' is missing or malformed", e.name.c_str());
      const std::uint32_t actual = crc32_of(data + e.begin, e.bytes());
      if (actual != stored)
        return status(status_code::corrupt_file, "'%.100s': checksum %08x, stored %08x", e.name.c_str(), actual,
                      stored);
      FLASHOPTIM_RETURN_IF_ERROR(check_values<C>(pieces[i], data + e.begin, e.name));
    }

    // Everything checked: from here on nothing fails; write the caller's buffers.
    std::vector<float> values;
    for (std::size_t i = 0; i < pieces.size(); ++i) {
      const piece& p = pieces[i];
      const tensor_entry& e = *found[i];
      const tensor_ref<C>& t = tensors[p.tensor];
      const unsigned char* src = data + e.begin;
      if (is_raw(p.what)) {
        if (e.bytes()) std::memcpy(raw_buffer(t, p), src, e.bytes());
        continue;
      }
      const std::size_t width = size_of(p.type);
      for (std::int64_t b = 0; b < p.count; b += chunk_elements) {
        const std::int64_t n = std::min(chunk_elements, p.count - b);
        values.resize(static_cast<std::size_t>(n));
        const unsigned char* s = src + static_cast<std::uint64_t>(b) * width;
        if (p.type == dtype::bf16) {
          for (std::int64_t k = 0; k < n; ++k) {
            bf16 v;
            std::memcpy(&v, s + k * 2, 2);
            values[static_cast<std::size_t>(k)] = format::to_float(v);
          }
        } else {
          std::memcpy(values.data(), s, static_cast<std::size_t>(n) * 4);  // may be unaligned in the image
        }
        if (p.what == role::master_fp32) {
          typename C::aux_type* aux = nullptr;
          if constexpr (C::has_aux) aux = t.aux + b;
          (void)codec::split<typename C::master>(values.data(), n, t.param + b, aux);
        } else {
          with_slot<C>(p.slot, [&](auto s) {
            encode_state<C, decltype(s)::value>(t, b, n, values.data(), static_cast<std::int64_t>(file_step));
          });
        }
      }
    }
    step = static_cast<std::int64_t>(file_step);
    file_hypers.swap(hypers);  // no allocation: nothing can fail after the buffers were written
    return status();
  } catch (const std::bad_alloc&) {
    return status(status_code::capacity_exceeded, "out of memory while reading a checkpoint");
  } catch (const std::exception& e) {
    return status(status_code::corrupt_file, "unreadable checkpoint: %.160s", e.what());
  }
}

}  // namespace detail

/// Writes tensors[0, count) under `names` to `path` in the chosen form, with
/// one hyperparameter set (format version 2). Validates everything first; the
/// file appears under `path` only complete.
template <class Config>
status save_checkpoint(const std::string& path, const typename Config::hyper& hyper, std::int64_t step,
                       const tensor_ref<Config>* tensors, const std::string* names, std::size_t count,
                       const save_options& options = {}) {
  return detail::save_image<Config>(path, &hyper, 1, nullptr, /*grouped=*/false, step, tensors, names, count, options);
}

/// Writes a whole optimizer: `groups` (>= 1) hyperparameter sets, tensor i
/// of tensors[0, count) in group tensor_group[i] (in [0, groups)), and the
/// step count (format version 3: metadata "param_groups", "tensor_groups").
/// A group may hold no tensor (its hyperparameters are still saved). Every
/// group's hyperparameters must pass Rule::validate. Otherwise as
/// save_checkpoint.
template <class Config>
status save_optimizer(const std::string& path, const typename Config::hyper* hypers, std::size_t groups,
                      const std::int32_t* tensor_group, std::int64_t step, const tensor_ref<Config>* tensors,
                      const std::string* names, std::size_t count, const save_options& options = {}) {
  return detail::save_image<Config>(path, hypers, groups, tensor_group, /*grouped=*/true, step, tensors, names, count,
                                    options);
}

/// Loads a checkpoint image (the bytes of a whole file) into tensors[0, count).
/// See load_checkpoint.
template <class Config>
status load_checkpoint_bytes(const unsigned char* file, std::uint64_t size, typename Config::hyper& hyper,
                             std::int64_t& step, const tensor_ref<Config>* tensors, const std::string* names,
                             std::size_t count, const load_options& options = {}) {
  std::vector<typename Config::hyper> file_hypers;
  FLASHOPTIM_RETURN_IF_ERROR(detail::load_image<Config>(file, size, false, nullptr, &hyper, 1, file_hypers, step, tensors,
                                                        names, count, options));
  if (options.hyper == hyper_policy::restore) hyper = file_hypers[0];
  return status();
}

/// Loads an optimizer image (the bytes of a whole file). See load_optimizer.
template <class Config>
status load_optimizer_bytes(const unsigned char* file, std::uint64_t size, std::vector<typename Config::hyper>& hypers,
                            const std::int32_t* tensor_group, std::int64_t& step, const tensor_ref<Config>* tensors,
                            const std::string* names, std::size_t count, const load_options& options = {}) {
  FLASHOPTIM_RETURN_IF_ERROR(detail::validate_tensor_group(tensor_group, count));
  std::vector<typename Config::hyper> file_hypers;
  FLASHOPTIM_RETURN_IF_ERROR(detail::load_image<Config>(file, size, true, tensor_group, hypers.data(), hypers.size(),
                                                        file_hypers, step, tensors, names, count, options));
  if (options.hyper == hyper_policy::restore) hypers.swap(file_hypers);
  return status();
}

/// Loads `path` into tensors[0, count), which must be the tensors the file
/// was saved from (same names, sizes and, for the compressed form, the same
/// configuration). On success sets `step` and, per options.hyper, `hyper`.
/// On any error writes nothing.
template <class Config>
status load_checkpoint(const std::string& path, typename Config::hyper& hyper, std::int64_t& step,
                       const tensor_ref<Config>* tensors, const std::string* names, std::size_t count,
                       const load_options& options = {}) {
  FLASHOPTIM_RETURN_IF_ERROR(detail::validate_names(tensors, names, count, nullptr));
  std::vector<unsigned char> image;
  FLASHOPTIM_RETURN_IF_ERROR(read_file(path, image, options.max_file_bytes));
  return load_checkpoint_bytes<Config>(image.data(), image.size(), hyper, step, tensors, names, count, options);
}

/// Loads a whole optimizer into tensors[0, count) (host memory), which must
/// be the tensors the file was saved from, tensor i in group tensor_group[i]
/// (the file's tensor->group assignment must be this one: else an error
/// naming the first tensor that differs). A file of versions 1 and 2 is one
/// group. `hypers` and the file's groups, per options.hyper: restore
/// (default) resizes `hypers` to the file's group count and copies every
/// group's (validated) hyperparameters; require_equal and keep need as many
/// groups as the file has, require_equal refuses a group whose values
/// differ (naming the group and field), keep leaves them. On success sets
/// `step`. On any error writes nothing: tensors, hypers and step untouched.
template <class Config>
status load_optimizer(const std::string& path, std::vector<typename Config::hyper>& hypers,
                      const std::int32_t* tensor_group, std::int64_t& step, const tensor_ref<Config>* tensors,
                      const std::string* names, std::size_t count, const load_options& options = {}) {
  FLASHOPTIM_RETURN_IF_ERROR(detail::validate_names(tensors, names, count, nullptr));
  FLASHOPTIM_RETURN_IF_ERROR(detail::validate_tensor_group(tensor_group, count));
  std::vector<unsigned char> image;
  FLASHOPTIM_RETURN_IF_ERROR(read_file(path, image, options.max_file_bytes));
  return load_optimizer_bytes<Config>(image.data(), image.size(), hypers, tensor_group, step, tensors, names, count,
                                      options);
}

}  // namespace flashoptim::io
