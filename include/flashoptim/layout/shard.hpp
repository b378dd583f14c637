// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// Sharding a list of tensors over R ranks (ZeRO / FSDP style): which
// elements each rank owns, where they sit in its buffers, and the
// tensor_refs that step them. Plain C++; the collectives are the caller's
// (examples/shard drives NCCL).
//
// The tensors are concatenated into one flat buffer (the buffer ZeRO and
// FSDP reduce-scatter and all-gather); rank r owns the contiguous flat range
// [shard_begin(r), shard_end(r)). Its part of tensor i is a "piece": elements
// [begin, end) of that tensor. A piece is stepped as a tensor_ref over the
// rank's buffers with index_base = begin, so:
//   - groups of 32 start at the piece's first element (a group never
//     crosses a tensor_ref);
//   - stochastic rounding keys on (seed, step, begin + i), the key the
//     unsharded tensor uses for the same element.
// Hence the two documented outcomes:
//   - group-aligned plan (every boundary that falls inside a tensor is a
//     multiple of 32 from that tensor's start): the sharded step is
//     bit-identical to the unsharded one, and each rank's corrections,
//     codes and scales are contiguous slices of the unsharded ones;
//   - otherwise: bit-identical to stepping each piece as its own tensor
//     (groups re-originate at the piece start); per-element codecs (plain
//     states, master modes) stay bit-identical to the unsharded step.
// packed() and padded() always build group-aligned plans; split_at() takes
// any boundaries.
#pragma once

#include <algorithm>
#include <cinttypes>
#include <cstdint>
#include <type_traits>
#include <utility>
#include <vector>

#include "flashoptim/codec/state.hpp"
#include "flashoptim/layout/bytes.hpp"
#include "flashoptim/layout/state_layout.hpp"
#include "flashoptim/rule/tensor.hpp"
#include "flashoptim/status.hpp"

namespace flashoptim::layout {

/// Elements of one group of the grouped codecs: shard boundaries that are
/// multiples of it (within a tensor) keep the sharded step bit-identical.
inline constexpr std::int64_t shard_alignment = 32;

/// Rank r's part of one tensor.
struct shard_piece {
  std::size_t tensor = 0;  ///< index in the plan's tensor list
  std::int64_t begin = 0;  ///< first element, within the tensor (the view's index_base)
  std::int64_t end = 0;    ///< one past the last element, within the tensor
  std::int64_t flat = 0;   ///< offset of element `begin` in the flat buffer
  std::int64_t local = 0;  ///< offset of element `begin` in the rank's buffers (flat - shard_begin)
  std::int64_t group = 0;  ///< index of the piece's first group among the rank's groups (scales)
  std::int64_t size() const { return end - begin; }
  /// Groups (scales) of the piece: its groups start at `begin`.
  std::int64_t groups() const { return (size() + shard_alignment - 1) / shard_alignment; }
};

/// How the tensors sit in the flat buffer.
enum class flat_layout {
  packed,  ///< back to back: tensor i starts where tensor i-1 ends
  padded,  ///< each tensor starts at a multiple of 32; the buffer is a multiple of 32 * ranks
};

class shard_plan {
 public:
  /// Tensors back to back in the flat buffer; each boundary is placed at the
  /// group-aligned position (a multiple of 32 from its tensor's start, or a
  /// tensor's end) nearest to r * total / ranks. Shards differ from the
  /// even split by fewer than 32 elements at each end; with fewer than 32
  /// elements per rank some shards are empty. Shards are uneven in general:
  /// the collectives need per-rank counts (grouped ncclReduce/ncclBroadcast).
  static status packed(const std::int64_t* sizes, std::size_t count, int ranks, shard_plan& out) {
    shard_plan p;
    FLASHOPTIM_RETURN_IF_ERROR(p.set_tensors(sizes, count, ranks, flat_layout::packed));
    const std::int64_t total = p.flat_size_;
    p.bounds_.assign(static_cast<std::size_t>(ranks) + 1, 0);
    std::size_t ti = 0;  // targets grow with r: one forward sweep over the tensors
    for (int r = 1; r < ranks; ++r) {
      const std::int64_t target = even_split(total, r, ranks);
      while (ti < count && p.offsets_[ti] + p.sizes_[ti] <= target) ++ti;
      std::int64_t at = target;
      if (ti < count) {
        const std::int64_t o = p.offsets_[ti], rel = target - o;
        const std::int64_t lo = o + rel / shard_alignment * shard_alignment;
        const std::int64_t hi =
            o + std::min(p.sizes_[ti], (rel + shard_alignment - 1) / shard_alignment * shard_alignment);
        at = (target - lo <= hi - target) ? lo : hi;
      }
      p.bounds_[static_cast<std::size_t>(r)] = std::max(at, p.bounds_[static_cast<std::size_t>(r) - 1]);
    }
    p.bounds_.back() = total;
    p.build_pieces();
    out = std::move(p);
    return status();
  }

