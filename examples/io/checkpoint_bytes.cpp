// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// Measures checkpoint sizes: saves a realistic tensor list under several
// configurations and forms, and prints file bytes per parameter (the actual
// file size, header included, over the parameter count) next to the constexpr
// prediction of layout::bytes, with save and load times. docs/io.md holds its
// output.
//   checkpoint_bytes [gpt11m|llama1b|tiny] [directory=/tmp] [config filter]
// gpt11m: a 10.9M-parameter byte-level GPT (6 layers
// x 384, context 256, vocabulary 256, 76 tensors with biases and norms).
// llama1b: Llama-3.2-1B's 146 tensors (1.24B parameters; needs ~15 GB disk
// for the fp32 form and RAM for two copies of the largest file).
#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <sys/stat.h>
#include <vector>

#include <flashoptim/io/checkpoint.hpp>
#include <flashoptim/layout/bytes.hpp>
#include <flashoptim/layout/state_layout.hpp>

namespace {

using namespace flashoptim;

struct tensor_shape {
  std::string name;
  std::vector<std::int64_t> shape;
};

std::vector<tensor_shape> gpt11m() {
  const std::int64_t d = 384, ctx = 256, vocab = 256;
  std::vector<tensor_shape> t = {{"tok_emb.weight", {vocab, d}}, {"pos_emb.weight", {ctx, d}}};
  for (int l = 0; l < 6; ++l) {
    const std::string p = "blocks." + std::to_string(l) + ".";
    for (const char* ln : {"ln1", "ln2"}) {
      t.push_back({p + ln + ".weight", {d}});
      t.push_back({p + ln + ".bias", {d}});
    }
    t.push_back({p + "attn.qkv.weight", {3 * d, d}});
    t.push_back({p + "attn.qkv.bias", {3 * d}});
    t.push_back({p + "attn.proj.weight", {d, d}});
    t.push_back({p + "attn.proj.bias", {d}});
    t.push_back({p + "mlp.fc.weight", {4 * d, d}});
    t.push_back({p + "mlp.fc.bias", {4 * d}});
    t.push_back({p + "mlp.proj.weight", {d, 4 * d}});
    t.push_back({p + "mlp.proj.bias", {d}});
  }
  t.push_back({"ln_f.weight", {d}});
  t.push_back({"ln_f.bias", {d}});
  t.push_back({"lm_head.weight", {vocab, d}});
  return t;
}

std::vector<tensor_shape> llama1b() {
  const std::int64_t d = 2048, ff = 8192, kv = 512, vocab = 128256;
  std::vector<tensor_shape> t = {{"model.embed_tokens.weight", {vocab, d}}};
  for (int l = 0; l < 16; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    t.push_back({p + "input_layernorm.weight", {d}});
    t.push_back({p + "self_attn.q_proj.weight", {d, d}});
    t.push_back({p + "self_attn.k_proj.weight", {kv, d}});
    t.push_back({p + "self_attn.v_proj.weight", {kv, d}});
    t.push_back({p + "self_attn.o_proj.weight", {d, d}});
    t.push_back({p + "post_attention_layernorm.weight", {d}});
    t.push_back({p + "mlp.gate_proj.weight", {ff, d}});
    t.push_back({p + "mlp.up_proj.weight", {ff, d}});
    t.push_back({p + "mlp.down_proj.weight", {d, ff}});
  }
  t.push_back({"model.norm.weight", {d}});
  return t;
}

std::vector<tensor_shape> tiny() { return {{"w", {33, 7}}, {"b", {7}}}; }

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

/// Buffers for every tensor, filled with plausible states (one split of
/// small values, one quantization) so compressed sizes are not special.
template <class C>
struct owned {
  /// Per tensor: its parameters, then its correction and states in one
  /// 256-byte-aligned block laid out by state_layout.
  std::vector<std::unique_ptr<void, decltype(&std::free)>> storage;
  std::vector<tensor_ref<C>> refs;
  std::vector<std::string> names;
  std::vector<std::vector<std::int64_t>> shapes;
  std::int64_t params = 0;

