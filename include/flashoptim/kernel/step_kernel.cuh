// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// The one fused step kernel: for every tile of every tensor in a table,
// load -> decode master and states -> rule -> encode -> store, in one pass.
// The arithmetic is flashoptim::step_tile (rule/tile.hpp), the function the
// CPU path calls, with the codec and rule wrappers of kernel_config (same
// bits, proven or checked: kernel/proven_math.hpp, kernel/range_checked.cuh);
// this file only decides how tiles are loaded, how a group's maximum is
// found (warp shuffles between the 32 / N lanes of a group), how a
// persistent grid walks the table (runs of whole units with 32-bit offsets,
// element-wise tiles for the rest) and when a range-checked tile is redone.
//
// Graph capture: with device inputs the kernel reads lr, the step count,
// the gradient multiplier and a skip flag from device memory and computes
// the step's scalars itself, in double, with Rule::make_scalars (the host
// path's function), so a captured launch replays correctly as they change.
//
// Parameter groups: a launch carries up to tuning::max_step_groups sets of
// scalars (or hyperparameters, with device inputs); each tensor's table
// entry names its group, and the kernel takes that group's scalars when it
// starts the tensor. One group is the plain step.
//
// FP8 parameters (docs/fp8-params.md): a kernel instantiated with an FP8
// type (F8 = fp8_e4m3 / fp8_e5m2) also writes each tensor's FP8 copy with
// 1 x 128 block scales from the new master it holds in registers
// (kernel/fp8_step_write.cuh); F8 = void, the default, is the plain step,
// whose code does not change.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "flashoptim/kernel/fp8_step_write.cuh"
#include "flashoptim/kernel/kernel_config.cuh"
#include "flashoptim/kernel/tensor_table.cuh"
#include "flashoptim/rule/tile.hpp"
#include "flashoptim/tuning/step_policy.hpp"

namespace flashoptim::kernel {

/// Per-step inputs read from device memory (graph-capturable mode). A null
/// pointer means "use the host value" (hyper.lr, step_args).
struct device_inputs {
  /// Overrides hyper.lr: one value per parameter group (lr[g] for group g;
  /// a plan of one group reads lr[0]).
  const double* lr = nullptr;
  const std::int64_t* step = nullptr;      ///< overrides step_args::step (1-based)
  const double* inv_grad_scale = nullptr;  ///< overrides step_args::inv_grad_scale
  const std::int32_t* skip = nullptr;      ///< nonzero: the step writes nothing
  /// Set to 1 (never cleared) when a device value is invalid (lr < 0 or not
  /// finite, step < 1, multiplier not finite and positive, or the fp32
  /// scalars made from them out of range: Rule::check_scalars); the step then
  /// writes nothing, as a host call with those values would refuse to run.
  std::int32_t* error = nullptr;

  FLASHOPTIM_HOST_DEVICE bool any() const { return lr || step || inv_grad_scale || skip; }
};

/// Kernel parameters (CUTLASS's "Params": built by the host API).
template <class Config>
struct step_params {
  static constexpr int max_groups = tuning::max_step_groups;
  table_view<Config> table;
  typename Config::scalars scalars[max_groups]{};  ///< host mode: group g's scalars
  std::uint64_t step = 1;                          ///< host mode: the rounding key's step
  typename Config::hyper hyper[max_groups]{};      ///< device mode: make_scalars' input per group
  std::int64_t host_step = 1;        ///< device mode: used where inputs.step is null
  double host_inv_grad_scale = 1.0;  ///< device mode: used where inputs.inv_grad_scale is null
  std::int32_t groups = 1;           ///< groups in use, 1 .. max_groups (table entries name one)
  device_inputs inputs{};
};

/// step_params of a launch that also writes FP8 parameters.
template <class Config, class F8>
struct fp8_step_params : step_params<Config> {
  fp8_out<F8> fp8{};
};
/// A launch's parameters: the plain step's for F8 = void.
template <class Config, class F8>
using step_params_for = std::conditional_t<std::is_void<F8>::value, step_params<Config>, fp8_step_params<Config, F8>>;

/// A thread's FP8 output along a run of tiles (fused launches; F8 = void:
/// none): its tile at offset off is values + off, its block's scale
/// scales + off / 128, written by the block's first lane (owner).
template <class F8>
struct fp8_run_out {
  F8* values = nullptr;  ///< null: the tensor has no fused FP8 copy
  float* scales = nullptr;
  bool vector_store = false;
  bool owner = false;
  bool pow2 = false;
};

/// Maximum over the tiles of a group: Lanes consecutive lanes hold one group
/// in element order. Combines partial maxima as the sequential loop of
/// grouped::tile_amax does (the later NaN wins, else the larger value), so
/// the result is the CPU's for any input.
template <int Lanes>
struct group_max {
  FLASHOPTIM_DEVICE FLASHOPTIM_INLINE static float combine(float earlier, float later) {
    if (format::is_nan(later)) return later;
    return later > earlier ? later : earlier;
  }
  FLASHOPTIM_DEVICE FLASHOPTIM_INLINE float operator()(float x) const {
    FLASHOPTIM_UNROLL for (int offset = 1; offset < Lanes; offset <<= 1) {
      const float y = __shfl_xor_sync(0xffffffffu, x, offset);
      const bool upper = (threadIdx.x & offset) != 0;  // y comes from an earlier tile
      x = upper ? combine(y, x) : combine(x, y);
    }
    return x;
  }
  /// Plain maxNum over the group (operands never NaN-sensitive: the caller
  /// ignores NaNs by construction).
  FLASHOPTIM_DEVICE FLASHOPTIM_INLINE float max_num(float x) const {
    FLASHOPTIM_UNROLL for (int offset = 1; offset < Lanes; offset <<= 1) {
      x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, offset));
    }
    return x;
  }
  /// Whether p holds on every lane of the warp (every lane reduces
  /// together, so a branch on the answer is warp-uniform).
  FLASHOPTIM_DEVICE FLASHOPTIM_INLINE bool all(bool p) const { return __all_sync(0xffffffffu, p); }
};

/// group_max for the first attempt of a range-checked step: `all` records
/// the predicate in the tile's flag and answers true (the tile is redone
/// exactly when the flag ends false on any lane).
template <int Lanes>
struct checked_group_max : group_max<Lanes> {
  bool* ok;
  FLASHOPTIM_DEVICE FLASHOPTIM_INLINE bool all(bool p) const {
    *ok = *ok & p;
    return true;
  }
};

/// How each buffer of a tile of N elements of Config is moved, and whether
/// its states carry group scales (every tile function below reads these).
template <class Config, int N>
struct tile_io {
  static constexpr int K = Config::num_slots;
  using P = tile_access<typename Config::param_type, N>;
  using A = tile_access<typename Config::aux_type, N>;
  using G = tile_access<typename Config::grad_type, N>;
  /// Slot I: its codec, how its codes (N) and its scale (1) move.
  template <int I>
  using S = typename Config::template state<I>;
  template <int I>
  using Q = tile_access<typename S<I>::code_type, N>;
  template <int I>
  using Ks = tile_access<typename S<I>::scale_type, 1>;
  template <int I>
  static constexpr bool stored = S<I>::stores_state;
  template <int I>
  static constexpr bool grouped = codec::is_grouped<S<I>>::value;
};

