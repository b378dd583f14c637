// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// Sharded steps on the CPU (cpu::step_serial over layout::shard_views),
// rank after rank, against the unsharded step of the same tensors
// (docs/test-matrix.md C18):
//   - group-aligned plans (packed, padded, R = 1 ... 16), resharded in the
//     middle of a run: every parameter, correction, code and scale
//     bit-identical to the unsharded run, padding untouched;
//   - any split, per-element codecs (plain and stochastically rounded
//     states, every master mode): bit-identical to the unsharded run, and
//     only because index_base carries the element index into the rounding key;
//   - unaligned splits, grouped codecs (N = 1000 at {0, 7, 33, 500} and
//     random splits): bit-identical to stepping each piece as its own tensor
//     (library and R32), and every group that is also an unsharded group
//     (aligned start, full or the tensor's tail) bit-identical to the
//     unsharded run;
//   - bad views are refused before anything is written.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdio>
#include <random>

#include "common/configs.hpp"
#include "flashoptim/layout/shard.hpp"
#include "reference/describe.hpp"
#include "reference/r32.hpp"
#include "shard/shard_harness.hpp"

using namespace testconfigs;
using namespace shard_test;
namespace fl = flashoptim::layout;

namespace {

const std::vector<std::int64_t> k_sizes = {1000, 1, 31, 32, 33, 0, 4097, 65, 2053, 7, 96};
#define ALL_STATE_SLOTS \
  { s_param, s_aux, s_code0, s_scale0, s_code1, s_scale1 }

std::vector<fl::shard_plan> aligned_plans(const std::vector<std::int64_t>& sizes) {
  std::vector<fl::shard_plan> plans;
  for (int R : {1, 2, 3, 5, 16}) {
    fl::shard_plan p;
    REQUIRE(fl::shard_plan::packed(sizes.data(), sizes.size(), R, p).ok());
    plans.push_back(p);
    REQUIRE(fl::shard_plan::padded(sizes.data(), sizes.size(), R, p).ok());
    plans.push_back(p);
  }
  return plans;
}

/// Unaligned plans: C18's split of one 1000-element tensor, and random
/// splits of the multi-tensor list.
std::vector<std::pair<std::vector<std::int64_t>, fl::shard_plan>> unaligned_plans() {
  std::vector<std::pair<std::vector<std::int64_t>, fl::shard_plan>> out;
  const std::vector<std::int64_t> one = {1000};
  const std::int64_t c18[] = {0, 7, 33, 500};
  fl::shard_plan p;
  REQUIRE(fl::shard_plan::split_at(one.data(), 1, c18, 4, p).ok());
  out.emplace_back(one, p);
  // an aligned boundary then an unaligned one: [0, 64) and the group
  // [64, 96) keep their unsharded groups, [96, 100) does not
  const std::int64_t mixed[] = {0, 64, 100};
  REQUIRE(fl::shard_plan::split_at(one.data(), 1, mixed, 3, p).ok());
  out.emplace_back(one, p);
  std::mt19937_64 rng(99);
  std::int64_t total = 0;
  for (auto s : k_sizes) total += s;
  for (int R : {2, 3, 6}) {
    std::vector<std::int64_t> starts(static_cast<std::size_t>(R), 0);
    for (int r = 1; r < R; ++r)
      starts[static_cast<std::size_t>(r)] = static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(total));
    std::sort(starts.begin(), starts.end());
    REQUIRE(fl::shard_plan::split_at(k_sizes.data(), k_sizes.size(), starts.data(), R, p).ok());
    out.emplace_back(k_sizes, p);
  }
  return out;
}

std::string describe_plan(const fl::shard_plan& p) {
  std::string s = std::string(p.layout() == fl::flat_layout::padded ? "padded" : "packed") +
                  " R=" + std::to_string(p.ranks()) + " starts";
  for (int r = 0; r < p.ranks(); ++r) s += " " + std::to_string(p.shard_begin(r));
  return s;
}

