// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// Host models for the shard tests (plain C++, shared by the CPU and the GPU
// tests): a list of unsharded tensors, each slot in its own byte buffer,
// and the same tensors sharded by a layout::shard_plan, each rank holding
// its own buffers as a trainer's rank would. Copies between the two go piece
// by piece (scatter: resharding a run; gather: comparing it), so a wrong
// offset in the plan or in the views shows up as a named difference.
#pragma once

#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "common/data.hpp"
#include "flashoptim/flashoptim.hpp"
#include "flashoptim/layout/shard.hpp"

namespace shard_test {

using namespace flashoptim;

enum slot_id : int { s_param, s_aux, s_grad, s_code0, s_scale0, s_code1, s_scale1, s_count };
inline const char* slot_name(int k) {
  static const char* names[] = {"param", "aux", "grad", "code0", "scale0", "code1", "scale1"};
  return names[k];
}
inline bool is_scale(int k) { return k == s_scale0 || k == s_scale1; }

template <class Config>
std::size_t elem_bytes(int k) {
  using S0 = typename Config::state0;
  using S1 = typename Config::state1;
  switch (k) {
    case s_param:
      return sizeof(typename Config::param_type);
    case s_aux:
      return storage_bytes<typename Config::aux_type>;
    case s_grad:
      return sizeof(typename Config::grad_type);
    case s_code0:
      return S0::stores_state ? storage_bytes<typename S0::code_type> : 0;
    case s_scale0:
      return codec::is_grouped<S0>::value ? storage_bytes<typename S0::scale_type> : 0;
    case s_code1:
      return S1::stores_state ? storage_bytes<typename S1::code_type> : 0;
    default:
      return codec::is_grouped<S1>::value ? storage_bytes<typename S1::scale_type> : 0;
  }
}

/// Elements (or groups, for scales) of slot k for n elements.
inline std::int64_t slot_count(int k, std::int64_t n) {
  return is_scale(k) ? (n + layout::shard_alignment - 1) / layout::shard_alignment : n;
}

template <class T>
T* typed(std::vector<unsigned char>& v, std::size_t bytes_per) {
  return (bytes_per == 0 || v.empty()) ? nullptr : reinterpret_cast<T*>(v.data());
}

/// Hyperparameters every rule accepts, with momentum where the config keeps it.
template <class Config>
typename Config::hyper hyper_for() {
  using rule_t = typename Config::rule;
  typename Config::hyper h;
  if constexpr (std::is_same<rule_t, rule::sgd>::value || std::is_same<rule_t, rule::sgdw>::value) {
    h.lr = 1e-2;
    h.momentum = Config::state0::stores_state ? 0.9 : 0.0;
    h.weight_decay = 0.01;
  } else if constexpr (std::is_same<rule_t, rule::lion>::value) {
    h.lr = 1e-3;
    h.weight_decay = 0.1;
  } else {
    h.lr = 1e-2;
    h.weight_decay = 0.01;
  }
  return h;
}

inline std::uint64_t seed_of(std::size_t tensor) { return 0x9e3779b97f4a7c15ull * (tensor + 1); }

/// Unsharded tensors: tensor i, slot k in bytes[i][k].
template <class Config>
struct unsharded {
  std::vector<std::int64_t> sizes;
  std::vector<std::array<std::vector<unsigned char>, s_count>> bytes;
  std::vector<std::int64_t> index_base;  ///< 0 for whole tensors

  void allocate(const std::vector<std::int64_t>& n) {
    sizes = n;
    bytes.assign(n.size(), {});
    index_base.assign(n.size(), 0);
    for (std::size_t i = 0; i < n.size(); ++i)
      for (int k = 0; k < s_count; ++k)
        bytes[i][k].assign(static_cast<std::size_t>(slot_count(k, n[i])) * elem_bytes<Config>(k), 0);
  }