/// Steps one tile of tensor t at element e (a multiple of N) with `valid`
/// elements in it (N on the vector path). Every lane of the warp calls it on
/// the same path, since the group reduction shuffles.
/// With F8 (a fused launch) and fo.values set, then writes the tile's FP8
/// copy (fo at e: values + e, scales + e / 128).
template <class TC, int N, bool Vector, class F8 = void>
FLASHOPTIM_DEVICE FLASHOPTIM_INLINE void step_one_tile(const typename TC::scalars& sc, const tensor_ref<typename TC::base>& t,
                                                       std::int64_t e, int valid, std::uint64_t step,
                                                       const fp8_run_out<F8>& fo = {}) {
  using C = typename TC::base;
  using IO = tile_io<C, N>;
  constexpr int K = C::num_slots;

  tile_data<TC, N> d;
  if constexpr (Vector) {
    IO::P::load(t.param + e, d.param);
    if constexpr (C::has_aux) IO::A::load(t.aux + e, d.aux);
    IO::G::load_readonly(t.grad + e, d.grad);
  } else {
    d = tile_data<TC, N>{};
    IO::P::load_partial(t.param + e, d.param, valid);
    if constexpr (C::has_aux) IO::A::load_partial(t.aux + e, d.aux, valid);
    IO::G::load_partial(t.grad + e, d.grad, valid);
  }
  const std::int64_t group = e / 32;
  for_each_slot<K>([&](auto s) {
    constexpr int I = decltype(s)::value;
    auto& slot = slot_at<I>(d.states);
    const auto& ref = slot_at<I>(t.states);
    if constexpr (IO::template stored<I>) {
      if constexpr (Vector) IO::template Q<I>::load(ref.codes + e, slot.codes);
      else IO::template Q<I>::load_partial(ref.codes + e, slot.codes, valid);
    }
    if constexpr (IO::template grouped<I>) {
      if (Vector || valid > 0) slot.scale = ref.scales[group];
    }
  });

  // A compile-time `valid` on the vector path lets the compiler share the
  // rule's sqrt(v) with the second-moment compander's.
  step_tile<TC, N>(sc, d, Vector ? N : valid, group_max<32 / N>{},
                   codec::rounding_key{t.seed, step, t.index_base + static_cast<std::uint64_t>(e)});

  if constexpr (Vector) {
    IO::P::store(t.param + e, d.param);
    if constexpr (C::has_aux) IO::A::store(t.aux + e, d.aux);
  } else {
    IO::P::store_partial(t.param + e, d.param, valid);
    if constexpr (C::has_aux) IO::A::store_partial(t.aux + e, d.aux, valid);
  }
  // The first tile of a group stores its scale (all tiles hold the same).
  const bool scale_owner = (Vector || valid > 0) && (e % 32) == 0;
  for_each_slot<K>([&](auto s) {
    constexpr int I = decltype(s)::value;
    const auto& slot = slot_at<I>(d.states);
    const auto& ref = slot_at<I>(t.states);
    if constexpr (IO::template stored<I>) {
      if constexpr (Vector) IO::template Q<I>::store(ref.codes + e, slot.codes);
      else IO::template Q<I>::store_partial(ref.codes + e, slot.codes, valid);
    }
    if constexpr (IO::template grouped<I>) {
      if (scale_owner) ref.scales[group] = slot.scale;
    }
  });
  if constexpr (!std::is_void<F8>::value) {
    if (fo.values != nullptr)  // uniform: the warp's tiles are one tensor's
      fp8_write_stepped_tile<typename TC::master, F8, N, Vector>(
          d.param, d.aux, valid, fo.pow2, fo.values + e, fo.vector_store, fo.scales + e / fp8_block_cols,
          (Vector || valid > 0) && e % fp8_block_cols == 0);
  }
}

/// A thread's pointers into one tensor at element e0 (a tile start), for a
/// run of whole units on the vector path: the tile at e0 + off, off a
/// multiple of the unit below 2^31, is addressed with 32-bit offsets (one
/// IMAD.WIDE per buffer instead of 64-bit element arithmetic per tile).
/// Absent slots stay null.
template <class Config>
struct run_pointers {
  using R = tensor_ref<Config>;
  typename R::param_type* param;
  typename R::aux_type* aux;
  const typename R::grad_type* grad;
  /// Per slot: codes at e0, and the scale of e0's group.
  typename R::states_type states;

  FLASHOPTIM_DEVICE FLASHOPTIM_INLINE static run_pointers at(const R& t, std::int64_t e0) {
    run_pointers b{opaque(t.param + e0), nullptr, opaque(t.grad + e0), {}};
    if constexpr (Config::has_aux) b.aux = opaque(t.aux + e0);
    for_each_slot<Config::num_slots>([&](auto s) {
      constexpr int I = decltype(s)::value;
      using S = typename Config::template state<I>;
      if constexpr (S::stores_state) slot_at<I>(b.states).codes = opaque(slot_at<I>(t.states).codes + e0);
      if constexpr (codec::is_grouped<S>::value) slot_at<I>(b.states).scales = opaque(slot_at<I>(t.states).scales + e0 / 32);
    });
    return b;
  }
  /// The pointer, hidden from the optimizer: left visible, ptxas folds
  /// base + e0 + off back into 64-bit element arithmetic per tile.
  template <class T>
  FLASHOPTIM_DEVICE FLASHOPTIM_INLINE static T* opaque(T* p) {
    asm("mov.b64 %0, %0;" : "+l"(p));
    return p;
  }
};

/// The tile at b + off: N elements, all valid, buffers vector-aligned.
template <bool Again, class TC, int N>
FLASHOPTIM_DEVICE FLASHOPTIM_INLINE void load_run_tile(const run_pointers<typename TC::base>& b, std::uint32_t off,
                                                       tile_data<TC, N>& d) {
  using C = typename TC::base;
  using IO = tile_io<C, N>;
  const std::uint32_t group = off / 32;
  if constexpr (Again) {
    IO::P::load_again(b.param + off, d.param);
    if constexpr (C::has_aux) IO::A::load_again(b.aux + off, d.aux);
    IO::G::load_again(b.grad + off, d.grad);
  } else {
    IO::P::load(b.param + off, d.param);
    if constexpr (C::has_aux) IO::A::load(b.aux + off, d.aux);
    IO::G::load_readonly(b.grad + off, d.grad);
  }
  for_each_slot<C::num_slots>([&](auto s) {
    constexpr int I = decltype(s)::value;
    auto& slot = slot_at<I>(d.states);
    const auto& ptr = slot_at<I>(b.states);
    if constexpr (Again) {
      if constexpr (IO::template stored<I>) IO::template Q<I>::load_again(ptr.codes + off, slot.codes);
      if constexpr (IO::template grouped<I>) slot.scale = IO::template Ks<I>::load_one_again(ptr.scales + group);
    } else {
      if constexpr (IO::template stored<I>) IO::template Q<I>::load(ptr.codes + off, slot.codes);
      if constexpr (IO::template grouped<I>) slot.scale = IO::template Ks<I>::load_one(ptr.scales + group);
    }
  });
}

