// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// Test data for tools/flashoptim_convert.py, and the C++ side of its checks.
//   io_testdata write <dir>                     checkpoints of a few configurations
//   io_testdata verify <kind> <file> <original> load both into <kind>'s
//                                               configuration; exit 0 when
//                                               buffers, step and hyperparameters
//                                               are bit-identical
// Kind grp_ref_adamw is ref_adamw saved as an optimizer of two parameter
// groups (io::save_optimizer, format version 3), loaded with load_optimizer.
// so a file that Python rewrote is proven loadable, and equal, in C++.
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include <flashoptim/cpu/serial.hpp>
#include <flashoptim/io/checkpoint.hpp>

namespace {

using namespace flashoptim;

using ulp8 = codec::ulp_correction<bf16, std::int8_t>;
using ref_adamw = step_config<rule::adamw, ulp8, bf16, codec::reference::momentum, codec::reference::second_moment>;
using def_adamw = step_config<rule::adamw, ulp8, bf16, codec::defaults::momentum, codec::defaults::second_moment>;
using ref_sgd = step_config<rule::sgd, codec::native<bf16>, bf16, codec::reference::momentum>;
using plain_lion = step_config<rule::lion, codec::ulp_correction<bf16, std::int16_t>, bf16, codec::precision::fp32>;

const std::vector<std::int64_t> sizes = {33, 100, 1};
const std::vector<std::string> names = {"embed.weight", "layers.0.mlp.weight", "norm.bias"};
/// The grouped files: weight decay for the matrix (group 1), none for the
/// embedding and the bias (group 0), so a group's parameters are not contiguous.
const std::vector<std::int32_t> tensor_group = {0, 1, 0};

template <class C>
struct buffers {
  std::vector<std::vector<unsigned char>> storage;
  std::vector<tensor_ref<C>> refs;
  std::vector<std::vector<typename C::grad_type>> grads;
  buffers() {
    for (std::int64_t n : sizes) {
      tensor_ref<C> t;
      t.size = n;
      t.param = take<typename C::param_type>(n);
      if constexpr (C::has_aux) t.aux = take<typename C::aux_type>(n);
      for_each_slot<C::num_slots>([&](auto k) {
        constexpr int I = decltype(k)::value;
        using S = typename C::template state<I>;
        if constexpr (S::stores_state) state_of<I>(t).codes = take<typename S::code_type>(n);
        if constexpr (codec::is_grouped<S>::value)
          state_of<I>(t).scales = take<typename S::scale_type>(codec::scale_count<S>(n));
      });
      grads.emplace_back(static_cast<std::size_t>(n));
      t.grad = grads.back().data();
      refs.push_back(t);
    }
  }
  template <class T>
  T* take(std::int64_t n) {
    storage.emplace_back(static_cast<std::size_t>(n) * sizeof(T), 0);
    return reinterpret_cast<T*>(storage.back().data());
  }
  bool operator==(const buffers& o) const { return storage == o.storage; }
};

template <class C>
typename C::hyper hyper_for() {
  typename C::hyper h{};
  h.lr = 1e-2;
  if constexpr (std::is_same<typename C::rule, rule::sgd>::value) {
    h.momentum = 0.9;
  } else {
    h.weight_decay = 0.1;
  }
  return h;
}

template <class C>
std::vector<typename C::hyper> group_hypers() {
  std::vector<typename C::hyper> h = {hyper_for<C>(), hyper_for<C>()};
  h[0].weight_decay = 0.0;
  return h;
}

/// Three deterministic steps from deterministic weights; grouped: each
/// tensor under its group's hyperparameters.
template <class C>
bool make(buffers<C>& b, bool grouped = false) {
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    std::vector<float> x(static_cast<std::size_t>(sizes[i]));
    for (std::size_t k = 0; k < x.size(); ++k) x[k] = 0.02f * static_cast<float>(k % 17) - 0.15f;
    typename C::aux_type* aux = nullptr;
    if constexpr (C::has_aux) aux = b.refs[i].aux;
    if (!codec::split<typename C::master>(x.data(), sizes[i], b.refs[i].param, aux).ok()) return false;
  }
  for (std::int64_t s = 1; s <= 3; ++s) {
    for (std::size_t i = 0; i < sizes.size(); ++i)
      for (std::int64_t k = 0; k < sizes[i]; ++k)
        b.grads[i][k] = format::from_float<typename C::grad_type>(
            static_cast<float>(format::random_bits(5, static_cast<std::uint64_t>(s), i * 1000 + k) >> 8) * 0x1p-23f -
            1.0f);
    step_args a;
    a.step = s;
    if (!grouped) {
      if (!cpu::step_serial<C>(hyper_for<C>(), a, b.refs.data(), b.refs.size()).ok()) return false;
      continue;
    }
    for (std::size_t i = 0; i < sizes.size(); ++i)
      if (!cpu::step_serial<C>(group_hypers<C>()[tensor_group[i]], a, &b.refs[i], 1).ok()) return false;
  }
  return true;
}