  /// ZeRO's flat buffer made NCCL-friendly: every tensor starts at a
  /// multiple of 32 (padding after each tensor), the buffer is padded to a
  /// multiple of 32 * ranks and every rank owns flat_size() / ranks
  /// elements, so ncclReduceScatter / ncclAllGather apply directly and
  /// every piece's buffers are as aligned as the shard's. Padding elements
  /// belong to no tensor: they are never stepped, and cost at most 31
  /// elements per tensor plus 32 * ranks - 1.
  static status padded(const std::int64_t* sizes, std::size_t count, int ranks, shard_plan& out) {
    shard_plan p;
    FLASHOPTIM_RETURN_IF_ERROR(p.set_tensors(sizes, count, ranks, flat_layout::padded));
    const std::int64_t per_rank = p.flat_size_ / ranks;
    p.bounds_.resize(static_cast<std::size_t>(ranks) + 1);
    for (int r = 0; r <= ranks; ++r) p.bounds_[static_cast<std::size_t>(r)] = per_rank * r;
    p.build_pieces();
    out = std::move(p);
    return status();
  }

  /// Explicit shard starts over the packed flat buffer: rank r owns
  /// [starts[r], starts[r + 1]) with starts[ranks] = the total. starts[0]
  /// must be 0 and the starts nondecreasing; they need not be aligned (then
  /// group_aligned() is false and the documented outcome is "each piece as
  /// its own tensor").
  static status split_at(const std::int64_t* sizes, std::size_t count, const std::int64_t* starts, int ranks,
                         shard_plan& out) {
    shard_plan p;
    FLASHOPTIM_RETURN_IF_ERROR(p.set_tensors(sizes, count, ranks, flat_layout::packed));
    if (starts == nullptr) return status(status_code::null_pointer, "shard starts are null");
    if (starts[0] != 0) return status(status_code::invalid_argument, "shard 0 starts at %" PRId64 ", not 0", starts[0]);
    p.bounds_.assign(starts, starts + ranks);
    p.bounds_.push_back(p.flat_size_);
    for (int r = 1; r <= ranks; ++r) {
      const std::int64_t a = p.bounds_[static_cast<std::size_t>(r) - 1], b = p.bounds_[static_cast<std::size_t>(r)];
      if (b < a)
        return status(status_code::invalid_argument,
                      "shard %d starts at %" PRId64 ", before shard %d's start %" PRId64 " (or past the total)", r, b,
                      r - 1, a);
    }
    p.build_pieces();
    out = std::move(p);
    return status();
  }

  int ranks() const { return static_cast<int>(bounds_.empty() ? 0 : bounds_.size() - 1); }
  flat_layout layout() const { return layout_; }
  std::size_t tensor_count() const { return sizes_.size(); }
  std::int64_t tensor_size(std::size_t i) const { return sizes_[i]; }
  /// Offset of tensor i's element 0 in the flat buffer.
  std::int64_t tensor_offset(std::size_t i) const { return offsets_[i]; }
  /// Elements of all tensors (padding excluded).
  std::int64_t total_elements() const { return total_; }
  /// Elements of the flat buffer, padding included.
  std::int64_t flat_size() const { return flat_size_; }

