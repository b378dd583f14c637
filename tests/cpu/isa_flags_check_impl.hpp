// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// The checks of test_cpu_isa_flags, included by its two files compiled with
// -march=x86-64-v4 (isa_flags_checks.cpp, isa_flags_checks_b.cpp; two, so
// that two cores compile the step's configurations in parallel). Nothing
// here runs before main: no namespace-scope object with a dynamic
// initializer (isa_flags_checks.cpp says why).
#pragma once

#include "cpu/isa_flags_checks.hpp"

#include <cstdio>
#include <cstring>
#include <vector>

#include "common/typed_tensor.hpp"
#include "flashoptim/cpu/step.hpp"

namespace isa_flags {
namespace {

using namespace flashoptim;
namespace c = flashoptim::codec;
using cpu::isa;
using dm = c::defaults::momentum;
using dv = c::defaults::second_moment;

/// A small deterministic generator (SplitMix64): uniform in [-1, 1).
struct lcg {
  std::uint64_t s;
  float next() {
    std::uint64_t z = (s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    return static_cast<float>(static_cast<double>(z >> 40) * 0x1p-23 - 1.0);
  }
};

template <class Config>
void fill(testutil::typed_tensor<Config>& t, lcg& gen) {
  for (std::int64_t i = 0; i < t.n; ++i) {
    t.set_master(i, gen.next());
    t.set_grad(i, gen.next() * 0.5f);
  }
}

/// Elements of `after` whose parameter bytes equal `before`'s.
template <class Config>
std::int64_t unchanged(const testutil::typed_tensor<Config>& before, const testutil::typed_tensor<Config>& after) {
  std::int64_t k = 0;
  for (std::int64_t i = 0; i < before.n; ++i)
    k += std::memcmp(&before.param[i], &after.param[i], sizeof(before.param[i])) == 0 ? 1 : 0;
  return k;
}

template <class Config>
void check(const char* name, const typename Config::hyper& h, outcome& out) {
  constexpr std::int64_t n = 4096 + 33;  // whole blocks, single groups, a partial group
  for (isa path : {isa::portable, isa::avx2, isa::avx512}) {
    if (!cpu::isa_available(path)) continue;
    for (int threads : {1, 3}) {
      lcg gen{0x5eed};
      testutil::typed_tensor<Config> serial(n);
      fill(serial, gen);
      const testutil::typed_tensor<Config> start = serial;
      testutil::typed_tensor<Config> vec = serial;
      bool same = true;
      std::int64_t still = -1;
      int failed_step = 0;
      for (int s = 1; s <= 3 && same; ++s) {
        step_args a;
        a.step = s;
        auto sv = serial.view(7);
        auto vv = vec.view(7);
        cpu::step_options o;
        o.instruction_set = path;
        o.threads = threads;
        o.min_groups_per_thread = 1;
        const status ss = cpu::step_serial<Config>(h, a, &sv, 1);
        const status sc = cpu::step<Config>(h, a, &vv, 1, o);
        if (!ss.ok() || !sc.ok()) {
          out.failures++;
          out.detail += std::string(name) + ": status " + ss.what() + " / " + sc.what() + "\n";
          return;
        }
        if (serial.bytes() != vec.bytes()) {
          same = false;
          failed_step = s;
          still = unchanged(start, vec);
        }
      }
      out.checked++;
      if (!same) {
        out.failures++;
        char line[256];
        std::snprintf(line, sizeof line, "%s on %s, %d threads: differs from step_serial after step %d (%lld of %lld parameters never moved; step_serial: %lld)\n",
                      name, cpu::to_string(path), threads, failed_step, static_cast<long long>(still),
                      static_cast<long long>(n), static_cast<long long>(unchanged(start, serial)));
        out.detail += line;
      }
    }
  }
}

template <class Master, class Grad>
void check_master(const char* name, outcome& out) {
  using adamw = step_config<rule::adamw, Master, Grad, dm, dv>;
  using adamw_plain = step_config<rule::adamw, Master, Grad, c::precision::fp32, c::precision::fp32>;
  using sgd = step_config<rule::sgd, Master, Grad, dm>;
  using sgd_plain = step_config<rule::sgd, Master, Grad>;
  using lion = step_config<rule::lion, Master, Grad, dm>;
  typename adamw::hyper ha;
  ha.lr = 1e-2;
  check<adamw>((std::string("adamw ") + name).c_str(), ha, out);
  check<adamw_plain>((std::string("adamw fp32 states ") + name).c_str(), ha, out);
  typename sgd::hyper hs;
  hs.lr = 1e-2;
  hs.momentum = 0.9;
  check<sgd>((std::string("sgd momentum ") + name).c_str(), hs, out);
  hs.momentum = 0.0;
  check<sgd_plain>((std::string("sgd ") + name).c_str(), hs, out);
  typename lion::hyper hl;
  hl.lr = 1e-3;
  check<lion>((std::string("lion ") + name).c_str(), hl, out);
}

}  // namespace
}  // namespace isa_flags