  explicit owned(const std::vector<tensor_shape>& list) {
    for (const auto& s : list) {
      std::int64_t n = 1;
      for (std::int64_t d : s.shape) n *= d;
      tensor_ref<C> t;
      t.param = static_cast<typename C::param_type*>(take(static_cast<std::size_t>(n) * sizeof(t.param[0])));
      const auto l = state_layout<C>::for_size(n);
      l.carve(take(static_cast<std::size_t>(l.bytes)), t);
      std::vector<float> x(static_cast<std::size_t>(n));
      for (std::int64_t k = 0; k < n; ++k) x[k] = 1e-3f * static_cast<float>((k * 7919) % 2001 - 1000);
      typename C::aux_type* aux = nullptr;
      if constexpr (C::has_aux) aux = t.aux;
      (void)codec::split<typename C::master>(x.data(), n, t.param, aux);
      if constexpr (C::state0::stores_state)
        (void)codec::quantize<typename C::state0>(x.data(), n, t.template state<0>().codes, t.template state<0>().scales);
      for (auto& v : x) v *= v;
      if constexpr (C::num_slots > 1) {
        constexpr int second = C::num_slots > 1 ? 1 : 0;  // names slot 1 only where it exists
        if constexpr (C::template state<second>::stores_state)
          (void)codec::quantize<typename C::template state<second>>(x.data(), n, t.template state<second>().codes,
                                                                    t.template state<second>().scales);
      }
      refs.push_back(t);
      names.push_back(s.name);
      shapes.push_back(s.shape);
      params += n;
    }
  }
  void* take(std::size_t bytes) {
    const std::size_t a = state_layout<C>::alignment;
    void* p = std::aligned_alloc(a, (std::max<std::size_t>(bytes, 1) + a - 1) / a * a);
    if (p == nullptr) throw std::bad_alloc();
    storage.emplace_back(p, &std::free);
    return p;
  }
};

int failures = 0;

template <class C>
void measure(const char* label, const std::vector<tensor_shape>& list, const std::string& dir,
             const std::string& filter, std::initializer_list<io::form> forms) {
  if (!filter.empty() && std::string(label).find(filter) == std::string::npos) return;
  owned<C> m(list);
  typename C::hyper h{};
  for (io::form f : forms) {
    const std::string path = dir + "/flashoptim_checkpoint_bytes.safetensors";
    io::save_options so;
    so.form = f;
    so.shapes = m.shapes.data();
    auto t0 = std::chrono::steady_clock::now();
    status s = io::save_checkpoint<C>(path, h, 1000, m.refs.data(), m.names.data(), m.refs.size(), so);
    const double save_s = seconds_since(t0);
    struct stat st {};
    if (!s.ok() || ::stat(path.c_str(), &st) != 0) {
      std::fprintf(stderr, "%s: %s\n", label, s.what());
      ++failures;
      continue;
    }
    std::int64_t step = 0;
    t0 = std::chrono::steady_clock::now();
    s = io::load_checkpoint<C>(path, h, step, m.refs.data(), m.names.data(), m.refs.size());
    const double load_s = seconds_since(t0);
    if (!s.ok()) {
      std::fprintf(stderr, "%s: load: %s\n", label, s.what());
      ++failures;
    }
    std::remove(path.c_str());
    const double per_param = static_cast<double>(st.st_size) / static_cast<double>(m.params);
    char predicted[32] = "-";
    if (f == io::form::compressed) std::snprintf(predicted, sizeof predicted, "%.4f", layout::bytes<C>::checkpoint_per_param);
    std::printf("| %s | %s | %" PRId64 " | %.4f | %s | %.0f | %.0f |\n", label, io::to_string(f),
                static_cast<std::int64_t>(st.st_size), per_param, predicted,
                static_cast<double>(st.st_size) / 1e6 / save_s, static_cast<double>(st.st_size) / 1e6 / load_s);
  }
}

}  // namespace

int main(int argc, char** argv) {
  const std::string model = argc > 1 ? argv[1] : "gpt11m";
  const std::string dir = argc > 2 ? argv[2] : "/tmp";
  const std::string filter = argc > 3 ? argv[3] : "";
  const auto list = model == "llama1b" ? llama1b() : model == "tiny" ? tiny() : gpt11m();
  if (model != "gpt11m" && model != "llama1b" && model != "tiny") {
    std::fprintf(stderr, "usage: %s [gpt11m|llama1b|tiny] [directory] [config filter]\n", argv[0]);
    return 2;
  }
  std::int64_t params = 0;
  for (const auto& t : list) {
    std::int64_t n = 1;
    for (std::int64_t d : t.shape) n *= d;
    params += n;
  }
  std::printf("%s: %zu tensors, %" PRId64 " parameters\n\n", model.c_str(), list.size(), params);
  std::printf("| configuration | form | file bytes | bytes/param | layout::bytes | save MB/s | load MB/s |\n");
  std::printf("|---|---|---|---|---|---|---|\n");

  using ulp8 = codec::ulp_correction<bf16, std::int8_t>;
  using ulp16 = codec::ulp_correction<bf16, std::int16_t>;
  namespace d = codec::defaults;
  namespace r = codec::reference;
  namespace p = codec::precision;
  using all = std::initializer_list<io::form>;
  measure<step_config<rule::adamw, codec::native<float>, float, p::fp32, p::fp32>>(
      "AdamW fp32 params, fp32 states (torch)", list, dir, filter, all{io::form::compressed});
  measure<step_config<rule::adamw, ulp8, bf16, d::momentum, d::second_moment>>(
      "AdamW bf16+int8, 8-bit states, fp32 scales (default)", list, dir, filter,
      all{io::form::compressed, io::form::state16, io::form::fp32});
  measure<step_config<rule::adamw, ulp8, bf16, r::momentum, r::second_moment>>(
      "AdamW bf16+int8, 8-bit states, fp16 scales (reference)", list, dir, filter, all{io::form::compressed});
  measure<step_config<rule::adamw, ulp8, bf16, p::fp8_momentum, p::fp8_second_moment>>(
      "AdamW bf16+int8, fp8 states", list, dir, filter, all{io::form::compressed});
  measure<step_config<rule::adamw, ulp16, bf16, d::momentum, d::second_moment>>(
      "AdamW bf16+int16, 8-bit states", list, dir, filter, all{io::form::compressed});
  measure<step_config<rule::adamw, codec::exact_split, bf16, d::momentum, d::second_moment>>(
      "AdamW exact_split, 8-bit states", list, dir, filter, all{io::form::compressed});
  measure<step_config<rule::adamw, codec::native<bf16>, bf16, p::bf16, p::bf16>>(
      "AdamW bf16 params, bf16 states", list, dir, filter, all{io::form::compressed});
  measure<step_config<rule::sgd, ulp8, bf16, d::momentum>>("SGD momentum bf16+int8, 8-bit state", list, dir,
                                                           filter, all{io::form::compressed, io::form::fp32});
  measure<step_config<rule::lion, ulp8, bf16, d::momentum>>("Lion bf16+int8, 8-bit state", list, dir, filter,
                                                            all{io::form::compressed});
  return failures == 0 ? 0 : 1;
}