  std::int64_t shard_begin(int r) const { return bounds_[static_cast<std::size_t>(r)]; }
  std::int64_t shard_end(int r) const { return bounds_[static_cast<std::size_t>(r) + 1]; }
  /// Elements of rank r's buffers (parameters, corrections, codes).
  std::int64_t shard_size(int r) const { return shard_end(r) - shard_begin(r); }
  std::int64_t max_shard_size() const {
    std::int64_t m = 0;
    for (int r = 0; r < ranks(); ++r) m = std::max(m, shard_size(r));
    return m;
  }
  /// Every rank owns the same number of flat elements (NCCL's
  /// ReduceScatter / AllGather take one count for every rank).
  bool equal_shards() const {
    for (int r = 1; r < ranks(); ++r)
      if (shard_size(r) != shard_size(0)) return false;
    return true;
  }
  /// Every boundary that falls strictly inside a tensor is a multiple of 32
  /// from the tensor's start: the sharded step is bit-identical to the
  /// unsharded one.
  bool group_aligned() const { return aligned_; }

  /// Rank r's pieces, in flat order.
  const shard_piece* pieces_begin(int r) const { return pieces_.data() + piece_begin_[static_cast<std::size_t>(r)]; }
  const shard_piece* pieces_end(int r) const { return pieces_.data() + piece_begin_[static_cast<std::size_t>(r) + 1]; }
  std::size_t piece_count(int r) const {
    return piece_begin_[static_cast<std::size_t>(r) + 1] - piece_begin_[static_cast<std::size_t>(r)];
  }
  const std::vector<shard_piece>& all_pieces() const { return pieces_; }

  /// Groups (scales per grouped state) of rank r's buffers.
  std::int64_t group_count(int r) const {
    return group_begin_[static_cast<std::size_t>(r) + 1] - group_begin_[static_cast<std::size_t>(r)];
  }
  /// Groups of the ranks before r: rank r's scales are elements
  /// [group_offset(r), group_offset(r) + group_count(r)) of the ranks'
  /// scales concatenated in rank order. For a group-aligned plan that array
  /// is the unsharded one (each tensor's ceil(n / 32) scales, in tensor
  /// order), so gathering states for a checkpoint is a concatenation.
  std::int64_t group_offset(int r) const { return group_begin_[static_cast<std::size_t>(r)]; }
  /// Groups of all ranks together.
  std::int64_t total_groups() const { return group_begin_.back(); }
  /// Groups of the unsharded tensors before tensor i (its first scale in
  /// the unsharded concatenation).
  std::int64_t unsharded_group_offset(std::size_t i) const { return unsharded_groups_[i]; }
  std::int64_t unsharded_groups() const { return unsharded_groups_.back(); }

 private:
  static std::int64_t round_up(std::int64_t x, std::int64_t m) { return (x + m - 1) / m * m; }
  /// floor(total * r / ranks) without overflowing 64 bits.
  static std::int64_t even_split(std::int64_t total, int r, int ranks) {
    return total / ranks * r + total % ranks * r / ranks;
  }

  status set_tensors(const std::int64_t* sizes, std::size_t count, int ranks, flat_layout kind) {
    if (ranks < 1) return status(status_code::invalid_argument, "ranks must be at least 1, got %d", ranks);
    if (count > 0 && sizes == nullptr) return status(status_code::null_pointer, "tensor sizes are null");
    layout_ = kind;
    sizes_.assign(sizes, sizes + count);
    offsets_.resize(count);
    unsharded_groups_.resize(count + 1);
    std::int64_t at = 0, total = 0, groups = 0;
    constexpr std::int64_t limit = max_elements;  // 2^56: room for padding and products below
    for (std::size_t i = 0; i < count; ++i) {
      if (sizes_[i] < 0)
        return status(status_code::size_mismatch, "tensor %zu has negative size %" PRId64, i, sizes_[i]);
      if (sizes_[i] > limit - at)
        return status(status_code::invalid_argument, "tensor sizes add up past 2^56 elements");
      offsets_[i] = at;
      unsharded_groups_[i] = groups;
      at += kind == flat_layout::padded ? round_up(sizes_[i], shard_alignment) : sizes_[i];
      total += sizes_[i];
      groups += (sizes_[i] + shard_alignment - 1) / shard_alignment;
    }
    unsharded_groups_[count] = groups;
    total_ = total;
    flat_size_ = kind == flat_layout::padded ? round_up(at, shard_alignment * ranks) : at;
    return status();
  }