template <class C>
bool save_grouped(const std::string& path) {
  buffers<C> b;
  if (!make(b, /*grouped=*/true)) return false;
  const auto h = group_hypers<C>();
  const status s = io::save_optimizer<C>(path, h.data(), h.size(), tensor_group.data(), 3, b.refs.data(), names.data(),
                                         b.refs.size());
  if (!s.ok()) std::fprintf(stderr, "%s: %s\n", path.c_str(), s.message());
  return s.ok();
}

template <class C>
int verify_grouped(const std::string& file, const std::string& original) {
  buffers<C> a, b;
  std::vector<typename C::hyper> ha, hb;
  std::int64_t sa = -1, sb = -2;
  const status s1 = io::load_optimizer<C>(file, ha, tensor_group.data(), sa, a.refs.data(), names.data(), a.refs.size());
  const status s2 =
      io::load_optimizer<C>(original, hb, tensor_group.data(), sb, b.refs.data(), names.data(), b.refs.size());
  if (!s1.ok() || !s2.ok()) {
    std::fprintf(stderr, "verify: %s / %s\n", s1.message(), s2.message());
    return 1;
  }
  bool same = a == b && sa == sb && ha.size() == hb.size() && ha.size() == 2;
  for (std::size_t g = 0; same && g < ha.size(); ++g) same = io::detail::compare_hyper<C>(ha[g], hb[g]).ok();
  std::printf("verify %s: %s (step %lld, %zu groups)\n", file.c_str(), same ? "bit-identical" : "DIFFERENT",
              (long long)sa, ha.size());
  return same ? 0 : 1;
}

template <class C>
bool save(const std::string& path, io::form f) {
  buffers<C> b;
  if (!make(b)) return false;
  io::save_options o;
  o.form = f;
  const status s = io::save_checkpoint<C>(path, hyper_for<C>(), 3, b.refs.data(), names.data(), b.refs.size(), o);
  if (!s.ok()) std::fprintf(stderr, "%s: %s\n", path.c_str(), s.what());
  return s.ok();
}

template <class C>
int verify(const std::string& file, const std::string& original) {
  buffers<C> a, b;
  typename C::hyper ha{}, hb{};
  std::int64_t sa = -1, sb = -2;
  const status s1 = io::load_checkpoint<C>(file, ha, sa, a.refs.data(), names.data(), a.refs.size());
  const status s2 = io::load_checkpoint<C>(original, hb, sb, b.refs.data(), names.data(), b.refs.size());
  if (!s1.ok() || !s2.ok()) {
    std::fprintf(stderr, "verify: %s / %s\n", s1.what(), s2.what());
    return 1;
  }
  const bool same = a == b && sa == sb && io::detail::compare_hyper<C>(ha, hb).ok();
  std::printf("verify %s: %s (step %lld)\n", file.c_str(), same ? "bit-identical" : "DIFFERENT", (long long)sa);
  return same ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "write" && argc == 3) {
    const std::string dir = argv[2];
    bool ok = save<ref_adamw>(dir + "/ref_adamw.safetensors", io::form::compressed);
    ok = save<ref_adamw>(dir + "/ref_adamw_fp32.safetensors", io::form::fp32) && ok;
    ok = save<ref_sgd>(dir + "/ref_sgd.safetensors", io::form::compressed) && ok;
    ok = save<plain_lion>(dir + "/plain_lion.safetensors", io::form::compressed) && ok;
    ok = save<def_adamw>(dir + "/def_adamw.safetensors", io::form::compressed) && ok;
    ok = save<def_adamw>(dir + "/def_adamw_fp32.safetensors", io::form::fp32) && ok;
    ok = save<def_adamw>(dir + "/def_adamw_state16.safetensors", io::form::state16) && ok;
    ok = save_grouped<ref_adamw>(dir + "/grp_adamw.safetensors") && ok;
    return ok ? 0 : 1;
  }
  if (mode == "verify" && argc == 5) {
    const std::string kind = argv[2];
    if (kind == "ref_adamw") return verify<ref_adamw>(argv[3], argv[4]);
    if (kind == "def_adamw") return verify<def_adamw>(argv[3], argv[4]);
    if (kind == "ref_sgd") return verify<ref_sgd>(argv[3], argv[4]);
    if (kind == "plain_lion") return verify<plain_lion>(argv[3], argv[4]);
    if (kind == "grp_ref_adamw") return verify_grouped<ref_adamw>(argv[3], argv[4]);
    std::fprintf(stderr, "unknown kind %s\n", kind.c_str());
    return 2;
  }
  std::fprintf(stderr, "usage: %s write <dir> | verify <kind> <file> <original>\n", argv[0]);
  return 2;
}