/// Asks L2 for the tile at b + off (its code, parameter, correction and
/// gradient lines) ahead of its loads.
template <class Config>
FLASHOPTIM_DEVICE FLASHOPTIM_INLINE void prefetch_run_tile(const run_pointers<Config>& b, std::uint32_t off) {
  detail::prefetch_l2(b.param + off);
  detail::prefetch_l2(b.grad + off);
  if constexpr (Config::has_aux) detail::prefetch_l2(b.aux + off);
  for_each_slot<Config::num_slots>([&](auto s) {
    constexpr int I = decltype(s)::value;
    if constexpr (Config::template state<I>::stores_state) detail::prefetch_l2(slot_at<I>(b.states).codes + off);
  });
}

/// The scale windows of a run without any (scale_window's members that
/// step_loaded_run_tile reads).
struct no_scale_windows {
  template <int I>
  static constexpr bool windowed = false;
  template <int I>
  static constexpr int index = 0;
  static constexpr int warps = 0;
  static constexpr std::uint32_t warp_bytes = 0;
};

#if defined(FLASHOPTIM_COUNT_REDONE_TILES)
/// Test hook (off unless a translation unit defines the macro before it
/// includes flashoptim, and then in that one only): warp tiles stepped again
/// after a failed range check, [0] by the zero-tolerant attempt, [1] by the
/// exact step. Lane 0 counts once per warp tile.
__device__ unsigned long long redone_tiles[2];
#define FLASHOPTIM_COUNT_REDO(k) \
  ((threadIdx.x % 32u) == 0u ? static_cast<void>(atomicAdd(&::flashoptim::kernel::redone_tiles[k], 1ull)) : void())
#else
#define FLASHOPTIM_COUNT_REDO(k) static_cast<void>(0)
#endif

/// The vector path of step_one_tile for the tile at b + off (N elements,
/// all valid, buffers vector-aligned). `scale_owner`: the tile is the first
/// of its group. `index` is the tile's rounding-key index. With a checked
/// config TCc (range-checked policy) the tile is first stepped by TCc; when
/// a range check failed on any lane of the warp, it is read again and
/// stepped by TCc's zero-tolerant attempt where it has one
/// (kernel_config::zero_attempt), and when a check fails there too, read
/// again and stepped by TC. Otherwise (TCc = TC) once by TC.
/// With F8 (a fused launch) and fo.values set, the tile's FP8 copy is
/// written last, from the stored master still in d.
/// W: the run's scale windows (scale_window, or no_scale_windows). A windowed
/// slot's new scale goes to `word` in the group's write entry (the word at
/// the place of the one load_staged_tile read the old scale from, in the
/// read entry), which the warp writes back to global memory once per R
/// tiles (write_back_window); every other scale to global memory here.
template <class TC, class TCc, int N, class F8 = void, class W = no_scale_windows>
FLASHOPTIM_DEVICE FLASHOPTIM_INLINE void step_loaded_run_tile(const typename TC::scalars& sc,
                                                              const typename TCc::scalars& checked_sc,
                                                              const run_pointers<typename TC::base>& b,
                                                              std::uint32_t off, bool scale_owner, std::uint64_t seed,
                                                              std::uint64_t step, std::uint64_t index,
                                                              tile_data<TCc, N>& d, const fp8_run_out<F8>& fo = {},
                                                              [[maybe_unused]] std::uint32_t word = 0) {
  using C = typename TC::base;
  using IO = tile_io<C, N>;
  const codec::rounding_key key{seed, step, index};

  if constexpr (TCc::checked) {
    bool ok = true;
    typename TCc::scalars csc = checked_sc;
    csc.ok = &ok;
    step_tile<TCc, N>(csc, d, N, checked_group_max<32 / N>{{}, &ok}, key);
    if (__any_sync(0xffffffffu, !ok)) {
      if constexpr (TCc::has_zero_attempt) {
        using TCz = typename TCc::zero_attempt;
        FLASHOPTIM_COUNT_REDO(0);
        tile_data<TCz, N> z;
        load_run_tile<true>(b, off, z);
        static_assert(sizeof(z) == sizeof(d), "the same storage");
        ok = true;
        step_tile<TCz, N>(csc, z, N, checked_group_max<32 / N>{{}, &ok}, key);
        std::memcpy(&d, &z, sizeof(d));
      }
      if (!TCc::has_zero_attempt || __any_sync(0xffffffffu, !ok)) {
        FLASHOPTIM_COUNT_REDO(1);
        tile_data<TC, N> x;
        load_run_tile<true>(b, off, x);
        static_assert(sizeof(x) == sizeof(d), "the same storage");
        step_tile<TC, N>(sc, x, N, group_max<32 / N>{}, key);
        std::memcpy(&d, &x, sizeof(d));
      }
    }
  } else {
    step_tile<TCc, N>(sc, d, N, group_max<32 / N>{}, key);
  }

  const std::uint32_t group = off / 32;
  IO::P::store(b.param + off, d.param);
  if constexpr (C::has_aux) IO::A::store(b.aux + off, d.aux);
  for_each_slot<C::num_slots>([&](auto s) {
    constexpr int I = decltype(s)::value;
    const auto& slot = slot_at<I>(d.states);
    const auto& ptr = slot_at<I>(b.states);
    if constexpr (IO::template stored<I>) IO::template Q<I>::store(ptr.codes + off, slot.codes);
    if constexpr (IO::template grouped<I>) {
      if (scale_owner) {
        if constexpr (W::template windowed<I>) {
          static_assert(sizeof(slot.scale) == 4, "windows hold 4-byte scales");
          unsigned int bits;
          std::memcpy(&bits, &slot.scale, 4);
          detail::st_shared(word + static_cast<std::uint32_t>(W::template index<I> * W::warps) * W::warp_bytes, bits);
        } else {
          IO::template Ks<I>::store_one(ptr.scales + group, slot.scale);
        }
      }
    }
  });
  if constexpr (!std::is_void<F8>::value) {
    if (fo.values != nullptr)
      fp8_write_stepped_tile<typename TC::master, F8, N, true>(d.param, d.aux, N, fo.pow2, fo.values + off,
                                                               fo.vector_store, fo.scales + off / fp8_block_cols,
                                                               fo.owner);
  }
}

/// Alignment of the stage ring in the shared window. A warp's 16-byte copies
/// and reads of one region then cover 4 whole 128-byte lines, not 5: the
/// dynamic region starts after the kernel's own __shared__ variables (the
/// device-inputs variant has 336 bytes of them), and with the ring 80 bytes
/// off a line the cp.async copies took twice the shared-memory wavefronts
/// (Nsight Compute: 23.1M -> 48.2M) and the step 5-8% longer.
inline constexpr std::uint32_t stage_alignment = 128;