  void build_pieces() {
    const int R = ranks();
    pieces_.clear();
    piece_begin_.assign(static_cast<std::size_t>(R) + 1, 0);
    group_begin_.assign(static_cast<std::size_t>(R) + 1, 0);
    aligned_ = true;
    std::size_t ti = 0;
    for (int r = 0; r < R; ++r) {
      const std::int64_t b = shard_begin(r), e = shard_end(r);
      piece_begin_[static_cast<std::size_t>(r)] = pieces_.size();
      std::int64_t groups = 0;
      // tensors ending at or before b belong to earlier ranks
      while (ti < sizes_.size() && offsets_[ti] + sizes_[ti] <= b) ++ti;
      for (std::size_t i = ti; i < sizes_.size() && offsets_[i] < e; ++i) {
        const std::int64_t lo = std::max(b, offsets_[i]) - offsets_[i];
        const std::int64_t hi = std::min(e, offsets_[i] + sizes_[i]) - offsets_[i];
        if (hi <= lo) continue;
        shard_piece pc;
        pc.tensor = i;
        pc.begin = lo;
        pc.end = hi;
        pc.flat = offsets_[i] + lo;
        pc.local = pc.flat - b;
        pc.group = groups;
        groups += pc.groups();
        if (lo % shard_alignment != 0) aligned_ = false;
        if (hi != sizes_[i] && hi % shard_alignment != 0) aligned_ = false;
        pieces_.push_back(pc);
      }
      group_begin_[static_cast<std::size_t>(r) + 1] = group_begin_[static_cast<std::size_t>(r)] + groups;
    }
    piece_begin_[static_cast<std::size_t>(R)] = pieces_.size();
  }

