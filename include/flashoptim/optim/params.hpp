// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// The part of the owning optimizers (cpu::optimizer, device::optimizer)
// that does not depend on where the memory lives: a trainer's parameters
// described as groups of tensors with their hyperparameters, flattened into
// one validated tensor list, and one arena for every tensor's correction
// and state buffers, planned from the tensor sizes and cut into views.
// Host-only C++17: pointers are only compared and offset, never read, so
// the same code serves host, device and managed memory.
#pragma once

#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

#include "flashoptim/format/dtype.hpp"
#include "flashoptim/layout/state_layout.hpp"
#include "flashoptim/rule/config.hpp"
#include "flashoptim/rule/tensor.hpp"
#include "flashoptim/status.hpp"
#include "flashoptim/tuning/offload.hpp"

namespace flashoptim::optim {

/// One trainer tensor. The optimizer keeps the pointers (it owns none of
/// these buffers) and allocates the correction and states itself.
struct param_spec {
  /// Config::param_type*, `size` elements: host memory for cpu::optimizer,
  /// device or managed memory for device::optimizer. Updated in place.
  void* param = nullptr;
  /// Config::grad_type*, `size` elements, same memory space. May be null
  /// while the optimizer is built; set it (set_grad) before a step reads it.
  const void* grad = nullptr;
  std::int64_t size = 0;
  /// Optional; empty: the optimizer names it "param.<index>" (its index in
  /// the flattened list). Names are unique.
  std::string name;
  /// Optional 2-D shape (0, 0: 1-D); when given, rows * cols == size.
  std::int64_t rows = 0, cols = 0;
  /// Optional fp32 weights (same memory space as param): param and
  /// correction are split from them (Config::master::encode). Null: the
  /// correction is initialized from the existing param: the correction of
  /// encode(x) for x = the param's value (format::to_float; not
  /// decode(param, zero correction), which is 0 for an fp32 master), and
  /// the param is left as it is.
  const float* init_fp32 = nullptr;
};

/// Tensors that share hyperparameters (e.g. "decay" and "no decay").
template <class Config>
struct param_group {
  typename Config::hyper hyper{};
  std::vector<param_spec> params;
};

/// What the optimizer does when a learning rate is too small to move a
/// tensor's weights (a bf16 weight ignores updates below half its ULP):
/// report prints a readable report and a one-line warning on stderr;
/// strict also refuses a step whose lr cannot move some tensor.
enum class lr_check_mode { off, report, strict };

struct optimizer_options {
  /// Tensor i's stochastic-rounding stream is tensor_seed(seed, i).
  std::uint64_t seed = 0;
  lr_check_mode lr_check = lr_check_mode::report;
  /// device::optimizer only (cpu::optimizer refuses anything but 0): the
  /// fraction of the elements whose corrections and states live in pinned
  /// host memory and are stepped on CPU threads while the GPU steps the
  /// rest, bit-identical to the all-GPU step. Whole tensors, the leading
  /// ones of the flattened list (Megatron's rule, layout::offload_count).
  /// In [0, 1]; 0: everything on the GPU.
  double offload_fraction = 0.0;
  /// Elements per pipelined chunk of the off-loaded part (a positive
  /// multiple of 32, so a chunk is whole groups of 32).
  std::int64_t offload_chunk_elements = tuning::offload_chunk_elements;
  /// Pinned gradient staging buffers of the off-loaded part (>= 1), each
  /// the size of the largest chunk made (so a setting above every tensor's
  /// size, one chunk per tensor, pins the largest off-loaded gradient).
  int offload_staging_buffers = tuning::offload_staging_buffers;
  /// CPU threads that step the off-loaded part (0: OpenMP's default).
  int offload_threads = 0;
};

/// Memory by kind, measured from the optimizer's own allocations.
struct memory_report {
  std::int64_t elements = 0;          ///< parameters (sum of sizes)
  std::int64_t param_bytes = 0;       ///< the trainer's params (not owned; for per-param figures)
  std::int64_t grad_bytes = 0;        ///< the trainer's grads (not owned)
  std::int64_t correction_bytes = 0;  ///< owned: corrections / fp32 masters, unpadded
  std::int64_t state_code_bytes = 0;  ///< owned: state codes of every slot, unpadded
  std::int64_t state_scale_bytes = 0; ///< owned: group scales, unpadded
  std::int64_t padding_bytes = 0;     ///< owned: alignment padding between pieces (256-byte pieces)
  std::int64_t table_bytes = 0;       ///< owned: device tables, workspaces, control block (0 on the CPU)
  std::int64_t arena_bytes = 0;       ///< owned total of the state arena = correction + codes + scales + padding
  /// The part of arena_bytes in pinned host memory: the off-loaded tensors'
  /// corrections and states (device::optimizer with offload_fraction > 0;
  /// 0 otherwise, and 0 on cpu::optimizer, whose whole arena is host memory
  /// by construction).
  std::int64_t host_arena_bytes = 0;
  /// Every owned byte of pinned host memory: host_arena_bytes, the
  /// off-loaded parameters' host copies and the gradient staging buffers
  /// (0 without off-load and on cpu::optimizer).
  std::int64_t host_bytes = 0;