/// Shared-memory staging of a run's tiles (Policy::stages > 1), one stage:
/// a region per buffer, thread t's slot at t * (its tile's bytes), so a
/// warp's copies and reads of its slots are contiguous (no bank
/// conflicts). Buffers whose tile is not whole 4-byte words (2-byte scales)
/// are not staged: they are read from global memory when stepped.
template <class TCc, int N, int Threads>
struct stage_layout : tile_io<typename TCc::base, N> {
  using IO = tile_io<typename TCc::base, N>;
  using tile = tile_data<TCc, N>;
  using C = typename TCc::base;
  static constexpr bool param_staged = IO::P::present && IO::P::stageable;
  static constexpr bool aux_staged = C::has_aux && IO::A::present && IO::A::stageable;
  static constexpr bool grad_staged = IO::G::present && IO::G::stageable;
  template <int I>
  static constexpr bool code_staged = IO::template stored<I> && IO::template Q<I>::present && IO::template Q<I>::stageable;
  /// 2-byte scales (the reference layout's fp16) are staged as the 4-byte
  /// word holding them: cp.async moves whole 4-byte words, and a full unit's
  /// scales are whole words of a 4-byte-aligned buffer (kernel::vector_aligned
  /// asks for that), so the word never leaves the unit's scales.
  template <int I>
  static constexpr bool scale_word = IO::template grouped<I> && IO::template Ks<I>::present &&
                                     IO::template Ks<I>::bytes == 2;
  template <int I>
  static constexpr bool scale_staged =
      IO::template grouped<I> && IO::template Ks<I>::present && (IO::template Ks<I>::stageable || scale_word<I>);
  template <int I>
  static constexpr int scale_slot_bytes = scale_word<I> ? 4 : IO::template Ks<I>::bytes;
  static_assert((Threads * N) % 64 == 0, "a unit holds an even number of groups (whole words of 2-byte scales)");
  static constexpr std::uint32_t region(bool staged, int bytes) {
    return staged ? static_cast<std::uint32_t>(Threads * bytes) : 0u;
  }
  static constexpr int K = C::num_slots;
  static constexpr int elements = N;  ///< per thread's tile
  static constexpr int threads = Threads;
  static constexpr std::uint32_t param = 0;
  static constexpr std::uint32_t grad = param + region(param_staged, IO::P::bytes);
  static constexpr std::uint32_t aux = grad + region(grad_staged, IO::G::bytes);
  /// Regions after aux: every slot's codes in slot order, then every slot's
  /// scales (version 0.1's code0, code1, scale0, scale1 for two slots).
  template <int... I>
  static constexpr std::uint32_t code_regions(std::integer_sequence<int, I...>) {
    return (0u + ... + region(code_staged<I>, IO::template Q<I>::bytes));
  }
  template <int... I>
  static constexpr std::uint32_t scale_regions(std::integer_sequence<int, I...>) {
    return (0u + ... + region(scale_staged<I>, scale_slot_bytes<I>));
  }
  template <int I>
  static constexpr std::uint32_t code =
      aux + region(aux_staged, IO::A::bytes) + code_regions(std::make_integer_sequence<int, I>{});
  template <int I>
  static constexpr std::uint32_t scale = code<K> + scale_regions(std::make_integer_sequence<int, I>{});
  static constexpr std::uint32_t end = scale<K>;
  /// Bytes of one stage (a multiple of stage_alignment, so every stage
  /// keeps the alignment of the first).
  static constexpr std::uint32_t bytes = (end + (stage_alignment - 1u)) / stage_alignment * stage_alignment;
  static_assert(Threads % 4 == 0, "regions keep their alignment");
};

/// The shared-window address of the first stage: after the decode tables,
/// rounded up to stage_alignment (step_shared_bytes keeps room for that).
template <class TC>
FLASHOPTIM_DEVICE FLASHOPTIM_INLINE std::uint32_t stage_base() {
  const std::uint32_t after_tables =
      detail::shared_address(shared_tables()) + static_cast<std::uint32_t>(TC::shared_bytes);
  return (after_tables + (stage_alignment - 1u)) & ~(stage_alignment - 1u);
}

/// The scale windows of a staged run with warp tiles (R = Policy::warp_tiles
/// > 1; docs/gpu.md, "Warp tiles"). A warp steps R consecutive tiles of
/// 32 N elements, whose R N group scales are contiguous: every grouped slot
/// whose scales are 4-byte words (the fp32 scale) has, per warp, a window of
/// those R N words, copied one word per lane (one request per warp) with the
/// copies of the first of the R tiles, and read by the lanes of the warp from
/// there instead of from the tile's stage (other slots' scales stay staged
/// per tile). A lane reads words other lanes of its warp copied: the staged
/// loop meets the warp (__syncwarp) after waiting for its copies. Windows
/// rotate through `entries`: while one lane fills the window of the R tiles
/// S - 1 tiles ahead, a lane behind it can still read the previous tile's,
/// ceil(S / R) windows back at most. A tile's scale owners store its new
/// scales in one of two write entries (the groups alternate), not over the
/// old ones the other lanes of their group read: after the R tiles the warp
/// meets and writes that entry back, one word per lane (write_back_window),
/// one request per R tiles where each tile's owners made one. An entry is
/// stored to again two groups later, after the warp met at the end of the
/// group between, so every access to a window word is ordered by a
/// __syncwarp or by the cp.async wait. R = 1: no windows.
template <class L, int R, int S>
struct scale_window {
  template <int I>
  static constexpr bool windowed =
      R > 1 && L::template grouped<I> && L::template Ks<I>::present && L::template Ks<I>::bytes == 4;
  template <int... I>
  static constexpr int count_before(int j, std::integer_sequence<int, I...>) {
    return (0 + ... + ((I < j && windowed<I>) ? 1 : 0));
  }
  /// Windowed slots before slot I.
  template <int I>
  static constexpr int index = count_before(I, std::make_integer_sequence<int, L::K>{});
  static constexpr int slots = index<L::K>;
  static constexpr int warps = L::threads / 32;
  /// Scales of one warp's R tiles (N groups per tile of 32 N elements).
  static constexpr int words = R * L::elements;
  static constexpr std::uint32_t warp_bytes = static_cast<std::uint32_t>(words) * 4u;
  static constexpr int entries = (S + R - 1) / R + 1;
  static constexpr std::uint32_t entry_bytes = static_cast<std::uint32_t>(slots * warps) * warp_bytes;
  /// The read entries, then the two write entries.
  static constexpr std::uint32_t bytes = R > 1 ? static_cast<std::uint32_t>(entries + 2) * entry_bytes : 0u;
  /// Slot I's window of warp w in the entry at `entry`.
  template <int I>
  FLASHOPTIM_DEVICE FLASHOPTIM_INLINE static std::uint32_t at(std::uint32_t entry, std::uint32_t w) {
    return entry + (static_cast<std::uint32_t>(index<I>) * warps + w) * warp_bytes;
  }
};