  tensor_ref<Config> ref(std::size_t i, std::uint64_t seed) {
    using R = tensor_ref<Config>;
    auto& b = bytes[i];
    R r;
    r.param = typed<typename R::param_type>(b[s_param], elem_bytes<Config>(s_param));
    r.aux = typed<typename R::aux_type>(b[s_aux], elem_bytes<Config>(s_aux));
    r.grad = typed<typename R::grad_type>(b[s_grad], elem_bytes<Config>(s_grad));
    static_assert(Config::num_slots <= 2, "the harness holds two state slots");
    flashoptim::for_each_slot<Config::num_slots>([&](auto k) {
      constexpr int I = decltype(k)::value;
      auto& x = flashoptim::slot_at<I>(r.states);
      x.codes = typed<std::remove_pointer_t<decltype(x.codes)>>(b[s_code0 + 2 * I], elem_bytes<Config>(s_code0 + 2 * I));
      x.scales =
          typed<std::remove_pointer_t<decltype(x.scales)>>(b[s_scale0 + 2 * I], elem_bytes<Config>(s_scale0 + 2 * I));
    });
    r.size = sizes[i];
    r.seed = seed;
    r.index_base = static_cast<std::uint64_t>(index_base[i]);
    return r;
  }
  /// Views with seeds[i] (seed_of(i) when empty).
  std::vector<tensor_ref<Config>> refs(const std::vector<std::uint64_t>& seeds = {}) {
    std::vector<tensor_ref<Config>> v;
    for (std::size_t i = 0; i < sizes.size(); ++i) v.push_back(ref(i, seeds.empty() ? seed_of(i) : seeds[i]));
    return v;
  }

  /// Parameters from random fp32 values (edge cases included), zero states.
  void init(testdata::generator& gen) {
    for (std::size_t i = 0; i < sizes.size(); ++i) {
      auto r = ref(i, 0);
      const float f = std::ldexp(1.0f, static_cast<int>(gen.u32() % 9) - 4);
      for (std::int64_t e = 0; e < sizes[i]; ++e) {
        float x = gen.value(1.0f, 0.05) * f;
        if (!std::isfinite(x) || std::fabs(x) > 1e4f) x = 1.0f;
        typename Config::aux_type a{};
        Config::master::encode(x, r.param[e], a);
        if constexpr (Config::has_aux) r.aux[e] = a;
      }
      for (int k : {s_code0, s_scale0, s_code1, s_scale1}) std::fill(bytes[i][k].begin(), bytes[i][k].end(), 0);
    }
  }
  void fill_grads(testdata::generator& gen, float sigma = 1.0f, double special = 0.03) {
    for (std::size_t i = 0; i < sizes.size(); ++i) {
      auto* g = reinterpret_cast<typename Config::grad_type*>(bytes[i][s_grad].data());
      // groups of very different magnitude, so group scales matter
      for (std::int64_t e = 0; e < sizes[i]; ++e) {
        const float f = ((e / 32) % 3 == 0) ? 1e-3f : 1.0f;
        g[e] = format::from_float<typename Config::grad_type>(gen.value(sigma * f, special));
      }
    }
  }
  status step(const typename Config::hyper& h, std::int64_t step, const std::vector<std::uint64_t>& seeds = {}) {
    step_args a;
    a.step = step;
    const auto r = refs(seeds);
    return cpu::step_serial<Config>(h, a, r.data(), r.size());
  }
};

/// The same tensors sharded: rank r's slot k in bytes[r][k], shard_size(r)
/// elements (group_count(r) for scales), laid out as shard_buffers says.
template <class Config>
struct sharded {
  layout::shard_plan plan;
  std::vector<std::array<std::vector<unsigned char>, s_count>> bytes;

  void allocate(const layout::shard_plan& p) {
    plan = p;
    bytes.assign(static_cast<std::size_t>(p.ranks()), {});
    for (int r = 0; r < p.ranks(); ++r)
      for (int k = 0; k < s_count; ++k) {
        const std::int64_t n = is_scale(k) ? p.group_count(r) : p.shard_size(r);
        // Sentinel bytes: padding elements must come out untouched. Scales
        // have no padding (every group belongs to a piece): zero, as fresh.
        bytes[static_cast<std::size_t>(r)][k].assign(static_cast<std::size_t>(n) * elem_bytes<Config>(k),
                                                     is_scale(k) ? 0 : 0xA5);
      }
  }

