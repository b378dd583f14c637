// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// layout::shard_plan: the partition math alone. Every element of every
// tensor is owned by exactly one rank; pieces, local offsets and group
// numbering agree; packed plans are balanced to within half a group at each
// boundary and group-aligned; padded plans give equal shards; explicit
// splits (docs/test-matrix.md C18) land where asked; bad input is refused.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <random>
#include <vector>

#include "flashoptim/layout/shard.hpp"

using flashoptim::status_code;
using flashoptim::layout::flat_layout;
using flashoptim::layout::shard_alignment;
using flashoptim::layout::shard_piece;
using flashoptim::layout::shard_plan;

namespace {

/// The invariants every plan keeps, whatever built it.
void check_invariants(const shard_plan& p, const std::vector<std::int64_t>& sizes) {
  REQUIRE(p.tensor_count() == sizes.size());
  const int R = p.ranks();
  CHECK(p.shard_begin(0) == 0);
  CHECK(p.shard_end(R - 1) == p.flat_size());
  std::int64_t total = 0, flat_end = 0;
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    CHECK(p.tensor_size(i) == sizes[i]);
    CHECK(p.tensor_offset(i) >= flat_end);  // in order, no overlap
    if (p.layout() == flat_layout::packed) CHECK(p.tensor_offset(i) == flat_end);
    if (p.layout() == flat_layout::padded) CHECK(p.tensor_offset(i) % shard_alignment == 0);
    flat_end = p.tensor_offset(i) + sizes[i];
    total += sizes[i];
  }
  CHECK(p.total_elements() == total);
  CHECK(p.flat_size() >= flat_end);

  // every element owned once; pieces in flat order; local, flat, group agree
  std::vector<std::vector<int>> owner(sizes.size());
  for (std::size_t i = 0; i < sizes.size(); ++i) owner[i].assign(static_cast<std::size_t>(sizes[i]), -1);
  bool aligned = true;
  std::int64_t groups_total = 0;
  for (int r = 0; r < R; ++r) {
    CHECK(p.shard_begin(r) <= p.shard_end(r));
    std::int64_t prev_flat_end = p.shard_begin(r), groups = 0;
    for (const shard_piece* pc = p.pieces_begin(r); pc != p.pieces_end(r); ++pc) {
      REQUIRE(pc->tensor < sizes.size());
      CHECK(pc->begin < pc->end);  // no empty pieces
      CHECK(pc->end <= sizes[pc->tensor]);
      CHECK(pc->flat == p.tensor_offset(pc->tensor) + pc->begin);
      CHECK(pc->local == pc->flat - p.shard_begin(r));
      CHECK(pc->flat >= prev_flat_end);
      CHECK(pc->flat + pc->size() <= p.shard_end(r));
      CHECK(pc->group == groups);
      groups += pc->groups();
      prev_flat_end = pc->flat + pc->size();
      if (pc->begin % shard_alignment != 0) aligned = false;
      if (pc->end != sizes[pc->tensor] && pc->end % shard_alignment != 0) aligned = false;
      for (std::int64_t e = pc->begin; e < pc->end; ++e) {
        int& o = owner[pc->tensor][static_cast<std::size_t>(e)];
        if (o != -1) FAIL("tensor ", pc->tensor, " element ", e, " owned by ranks ", o, " and ", r);
        o = r;
      }
    }
    CHECK(p.group_count(r) == groups);
    CHECK(p.group_offset(r) == groups_total);
    groups_total += groups;
  }
  CHECK(p.total_groups() == groups_total);
  for (std::size_t i = 0; i < sizes.size(); ++i)
    for (std::size_t e = 0; e < owner[i].size(); ++e) {
      if (owner[i][e] < 0) FAIL("tensor ", i, " element ", e, " has no owner");
    }
  CHECK(p.group_aligned() == aligned);

  // A group-aligned plan's scales, concatenated in rank order, are the
  // unsharded ones: each piece's first group is the unsharded group of its
  // first element.
  if (aligned) {
    CHECK(p.total_groups() == p.unsharded_groups());
    for (int r = 0; r < R; ++r)
      for (const shard_piece* pc = p.pieces_begin(r); pc != p.pieces_end(r); ++pc)
        CHECK(p.group_offset(r) + pc->group == p.unsharded_group_offset(pc->tensor) + pc->begin / shard_alignment);
  }
}