/// A run with history (two unsharded steps), resharded, then `steps` more
/// steps on both sides, compared after each.
template <class Config>
void run_resharded(const std::vector<std::int64_t>& sizes, const fl::shard_plan& plan, int steps, bool compare_scales,
                   std::uint64_t seed) {
  const auto h = hyper_for<Config>();
  testdata::generator gen(seed);
  unsharded<Config> u;
  u.allocate(sizes);
  u.init(gen);
  for (int s = 1; s <= 2; ++s) {
    u.fill_grads(gen);
    REQUIRE(u.step(h, s).ok());
  }
  sharded<Config> sh;
  sh.allocate(plan);
  sh.scatter(u, compare_scales);
  for (int s = 3; s < 3 + steps; ++s) {
    u.fill_grads(gen);
    sh.scatter(u, s_grad);
    REQUIRE(u.step(h, s).ok());
    const status st = sh.step(h, s);
    REQUIRE_MESSAGE(st.ok(), st.what());
    const std::string diff =
        compare_scales ? sh.compare(u, ALL_STATE_SLOTS) : sh.compare(u, {s_param, s_aux, s_code0, s_code1});
    INFO(describe_plan(plan), ", step ", s, ": ", diff);
    CHECK(diff.empty());
    const std::string pad = sh.padding_untouched();
    INFO(pad);
    CHECK(pad.empty());
    if (!diff.empty() || !pad.empty()) return;
  }
}

}  // namespace

TEST_CASE_TEMPLATE("C18: group-aligned plans step bit-identically to the unsharded tensors", Config, adamw_default,
                   adamw_reference, adam_default, lion_default, sgd_momentum, sgd_plain, adamw_exact, adamw_bf16_master,
                   adamw_fp32_states, adamw_bf16_sr_states, adamw_fp8_states, adamw_sr_codes, sgdw_exact_fp8,
                   adam_fp16_reference) {
  std::uint64_t seed = 1;
  for (const auto& plan : aligned_plans(k_sizes)) {
    REQUIRE(plan.group_aligned());
    run_resharded<Config>(k_sizes, plan, 4, true, seed++);
  }
}

TEST_CASE_TEMPLATE("C18: per-element codecs step bit-identically under any split", Config, adamw_fp32_states,
                   adamw_bf16_sr_states, adamw_fp16_sr_states, sgd_plain, lion_fp32, sgd_fp16_master) {
  std::uint64_t seed = 100;
  for (const auto& entry : unaligned_plans()) {
    const auto& sizes = entry.first;
    const auto& plan = entry.second;
    REQUIRE_FALSE(plan.group_aligned());
    run_resharded<Config>(sizes, plan, 4, true, seed++);
  }
}

TEST_CASE("C18: without index_base, stochastic rounding would not match the unsharded run") {
  // The same run as above with every view's index_base forced to 0: the
  // bf16 states round differently. This is what the test above would miss
  // if the library ignored index_base.
  using Config = adamw_bf16_sr_states;
  const auto h = hyper_for<Config>();
  const std::vector<std::int64_t> one = {1000};
  const std::int64_t c18[] = {0, 7, 33, 500};
  fl::shard_plan plan;
  REQUIRE(fl::shard_plan::split_at(one.data(), 1, c18, 4, plan).ok());
  testdata::generator gen(5);
  unsharded<Config> u;
  u.allocate(one);
  u.init(gen);
  sharded<Config> sh;
  sh.allocate(plan);
  sh.scatter(u, true);
  for (int s = 1; s <= 3; ++s) {
    u.fill_grads(gen);
    sh.scatter(u, s_grad);
    REQUIRE(u.step(h, s).ok());
    step_args a;
    a.step = s;
    for (int r = 0; r < plan.ranks(); ++r) {
      std::vector<tensor_ref<Config>> v;
      REQUIRE(sh.views(r, v).ok());
      for (auto& t : v) t.index_base = 0;
      REQUIRE(cpu::step_serial<Config>(h, a, v.data(), v.size()).ok());
    }
  }
  CHECK_FALSE(sh.compare(u, {s_code0, s_code1}).empty());
}