/// Calls f(shared address, global scale) for each word of this warp's
/// windows (scale_window W) of the R tiles from b + off (the first of them)
/// in the entry at `entry`, one word per lane. A thread's scale pointer is
/// its own group's; the warp's first group is lane * N / 32 groups before it.
template <class L, class W, class F>
FLASHOPTIM_DEVICE FLASHOPTIM_INLINE void for_each_window_word(const run_pointers<typename L::C>& b, std::uint32_t off,
                                                              std::uint32_t entry, F&& f) {
  const std::uint32_t lane = threadIdx.x % 32u, warp = threadIdx.x / 32u;
  for_each_slot<L::K>([&](auto s) {
    constexpr int I = decltype(s)::value;
    if constexpr (W::template windowed<I>) {
      auto* first = slot_at<I>(b.states).scales + off / 32 - lane * L::elements / 32u;
      const std::uint32_t at = W::template at<I>(entry, warp);
      FLASHOPTIM_UNROLL for (int q = 0; q < W::words; q += 32) {
        if (q + 32 <= W::words || q + static_cast<int>(lane) < W::words) f(at + (q + lane) * 4u, first + q + lane);
      }
    }
  });
}

/// Starts the copies of the windows of the R tiles from b + off into the
/// read entry at `entry`.
template <class L, class W>
FLASHOPTIM_DEVICE FLASHOPTIM_INLINE void stage_run_window(const run_pointers<typename L::C>& b, std::uint32_t off,
                                                          std::uint32_t entry) {
  for_each_window_word<L, W>(b, off, entry, [](std::uint32_t to, const auto* from) { detail::cp_async<4>(to, from); });
}

/// Writes the write entry at `entry` back to the scales of the R tiles from
/// b + off: the new scales the tiles' owners put there
/// (step_loaded_run_tile). The warp has met since its last tile. One request
/// per warp and slot for R tiles, where each tile's owners stored 32 bytes.
template <class L, class W>
FLASHOPTIM_DEVICE FLASHOPTIM_INLINE void write_back_window(const run_pointers<typename L::C>& b, std::uint32_t off,
                                                           std::uint32_t entry) {
  for_each_window_word<L, W>(b, off, entry, [](std::uint32_t from, auto* to) {
    unsigned int v;
    detail::ld_shared(from, v);
    detail::st_global(reinterpret_cast<unsigned int*>(to), v);
  });
}

/// Starts the copies of the tile at b + off into the stage at `at` (the
/// scales of slots with a window (W) excepted).
template <class L, class W = scale_window<L, 1, 1>>
FLASHOPTIM_DEVICE FLASHOPTIM_INLINE void stage_run_tile(const run_pointers<typename L::C>& b, std::uint32_t off,
                                                        std::uint32_t at) {
  const std::uint32_t t = threadIdx.x;
  if constexpr (L::param_staged) L::P::copy_async(b.param + off, at + L::param + t * L::P::bytes);
  if constexpr (L::aux_staged) L::A::copy_async(b.aux + off, at + L::aux + t * L::A::bytes);
  if constexpr (L::grad_staged) L::G::copy_async(b.grad + off, at + L::grad + t * L::G::bytes);
  for_each_slot<L::K>([&](auto s) {
    constexpr int I = decltype(s)::value;
    const auto& ptr = slot_at<I>(b.states);
    using Q = typename L::template Q<I>;
    using Ks = typename L::template Ks<I>;
    if constexpr (L::template code_staged<I>) Q::copy_async(ptr.codes + off, at + L::template code<I> + t * Q::bytes);
    if constexpr (W::template windowed<I>) {
      // (copied by stage_run_window)
    } else if constexpr (L::template scale_word<I>) {
      const auto word = reinterpret_cast<std::uintptr_t>(ptr.scales + off / 32) & ~std::uintptr_t{3};
      detail::cp_async_scale_word(at + L::template scale<I> + t * 4u, reinterpret_cast<const void*>(word));
    } else if constexpr (L::template scale_staged<I>) {
      if constexpr (Ks::bytes == 4) {
        Ks::copy_async_scale(ptr.scales + off / 32, at + L::template scale<I> + t * Ks::bytes);
      } else {
        Ks::copy_async(ptr.scales + off / 32, at + L::template scale<I> + t * Ks::bytes);
      }
    }
  });
}

/// The tile at b + off from the stage at `at` (its copies completed), and
/// the buffers that are not staged from global memory: what load_run_tile
/// reads. Slots with a window (W) take their scale from the word at
/// `word` in the warp's window of the first such slot (its copies
/// completed and the warp met since).
template <class L, class W = scale_window<L, 1, 1>>
FLASHOPTIM_DEVICE FLASHOPTIM_INLINE void load_staged_tile(const run_pointers<typename L::C>& b, std::uint32_t off,
                                                          std::uint32_t at, typename L::tile& d,
                                                          std::uint32_t word = 0) {
  using C = typename L::C;
  const std::uint32_t t = threadIdx.x;
  if constexpr (L::param_staged) L::P::load_shared(at + L::param + t * L::P::bytes, d.param);
  else L::P::load(b.param + off, d.param);
  if constexpr (C::has_aux) {
    if constexpr (L::aux_staged) L::A::load_shared(at + L::aux + t * L::A::bytes, d.aux);
    else L::A::load(b.aux + off, d.aux);
  }
  if constexpr (L::grad_staged) L::G::load_shared(at + L::grad + t * L::G::bytes, d.grad);
  else L::G::load_readonly(b.grad + off, d.grad);
  for_each_slot<L::K>([&](auto s) {
    constexpr int I = decltype(s)::value;
    auto& slot = slot_at<I>(d.states);
    const auto& ptr = slot_at<I>(b.states);
    using Q = typename L::template Q<I>;
    using Ks = typename L::template Ks<I>;
    if constexpr (L::template stored<I>) {
      if constexpr (L::template code_staged<I>) Q::load_shared(at + L::template code<I> + t * Q::bytes, slot.codes);
      else Q::load(ptr.codes + off, slot.codes);
    }
    if constexpr (L::template grouped<I>) {
      typename L::template S<I>::scale_type k[1];
      if constexpr (W::template windowed<I>) {
        Ks::load_shared(word + static_cast<std::uint32_t>(W::template index<I> * W::warps) * W::warp_bytes, k);
      } else if constexpr (L::template scale_word<I>) {
        // The half of the staged word that holds this tile's scale.
        unsigned int w;
        detail::ld_shared(at + L::template scale<I> + t * 4u, w);
        const bool high = (reinterpret_cast<std::uintptr_t>(ptr.scales + off / 32) & 2u) != 0;
        const std::uint16_t bits = static_cast<std::uint16_t>(high ? w >> 16 : w & 0xffffu);
        std::memcpy(&k[0], &bits, 2);
      } else if constexpr (L::template scale_staged<I>) {
        Ks::load_shared(at + L::template scale<I> + t * Ks::bytes, k);
      } else {
        k[0] = Ks::load_one(ptr.scales + off / 32);
      }
      slot.scale = k[0];
    }
  });
}

