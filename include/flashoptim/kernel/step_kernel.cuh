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
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <cstring>

#include "flashoptim/kernel/kernel_config.cuh"
#include "flashoptim/kernel/tensor_table.cuh"
#include "flashoptim/rule/tile.hpp"

namespace flashoptim::kernel {

/// Per-step inputs read from device memory (graph-capturable mode). A null
/// pointer means "use the host value" (hyper.lr, step_args).
struct device_inputs {
  const double* lr = nullptr;              ///< overrides hyper.lr
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
  table_view<Config> table;
  typename Config::scalars scalars{};  ///< host mode
  std::uint64_t step = 1;              ///< host mode: the rounding key's step
  typename Config::hyper hyper{};      ///< device mode: make_scalars' input
  std::int64_t host_step = 1;          ///< device mode: used where inputs.step is null
  double host_inv_grad_scale = 1.0;    ///< device mode: used where inputs.inv_grad_scale is null
  device_inputs inputs{};
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
  using S0 = typename Config::state0;
  using S1 = typename Config::state1;
  using P = tile_access<typename Config::param_type, N>;
  using A = tile_access<typename Config::aux_type, N>;
  using G = tile_access<typename Config::grad_type, N>;
  using Q0 = tile_access<typename S0::code_type, N>;
  using Q1 = tile_access<typename S1::code_type, N>;
  using K0 = tile_access<typename S0::scale_type, 1>;
  using K1 = tile_access<typename S1::scale_type, 1>;
  static constexpr bool grouped0 = codec::is_grouped<S0>::value;
  static constexpr bool grouped1 = codec::is_grouped<S1>::value;
};

/// Steps one tile of tensor t at element e (a multiple of N) with `valid`
/// elements in it (N on the vector path). Every lane of the warp calls it on
/// the same path, since the group reduction shuffles.
template <class TC, int N, bool Vector>
FLASHOPTIM_DEVICE FLASHOPTIM_INLINE void step_one_tile(const typename TC::scalars& sc, const tensor_ref<typename TC::base>& t,
                                                       std::int64_t e, int valid, std::uint64_t step) {
  using C = typename TC::base;
  using IO = tile_io<C, N>;

  tile_data<TC, N> d;
  if constexpr (Vector) {
    IO::P::load(t.param + e, d.param);
    if constexpr (C::has_aux) IO::A::load(t.aux + e, d.aux);
    IO::G::load_readonly(t.grad + e, d.grad);
    if constexpr (IO::S0::stores_state) IO::Q0::load(t.code0 + e, d.code0);
    if constexpr (IO::S1::stores_state) IO::Q1::load(t.code1 + e, d.code1);
  } else {
    d = tile_data<TC, N>{};
    IO::P::load_partial(t.param + e, d.param, valid);
    if constexpr (C::has_aux) IO::A::load_partial(t.aux + e, d.aux, valid);
    IO::G::load_partial(t.grad + e, d.grad, valid);
    if constexpr (IO::S0::stores_state) IO::Q0::load_partial(t.code0 + e, d.code0, valid);
    if constexpr (IO::S1::stores_state) IO::Q1::load_partial(t.code1 + e, d.code1, valid);
  }
  const std::int64_t group = e / 32;
  if constexpr (IO::grouped0) {
    if (Vector || valid > 0) d.scale0 = t.scale0[group];
  }
  if constexpr (IO::grouped1) {
    if (Vector || valid > 0) d.scale1 = t.scale1[group];
  }

  // A compile-time `valid` on the vector path lets the compiler share the
  // rule's sqrt(v) with the second-moment compander's.
  step_tile<TC, N>(sc, d, Vector ? N : valid, group_max<32 / N>{},
                   codec::rounding_key{t.seed, step, t.index_base + static_cast<std::uint64_t>(e)});

  if constexpr (Vector) {
    IO::P::store(t.param + e, d.param);
    if constexpr (C::has_aux) IO::A::store(t.aux + e, d.aux);
    if constexpr (IO::S0::stores_state) IO::Q0::store(t.code0 + e, d.code0);
    if constexpr (IO::S1::stores_state) IO::Q1::store(t.code1 + e, d.code1);
  } else {
    IO::P::store_partial(t.param + e, d.param, valid);
    if constexpr (C::has_aux) IO::A::store_partial(t.aux + e, d.aux, valid);
    if constexpr (IO::S0::stores_state) IO::Q0::store_partial(t.code0 + e, d.code0, valid);
    if constexpr (IO::S1::stores_state) IO::Q1::store_partial(t.code1 + e, d.code1, valid);
  }
  // The first tile of a group stores its scale (all tiles hold the same).
  const bool scale_owner = (Vector || valid > 0) && (e % 32) == 0;
  if constexpr (IO::grouped0) {
    if (scale_owner) t.scale0[group] = d.scale0;
  }
  if constexpr (IO::grouped1) {
    if (scale_owner) t.scale1[group] = d.scale1;
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
  typename R::code0_type* code0;
  typename R::code1_type* code1;
  typename R::scale0_type* scale0;  ///< the scale of e0's group
  typename R::scale1_type* scale1;

  FLASHOPTIM_DEVICE FLASHOPTIM_INLINE static run_pointers at(const R& t, std::int64_t e0) {
    run_pointers b{opaque(t.param + e0), nullptr, opaque(t.grad + e0), nullptr, nullptr, nullptr, nullptr};
    if constexpr (Config::has_aux) b.aux = opaque(t.aux + e0);
    if constexpr (Config::state0::stores_state) b.code0 = opaque(t.code0 + e0);
    if constexpr (Config::state1::stores_state) b.code1 = opaque(t.code1 + e0);
    if constexpr (codec::is_grouped<typename Config::state0>::value) b.scale0 = opaque(t.scale0 + e0 / 32);
    if constexpr (codec::is_grouped<typename Config::state1>::value) b.scale1 = opaque(t.scale1 + e0 / 32);
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
template <class TC, int N, bool Again>
FLASHOPTIM_DEVICE FLASHOPTIM_INLINE void load_run_tile(const run_pointers<typename TC::base>& b, std::uint32_t off,
                                                       tile_data<TC, N>& d) {
  using C = typename TC::base;
  using IO = tile_io<C, N>;
  const std::uint32_t group = off / 32;
  if constexpr (Again) {
    IO::P::load_again(b.param + off, d.param);
    if constexpr (C::has_aux) IO::A::load_again(b.aux + off, d.aux);
    IO::G::load_again(b.grad + off, d.grad);
    if constexpr (IO::S0::stores_state) IO::Q0::load_again(b.code0 + off, d.code0);
    if constexpr (IO::S1::stores_state) IO::Q1::load_again(b.code1 + off, d.code1);
    if constexpr (IO::grouped0)
      d.scale0 = IO::K0::load_one_again(b.scale0 + group);
    if constexpr (IO::grouped1)
      d.scale1 = IO::K1::load_one_again(b.scale1 + group);
  } else {
    IO::P::load(b.param + off, d.param);
    if constexpr (C::has_aux) IO::A::load(b.aux + off, d.aux);
    IO::G::load_readonly(b.grad + off, d.grad);
    if constexpr (IO::S0::stores_state) IO::Q0::load(b.code0 + off, d.code0);
    if constexpr (IO::S1::stores_state) IO::Q1::load(b.code1 + off, d.code1);
    if constexpr (IO::grouped0)
      d.scale0 = IO::K0::load_one(b.scale0 + group);
    if constexpr (IO::grouped1)
      d.scale1 = IO::K1::load_one(b.scale1 + group);
  }
}

/// Asks L2 for the tile at b + off (its code, parameter, correction and
/// gradient lines) ahead of its loads.
template <class Config>
FLASHOPTIM_DEVICE FLASHOPTIM_INLINE void prefetch_run_tile(const run_pointers<Config>& b, std::uint32_t off) {
  detail::prefetch_l2(b.param + off);
  detail::prefetch_l2(b.grad + off);
  if constexpr (Config::has_aux) detail::prefetch_l2(b.aux + off);
  if constexpr (Config::state0::stores_state) detail::prefetch_l2(b.code0 + off);
  if constexpr (Config::state1::stores_state) detail::prefetch_l2(b.code1 + off);
}

/// The vector path of step_one_tile for the tile at b + off (N elements,
/// all valid, buffers vector-aligned). `scale_owner`: the tile is the first
/// of its group. `index` is the tile's rounding-key index. With a checked
/// config TCc (range-checked policy) the tile is first stepped by TCc, and
/// again by TC from a fresh read when a range check failed on any lane of
/// the warp; otherwise (TCc = TC) once by TC.
template <class TC, class TCc, int N>
FLASHOPTIM_DEVICE FLASHOPTIM_INLINE void step_loaded_run_tile(const typename TC::scalars& sc,
                                                              const typename TCc::scalars& checked_sc,
                                                              const run_pointers<typename TC::base>& b,
                                                              std::uint32_t off, bool scale_owner, std::uint64_t seed,
                                                              std::uint64_t step, std::uint64_t index,
                                                              tile_data<TCc, N>& d) {
  using C = typename TC::base;
  using IO = tile_io<C, N>;
  const codec::rounding_key key{seed, step, index};

  if constexpr (TCc::checked) {
    bool ok = true;
    typename TCc::scalars csc = checked_sc;
    csc.ok = &ok;
    step_tile<TCc, N>(csc, d, N, checked_group_max<32 / N>{{}, &ok}, key);
    if (__any_sync(0xffffffffu, !ok)) {
      tile_data<TC, N> x;
      load_run_tile<TC, N, true>(b, off, x);
      step_tile<TC, N>(sc, x, N, group_max<32 / N>{}, key);
      static_assert(sizeof(x) == sizeof(d), "the same storage");
      std::memcpy(&d, &x, sizeof(d));
    }
  } else {
    step_tile<TCc, N>(sc, d, N, group_max<32 / N>{}, key);
  }

  const std::uint32_t group = off / 32;
  IO::P::store(b.param + off, d.param);
  if constexpr (C::has_aux) IO::A::store(b.aux + off, d.aux);
  if constexpr (IO::S0::stores_state) IO::Q0::store(b.code0 + off, d.code0);
  if constexpr (IO::S1::stores_state) IO::Q1::store(b.code1 + off, d.code1);
  if constexpr (IO::grouped0) {
    if (scale_owner) IO::K0::store_one(b.scale0 + group, d.scale0);
  }
  if constexpr (IO::grouped1) {
    if (scale_owner) IO::K1::store_one(b.scale1 + group, d.scale1);
  }
}

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
  static constexpr bool code0_staged = IO::S0::stores_state && IO::Q0::present && IO::Q0::stageable;
  static constexpr bool code1_staged = IO::S1::stores_state && IO::Q1::present && IO::Q1::stageable;
  static constexpr bool scale0_staged = IO::grouped0 && IO::K0::present && IO::K0::stageable;
  static constexpr bool scale1_staged = IO::grouped1 && IO::K1::present && IO::K1::stageable;
  static constexpr std::uint32_t region(bool staged, int bytes) {
    return staged ? static_cast<std::uint32_t>(Threads * bytes) : 0u;
  }
  static constexpr std::uint32_t param = 0;
  static constexpr std::uint32_t grad = param + region(param_staged, IO::P::bytes);
  static constexpr std::uint32_t aux = grad + region(grad_staged, IO::G::bytes);
  static constexpr std::uint32_t code0 = aux + region(aux_staged, IO::A::bytes);
  static constexpr std::uint32_t code1 = code0 + region(code0_staged, IO::Q0::bytes);
  static constexpr std::uint32_t scale0 = code1 + region(code1_staged, IO::Q1::bytes);
  static constexpr std::uint32_t scale1 = scale0 + region(scale0_staged, IO::K0::bytes);
  static constexpr std::uint32_t end = scale1 + region(scale1_staged, IO::K1::bytes);
  /// Bytes of one stage (a multiple of 16, so every stage keeps the
  /// 16-byte alignment of the first).
  static constexpr std::uint32_t bytes = (end + 15u) / 16u * 16u;
  static_assert(Threads % 4 == 0, "regions keep their alignment");
};

/// The shared-window address of the first stage: after the decode tables.
template <class TC>
FLASHOPTIM_DEVICE FLASHOPTIM_INLINE std::uint32_t stage_base() {
  return detail::shared_address(shared_tables()) + static_cast<std::uint32_t>(TC::shared_bytes);
}

/// Starts the copies of the tile at b + off into the stage at `at`.
template <class L>
FLASHOPTIM_DEVICE FLASHOPTIM_INLINE void stage_run_tile(const run_pointers<typename L::C>& b, std::uint32_t off,
                                                        std::uint32_t at) {
  const std::uint32_t t = threadIdx.x;
  if constexpr (L::param_staged) L::P::copy_async(b.param + off, at + L::param + t * L::P::bytes);
  if constexpr (L::aux_staged) L::A::copy_async(b.aux + off, at + L::aux + t * L::A::bytes);
  if constexpr (L::grad_staged) L::G::copy_async(b.grad + off, at + L::grad + t * L::G::bytes);
  if constexpr (L::code0_staged) L::Q0::copy_async(b.code0 + off, at + L::code0 + t * L::Q0::bytes);
  if constexpr (L::code1_staged) L::Q1::copy_async(b.code1 + off, at + L::code1 + t * L::Q1::bytes);
  if constexpr (L::scale0_staged) L::K0::copy_async(b.scale0 + off / 32, at + L::scale0 + t * L::K0::bytes);
  if constexpr (L::scale1_staged) L::K1::copy_async(b.scale1 + off / 32, at + L::scale1 + t * L::K1::bytes);
}

/// The tile at b + off from the stage at `at` (its copies completed), and
/// the buffers that are not staged from global memory: what load_run_tile
/// reads.
template <class L>
FLASHOPTIM_DEVICE FLASHOPTIM_INLINE void load_staged_tile(const run_pointers<typename L::C>& b, std::uint32_t off,
                                                          std::uint32_t at, typename L::tile& d) {
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
  if constexpr (L::S0::stores_state) {
    if constexpr (L::code0_staged) L::Q0::load_shared(at + L::code0 + t * L::Q0::bytes, d.code0);
    else L::Q0::load(b.code0 + off, d.code0);
  }
  if constexpr (L::S1::stores_state) {
    if constexpr (L::code1_staged) L::Q1::load_shared(at + L::code1 + t * L::Q1::bytes, d.code1);
    else L::Q1::load(b.code1 + off, d.code1);
  }
  if constexpr (L::grouped0) {
    typename L::S0::scale_type k[1];
    if constexpr (L::scale0_staged) L::K0::load_shared(at + L::scale0 + t * L::K0::bytes, k);
    else k[0] = L::K0::load_one(b.scale0 + off / 32);
    d.scale0 = k[0];
  }
  if constexpr (L::grouped1) {
    typename L::S1::scale_type k[1];
    if constexpr (L::scale1_staged) L::K1::load_shared(at + L::scale1 + t * L::K1::bytes, k);
    else k[0] = L::K1::load_one(b.scale1 + off / 32);
    d.scale1 = k[0];
  }
}

/// step_loaded_run_tile on the tile it loads first.
template <class TC, class TCc, int N>
FLASHOPTIM_DEVICE FLASHOPTIM_INLINE void step_run_tile(const typename TC::scalars& sc,
                                                       const typename TCc::scalars& checked_sc,
                                                       const run_pointers<typename TC::base>& b, std::uint32_t off,
                                                       bool scale_owner, std::uint64_t seed, std::uint64_t step,
                                                       std::uint64_t index) {
  tile_data<TCc, N> d;
  load_run_tile<TCc, N, false>(b, off, d);
  step_loaded_run_tile<TC, TCc, N>(sc, checked_sc, b, off, scale_owner, seed, step, index, d);
}

template <class Config, class Policy, bool DeviceInputs>
__global__ void __launch_bounds__(Policy::threads, Policy::min_blocks_per_sm)
    step_kernel(const __grid_constant__ step_params<Config> p) {
  using TC = kernel_config<Config, Policy::tabulate, Policy::branch_free, Policy::proven_ranges>;
  // The first attempt of a range-checked vector tile (TC itself otherwise).
  using TCc = std::conditional_t<
      Policy::range_checked,
      kernel_config<Config, Policy::tabulate, Policy::branch_free, Policy::proven_ranges, true>, TC>;
  using scalars = typename Config::scalars;
  constexpr int N = Policy::elements_per_thread;
  constexpr std::int64_t unit = Policy::unit_elements;

  TC::fill_tables();

  scalars sc;
  std::uint64_t step;
  if constexpr (DeviceInputs) {
    // Raw storage: a rule's scalars may have default member initializers,
    // which __shared__ variables cannot run.
    __shared__ alignas(scalars) unsigned char shared_scalars[sizeof(scalars)];
    __shared__ std::uint64_t shared_step;
    __shared__ int go;
    if (threadIdx.x == 0) {
      const device_inputs& in = p.inputs;
      const bool skip = in.skip != nullptr && *in.skip != 0;
      const double lr = in.lr ? *in.lr : p.hyper.lr;
      const std::int64_t s = in.step ? *in.step : p.host_step;
      const double inv = in.inv_grad_scale ? *in.inv_grad_scale : p.host_inv_grad_scale;
      bool bad = !format::is_finite(lr) || lr < 0.0 || s < 1 || !format::is_finite(inv) || !(inv > 0.0);
      scalars computed{};
      if (!bad) {
        // As the host validates them: the fp32 scalars the step would use.
        computed = Config::rule::make_scalars(p.hyper, lr, s, inv);
        bad = static_cast<bool>(Config::rule::check_scalars(computed));
      }
      if (bad && in.error != nullptr && blockIdx.x == 0) *in.error = 1;
      go = !(skip || bad);
      if (go) {
        std::memcpy(shared_scalars, &computed, sizeof(scalars));
        shared_step = static_cast<std::uint64_t>(s);
      }
    }
    __syncthreads();
    if (!go) return;
    std::memcpy(&sc, shared_scalars, sizeof(scalars));
    step = shared_step;
  } else {
    if constexpr (TC::any) __syncthreads();
    sc = p.scalars;
    step = p.step;
  }

  typename TCc::scalars checked_sc{};
  if constexpr (Policy::range_checked) {
    checked_sc = make_checked_scalars<typename Config::rule>(sc);
  } else {
    checked_sc = sc;
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
    if constexpr (Policy::unit_runs) {
      const table_entry<Config> entry = tab.entries[ti];
      const std::int64_t n = entry.ref.size;
      if (entry.vector_ok) {
        // Units [u, vector_stop) lie wholly inside the tensor: runs of them
        // with 32-bit offsets from per-thread pointers.
        const std::int64_t whole = first + n / unit;
        const std::int64_t vector_stop = whole < stop ? whole : stop;
        constexpr std::int64_t max_run = (std::int64_t{1} << 31) / unit;
        const bool scale_owner = thread_offset % 32 == 0;
        while (u < vector_stop) {
          const std::int64_t run = vector_stop - u < max_run ? vector_stop - u : max_run;
          const std::int64_t e0 = (u - first) * unit + thread_offset;
          const run_pointers<Config> b = run_pointers<Config>::at(entry.ref, e0);
          const std::uint64_t index0 = entry.ref.index_base + static_cast<std::uint64_t>(e0);
          const std::uint32_t end = static_cast<std::uint32_t>(run * unit);
          if constexpr (Policy::stages > 1) {
            // Tiles S - 1 ahead are on their way into shared memory
            // (cp.async) while this one is stepped; a thread reads back only
            // the slots it filled, so no block barrier is needed. A redo
            // after a failed range check reads the tile again from global
            // memory, which this tile's stores have not touched yet.
            constexpr int S = Policy::stages;
            using L = stage_layout<TCc, N, Policy::threads>;
            const std::uint32_t first_stage = stage_base<TC>();
            const std::uint32_t last_stage = first_stage + (S - 1) * L::bytes;
            FLASHOPTIM_UNROLL for (int s = 0; s < S - 1; ++s) {
              const std::uint32_t ahead = static_cast<std::uint32_t>(s) * static_cast<std::uint32_t>(unit);
              if (ahead < end) stage_run_tile<L>(b, ahead, first_stage + s * L::bytes);
              detail::cp_async_commit();
            }
            std::uint32_t current = first_stage, fill = last_stage;
            for (std::uint32_t off = 0; off < end; off += static_cast<std::uint32_t>(unit)) {
              const std::uint32_t ahead = off + (S - 1) * static_cast<std::uint32_t>(unit);
              if (ahead < end) stage_run_tile<L>(b, ahead, fill);
              detail::cp_async_commit();
              detail::cp_async_wait<S - 1>();
              tile_data<TCc, N> d;
              load_staged_tile<L>(b, off, current, d);
              step_loaded_run_tile<TC, TCc, N>(sc, checked_sc, b, off, scale_owner, entry.ref.seed, step,
                                               index0 + off, d);
              current = current == last_stage ? first_stage : current + L::bytes;
              fill = fill == last_stage ? first_stage : fill + L::bytes;
            }
          } else {
            for (std::uint32_t off = 0; off < end; off += static_cast<std::uint32_t>(unit)) {
              if constexpr (Policy::prefetch) {
                const std::uint32_t next = off + static_cast<std::uint32_t>(unit);
                if (next < end) prefetch_run_tile(b, next);
              }
              step_run_tile<TC, TCc, N>(sc, checked_sc, b, off, scale_owner, entry.ref.seed, step, index0 + off);
            }
          }
          u += run;
        }
      }
    }
    // Read again after the runs (their stores clobber memory): the runs
    // keep only their own pointers live.
    const table_entry<Config> entry = tab.entries[ti];
    const std::int64_t n = entry.ref.size;
    std::int64_t e = (u - first) * unit + thread_offset;
    for (; u < stop; ++u, e += unit) {
      const std::int64_t unit_start = e - thread_offset;
      // (With unit runs, every whole unit of a vector tensor was stepped above.)
      if (!Policy::unit_runs && entry.vector_ok && unit_start + unit <= n) {
        step_one_tile<TC, N, true>(sc, entry.ref, e, N, step);
      } else {
        const std::int64_t left = n - e;
        const int valid = left <= 0 ? 0 : (left >= N ? N : static_cast<int>(left));
        step_one_tile<TC, N, false>(sc, entry.ref, e, valid, step);
      }
    }
  }
}

/// Dynamic shared memory of a step launch.
template <class Config, class Policy>
constexpr std::size_t step_shared_bytes() {
  using TC = kernel_config<Config, Policy::tabulate, Policy::branch_free, Policy::proven_ranges>;
  using TCc = kernel_config<Config, Policy::tabulate, Policy::branch_free, Policy::proven_ranges,
                            Policy::range_checked>;
  std::size_t stages = 0;
  if constexpr (Policy::stages > 1)
    stages = static_cast<std::size_t>(Policy::stages) *
             stage_layout<TCc, Policy::elements_per_thread, Policy::threads>::bytes;
  return TC::shared_bytes + stages;
}

/// The kernel a launch with these template arguments runs (for occupancy
/// queries and attributes).
template <class Config, class Policy, bool DeviceInputs>
constexpr auto step_kernel_ptr() {
  return &step_kernel<Config, Policy, DeviceInputs>;
}

/// Launches one step over the table. Never allocates or synchronizes.
template <class Config, class Policy, bool DeviceInputs>
cudaError_t launch_step(const step_params<Config>& p, int grid, cudaStream_t stream) {
  if (grid <= 0 || p.table.units == 0) return cudaSuccess;
  step_kernel<Config, Policy, DeviceInputs>
      <<<grid, Policy::threads, step_shared_bytes<Config, Policy>(), stream>>>(p);
  return cudaGetLastError();
}

}  // namespace flashoptim::kernel
