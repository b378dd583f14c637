// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// The one fused step kernel: for every tile of every tensor in a table,
// load -> decode master and states -> rule -> encode -> store, in one pass.
// The arithmetic is flashoptim::step_tile (rule/tile.hpp), the function the
// CPU path calls, so the two are bit-identical; this file only decides how
// tiles are loaded, how a group's maximum is found (warp shuffles between
// the 32 / N lanes of a group) and how a persistent grid walks the table.
//
// Graph capture: with device inputs the kernel reads lr, the step count,
// the gradient multiplier and a skip flag from device memory and computes
// the step's scalars itself, in double, with Rule::make_scalars (the host
// path's function), so a captured launch replays correctly as they change.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <cstring>

#include "flashoptim/kernel/code_tables.cuh"
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
  /// finite, step < 1, multiplier not finite and positive); the step then
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
};

/// Steps one tile of tensor t at element e (a multiple of N) with `valid`
/// elements in it (N on the vector path). Every lane of the warp calls it on
/// the same path, since the group reduction shuffles.
template <class TC, int N, bool Vector>
FLASHOPTIM_DEVICE FLASHOPTIM_INLINE void step_one_tile(const typename TC::scalars& sc, const tensor_ref<typename TC::base>& t,
                                                       std::int64_t e, int valid, std::uint64_t step) {
  using C = typename TC::base;
  using S0 = typename C::state0;
  using S1 = typename C::state1;
  using P = tile_access<typename C::param_type, N>;
  using A = tile_access<typename C::aux_type, N>;
  using G = tile_access<typename C::grad_type, N>;
  using Q0 = tile_access<typename S0::code_type, N>;
  using Q1 = tile_access<typename S1::code_type, N>;
  constexpr bool grouped0 = codec::is_grouped<S0>::value;
  constexpr bool grouped1 = codec::is_grouped<S1>::value;

  tile_data<TC, N> d;
  if constexpr (Vector) {
    P::load(t.param + e, d.param);
    if constexpr (C::has_aux) A::load(t.aux + e, d.aux);
    G::load_readonly(t.grad + e, d.grad);
    if constexpr (S0::stores_state) Q0::load(t.code0 + e, d.code0);
    if constexpr (S1::stores_state) Q1::load(t.code1 + e, d.code1);
  } else {
    d = tile_data<TC, N>{};
    P::load_partial(t.param + e, d.param, valid);
    if constexpr (C::has_aux) A::load_partial(t.aux + e, d.aux, valid);
    G::load_partial(t.grad + e, d.grad, valid);
    if constexpr (S0::stores_state) Q0::load_partial(t.code0 + e, d.code0, valid);
    if constexpr (S1::stores_state) Q1::load_partial(t.code1 + e, d.code1, valid);
  }
  const std::int64_t group = e / 32;
  if constexpr (grouped0) {
    if (Vector || valid > 0) d.scale0 = t.scale0[group];
  }
  if constexpr (grouped1) {
    if (Vector || valid > 0) d.scale1 = t.scale1[group];
  }

  // A compile-time `valid` on the vector path lets the compiler share the
  // rule's sqrt(v) with the second-moment compander's.
  step_tile<TC, N>(sc, d, Vector ? N : valid, group_max<32 / N>{},
                   codec::rounding_key{t.seed, step, t.index_base + static_cast<std::uint64_t>(e)});

  if constexpr (Vector) {
    P::store(t.param + e, d.param);
    if constexpr (C::has_aux) A::store(t.aux + e, d.aux);
    if constexpr (S0::stores_state) Q0::store(t.code0 + e, d.code0);
    if constexpr (S1::stores_state) Q1::store(t.code1 + e, d.code1);
  } else {
    P::store_partial(t.param + e, d.param, valid);
    if constexpr (C::has_aux) A::store_partial(t.aux + e, d.aux, valid);
    if constexpr (S0::stores_state) Q0::store_partial(t.code0 + e, d.code0, valid);
    if constexpr (S1::stores_state) Q1::store_partial(t.code1 + e, d.code1, valid);
  }
  // The first tile of a group stores its scale (all tiles hold the same).
  const bool scale_owner = (Vector || valid > 0) && (e % 32) == 0;
  if constexpr (grouped0) {
    if (scale_owner) t.scale0[group] = d.scale0;
  }
  if constexpr (grouped1) {
    if (scale_owner) t.scale1[group] = d.scale1;
  }
}

template <class Config, class Policy, bool DeviceInputs>
__global__ void __launch_bounds__(Policy::threads, Policy::min_blocks_per_sm)
    step_kernel(const __grid_constant__ step_params<Config> p) {
  using TC = kernel_config<Config, Policy::tabulate, Policy::branch_free>;
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
      const bool bad = !format::is_finite(lr) || lr < 0.0 || s < 1 || !format::is_finite(inv) || !(inv > 0.0);
      if (bad && in.error != nullptr && blockIdx.x == 0) *in.error = 1;
      go = !(skip || bad);
      if (go) {
        const scalars computed = Config::rule::make_scalars(p.hyper, lr, s, inv);
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

  const table_view<Config>& tab = p.table;
  const unit_range range = block_units(tab.units, blockIdx.x, gridDim.x);
  if (range.begin >= range.end) return;
  std::int64_t ti = find_tensor(tab.unit_begin, tab.count, range.begin);
  std::int64_t u = range.begin;
  while (u < range.end) {
    while (tab.unit_begin[ti + 1] <= u) ++ti;  // skip empty tensors
    const table_entry<Config> entry = tab.entries[ti];
    const std::int64_t first = tab.unit_begin[ti];
    const std::int64_t stop = tab.unit_begin[ti + 1] < range.end ? tab.unit_begin[ti + 1] : range.end;
    const std::int64_t n = entry.ref.size;
    std::int64_t e = (u - first) * unit + static_cast<std::int64_t>(threadIdx.x) * N;
    for (; u < stop; ++u, e += unit) {
      const std::int64_t unit_start = e - static_cast<std::int64_t>(threadIdx.x) * N;
      if (entry.vector_ok && unit_start + unit <= n) {
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
  return kernel_config<Config, Policy::tabulate, Policy::branch_free>::shared_bytes;
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