namespace {

/// R32 steps each piece as its own tensor: the independent oracle for
/// deterministic codecs (R32 keys stochastic rounding on the index within
/// its own tensor, so it cannot stand in for a shard of a stochastic one).
template <class Config>
std::string check_against_r32(unsharded<Config>& standalone, const std::vector<std::uint64_t>& seeds,
                              const typename Config::hyper& h, std::int64_t step, unsharded<Config>& stepped) {
  const ref::model md = ref::describe<Config>(h);
  for (std::size_t j = 0; j < standalone.sizes.size(); ++j) {
    ref::tensor t;
    t.allocate(md, standalone.sizes[j]);
    t.seed = seeds[j];
    std::vector<std::uint8_t>* slots[s_count] = {&t.param,    &t.aux,     &t.grad,    &t.code[0],
                                                 &t.scale[0], &t.code[1], &t.scale[1]};
    for (int k = 0; k < s_count; ++k) {
      const auto& src = standalone.bytes[j][k];
      if (src.empty()) continue;
      if (slots[k]->size() != src.size()) return std::string("R32 ") + slot_name(k) + " has another size";
      std::memcpy(slots[k]->data(), src.data(), src.size());
    }
    ref::step(md, t, step);
    for (int k = 0; k < s_count; ++k) {
      const auto& got = stepped.bytes[j][k];
      if (!got.empty() && std::memcmp(slots[k]->data(), got.data(), got.size()) != 0)
        return "piece " + std::to_string(j) + ": " + slot_name(k) + " differs from R32";
    }
  }
  return "";
}

/// Groups of a piece that are also groups of the unsharded tensor (the
/// piece starts on a group boundary and the group is full or the tensor's
/// tail) must match the unsharded run bit for bit; returns the first that
/// does not, and counts how many elements were checked.
template <class Config>
std::string check_unsharded_groups(sharded<Config>& sh, unsharded<Config>& u, std::int64_t& checked) {
  auto& plan = sh.plan;
  for (int r = 0; r < plan.ranks(); ++r)
    for (const auto* pc = plan.pieces_begin(r); pc != plan.pieces_end(r); ++pc) {
      if (pc->begin % fl::shard_alignment != 0) continue;
      for (std::int64_t g = 0; g < pc->groups(); ++g) {
        const std::int64_t b = pc->begin + g * fl::shard_alignment;
        const std::int64_t e = std::min(b + fl::shard_alignment, pc->end);
        if (e - b != fl::shard_alignment && e != u.sizes[pc->tensor]) continue;  // cut by the piece's end
        for (int k : ALL_STATE_SLOTS) {
          const std::size_t eb = elem_bytes<Config>(k);
          if (eb == 0) continue;
          const bool sc = is_scale(k);
          const std::int64_t mine = sc ? pc->group + g : pc->local + (b - pc->begin);
          const std::int64_t theirs = sc ? b / fl::shard_alignment : b;
          const std::int64_t count = sc ? 1 : e - b;
          if (std::memcmp(sh.bytes[static_cast<std::size_t>(r)][k].data() + mine * eb,
                          u.bytes[pc->tensor][k].data() + theirs * eb, static_cast<std::size_t>(count) * eb) != 0)
            return "tensor " + std::to_string(pc->tensor) + " group at " + std::to_string(b) + ": " + slot_name(k);
        }
        checked += e - b;
      }
    }
  return "";
}

}  // namespace

TEST_CASE_TEMPLATE("C18: unaligned splits step each piece as its own tensor (groups start at the piece)", Config,
                   adamw_default, adamw_reference, lion_default, sgd_momentum, adamw_fp8_states, adamw_mixed_states,
                   adamw_sr_codes, adamw_exact) {
  const auto h = hyper_for<Config>();
  constexpr bool stochastic =
      std::is_same<Config, adamw_sr_codes>::value || std::is_same<Config, adamw_mixed_states>::value;
  std::uint64_t seed = 300;
  for (const auto& entry : unaligned_plans()) {
    const auto& sizes = entry.first;
    const auto& plan = entry.second;
    INFO(describe_plan(plan));
    testdata::generator gen(seed++);
    unsharded<Config> u;
    u.allocate(sizes);
    u.init(gen);
    sharded<Config> sh;
    sh.allocate(plan);
    sh.scatter(u, false);  // a fresh run: zero states on both sides
    std::int64_t checked = 0;
    for (int s = 1; s <= 5; ++s) {
      u.fill_grads(gen);
      sh.scatter(u, s_grad);
      std::vector<std::uint64_t> seeds;
      unsharded<Config> alone = sh.standalone(seeds);
      unsharded<Config> before = alone;
      REQUIRE(alone.step(h, s, seeds).ok());
      REQUIRE(sh.step(h, s).ok());
      REQUIRE(u.step(h, s).ok());
      const std::string d = sh.compare_standalone(alone);
      INFO("step ", s, ": ", d);
      CHECK(d.empty());
      if constexpr (!stochastic) {
        const std::string d32 = check_against_r32<Config>(before, seeds, h, s, alone);
        INFO("R32: ", d32);
        CHECK(d32.empty());
      }
      const std::string g = check_unsharded_groups(sh, u, checked);
      INFO("groups shared with the unsharded tensor: ", g);
      CHECK(g.empty());
      CHECK(sh.padding_untouched().empty());
    }
    // what the documentation promises and no more: elsewhere the groups differ
    std::int64_t total = 0, differ = 0;
    for (int r = 0; r < plan.ranks(); ++r)
      for (const auto* pc = plan.pieces_begin(r); pc != plan.pieces_end(r); ++pc)
        for (std::int64_t e = 0; e < pc->size(); ++e) {
          ++total;
          const std::size_t eb = elem_bytes<Config>(s_code0);
          differ += std::memcmp(sh.bytes[static_cast<std::size_t>(r)][s_code0].data() + (pc->local + e) * eb,
                                u.bytes[pc->tensor][s_code0].data() + (pc->begin + e) * eb, eb) != 0;
        }
    MESSAGE(describe_plan(plan), ": ", checked / 5, " elements in groups shared with the unsharded run (bitwise); ",
            differ, " of ", total, " momentum codes differ from the unsharded run after 5 steps");
  }
}