/// step_loaded_run_tile on the tile it loads first.
template <class TC, class TCc, int N, class F8 = void>
FLASHOPTIM_DEVICE FLASHOPTIM_INLINE void step_run_tile(const typename TC::scalars& sc,
                                                       const typename TCc::scalars& checked_sc,
                                                       const run_pointers<typename TC::base>& b, std::uint32_t off,
                                                       bool scale_owner, std::uint64_t seed, std::uint64_t step,
                                                       std::uint64_t index, const fp8_run_out<F8>& fo = {}) {
  tile_data<TCc, N> d;
  load_run_tile<false>(b, off, d);
  step_loaded_run_tile<TC, TCc, N, F8>(sc, checked_sc, b, off, scale_owner, seed, step, index, d, fo);
}

/// A thread's start of a run of whole units: its pointers at its first
/// element e0 (thread_first elements into the run's first unit), the
/// rounding-key index of e0, whether its tiles start their groups (and so
/// store the scale), and its FP8 output (F8 = void: none).
template <class Config, class F8>
struct run_start {
  run_pointers<Config> b;
  std::uint64_t index0;
  bool scale_owner;
  fp8_run_out<F8> fo{};

  FLASHOPTIM_DEVICE FLASHOPTIM_INLINE static run_start at(const tensor_ref<Config>& ref, std::int64_t e0,
                                                          std::int64_t thread_first,
                                                          const fp8_out_entry<F8>& fp8_entry, bool fp8_pow2) {
    run_start r{run_pointers<Config>::at(ref, e0), ref.index_base + static_cast<std::uint64_t>(e0),
                thread_first % 32 == 0};
    if constexpr (!std::is_void<F8>::value) {
      if (fp8_entry.values != nullptr)
        r.fo = {fp8_entry.values + e0, fp8_entry.scales + e0 / fp8_block_cols, fp8_entry.vector_ok != 0,
                thread_first % fp8_block_cols == 0, fp8_pow2};
    } else {
      (void)fp8_entry;
      (void)fp8_pow2;
    }
    return r;
  }
};

/// Steps the `units` whole units of tensor `ref` from its element `start` (a
/// unit boundary; units * unit < 2^31) through the stage ring
/// (Policy::stages > 1), R tiles in a row per warp (R = 1: one tile of each
/// unit, thread t at t * N of it; R > 1: units go R at a time, warp w
/// stepping the R consecutive tiles at w * R * 32 N of them, with scale
/// windows; `units` is then a multiple of R). Tiles S - 1 ahead are on their
/// way into shared memory (cp.async) while one is stepped; a thread reads
/// back only the stage slots it filled, and the window words its warp copied
/// after the warp met. A redo after a failed range check reads the tile
/// again from global memory, which this tile's stores have not touched yet
/// (nor, with windows, any store of its scales: those go back after the R
/// tiles). (Reading it from its stage instead, which no copy refills before
/// the next turn, made ptxas keep 424 bytes of the paper's split's 512 x 16
/// kernel in local memory, spilled in the hot path: docs/gpu.md, "Exact
/// zeros in the gradient".)
///
/// With R > 1 the loop's body holds tuning::warp_tiles_per_turn tiles of a
/// group (the offsets of its tiles are compile-time constants from the
/// turn's first), and the read window turns once per group.
template <class TC, class TCc, class Policy, int R, class F8>
FLASHOPTIM_DEVICE FLASHOPTIM_INLINE void step_staged_run(const typename TC::scalars& sc,
                                                         const typename TCc::scalars& checked_sc,
                                                         const tensor_ref<typename TC::base>& ref, std::int64_t start,
                                                         std::int64_t units, std::uint64_t step,
                                                         const fp8_out_entry<F8>& fp8_entry, bool fp8_pow2) {
  using Config = typename TC::base;
  constexpr int N = Policy::elements_per_thread;
  constexpr int S = Policy::stages;
  constexpr std::uint32_t unit = static_cast<std::uint32_t>(Policy::unit_elements);
  constexpr std::uint32_t warp_tile = 32u * N;
  using L = stage_layout<TCc, N, Policy::threads>;
  using W = scale_window<L, R, S>;
  const std::uint32_t lane = threadIdx.x % 32u, warp = threadIdx.x / 32u;
  const std::int64_t thread_first = static_cast<std::int64_t>(R == 1 ? threadIdx.x * N : (warp * R * 32u + lane) * N);
  const run_start<Config, F8> r =
      run_start<Config, F8>::at(ref, start + thread_first, thread_first, fp8_entry, fp8_pow2);
  const run_pointers<Config>& b = r.b;
  // The run's tiles are at b + off, off from 0 in increasing order, below
  // end: R = 1, one per unit; R > 1, R tiles of 32 N elements in a row (a
  // group), then the next R units.
  const std::uint32_t end = static_cast<std::uint32_t>(units) * unit;
  const std::uint32_t first_stage = stage_base<TC>();
  const std::uint32_t last_stage = first_stage + (S - 1) * L::bytes;
  std::uint32_t current = first_stage, fill = last_stage;
  // Waits for the copies of the tile at `current` (the block meeting first
  // with Policy::sync_stages) and sends those of the tile at `ahead` into
  // the stage at `fill`, through `issue` (ahead >= end: none).
  const auto turn = [&](std::uint32_t ahead, const auto& issue) {
    if constexpr (Policy::sync_stages) {
      // This tile's copies landed; the block meets (every thread runs the
      // same units, so each reaches this barrier as often), then the copies
      // S - 1 tiles ahead go out.
      detail::cp_async_wait<S - 2>();
      __syncthreads();
      if (ahead < end) issue(ahead, fill);
      detail::cp_async_commit();
    } else {
      if (ahead < end) issue(ahead, fill);
      detail::cp_async_commit();
      detail::cp_async_wait<S - 1>();
      if constexpr (W::slots > 0) __syncwarp();
    }
  };
  // Steps the tile at off from the stage at `current`, then moves the ring
  // (with windows: the old scales from `word`, the new ones to `new_word`).
  const auto step_tile = [&](std::uint32_t off, std::uint32_t word, std::uint32_t new_word) {
    tile_data<TCc, N> d;
    load_staged_tile<L, W>(b, off, current, d, word);
    step_loaded_run_tile<TC, TCc, N, F8, W>(sc, checked_sc, b, off, r.scale_owner, ref.seed, step, r.index0 + off,
                                            d, r.fo, new_word);
    current = current == last_stage ? first_stage : current + L::bytes;
    fill = fill == last_stage ? first_stage : fill + L::bytes;
  };
  if constexpr (R == 1) {
    const auto issue = [&](std::uint32_t off, std::uint32_t at) { stage_run_tile<L, W>(b, off, at); };
    FLASHOPTIM_UNROLL for (int s = 0; s < S - 1; ++s) {
      if (static_cast<std::uint32_t>(s) * unit < end) issue(s * unit, first_stage + s * L::bytes);
      detail::cp_async_commit();
    }
    for (std::uint32_t off = 0; off < end; off += unit) {
      turn(off + (S - 1) * unit, issue);
      step_tile(off, 0, 0);
    }
  } else {
    // Tile k of the run (k = 0, 1, ...) is tile k % R of group k / R. The
    // loop turns U tiles at a time (tuning::warp_tiles_per_turn): the
    // offsets of a turn's tiles from its first are compile-time constants.
    constexpr int U = R < tuning::warp_tiles_per_turn ? R : tuning::warp_tiles_per_turn;
    static_assert(R % U == 0 && (R & (R - 1)) == 0, "warp tiles: a power of two");
    constexpr std::uint32_t group = R * unit;
    const auto tile_at = [](std::uint32_t k) { return (k / R) * group + (k % R) * warp_tile; };
    const std::uint32_t first_window = first_stage + S * L::bytes;
    const std::uint32_t last_window = first_window + (W::entries - 1) * W::entry_bytes;
    // The two write entries follow the read entries; write_window is the
    // current group's.
    const std::uint32_t first_write = last_window + W::entry_bytes;
    [[maybe_unused]] std::uint32_t write_window = first_write;
    // The window entry after the one at `at`, round the ring.
    [[maybe_unused]] const auto next_window = [&](std::uint32_t at) {
      return at == last_window ? first_window : at + W::entry_bytes;
    };
    // A tile's copies into the stage at `at`, with its group's windows when
    // it is the group's first (into the entry after the last filled).
    [[maybe_unused]] std::uint32_t window = last_window;
    const auto issue = [&](std::uint32_t off, std::uint32_t at, bool group_first) {
      stage_run_tile<L, W>(b, off, at);
      if constexpr (W::slots > 0) {
        if (group_first) {
          window = next_window(window);
          stage_run_window<L, W>(b, off, window);
        }
      }
    };
    // The previous run's last window may be the first this run fills: the
    // warp's lanes finish reading it first.
    if constexpr (W::slots > 0) __syncwarp();
    FLASHOPTIM_UNROLL for (int k = 0; k < S - 1; ++k) {
      if (tile_at(k) < end) issue(tile_at(k), first_stage + k * L::bytes, k % R == 0);
      detail::cp_async_commit();
    }
    [[maybe_unused]] std::uint32_t read_window = first_window;
    for (std::uint32_t g = 0; g < end; g += group) {
      // This lane's window word for the group's first tile.
      [[maybe_unused]] std::uint32_t word = 0;
      if constexpr (W::slots > 0) word = read_window + warp * W::warp_bytes + (lane * N / 32u) * 4u;
      // From a word of the group's read entry to its place in the write entry.
      [[maybe_unused]] const std::uint32_t to_write = write_window - read_window;
#pragma unroll 1
      for (std::uint32_t h = 0; h < static_cast<std::uint32_t>(R); h += U) {
        FLASHOPTIM_UNROLL for (int u = 0; u < U; ++u) {
          // Tile h + u of the group; the tile S - 1 ahead of it is tile k.
          const std::uint32_t k = h + static_cast<std::uint32_t>(u + S - 1);
          turn(g + tile_at(k), [&](std::uint32_t off, std::uint32_t at) { issue(off, at, k % R == 0); });
          step_tile(g + (h + u) * warp_tile, word + (h + u) * (N * 4u), word + to_write + (h + u) * (N * 4u));
        }
      }
      if constexpr (W::slots > 0) {
        // The group's new scales are in its write entry: the warp meets (a
        // lane writes back words other lanes stored) and writes them back.
        __syncwarp();
        write_back_window<L, W>(b, g, write_window);
        read_window = next_window(read_window);
        write_window = write_window == first_write ? first_write + W::entry_bytes : first_write;
      }
    }
  }
}

