// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// Golden bytes: every configuration of tests/common/configs.hpp (every rule,
// master mode and state codec family the tests instantiate; AdamW with the
// default layout included) stepped 20 times on deterministic data, with a
// digest of every byte the step writes after every step. The digests are
// checked into golden_digests.inc, generated once from the default build;
// every build of the library must reproduce them, whatever its flags
// (-ffp-contract, -march, compiler): the library's arithmetic is written so
// that no flag can contract it (format/bits.hpp, mul_rn). Inputs are built
// from integer hashes and exact bit patterns only, so they are the same on
// every platform and standard library.
//
// Regenerate (only when the arithmetic changes on purpose):
//   FLASHOPTIM_GOLDEN_WRITE=tests/golden/golden_digests.inc build/<dir>/tests/golden/test_cpu_golden_bytes
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "common/configs.hpp"
#include "common/typed_tensor.hpp"
#include "flashoptim/flashoptim.hpp"

namespace golden {

inline constexpr int steps = 20;

/// SplitMix64: a platform-independent stream of bits.
struct bits {
  std::uint64_t z;
  std::uint64_t next() {
    std::uint64_t r = (z += 0x9e3779b97f4a7c15ull);
    r = (r ^ (r >> 30)) * 0xbf58476d1ce4e5b9ull;
    r = (r ^ (r >> 27)) * 0x94d049bb133111ebull;
    return r ^ (r >> 31);
  }
  /// +-m * 2^e with a random 24-bit significand and e in [lo, hi]: exact.
  float value(int lo, int hi) {
    const std::uint64_t r = next();
    if (r % 61 == 0) return 0.0f;
    const int e = lo + static_cast<int>((r >> 8) % static_cast<std::uint64_t>(hi - lo + 1));
    const std::uint32_t b = (static_cast<std::uint32_t>(r >> 63) << 31) | (static_cast<std::uint32_t>(e + 127) << 23) |
                            static_cast<std::uint32_t>((r >> 20) & 0x7fffffu);
    return flashoptim::format::float_from_bits(b);
  }
};

/// FNV-1a over a buffer's bytes, chained.
template <class T>
std::uint64_t fnv1a(std::uint64_t h, const std::vector<T>& v) {
  const auto* p = reinterpret_cast<const std::uint8_t*>(v.data());
  for (std::size_t i = 0; i < v.size() * sizeof(T); ++i) h = (h ^ p[i]) * 0x100000001b3ull;
  return h;
}

/// Every buffer the configuration stores (a slot that holds nothing has
/// none_t elements, whose byte is padding: never hashed).
template <class Config>
std::uint64_t hash_tensor(std::uint64_t h, const testutil::typed_tensor<Config>& t) {
  using S0 = typename Config::state0;
  using S1 = typename Config::state1;
  h = fnv1a(h, t.param);
  if constexpr (Config::has_aux) h = fnv1a(h, t.aux);
  if constexpr (S0::stores_state) h = fnv1a(h, t.code0);
  if constexpr (flashoptim::codec::is_grouped<S0>::value) h = fnv1a(h, t.scale0);
  if constexpr (S1::stores_state) h = fnv1a(h, t.code1);
  if constexpr (flashoptim::codec::is_grouped<S1>::value) h = fnv1a(h, t.scale1);
  return h;
}

/// How a digest is produced: step_serial, or cpu::step on one path.
struct path {
  bool serial = true;
  flashoptim::cpu::isa instruction_set = flashoptim::cpu::isa::automatic;
  int threads = 1;
};

/// Hyperparameters that exercise every term: weight decay (coupled where
/// the rule couples it), momentum where the configuration keeps it.
template <class Config>
typename Config::hyper hyper() {
  typename Config::hyper h;
  h.lr = 1e-2;
  h.weight_decay = 1e-2;
  if constexpr (std::is_same_v<typename Config::rule, flashoptim::rule::sgd> ||
                std::is_same_v<typename Config::rule, flashoptim::rule::sgdw>)
    h.momentum = Config::state0::stores_state ? 0.9 : 0.0;
  return h;
}

/// A run: two tensors (the second one a partial group) and the
/// hyperparameters.
struct run_spec {
  std::int64_t n0, n1;
  double lr, weight_decay, inv_grad_scale;
};
/// Every configuration, small: 1037 elements, exact gradient unscaling.
inline constexpr run_spec small_run{1000, 37, 1e-2, 1e-2, 0.5};
/// Aimed at the expressions a compiler would contract if the library let it
/// (the old headers built with GCC -O3 -march=x86-64-v4 fail these; the small
/// runs pass there: a contracted product rarely changes a stored byte):
/// - lr * wd = 0.0099999...: 1 - lr * wd lands within half a double ulp of
///   an fp32 rounding midpoint, so the decoupled decay factor is one fp32
///   ulp larger when the product is fused into the subtraction (found by
///   search: fl(1 - fl(lr * wd)) = 0.99000001 vs fl(fma(-lr, wd, 1)) =
///   0.990000069), which moves every parameter of AdamW, Lion and SGDW;
/// - 2^16 + 5 elements for 20 steps: enough stochastic code roundings
///   floor(y * qmax + u) that some u puts the sum within the product's
///   rounding error of an integer;
/// - inv_grad_scale 0.7: an inexact gradient unscaling.
inline constexpr run_spec large_run{65541, 37, 0.033333202203114642, 0.3, 0.7};

/// The digest of 20 steps of two tensors (one with a partial group).
template <class Config, const run_spec& R = small_run>
std::uint64_t digest(const path& how, std::string& error) {
  std::vector<testutil::typed_tensor<Config>> ts;
  const std::int64_t sizes[] = {R.n0, R.n1};
  bits gen{0x5eedull};
  for (std::int64_t n : sizes) {
    ts.emplace_back(n);
    for (std::int64_t i = 0; i < n; ++i) ts.back().set_master(i, gen.value(-8, 1));
  }
  auto h = hyper<Config>();
  h.lr = R.lr;
  h.weight_decay = R.weight_decay;
  std::uint64_t d = 0xcbf29ce484222325ull;
  for (int s = 1; s <= steps; ++s) {
    std::vector<flashoptim::tensor_ref<Config>> views;
    for (std::size_t k = 0; k < ts.size(); ++k) {
      for (std::int64_t i = 0; i < ts[k].n; ++i) ts[k].set_grad(i, gen.value(-12, 0));
      views.push_back(ts[k].view(0x1234u + k));
    }
    flashoptim::step_args a;
    a.step = s;
    a.inv_grad_scale = R.inv_grad_scale;
    flashoptim::cpu::step_options o;
    o.instruction_set = how.instruction_set;
    o.threads = how.threads;
    const flashoptim::status st = how.serial ? flashoptim::cpu::step_serial<Config>(h, a, views.data(), views.size())
                                             : flashoptim::cpu::step<Config>(h, a, views.data(), views.size(), o);
    if (!st.ok()) {
      error = st.message();
      return 0;
    }
    for (const auto& t : ts) d = hash_tensor(d, t);
  }
  return d;
}

struct entry {
  const char* name;
  std::uint64_t (*fn)(const path&, std::string&);
};

#define FLASHOPTIM_GOLDEN(C) entry{#C, &digest<testconfigs::C>}
#define FLASHOPTIM_GOLDEN_LARGE(C) entry{#C "@large", &digest<testconfigs::C, large_run>}
/// The adversarial large runs first (AdamW default, SGD with momentum, Lion,
/// an fp32 master, fp32 states and stochastic codes); then, unless
/// FLASHOPTIM_GOLDEN_LARGE_ONLY is defined (the package consumer, which
/// keeps its compile short), every configuration small.
inline const std::vector<entry>& configurations() {
  static const std::vector<entry> all = {
      FLASHOPTIM_GOLDEN_LARGE(adamw_default),      FLASHOPTIM_GOLDEN_LARGE(sgd_momentum),
      FLASHOPTIM_GOLDEN_LARGE(lion_default),       FLASHOPTIM_GOLDEN_LARGE(adamw_bf16_master),
      FLASHOPTIM_GOLDEN_LARGE(adamw_fp32_states),  FLASHOPTIM_GOLDEN_LARGE(adamw_sr_codes),
#ifndef FLASHOPTIM_GOLDEN_LARGE_ONLY
      FLASHOPTIM_GOLDEN(sgd_plain),          FLASHOPTIM_GOLDEN(sgd_momentum),       FLASHOPTIM_GOLDEN(sgdw_momentum),
      FLASHOPTIM_GOLDEN(adam_default),       FLASHOPTIM_GOLDEN(adamw_default),      FLASHOPTIM_GOLDEN(lion_default),
      FLASHOPTIM_GOLDEN(adamw_fp32_native),  FLASHOPTIM_GOLDEN(adamw_bf16_native),  FLASHOPTIM_GOLDEN(adamw_fp16_native),
      FLASHOPTIM_GOLDEN(adamw_bf16_master),  FLASHOPTIM_GOLDEN(adamw_fp16_master),  FLASHOPTIM_GOLDEN(adamw_ulp16),
      FLASHOPTIM_GOLDEN(adamw_fp16_ulp8),    FLASHOPTIM_GOLDEN(adamw_fp16_ulp16),   FLASHOPTIM_GOLDEN(adamw_exact),
      FLASHOPTIM_GOLDEN(adamw_fp32_grad),    FLASHOPTIM_GOLDEN(adamw_reference),    FLASHOPTIM_GOLDEN(adamw_fp32_states),
      FLASHOPTIM_GOLDEN(adamw_bf16_states),  FLASHOPTIM_GOLDEN(adamw_bf16_sr_states), FLASHOPTIM_GOLDEN(adamw_fp16_states),
      FLASHOPTIM_GOLDEN(adamw_fp16_sr_states), FLASHOPTIM_GOLDEN(adamw_fp8_states), FLASHOPTIM_GOLDEN(adamw_mixed_states),
      FLASHOPTIM_GOLDEN(lion_fp32),          FLASHOPTIM_GOLDEN(lion_reference),     FLASHOPTIM_GOLDEN(sgd_fp16_master),
      FLASHOPTIM_GOLDEN(sgdw_exact_fp8),     FLASHOPTIM_GOLDEN(adam_fp16_reference), FLASHOPTIM_GOLDEN(adamw_sr_codes),
      FLASHOPTIM_GOLDEN(adamw_rounded),
#endif
  };
  return all;
}
#undef FLASHOPTIM_GOLDEN
#undef FLASHOPTIM_GOLDEN_LARGE

struct expected {
  const char* name;
  std::uint64_t digest;
};

/// The checked-in digests (golden_digests.inc), empty name at the end.
inline const expected* checked_in() {
  static const expected table[] = {
#include "golden/golden_digests.inc"
      {"", 0}};
  return table;
}

inline bool lookup(const std::string& name, std::uint64_t& d) {
  for (const expected* e = checked_in(); e->name[0] != '\0'; ++e)
    if (name == e->name) {
      d = e->digest;
      return true;
    }
  return false;
}

/// Every path this machine can run: step_serial, then cpu::step on each
/// available instruction set with one and three threads.
inline std::vector<path> paths() {
  using flashoptim::cpu::isa;
  std::vector<path> v{path{}};
  for (isa i : {isa::portable, isa::avx2, isa::avx512})
    if (flashoptim::cpu::isa_available(i))
      for (int t : {1, 3}) v.push_back(path{false, i, t});
  return v;
}

/// Checks every configuration on every path against the checked-in digests;
/// prints each mismatch. Returns the number of mismatches (0: all good).
/// With `write` non-null, writes the serial digests there in the .inc form.
inline int check_all(std::FILE* write = nullptr) {
  int bad = 0;
  for (const entry& e : configurations()) {
    std::uint64_t want = 0;
    const bool known = lookup(e.name, want);
    for (const path& p : paths()) {
      std::string error;
      const std::uint64_t got = e.fn(p, error);
      if (!error.empty()) {
        std::printf("golden %s (%s): %s\n", e.name, p.serial ? "step_serial" : flashoptim::cpu::to_string(p.instruction_set),
                    error.c_str());
        ++bad;
        continue;
      }
      if (p.serial && write) std::fprintf(write, "    {\"%s\", 0x%016llxull},\n", e.name, static_cast<unsigned long long>(got));
      if (!known || got != want) {
        std::printf("golden %s (%s, %d threads): digest %016llx, checked in %s%016llx\n", e.name,
                    p.serial ? "step_serial" : flashoptim::cpu::to_string(p.instruction_set), p.threads,
                    static_cast<unsigned long long>(got), known ? "" : "(none) ", static_cast<unsigned long long>(want));
        ++bad;
      }
    }
  }
  return bad;
}

}  // namespace golden