  /// Owned device memory of a device::optimizer: the arena's device part
  /// and the tables.
  std::int64_t device_bytes() const { return arena_bytes - host_arena_bytes + table_bytes; }

  /// (param + [grad] + correction + codes + scales) / elements, padding and
  /// tables left out (0 without elements). with_grad = false is the
  /// residency under gradient release, where a tensor's gradient is
  /// consumed by its step as soon as it is produced and need not stay.
  double bytes_per_param(bool with_grad = true) const {
    if (elements <= 0) return 0.0;
    const double b = static_cast<double>(param_bytes) + (with_grad ? static_cast<double>(grad_bytes) : 0.0) +
                     static_cast<double>(correction_bytes) + static_cast<double>(state_code_bytes) +
                     static_cast<double>(state_scale_bytes);
    return b / static_cast<double>(elements);
  }

  /// A few human-readable lines.
  std::string to_string() const {
    // bytes below 1 MiB, MiB above: small models read as well as large ones
    auto amount = [](std::int64_t b) {
      char t[48];
      if (b < (std::int64_t{1} << 20)) std::snprintf(t, sizeof t, "%" PRId64 " B", b);
      else std::snprintf(t, sizeof t, "%.3f MiB", static_cast<double>(b) / (1024.0 * 1024.0));
      return std::string(t);
    };
    char buf[256];
    std::snprintf(buf, sizeof buf, "parameters: %" PRId64 "\n", elements);
    std::string out = buf;
    out += "trainer's (not owned): params " + amount(param_bytes) + ", grads " + amount(grad_bytes) + "\n";
    out += "owned: corrections " + amount(correction_bytes) + ", state codes " + amount(state_code_bytes) +
           ", state scales " + amount(state_scale_bytes) + ", padding " + amount(padding_bytes) + ", tables " +
           amount(table_bytes) + "; arena " + amount(arena_bytes) + "\n";
    if (host_bytes > 0)
      out += "off-loaded to pinned host memory: " + amount(host_bytes) + " (of it, arena " + amount(host_arena_bytes) +
             "); owned device memory " + amount(device_bytes()) + "\n";
    std::snprintf(buf, sizeof buf,
                  "resident per parameter: %.4f B with gradients, %.4f B under gradient release\n",
                  bytes_per_param(true), bytes_per_param(false));
    return out + buf;
  }
};

/// Tensor `index`'s stochastic-rounding seed: SplitMix64 over the optimizer
/// seed and the index (a fixed function: CPU and device optimizers, and a
/// resumed run, give tensor i the same stream).
inline std::uint64_t tensor_seed(std::uint64_t seed, std::size_t index) {
  std::uint64_t z = seed + 0x9e3779b97f4a7c15ull * (static_cast<std::uint64_t>(index) + 1u);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/// The groups as one tensor list: group g's tensors keep their order,
/// groups follow each other in order (so each group is a contiguous run).
template <class Config>
struct flat_params {
  std::vector<param_spec> specs;               ///< every tensor, group by group; names filled in
  std::vector<std::int32_t> group;             ///< group index of each tensor
  std::vector<typename Config::hyper> hypers;  ///< one per group
};

namespace detail {
inline bool aligned_to(const void* p, std::size_t a) {
  return a <= 1 || reinterpret_cast<std::uintptr_t>(p) % a == 0;
}
}  // namespace detail

/// Flattens and validates `groups`: every group's hyperparameters
/// (Rule::validate), sizes in [0, max_elements], a 2-D shape with
/// rows, cols >= 0 and rows * cols == size, no null param with size > 0,
/// param, grad and init_fp32 aligned to their element types, unique names
/// (empty ones become "param.<index>" first). On error `out` is unchanged.
template <class Config>
status flatten(const std::vector<param_group<Config>>& groups, flat_params<Config>& out) {
  using param_type = typename Config::param_type;
  using grad_type = typename Config::grad_type;
  if (groups.size() > static_cast<std::size_t>(std::numeric_limits<std::int32_t>::max()))
    return status(status_code::invalid_argument, "optimizer: %zu groups is above 2^31 - 1", groups.size());
  flat_params<Config> f;
  f.hypers.reserve(groups.size());
  for (std::size_t g = 0; g < groups.size(); ++g) {
    const status s = Config::rule::validate(groups[g].hyper);
    if (!s.ok()) return status(s.code(), "group %zu: %s", g, s.message());
    f.hypers.push_back(groups[g].hyper);
    for (const param_spec& p : groups[g].params) {
      const std::size_t i = f.specs.size();
      if (p.size < 0 || p.size > max_elements)
        return status(status_code::invalid_argument,
                      "tensor %zu (group %zu): size %" PRId64 " is outside [0, 2^56] (flashoptim::max_elements)", i, g,
                      p.size);
      if (p.rows < 0 || p.cols < 0)
        return status(status_code::invalid_argument, "tensor %zu (group %zu): shape %" PRId64 " x %" PRId64
                      " has a negative extent", i, g, p.rows, p.cols);
      if (p.rows != 0 || p.cols != 0) {
        // rows * cols formed only where it cannot overflow
        const bool fits = p.rows == 0 || p.cols <= max_elements / p.rows;
        if (!fits || p.rows * p.cols != p.size)
          return status(status_code::size_mismatch,
                        "tensor %zu (group %zu): shape %" PRId64 " x %" PRId64 " does not hold its %" PRId64
                        " elements", i, g, p.rows, p.cols, p.size);
      }
      if (p.size > 0 && p.param == nullptr)
        return status(status_code::null_pointer, "tensor %zu (group %zu): param is null for %" PRId64 " elements", i,
                      g, p.size);
      if (!detail::aligned_to(p.param, alignof(param_type)))
        return status(status_code::misaligned, "tensor %zu (group %zu): param at %p is not %zu-byte aligned", i, g,
                      p.param, alignof(param_type));
      if (!detail::aligned_to(p.grad, alignof(grad_type)))
        return status(status_code::misaligned, "tensor %zu (group %zu): grad at %p is not %zu-byte aligned", i, g,
                      p.grad, alignof(grad_type));
      if (!detail::aligned_to(p.init_fp32, alignof(float)))
        return status(status_code::misaligned, "tensor %zu (group %zu): init_fp32 at %p is not 4-byte aligned", i,
                      g, static_cast<const void*>(p.init_fp32));
      f.specs.push_back(p);
      if (f.specs.back().name.empty()) f.specs.back().name = "param." + std::to_string(i);
      f.group.push_back(static_cast<std::int32_t>(g));
    }
  }
  std::unordered_set<std::string> seen;
  seen.reserve(f.specs.size());
  for (std::size_t i = 0; i < f.specs.size(); ++i)
    if (!seen.insert(f.specs[i].name).second)
      return status(status_code::invalid_argument, "tensor %zu: name '%.80s' is used by an earlier tensor", i,
                    f.specs[i].name.c_str());
  out = std::move(f);
  return status();
}

/// One arena for every tensor's correction and states: tensor i's
/// state_layout starts at offset[i], a multiple of 256 (every piece of a
/// state_layout is a multiple of 256 long), so a 256-byte-aligned base
/// gives every piece the alignment of a fresh cudaMalloc.
template <class Config>
struct arena_layout {
  std::vector<std::int64_t> offset;
  std::vector<state_layout<Config>> layouts;
  std::int64_t bytes = 0;  ///< total, padding included

  /// Sizes from `specs` (flatten's, sizes already checked; checked again
  /// here); capacity_exceeded when the total does not fit int64_t.
  static status plan(const std::vector<param_spec>& specs, arena_layout& out) {
    arena_layout a;
    a.offset.reserve(specs.size());
    a.layouts.reserve(specs.size());
    std::int64_t at = 0;
    for (std::size_t i = 0; i < specs.size(); ++i) {
      if (specs[i].size < 0 || specs[i].size > max_elements)
        return status(status_code::invalid_argument, "tensor %zu: size %" PRId64 " is outside [0, 2^56]", i,
                      specs[i].size);
      const auto l = state_layout<Config>::for_size(specs[i].size);
      if (l.bytes > std::numeric_limits<std::int64_t>::max() - at)
        return status(status_code::capacity_exceeded,
                      "optimizer: the state of tensors 0..%zu needs more than 2^63 bytes", i);
      a.offset.push_back(at);
      a.layouts.push_back(l);
      at += l.bytes;
    }
    a.bytes = at;
    out = std::move(a);
    return status();
  }

  /// Points t's correction and state buffers (and size) into `base`, an
  /// allocation of at least `bytes`, 256-byte aligned. param, grad, seed
  /// and index_base are left to the caller.
  void carve(void* base, std::size_t i, tensor_ref<Config>& t) const {
    layouts[i].carve(static_cast<unsigned char*>(base) + offset[i], t);
  }

  /// Memory by kind for these specs (the ones planned); table_bytes 0.
  memory_report report(const std::vector<param_spec>& specs) const {
    memory_report r;
    for (std::size_t i = 0; i < specs.size() && i < layouts.size(); ++i) {
      const std::int64_t n = specs[i].size;
      const auto& l = layouts[i];
      r.elements += n;
      r.param_bytes += n * static_cast<std::int64_t>(storage_bytes<typename Config::param_type>);
      r.grad_bytes += n * static_cast<std::int64_t>(storage_bytes<typename Config::grad_type>);
      r.correction_bytes += l.aux_bytes;
      for (int s = 0; s < state_layout<Config>::num_slots; ++s) {
        r.state_code_bytes += l.slots[s].code_bytes;
        r.state_scale_bytes += l.slots[s].scale_bytes;
      }
    }
    r.arena_bytes = bytes;
    r.padding_bytes = bytes - r.correction_bytes - r.state_code_bytes - r.state_scale_bytes;
    return r;
  }
};

}  // namespace flashoptim::optim