/// F8 = void: the step. F8 = fp8_e4m3 / fp8_e5m2: the step that also writes
/// the FP8 copy of every tensor whose p.fp8 entry has values (1 x 128
/// blocks of 128 consecutive elements; fp8_step_write.cuh).
template <class Config, class Policy, bool DeviceInputs, class F8 = void>
__global__ void __launch_bounds__(Policy::threads, Policy::min_blocks_per_sm)
    step_kernel(const __grid_constant__ step_params_for<Config, F8> p) {
  constexpr bool fused = !std::is_void<F8>::value;
  static_assert(!fused || is_fp8_param_type<F8>::value, "FP8 parameters are fp8_e4m3 or fp8_e5m2");
  static_assert(!fused || (fp8_block_cols % Policy::elements_per_thread == 0 &&
                           32 * Policy::elements_per_thread >= fp8_block_cols),
                "the fused FP8 write needs a 1 x 128 block to be whole tiles of one warp (4 <= N, N divides 128)");
  using TC = kernel_config<Config, Policy::tabulate, Policy::branch_free, Policy::proven_ranges>;
  // The first attempt of a range-checked vector tile (TC itself otherwise).
  using TCc = std::conditional_t<
      Policy::range_checked,
      kernel_config<Config, Policy::tabulate, Policy::branch_free, Policy::proven_ranges, true,
                    Policy::checked_reencode, Policy::zero_attempt, false, Policy::tiny_attempt>, TC>;
  using scalars = typename Config::scalars;
  constexpr int N = Policy::elements_per_thread;
  constexpr std::int64_t unit = Policy::unit_elements;

  TC::fill_tables();

  // Each group's scalars: kernel parameter space (host mode) or shared
  // memory (device inputs); a tensor takes its group's when it starts.
  const scalars* group_scalars;
  std::uint64_t step;
  if constexpr (DeviceInputs) {
    // Raw storage: a rule's scalars may have default member initializers,
    // which __shared__ variables cannot run.
    __shared__ alignas(scalars) unsigned char shared_scalars[sizeof(scalars) * tuning::max_step_groups];
    __shared__ std::uint64_t shared_step;
    __shared__ int go;
    if (threadIdx.x == 0) {
      const device_inputs& in = p.inputs;
      const bool skip = in.skip != nullptr && *in.skip != 0;
      const std::int64_t s = in.step ? *in.step : p.host_step;
      const double inv = in.inv_grad_scale ? *in.inv_grad_scale : p.host_inv_grad_scale;
      bool bad = s < 1 || !format::is_finite(inv) || !(inv > 0.0);
      for (int g = 0; g < p.groups && !bad; ++g) {
        const double lr = in.lr ? in.lr[g] : p.hyper[g].lr;
        bad = !format::is_finite(lr) || lr < 0.0;
        if (!bad) {
          // As the host validates them: the fp32 scalars the step would use.
          const scalars computed = Config::rule::make_scalars(p.hyper[g], lr, s, inv);
          bad = static_cast<bool>(Config::rule::check_scalars(computed));
          std::memcpy(shared_scalars + sizeof(scalars) * g, &computed, sizeof(scalars));
        }
      }
      if (bad && in.error != nullptr && blockIdx.x == 0) *in.error = 1;
      go = !(skip || bad);
      if (go) shared_step = static_cast<std::uint64_t>(s);
    }
    __syncthreads();
    if (!go) return;
    group_scalars = reinterpret_cast<const scalars*>(shared_scalars);
    step = shared_step;
  } else {
    if constexpr (TC::any) __syncthreads();
    group_scalars = p.scalars;
    step = p.step;
  }

  const table_view<Config>& tab = p.table;
  const unit_range range = block_units(tab.units, blockIdx.x, gridDim.x);
  if (range.begin >= range.end) return;
  std::int64_t ti = find_tensor(tab.unit_begin, tab.count, range.begin);
  std::int64_t u = range.begin;
  const std::int64_t thread_offset = static_cast<std::int64_t>(threadIdx.x) * N;
  while (u < range.end) {
    while (tab.unit_begin[ti + 1] <= u) ++ti;  // skip empty tensors
    const std::int64_t first = tab.unit_begin[ti];
    const std::int64_t stop = tab.unit_begin[ti + 1] < range.end ? tab.unit_begin[ti + 1] : range.end;
    const scalars sc = group_scalars[tab.entries[ti].group];
    fp8_out_entry<F8> fp8_entry{};
    if constexpr (fused) fp8_entry = p.fp8.entries[ti];
    typename TCc::scalars checked_sc{};
    if constexpr (Policy::range_checked) {
      checked_sc = make_checked_scalars<typename Config::rule>(sc);
    } else {
      checked_sc = sc;
    }
    if constexpr (Policy::unit_runs) {
      const table_entry<Config> entry = tab.entries[ti];
      const std::int64_t n = entry.ref.size;
      if (entry.vector_ok) {
        // Units [u, vector_stop) lie wholly inside the tensor: runs of them
        // with 32-bit offsets from per-thread pointers.
        const std::int64_t whole = first + n / unit;
        const std::int64_t vector_stop = whole < stop ? whole : stop;
        constexpr std::int64_t max_run = (std::int64_t{1} << 31) / unit;
        // (read where used: kept live across the runs it costs a register)
        const auto fp8_pow2 = [&] {
          if constexpr (fused) return p.fp8.pow2 != 0;
          return false;
        };
        while (u < vector_stop) {
          std::int64_t run = vector_stop - u < max_run ? vector_stop - u : max_run;
          if constexpr (Policy::stages > 1) {
            // Whole groups of warp_tiles units with warp tiles, the rest
            // (fewer than warp_tiles units) a tile of each unit per warp.
            constexpr int R = Policy::warp_tiles;
            if constexpr (R > 1) {
              const std::int64_t grouped_units = run / R * R;
              if (grouped_units > 0) {
                step_staged_run<TC, TCc, Policy, R, F8>(sc, checked_sc, entry.ref, (u - first) * unit, grouped_units,
                                                        step, fp8_entry, fp8_pow2());
                u += grouped_units;
                run -= grouped_units;
              }
            }
            if (run > 0) {
              step_staged_run<TC, TCc, Policy, 1, F8>(sc, checked_sc, entry.ref, (u - first) * unit, run, step,
                                                      fp8_entry, fp8_pow2());
              u += run;
            }
            continue;
          }
          const run_start<Config, F8> r = run_start<Config, F8>::at(entry.ref, (u - first) * unit + thread_offset,
                                                                    thread_offset, fp8_entry, fp8_pow2());
          const std::uint32_t end = static_cast<std::uint32_t>(run * unit);
          for (std::uint32_t off = 0; off < end; off += static_cast<std::uint32_t>(unit)) {
            if constexpr (Policy::prefetch) {
              const std::uint32_t next = off + static_cast<std::uint32_t>(unit);
              if (next < end) prefetch_run_tile(r.b, next);
            }
            step_run_tile<TC, TCc, N, F8>(sc, checked_sc, r.b, off, r.scale_owner, entry.ref.seed, step,
                                          r.index0 + off, r.fo);
          }
          u += run;
        }
      }
    }
    // Read again after the runs (their stores clobber memory): the runs
    // keep only their own pointers live.
    const table_entry<Config> entry = tab.entries[ti];
    const std::int64_t n = entry.ref.size;
    if constexpr (fused) fp8_entry = p.fp8.entries[ti];
    std::int64_t e = (u - first) * unit + thread_offset;
    for (; u < stop; ++u, e += unit) {
      const std::int64_t unit_start = e - thread_offset;
      fp8_run_out<F8> fo{};
      if constexpr (fused) {
        if (fp8_entry.values != nullptr)
          fo = {fp8_entry.values, fp8_entry.scales, fp8_entry.vector_ok != 0, false, p.fp8.pow2 != 0};
      }
      // (With unit runs, every whole unit of a vector tensor was stepped above.)
      if (!Policy::unit_runs && entry.vector_ok && unit_start + unit <= n) {
        step_one_tile<TC, N, true, F8>(sc, entry.ref, e, N, step, fo);
      } else {
        const std::int64_t left = n - e;
        const int valid = left <= 0 ? 0 : (left >= N ? N : static_cast<int>(left));
        step_one_tile<TC, N, false, F8>(sc, entry.ref, e, valid, step, fo);
      }
    }
  }
}