  layout::shard_buffers<Config> buffers(int r) {
    using R = tensor_ref<Config>;
    auto& b = bytes[static_cast<std::size_t>(r)];
    layout::shard_buffers<Config> s;
    s.param = typed<typename R::param_type>(b[s_param], elem_bytes<Config>(s_param));
    s.aux = typed<typename R::aux_type>(b[s_aux], elem_bytes<Config>(s_aux));
    s.grad = typed<typename R::grad_type>(b[s_grad], elem_bytes<Config>(s_grad));
    static_assert(Config::num_slots <= 2, "the harness holds two state slots");
    flashoptim::for_each_slot<Config::num_slots>([&](auto k) {
      constexpr int I = decltype(k)::value;
      auto& x = flashoptim::slot_at<I>(s.states);
      x.codes = typed<std::remove_pointer_t<decltype(x.codes)>>(b[s_code0 + 2 * I], elem_bytes<Config>(s_code0 + 2 * I));
      x.scales =
          typed<std::remove_pointer_t<decltype(x.scales)>>(b[s_scale0 + 2 * I], elem_bytes<Config>(s_scale0 + 2 * I));
    });
    return s;
  }
  std::vector<std::uint64_t> seeds() const {
    std::vector<std::uint64_t> s(plan.tensor_count());
    for (std::size_t i = 0; i < s.size(); ++i) s[i] = seed_of(i);
    return s;
  }
  status views(int r, std::vector<tensor_ref<Config>>& out) {
    const auto sd = seeds();
    return layout::shard_views<Config>(plan, r, buffers(r), sd.data(), out);
  }

  /// Copies slot k of every piece between the unsharded tensors and the
  /// ranks. Scales go by the piece's groups, which are the unsharded ones
  /// only when the piece starts on a group boundary: with `scales` false
  /// they are left alone (a fresh run has all-zero scales on both sides).
  void scatter(unsharded<Config>& u, int k) {
    for (int r = 0; r < plan.ranks(); ++r)
      for (const auto* pc = plan.pieces_begin(r); pc != plan.pieces_end(r); ++pc) copy_piece(u, r, *pc, k, true);
  }
  void scatter(unsharded<Config>& u, bool scales) {
    for (int k = 0; k < s_count; ++k)
      if (!is_scale(k) || scales) scatter(u, k);
  }
  /// Steps every rank's pieces with cpu::step_serial, rank after rank.
  status step(const typename Config::hyper& h, std::int64_t step) {
    step_args a;
    a.step = step;
    for (int r = 0; r < plan.ranks(); ++r) {
      std::vector<tensor_ref<Config>> v;
      FLASHOPTIM_RETURN_IF_ERROR(views(r, v));
      FLASHOPTIM_RETURN_IF_ERROR(cpu::step_serial<Config>(h, a, v.data(), v.size()));
    }
    return status();
  }

  /// First difference between the ranks' pieces and the unsharded tensors
  /// in the slots listed (scales compared at the piece's own groups, which
  /// is meaningful for group-aligned pieces only); "" when equal.
  std::string compare(unsharded<Config>& u, std::initializer_list<int> slots) {
    for (int r = 0; r < plan.ranks(); ++r)
      for (const auto* pc = plan.pieces_begin(r); pc != plan.pieces_end(r); ++pc)
        for (int k : slots) {
          const std::size_t eb = elem_bytes<Config>(k);
          if (eb == 0) continue;
          const std::int64_t count = is_scale(k) ? pc->groups() : pc->size();
          const std::int64_t mine = is_scale(k) ? pc->group : pc->local;
          const std::int64_t theirs = is_scale(k) ? pc->begin / layout::shard_alignment : pc->begin;
          const unsigned char* a = bytes[static_cast<std::size_t>(r)][k].data() + mine * eb;
          const unsigned char* b = u.bytes[pc->tensor][k].data() + theirs * eb;
          for (std::int64_t e = 0; e < count; ++e)
            if (std::memcmp(a + e * eb, b + e * eb, eb) != 0) {
              char buf[200];
              std::snprintf(buf, sizeof buf, "rank %d, tensor %zu piece [%lld, %lld): %s %s %lld differs", r,
                            pc->tensor, static_cast<long long>(pc->begin), static_cast<long long>(pc->end),
                            slot_name(k), is_scale(k) ? "group" : "element", static_cast<long long>(theirs + e));
              return buf;
            }
        }
    return "";
  }