std::vector<std::int64_t> random_sizes(std::mt19937_64& rng) {
  const int count = static_cast<int>(rng() % 12);
  std::vector<std::int64_t> s;
  for (int i = 0; i < count; ++i) {
    switch (rng() % 5) {
      case 0:
        s.push_back(0);
        break;
      case 1:
        s.push_back(static_cast<std::int64_t>(rng() % 40));
        break;
      case 2:
        s.push_back(32 * static_cast<std::int64_t>(rng() % 20));
        break;
      default:
        s.push_back(static_cast<std::int64_t>(rng() % 5000));
        break;
    }
  }
  return s;
}

}  // namespace

TEST_CASE("shard_plan: packed plans are group-aligned and balanced") {
  std::mt19937_64 rng(7);
  for (int trial = 0; trial < 400; ++trial) {
    const auto sizes = random_sizes(rng);
    const int R = 1 + static_cast<int>(rng() % 9);
    shard_plan p;
    REQUIRE(shard_plan::packed(sizes.data(), sizes.size(), R, p).ok());
    CAPTURE(trial);
    CAPTURE(R);
    check_invariants(p, sizes);
    CHECK(p.layout() == flat_layout::packed);
    CHECK(p.group_aligned());
    CHECK(p.flat_size() == p.total_elements());
    // each boundary is the aligned position nearest the even split: the
    // aligned positions are never more than 32 apart
    for (int r = 1; r < R; ++r) {
      const std::int64_t even = p.total_elements() * r / R;
      CHECK(std::llabs(p.shard_begin(r) - even) <= shard_alignment / 2);
    }
  }
}

TEST_CASE("shard_plan: one flat buffer (a single tensor), uneven totals") {
  for (std::int64_t n : {0, 1, 31, 33, 95, 1000, 1001, 4097, 1 << 20}) {
    for (int R : {1, 2, 3, 4, 7, 64}) {
      CAPTURE(n);
      CAPTURE(R);
      shard_plan p;
      REQUIRE(shard_plan::packed(&n, 1, R, p).ok());
      check_invariants(p, {n});
      // nearest-aligned boundaries: each shard within a group of the even split
      for (int r = 0; r < R; ++r) {
        CHECK((p.shard_begin(r) % shard_alignment == 0 || p.shard_begin(r) == n));
        CHECK(std::llabs(p.shard_size(r) - n / R) <= shard_alignment + 1);
      }
    }
  }
  // fewer elements than ranks * 32: some ranks own nothing, none breaks
  const std::int64_t n = 40;
  shard_plan p;
  REQUIRE(shard_plan::packed(&n, 1, 8, p).ok());
  check_invariants(p, {n});
  int empty = 0;
  for (int r = 0; r < 8; ++r) empty += p.piece_count(r) == 0;
  CHECK(empty >= 6);
}

TEST_CASE("shard_plan: padded plans give equal shards for NCCL") {
  std::mt19937_64 rng(11);
  for (int trial = 0; trial < 400; ++trial) {
    const auto sizes = random_sizes(rng);
    const int R = 1 + static_cast<int>(rng() % 9);
    shard_plan p;
    REQUIRE(shard_plan::padded(sizes.data(), sizes.size(), R, p).ok());
    CAPTURE(trial);
    check_invariants(p, sizes);
    CHECK(p.group_aligned());
    CHECK(p.equal_shards());
    CHECK(p.flat_size() % (shard_alignment * R) == 0);
    // padding: under 32 per tensor and under 32 * R at the end
    CHECK(p.flat_size() - p.total_elements() <
          static_cast<std::int64_t>(sizes.size()) * shard_alignment + shard_alignment * R);
    // every piece starts a group in the rank's buffers: local offset / 32
    for (int r = 0; r < R; ++r)
      for (const shard_piece* pc = p.pieces_begin(r); pc != p.pieces_end(r); ++pc) {
        CHECK(pc->local % shard_alignment == 0);
        CHECK(pc->group == pc->local / shard_alignment);
      }
  }
}