TEST_CASE("shard views: byte counts and storage") {
  using Config = adamw_default;
  fl::shard_plan p;
  REQUIRE(fl::shard_plan::packed(k_sizes.data(), k_sizes.size(), 3, p).ok());
  std::int64_t sum = 0, unsharded_bytes = 0;
  for (int r = 0; r < 3; ++r) sum += fl::shard_state_bytes<Config>(p, r);
  for (auto n : k_sizes) unsharded_bytes += fl::bytes<Config>::state_for_size(n);
  CHECK(sum == unsharded_bytes);  // aligned: no extra scale anywhere
  const std::int64_t n = 1000, c18[] = {0, 7, 33, 500};
  REQUIRE(fl::shard_plan::split_at(&n, 1, c18, 4, p).ok());
  sum = 0;
  for (int r = 0; r < 4; ++r) sum += fl::shard_state_bytes<Config>(p, r);
  CHECK(sum == fl::bytes<Config>::state_for_size(n) + 2 * 4);  // one more group: two fp32 scales

  const auto st = fl::shard_storage<Config>::for_rank(p, 2);
  CHECK(st.elements() == 467);
  CHECK(st.groups == 15);
  CHECK(st.slots[0].scale_bytes == 15 * 4);
  std::vector<unsigned char> mem(static_cast<std::size_t>(st.bytes) + 256);
  void* base = reinterpret_cast<void*>((reinterpret_cast<std::uintptr_t>(mem.data()) + 255) / 256 * 256);
  fl::shard_buffers<Config> b;
  st.carve(base, b);
  CHECK(reinterpret_cast<unsigned char*>(b.state<1>().scales) + st.slots[1].scale_bytes <= static_cast<unsigned char*>(base) + st.bytes);
  CHECK(reinterpret_cast<std::uintptr_t>(b.state<0>().codes) % 256 == 0);
}

TEST_CASE("shard views: bad input is refused before anything is written") {
  using Config = adamw_default;
  fl::shard_plan plan;
  REQUIRE(fl::shard_plan::packed(k_sizes.data(), k_sizes.size(), 2, plan).ok());
  sharded<Config> sh;
  sh.allocate(plan);
  std::vector<tensor_ref<Config>> v(3);
  CHECK(fl::shard_views<Config>(plan, -1, sh.buffers(0), nullptr, v).code() == status_code::invalid_argument);
  CHECK(fl::shard_views<Config>(plan, 2, sh.buffers(0), nullptr, v).code() == status_code::invalid_argument);
  CHECK(v.size() == 3);  // untouched on error

  auto b = sh.buffers(0);
  b.aux = nullptr;
  const status st = fl::shard_views<Config>(plan, 0, b, nullptr, v);
  CHECK(st.code() == status_code::null_pointer);
  MESSAGE(st.what());
  b = sh.buffers(1);
  b.state<1>().codes = reinterpret_cast<std::uint8_t*>(b.state<0>().codes);  // two states in one buffer
  CHECK(fl::shard_views<Config>(plan, 1, b, nullptr, v).code() == status_code::aliasing);
  b = sh.buffers(1);
  b.state<0>().scales = reinterpret_cast<float*>(reinterpret_cast<unsigned char*>(b.state<0>().scales) + 1);
  CHECK(fl::shard_views<Config>(plan, 1, b, nullptr, v).code() == status_code::misaligned);

  // a rank without pieces has no views and its step is a no-op
  const std::int64_t n = 40;
  REQUIRE(fl::shard_plan::packed(&n, 1, 4, plan).ok());
  sharded<Config> small;
  small.allocate(plan);
  int empty_ranks = 0;
  for (int r = 0; r < 4; ++r) {
    REQUIRE(small.views(r, v).ok());
    empty_ranks += v.empty();
    CHECK(cpu::step_serial<Config>(hyper_for<Config>(), step_args{}, v.data(), v.size()).ok());
  }
  CHECK(empty_ranks >= 2);
}