  /// Bytes of every slot outside the pieces (padding elements, nothing
  /// else) still hold the sentinel; "" when they do.
  std::string padding_untouched() {
    for (int r = 0; r < plan.ranks(); ++r) {
      std::vector<char> owned(static_cast<std::size_t>(plan.shard_size(r)), 0);
      for (const auto* pc = plan.pieces_begin(r); pc != plan.pieces_end(r); ++pc)
        std::fill(owned.begin() + pc->local, owned.begin() + pc->local + pc->size(), 1);
      for (int k : {s_param, s_aux, s_code0, s_code1}) {
        const std::size_t eb = elem_bytes<Config>(k);
        const auto& b = bytes[static_cast<std::size_t>(r)][k];
        for (std::size_t e = 0; e < owned.size() && eb; ++e)
          if (!owned[e])
            for (std::size_t j = 0; j < eb; ++j)
              if (b[e * eb + j] != 0xA5)
                return "rank " + std::to_string(r) + " " + slot_name(k) + " padding element " + std::to_string(e);
      }
    }
    return "";
  }

  /// The pieces as standalone tensors (one per piece, all ranks, in order),
  /// with their bytes and index_base = the piece's begin: the documented
  /// outcome of an unaligned plan is stepping exactly these.
  unsharded<Config> standalone(std::vector<std::uint64_t>& seeds) {
    unsharded<Config> s;
    std::vector<std::int64_t> n;
    for (const auto& pc : plan.all_pieces()) n.push_back(pc.size());
    s.allocate(n);
    seeds.clear();
    std::size_t j = 0;
    for (int r = 0; r < plan.ranks(); ++r)
      for (const auto* pc = plan.pieces_begin(r); pc != plan.pieces_end(r); ++pc, ++j) {
        s.index_base[j] = pc->begin;
        seeds.push_back(seed_of(pc->tensor));
        for (int k = 0; k < s_count; ++k) {
          const std::size_t eb = elem_bytes<Config>(k);
          const std::int64_t count = is_scale(k) ? pc->groups() : pc->size();
          const std::int64_t mine = is_scale(k) ? pc->group : pc->local;
          if (eb && count)
            std::memcpy(s.bytes[j][k].data(), bytes[static_cast<std::size_t>(r)][k].data() + mine * eb,
                        static_cast<std::size_t>(count) * eb);
        }
      }
    return s;
  }
  /// Compares against standalone() stepped separately: every slot, scales included.
  std::string compare_standalone(unsharded<Config>& s) {
    std::size_t j = 0;
    for (int r = 0; r < plan.ranks(); ++r)
      for (const auto* pc = plan.pieces_begin(r); pc != plan.pieces_end(r); ++pc, ++j)
        for (int k = 0; k < s_count; ++k) {
          const std::size_t eb = elem_bytes<Config>(k);
          const std::int64_t count = is_scale(k) ? pc->groups() : pc->size();
          const std::int64_t mine = is_scale(k) ? pc->group : pc->local;
          if (eb && count &&
              std::memcmp(s.bytes[j][k].data(), bytes[static_cast<std::size_t>(r)][k].data() + mine * eb,
                          static_cast<std::size_t>(count) * eb) != 0)
            return "rank " + std::to_string(r) + " piece of tensor " + std::to_string(pc->tensor) + " [" +
                   std::to_string(pc->begin) + ", " + std::to_string(pc->end) + "): " + slot_name(k);
        }
    return "";
  }

 private:
  void copy_piece(unsharded<Config>& u, int r, const layout::shard_piece& pc, int k, bool to_rank) {
    const std::size_t eb = elem_bytes<Config>(k);
    if (eb == 0) return;
    const std::int64_t count = is_scale(k) ? pc.groups() : pc.size();
    const std::int64_t mine = is_scale(k) ? pc.group : pc.local;
    const std::int64_t theirs = is_scale(k) ? pc.begin / layout::shard_alignment : pc.begin;
    unsigned char* a = bytes[static_cast<std::size_t>(r)][k].data() + mine * eb;
    unsigned char* b = u.bytes[pc.tensor][k].data() + theirs * eb;
    if (to_rank)
      std::memcpy(a, b, static_cast<std::size_t>(count) * eb);
    else
      std::memcpy(b, a, static_cast<std::size_t>(count) * eb);
  }
};

}  // namespace shard_test