TEST_CASE("shard_plan: C18 explicit split of N = 1000 at {0, 7, 33, 500}") {
  const std::int64_t n = 1000;
  const std::int64_t starts[] = {0, 7, 33, 500};
  shard_plan p;
  REQUIRE(shard_plan::split_at(&n, 1, starts, 4, p).ok());
  check_invariants(p, {n});
  CHECK_FALSE(p.group_aligned());
  const std::int64_t want[4][2] = {{0, 7}, {7, 33}, {33, 500}, {500, 1000}};
  const std::int64_t want_groups[4] = {1, 1, 15, 16};  // groups re-originate at each shard start
  for (int r = 0; r < 4; ++r) {
    REQUIRE(p.piece_count(r) == 1);
    CHECK(p.pieces_begin(r)->begin == want[r][0]);
    CHECK(p.pieces_begin(r)->end == want[r][1]);
    CHECK(p.pieces_begin(r)->local == 0);
    CHECK(p.group_count(r) == want_groups[r]);
  }
  CHECK(p.total_groups() == 33);  // unsharded: 32
  CHECK(p.unsharded_groups() == 32);

  // aligned explicit boundaries are recognized as such
  const std::int64_t aligned[] = {0, 32, 512, 992};
  REQUIRE(shard_plan::split_at(&n, 1, aligned, 4, p).ok());
  check_invariants(p, {n});
  CHECK(p.group_aligned());
  // a boundary at a tensor's end is aligned whatever the size
  const std::int64_t two[] = {33, 967};
  const std::int64_t at_end[] = {0, 33};
  REQUIRE(shard_plan::split_at(two, 2, at_end, 2, p).ok());
  check_invariants(p, {33, 967});
  CHECK(p.group_aligned());
  // empty shards in the middle, and repeated starts
  const std::int64_t repeated[] = {0, 7, 7, 1000};
  REQUIRE(shard_plan::split_at(&n, 1, repeated, 4, p).ok());
  check_invariants(p, {n});
  CHECK(p.piece_count(1) == 0);  // [7, 7)
  CHECK(p.piece_count(2) == 1);  // [7, 1000)
  CHECK(p.piece_count(3) == 0);  // [1000, 1000)
}

TEST_CASE("shard_plan: random uneven explicit splits over many tensors") {
  std::mt19937_64 rng(23);
  for (int trial = 0; trial < 300; ++trial) {
    const auto sizes = random_sizes(rng);
    std::int64_t total = 0;
    for (auto s : sizes) total += s;
    const int R = 1 + static_cast<int>(rng() % 6);
    std::vector<std::int64_t> starts(static_cast<std::size_t>(R), 0);
    for (int r = 1; r < R; ++r)
      starts[static_cast<std::size_t>(r)] =
          total ? static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(total + 1)) : 0;
    std::sort(starts.begin(), starts.end());
    shard_plan p;
    REQUIRE(shard_plan::split_at(sizes.data(), sizes.size(), starts.data(), R, p).ok());
    CAPTURE(trial);
    check_invariants(p, sizes);
    for (int r = 0; r < R; ++r) CHECK(p.shard_begin(r) == starts[static_cast<std::size_t>(r)]);
  }
}

TEST_CASE("shard_plan: bad input is refused") {
  const std::int64_t sizes[] = {10, 20};
  shard_plan p;
  CHECK(shard_plan::packed(sizes, 2, 0, p).code() == status_code::invalid_argument);
  CHECK(shard_plan::padded(sizes, 2, -1, p).code() == status_code::invalid_argument);
  CHECK(shard_plan::packed(nullptr, 2, 2, p).code() == status_code::null_pointer);
  const std::int64_t negative[] = {10, -1};
  CHECK(shard_plan::packed(negative, 2, 2, p).code() == status_code::size_mismatch);
  const std::int64_t huge[] = {std::int64_t{1} << 55, std::int64_t{1} << 55, std::int64_t{1} << 55};
  CHECK(shard_plan::packed(huge, 3, 2, p).code() == status_code::invalid_argument);
  const std::int64_t not_zero[] = {1, 5};
  CHECK(shard_plan::split_at(sizes, 2, not_zero, 2, p).code() == status_code::invalid_argument);
  const std::int64_t decreasing[] = {0, 20, 10};
  CHECK(shard_plan::split_at(sizes, 2, decreasing, 3, p).code() == status_code::invalid_argument);
  const std::int64_t past_end[] = {0, 31};
  CHECK(shard_plan::split_at(sizes, 2, past_end, 2, p).code() == status_code::invalid_argument);
  CHECK(shard_plan::split_at(sizes, 2, nullptr, 2, p).code() == status_code::null_pointer);
  // an empty list is fine: every rank owns nothing
  REQUIRE(shard_plan::padded(nullptr, 0, 3, p).ok());
  CHECK(p.ranks() == 3);
  CHECK(p.flat_size() == 0);
  for (int r = 0; r < 3; ++r) CHECK(p.piece_count(r) == 0);
}
