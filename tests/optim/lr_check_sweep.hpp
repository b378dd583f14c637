// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// The lr check test's helpers and sweeps (tests/optim/lr_check_test.cpp):
// its first two test cases step 80 configurations (every master mode x
// rule, with and without weight decay), compiled in two files,
// lr_check_sweep_native.cpp and lr_check_sweep_split.cpp, so that two cores
// build them at once (in one file they were the longest compile of CI's
// release build, 280 s).
#pragma once

#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "common/configs.hpp"
#include "common/typed_tensor.hpp"
#include "flashoptim/cpu/serial.hpp"
#include "flashoptim/optim/lr_check.hpp"

using namespace testconfigs;
using testutil::typed_tensor;
namespace optim = flashoptim::optim;

namespace lr_check_test {

template <class T>
struct is_ulp : std::false_type {};
template <class T, class C>
struct is_ulp<c::ulp_correction<T, C>> : std::true_type {};

template <class M>
struct native_small : std::false_type {};
template <>
struct native_small<c::native<bf16>> : std::true_type {};
template <>
struct native_small<c::native<fp16>> : std::true_type {};

/// The stored bytes the step may change in the master: param and correction.
template <class Config>
std::vector<std::uint8_t> master_bytes(const typed_tensor<Config>& t) {
  std::vector<std::uint8_t> b(t.param.size() * sizeof(t.param[0]));
  std::memcpy(b.data(), t.param.data(), b.size());
  if constexpr (Config::has_aux) {
    const auto* a = reinterpret_cast<const std::uint8_t*>(t.aux.data());
    b.insert(b.end(), a, a + t.aux.size() * sizeof(t.aux[0]));
  }
  return b;
}

/// One element's stored state and gradient.
template <class Config>
struct element {
  typename Config::param_type p;
  typename Config::aux_type a;
  float g;
};

/// A tensor of the band (2^k, 1.5 * 2^k): random values of both gradient
/// signs, plus an enumeration, each with +g and -g, of the states whose
/// behaviour differs: every stored value of a 16-bit native format in the
/// band, every non-clamped correction code of a ULP correction (int16: a
/// window) on three values of T. Left out, as docs/lr-check.md explains:
/// the value 2^k itself (moving down it sees the finer grid below; the
/// check covers it only when it is the maximum, tested separately) and
/// corrections clamped at +-max_code (one value, two encodings: a byte can
/// change with the value unchanged).
template <class Config>
std::vector<element<Config>> band_elements(int k, float g, std::mt19937& rng) {
  using M = typename Config::master;
  using P = typename Config::param_type;
  std::vector<element<Config>> out;
  const double lo = std::ldexp(1.0, k), hi = std::ldexp(1.5, k);
  auto keep = [&](const P& p, const typename Config::aux_type& a) {
    const double x = M::decode(p, a);
    if (!(x > lo && x < std::ldexp(2.0, k))) return false;
    if constexpr (is_ulp<M>::value)
      if (a == M::max_code || a == -M::max_code) return false;
    return true;
  };
  std::uniform_real_distribution<double> u(0.0, 1.0);
  for (int i = 0; i < 512; ++i) {
    element<Config> e{};
    M::encode(static_cast<float>(lo + (hi - lo) * u(rng)), e.p, e.a);
    e.g = (rng() & 1u) ? g : -g;
    if (keep(e.p, e.a)) out.push_back(e);
  }
  auto both_signs = [&](const P& p, const typename Config::aux_type& a) {
    if (!keep(p, a)) return;
    out.push_back({p, a, g});
    out.push_back({p, a, -g});
  };
  if constexpr (native_small<M>::value) {
    for (P p = flashoptim::format::from_float<P>(static_cast<float>(lo));; ++p.bits) {
      if (flashoptim::format::to_float(p) >= hi) break;
      both_signs(p, {});
    }
  }
  if constexpr (is_ulp<M>::value) {
    constexpr int window = M::max_code < 128 ? M::max_code - 1 : 300;
    for (const double f : {1.25, 1.3, 1.4}) {
      P p = flashoptim::format::from_float<P>(static_cast<float>(std::ldexp(f, k)));
      for (int cc = -window; cc <= window; ++cc) both_signs(p, static_cast<typename Config::aux_type>(cc));
    }
  }
  return out;
}

/// One real step at step 1 from zero states: did any param/correction byte change?
template <class Config>
bool step_moves(const typename Config::hyper& h, const std::vector<element<Config>>& els) {
  typed_tensor<Config> t(static_cast<std::int64_t>(els.size()));
  for (std::size_t i = 0; i < els.size(); ++i) {
    t.param[i] = els[i].p;
    if constexpr (Config::has_aux) t.aux[i] = els[i].a;
    t.set_grad(static_cast<std::int64_t>(i), els[i].g);
  }
  const auto before = master_bytes(t);
  auto ref = t.view(7);
  flashoptim::step_args a;
  const auto st = flashoptim::cpu::step_serial<Config>(h, a, &ref, 1);
  REQUIRE(st.ok());
  return master_bytes(t) != before;
}

template <class Config>
double max_abs_of(const std::vector<element<Config>>& els) {
  std::vector<typename Config::param_type> p;
  std::vector<typename Config::aux_type> a;
  for (const auto& e : els) p.push_back(e.p), a.push_back(e.a);
  return optim::max_abs_param<Config>(p.data(), a.data(), static_cast<std::int64_t>(p.size()));
}

template <class Config>
typename Config::hyper with_lr(typename Config::hyper h, double lr) {
  h.lr = lr;
  return h;
}

/// The verdict's threshold: adjacent lrs lo (cannot move) < hi (can move).
template <class Config>
void threshold(const typename Config::hyper& h, double max_abs, double g, double& lo, double& hi) {
  const double res = optim::lr_check_tensor<Config>(h, max_abs, g).resolution;
  lo = res * 1e-3;
  hi = res * 1e3;
  // (weight decay at large |p| moves weights at smaller lrs)
  for (int i = 0; i < 60 && optim::lr_check_tensor<Config>(with_lr<Config>(h, lo), max_abs, g).can_move; ++i) lo /= 16;
  REQUIRE_FALSE(optim::lr_check_tensor<Config>(with_lr<Config>(h, lo), max_abs, g).can_move);
  REQUIRE(optim::lr_check_tensor<Config>(with_lr<Config>(h, hi), max_abs, g).can_move);
  for (int i = 0; i < 200 && std::nextafter(lo, hi) != hi; ++i) {
    const double mid = std::sqrt(lo) * std::sqrt(hi);
    const double m = (mid > lo && mid < hi) ? mid : lo + (hi - lo) / 2;
    (optim::lr_check_tensor<Config>(with_lr<Config>(h, m), max_abs, g).can_move ? hi : lo) = m;
  }
}

inline constexpr int bands[] = {-20, -16, -8, -7, -6, -5, -4, -3, -2, -1, 0, 1, 2, 3, 4, 5, 6, 7, 8, 12, 15};

struct tally {
  int cases = 0, moved = 0, stuck = 0;
};

/// The exact sweep of one configuration (weight decay 0): can_move == a byte changed.
template <class Config>
void sweep(const char* what, typename Config::hyper h, float g, bool pass_grad, tally& tl) {
  std::mt19937 rng(12345);
  for (const int k : bands) {
    const auto els = band_elements<Config>(k, g, rng);
    REQUIRE(els.size() > 8);
    const double max_abs = max_abs_of<Config>(els);
    const double gg = pass_grad ? g : -1.0;
    double lo = 0, hi = 0;
    threshold<Config>(h, max_abs, gg, lo, hi);
    const double res = optim::lr_check_tensor<Config>(h, max_abs, gg).resolution;
    // Around the verdict's own threshold (adjacent lrs), and around half the
    // resolution (what the docs promise: the update must reach about half).
    const double half = res / 2 / (std::is_same<typename Config::rule, rule::sgd>::value ? g : 1.0);
    for (const double lr : {lo * 0.5, lo * (1 - 0x1p-7), lo, hi, hi * (1 + 0x1p-7), hi * 2, half * 0.97, half * 1.03}) {
      const auto hh = with_lr<Config>(h, lr);
      const auto v = optim::lr_check_tensor<Config>(hh, max_abs, gg);
      const bool moved = step_moves<Config>(hh, els);
      INFO(std::string(what) << " band 2^" << k << " lr " << lr << " |p|max " << max_abs << " update " << v.update
                << " resolution " << v.resolution << " verdict can_move " << v.can_move << " step moved " << moved);
      CHECK(v.exact);
      CHECK(v.can_move == moved);
      ++tl.cases;
      (moved ? tl.moved : tl.stuck)++;
    }
    // The threshold is where the docs say: within about one fp32 spacing of
    // half the resolution (the lr, not the update: Adam's update is lr up
    // to fp32 rounding, SGD's is lr * |g|).
    const double u_hi = optim::lr_check_tensor<Config>(with_lr<Config>(h, hi), max_abs, gg).update;
    const double u32 = std::ldexp(1.0, (std::ilogb(max_abs) > -126 ? std::ilogb(max_abs) : -126) - 23);
    INFO(std::string(what) << " band 2^" << k << " threshold update " << u_hi << " resolution " << res);
    CHECK(u_hi >= res / 2 - u32 * 1.01);
    CHECK(u_hi <= res / 2 + u32 * 1.01);
  }
}

/// With weight decay: "cannot move" is certain (never a byte changed).
template <class Config>
void sweep_decay(const char* what, typename Config::hyper h, float g, tally& tl) {
  std::mt19937 rng(777);
  for (const int k : bands) {
    const auto els = band_elements<Config>(k, g, rng);
    const double max_abs = max_abs_of<Config>(els);
    double lo = 0, hi = 0;
    threshold<Config>(h, max_abs, g, lo, hi);
    for (const double lr : {lo * 0.25, lo * 0.5, lo * (1 - 0x1p-7), lo, hi, hi * 2}) {
      const auto hh = with_lr<Config>(h, lr);
      const auto v = optim::lr_check_tensor<Config>(hh, max_abs, g);
      const bool moved = step_moves<Config>(hh, els);
      INFO(std::string(what) << " band 2^" << k << " lr " << lr << " update " << v.update << " resolution " << v.resolution
                << " verdict can_move " << v.can_move << " step moved " << moved);
      if (!v.can_move) CHECK_FALSE(moved);
      ++tl.cases;
      (v.can_move ? tl.moved : tl.stuck)++;
    }
  }
}

template <class Master>
void sweep_mode(const char* name, tally& tl) {
  using adamw_c = step_config<rule::adamw, Master, float, dm, dv>;
  using lion_c = step_config<rule::lion, Master, float, dm>;
  using sgd_c = step_config<rule::sgd, Master, float>;
  typename adamw_c::hyper ha;
  ha.weight_decay = 0.0;
  sweep<adamw_c>((std::string(name) + " adamw").c_str(), ha, 0.75f, true, tl);
  sweep<lion_c>((std::string(name) + " lion").c_str(), typename lion_c::hyper{}, 0.75f, true, tl);
  sweep<sgd_c>((std::string(name) + " sgd").c_str(), typename sgd_c::hyper{}, 0.75f, true, tl);
}

template <class Master>
void sweep_mode_decay(const char* name, tally& tl) {
  using adamw_c = step_config<rule::adamw, Master, float, dm, dv>;
  using adam_c = step_config<rule::adam, Master, float, dm, dv>;
  using lion_c = step_config<rule::lion, Master, float, dm>;
  using sgd_c = step_config<rule::sgd, Master, float>;
  using sgdw_c = step_config<rule::sgdw, Master, float>;
  typename adamw_c::hyper ha;
  ha.weight_decay = 1.0;  // decay comparable to the update at |p| ~ 1
  sweep_decay<adamw_c>((std::string(name) + " adamw wd").c_str(), ha, 0.75f, tl);
  typename adam_c::hyper hc;
  hc.weight_decay = 1.0;  // coupled: g' = g + wd * p
  sweep_decay<adam_c>((std::string(name) + " adam coupled wd").c_str(), hc, 0.75f, tl);
  typename lion_c::hyper hl;
  hl.weight_decay = 0.5;
  sweep_decay<lion_c>((std::string(name) + " lion wd").c_str(), hl, 0.75f, tl);
  typename sgd_c::hyper hs;
  hs.weight_decay = 0.25;
  sweep_decay<sgd_c>((std::string(name) + " sgd coupled wd").c_str(), hs, 0.75f, tl);
  typename sgdw_c::hyper hw;
  hw.weight_decay = 0.25;
  sweep_decay<sgdw_c>((std::string(name) + " sgdw wd").c_str(), hw, 0.75f, tl);
}

/// The two sweeps of each of the first two test cases, in the master modes'
/// order: native fp32, bf16, fp16, fp32_master bf16, fp16 here; bf16 + int8,
/// bf16 + int16, fp16 + int8, fp16 + int16, exact_split in the other file.
/// (With weight decay, every mode but fp32_master fp16, as before.)
void sweep_native_modes(tally& tl);        // lr_check_sweep_native.cpp
void sweep_native_modes_decay(tally& tl);  // lr_check_sweep_native.cpp
void sweep_split_modes(tally& tl);         // lr_check_sweep_split.cpp
void sweep_split_modes_decay(tally& tl);   // lr_check_sweep_split.cpp

}  // namespace lr_check_test