/// Dynamic shared memory of a step launch.
template <class Config, class Policy>
constexpr std::size_t step_shared_bytes() {
  using TC = kernel_config<Config, Policy::tabulate, Policy::branch_free, Policy::proven_ranges>;
  using TCc = kernel_config<Config, Policy::tabulate, Policy::branch_free, Policy::proven_ranges,
                            Policy::range_checked, Policy::checked_reencode>;
  std::size_t stages = 0;
  if constexpr (Policy::stages > 1) {
    using L = stage_layout<TCc, Policy::elements_per_thread, Policy::threads>;
    stages = static_cast<std::size_t>(Policy::stages) * L::bytes +
             scale_window<L, Policy::warp_tiles, Policy::stages>::bytes +
             stage_alignment;  // stage_base's rounding
  }
  return TC::shared_bytes + stages;
}

/// The kernel a launch with these template arguments runs (for occupancy
/// queries and attributes).
template <class Config, class Policy, bool DeviceInputs, class F8 = void>
constexpr auto step_kernel_ptr() {
  return &step_kernel<Config, Policy, DeviceInputs, F8>;
}

/// Launches one step over the table (F8: the fused FP8 write, see
/// step_kernel). Never allocates or synchronizes.
template <class Config, class Policy, bool DeviceInputs, class F8 = void>
cudaError_t launch_step(const step_params_for<Config, F8>& p, int grid, cudaStream_t stream) {
  if (grid <= 0 || p.table.units == 0) return cudaSuccess;
  step_kernel<Config, Policy, DeviceInputs, F8>
      <<<grid, Policy::threads, step_shared_bytes<Config, Policy>(), stream>>>(p);
  return cudaGetLastError();
}

}  // namespace flashoptim::kernel

#undef FLASHOPTIM_COUNT_REDO