  flat_layout layout_ = flat_layout::packed;
  std::vector<std::int64_t> sizes_, offsets_, unsharded_groups_;
  std::int64_t total_ = 0, flat_size_ = 0;
  std::vector<std::int64_t> bounds_;  // ranks + 1 flat offsets
  std::vector<shard_piece> pieces_;
  std::vector<std::size_t> piece_begin_;   // ranks + 1
  std::vector<std::int64_t> group_begin_;  // ranks + 1
  bool aligned_ = true;
};

/// One rank's buffers. Element k of param, aux, grad and the codes is flat
/// element shard_begin(rank) + k (a rank holding the whole flat parameter
/// and gradient buffers passes them offset by shard_begin); the scales hold
/// group_count(rank) groups. Padding elements inside a shard are never read
/// or written through the views.
template <class Config>
struct shard_buffers {
  using R = tensor_ref<Config>;
  typename R::param_type* param = nullptr;
  typename R::aux_type* aux = nullptr;
  const typename R::grad_type* grad = nullptr;
  /// Per state slot, the flat shard's codes and its scales (state<I>()).
  typename R::states_type states{};
  template <int I>
  auto& state() {
    return slot_at<I>(states);
  }
  template <int I>
  const auto& state() const {
    return slot_at<I>(states);
  }
};

/// The tensor_refs that step rank r's pieces (one per piece, in flat
/// order; index_base = the piece's begin, seed = seeds[tensor] or 0 when
/// seeds is null). Hand them to cpu::step_serial or device::step_plan.
/// Checks the rank and every view (null pointers, alignment, overlaps within
/// a view); nothing is written.
namespace detail {
template <class Config>
struct misaligned_groups {
  template <int I>
  struct slot : std::bool_constant<codec::is_grouped<typename Config::template state<I>>::value &&
                                   Config::template state<I>::group_size != shard_alignment> {};
};
}  // namespace detail

template <class Config>
status shard_views(const shard_plan& plan, int rank, const shard_buffers<Config>& b, const std::uint64_t* seeds,
                   std::vector<tensor_ref<Config>>& out) {
  static_assert(!any_of_slots<Config::num_slots, detail::misaligned_groups<Config>::template slot>,
                "shard pieces number their groups in units of layout::shard_alignment");
  if (rank < 0 || rank >= plan.ranks())
    return status(status_code::invalid_argument, "rank %d is outside the plan's %d ranks", rank, plan.ranks());
  std::vector<tensor_ref<Config>> views;
  views.reserve(plan.piece_count(rank));
  auto offset = [](auto* p, std::int64_t k) { return p == nullptr ? p : p + k; };
  for (const shard_piece* pc = plan.pieces_begin(rank); pc != plan.pieces_end(rank); ++pc) {
    tensor_ref<Config> t;
    t.size = pc->size();
    t.param = offset(b.param, pc->local);
    if constexpr (Config::has_aux) t.aux = offset(b.aux, pc->local);
    t.grad = offset(b.grad, pc->local);
    for_each_slot<Config::num_slots>([&](auto s) {
      constexpr int I = decltype(s)::value;
      using S = typename Config::template state<I>;
      if constexpr (S::stores_state) slot_at<I>(t.states).codes = offset(slot_at<I>(b.states).codes, pc->local);
      if constexpr (codec::is_grouped<S>::value)
        slot_at<I>(t.states).scales = offset(slot_at<I>(b.states).scales, pc->group);
    });
    t.seed = seeds == nullptr ? 0 : seeds[pc->tensor];
    t.index_base = static_cast<std::uint64_t>(pc->begin);
    const status st = validate_tensor(views.size(), t);
    if (!st.ok())
      return status(st.code(), "rank %d, piece of tensor %zu [%" PRId64 ", %" PRId64 "): %s", rank, pc->tensor,
                    pc->begin, pc->end, st.message());
    views.push_back(t);
  }
  out = std::move(views);
  return status();
}

/// Optimizer-state bytes rank r holds (corrections or masters, codes,
/// scales), exactly, from layout::bytes.
template <class Config>
std::int64_t shard_state_bytes(const shard_plan& plan, int rank) {
  std::int64_t b = 0;
  for (const shard_piece* pc = plan.pieces_begin(rank); pc != plan.pieces_end(rank); ++pc)
    b += bytes<Config>::state_for_size(pc->size());
  return b;
}

/// One allocation for a rank's corrections and states: a state_layout
/// sized for the whole shard (padding elements included), so the buffers
/// are the rank's slices of flat, unsharded-shaped arrays.
template <class Config>
struct shard_storage : state_layout<Config> {
  static shard_storage for_rank(const shard_plan& plan, int rank) {
    return for_counts(plan.shard_size(rank), plan.group_count(rank));
  }
  /// Elements and groups given directly (e.g. a rank's capacity for
  /// collectives that need equal counts).
  static shard_storage for_counts(std::int64_t elements, std::int64_t groups) {
    shard_storage s;
    static_cast<state_layout<Config>&>(s) = state_layout<Config>::for_counts(elements, groups);
    return s;
  }
  std::int64_t elements() const { return this->size; }

  /// Points b's correction and state buffers into `base` (at least `bytes`,
  /// 256-byte aligned); empty pieces stay null. param and grad are the
  /// caller's.
  void carve(void* base, shard_buffers<Config>& b) const {
    tensor_ref<Config> t;
    state_layout<Config>::carve(base, t);
    b.aux = t.aux;
    b.states = t.states;
  }
};

}  // namespace flashoptim::layout
