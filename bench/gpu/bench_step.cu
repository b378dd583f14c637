// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// Time of one fused GPU step per configuration and tensor list, with the
// bytes it must move (layout::bytes) and the device-to-device copy
// bandwidth measured in this process (a large cudaMemcpy, read + write):
//   bench_gpu_step --benchmark_format=json --benchmark_out=step.json
// Counters: ms (the median of the per-launch times), GBps (minimal bytes /
// that time), pct_copy (GBps / copy GB/s), bytes_per_param, floor_ms
// (minimal bytes / copy bandwidth), mean_ms (the mean of the same launches,
// Google Benchmark's own figure), and for the steps burst_ms (7 bursts of 20
// launches back to back, the median of the bursts' means per launch).
// Timing: CUDA events around each launch, the stream synchronized after it
// (as torch's and the paper's steps are timed, tools/bench_report.py, and as
// the copy is); Google Benchmark's manual time.
// Where NVML is found, each timed loop also records the mean SM clock, board
// power and the fraction of samples with a power or thermal clock limit
// (sm_mhz, power_w, capped). `ceiling/...` rows move the bytes of a layout's
// step in its pattern without arithmetic (bench_ceiling.cuh).
#include <benchmark/benchmark.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "bench_ceiling.cuh"
#include "bench_telemetry.hpp"
#include "bench_timing.cuh"
#include "flashoptim/device/step_plan.cuh"
#include "flashoptim/flashoptim.hpp"

using namespace flashoptim;

namespace {

double g_copy_gbps = 0.0;
bench_gpu::telemetry* g_telemetry = nullptr;

/// Device-to-device copy bandwidth, bytes read + written per second (median of 20).
double measure_copy_bandwidth() {
  const std::size_t bytes = std::size_t{4} << 30;
  void *a = nullptr, *b = nullptr;
  BENCH_CUDA(cudaMalloc(&a, bytes));
  BENCH_CUDA(cudaMalloc(&b, bytes));
  BENCH_CUDA(cudaMemset(a, 1, bytes));
  BENCH_CUDA(cudaMemset(b, 2, bytes));
  cudaEvent_t e0, e1;
  BENCH_CUDA(cudaEventCreate(&e0));
  BENCH_CUDA(cudaEventCreate(&e1));
  std::vector<double> ms;
  for (int i = 0; i < 23; ++i) {
    BENCH_CUDA(cudaEventRecord(e0));
    BENCH_CUDA(cudaMemcpyAsync(b, a, bytes, cudaMemcpyDeviceToDevice));
    BENCH_CUDA(cudaEventRecord(e1));
    BENCH_CUDA(cudaEventSynchronize(e1));
    float t = 0;
    BENCH_CUDA(cudaEventElapsedTime(&t, e0, e1));
    if (i >= 3) ms.push_back(t);
  }
  BENCH_CUDA(cudaFree(a));
  BENCH_CUDA(cudaFree(b));
  return 2.0 * static_cast<double>(bytes) / (bench_gpu::median(ms) * 1e-3) / 1e9;
}

struct shape {
  std::string name;
  std::vector<std::int64_t> sizes;
  /// The gradients of the first tensor's [zero_begin, zero_end) (fractions
  /// of its size) are exactly 0: rows no batch touched, whose states stay 0.
  double zero_begin = 0.0, zero_end = 0.0;
  /// With dense_steps > 0 those gradients are 0 only after that many steps
  /// with the dense ones, and `idle_steps` more steps run before the timing:
  /// rows a batch touched once and then left idle.
  int dense_steps = 0, idle_steps = 0;
};

shape flat() { return {"flat268M", {std::int64_t{1} << 28}}; }
/// flat() with a contiguous quarter of the gradients 0 (an embedding table
/// whose untouched rows have zero gradients over zero states: the Adam
/// step's zero-tolerant attempt, docs/gpu.md "Exact zeros in the gradient").
shape flat_zero_rows() { return {"flat268M_zero25", {std::int64_t{1} << 28}, 0.5, 0.75}; }
/// flat() whose quarter [0.5, 0.75) had 10 steps of gradients and then 400
/// with zero gradients before the timing: rows left idle, whose momentum
/// has stuck at subnormal values by then (docs/gpu.md, "Exact zeros in the
/// gradient": outside both range-checked attempts).
shape flat_idle_rows() { return {"flat268M_idle25", {std::int64_t{1} << 28}, 0.5, 0.75, 10, 400}; }

/// Llama-3.2-1B with an untied output layer: 147 tensors, 1.50 B parameters.
shape llama() {
  shape s{"llama1B", {}};
  const std::int64_t d = 2048, kv = 512, ff = 8192, vocab = 128256;
  s.sizes.push_back(vocab * d);
  for (int l = 0; l < 16; ++l) {
    for (std::int64_t n : {d * d, kv * d, kv * d, d * d, ff * d, ff * d, d * ff, d, d}) s.sizes.push_back(n);
  }
  s.sizes.push_back(d);
  s.sizes.push_back(vocab * d);
  return s;
}

shape many() { return {"10k_x_4096", std::vector<std::int64_t>(10000, 4096)}; }

FLASHOPTIM_HOST_DEVICE inline std::uint64_t hash(std::uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ull;
  return x ^ (x >> 33);
}
FLASHOPTIM_HOST_DEVICE inline float value_of(std::uint64_t h, float scale) {
  const float u = static_cast<float>(h >> 40) * (1.0f / 16777216.0f) - 0.5f;
  return u * scale;
}

template <class Config>
__global__ void init_kernel(std::int64_t n, typename Config::param_type* p, typename Config::aux_type* a,
                            typename Config::grad_type* g) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    typename Config::aux_type aux{};
    Config::master::encode(value_of(hash(static_cast<std::uint64_t>(i)), 0.1f), p[i], aux);
    if constexpr (Config::has_aux) a[i] = aux;
    g[i] = format::from_float<typename Config::grad_type>(value_of(hash(~static_cast<std::uint64_t>(i)), 1e-3f));
  }
}

/// Every buffer of every tensor, carved from one arena per slot with
/// 256-byte-aligned starts (as separate allocations would be).
template <class Config>
struct workspace {
  std::vector<tensor_ref<Config>> refs;
  std::vector<void*> arenas;
  std::int64_t params = 0;
  std::int64_t moved_bytes = 0;

  explicit workspace(const std::vector<std::int64_t>& sizes) {
    using S0 = typename Config::state0;
    using S1 = typename Config::state1;
    auto round = [](std::int64_t x) { return (x + 255) / 256 * 256; };
    std::int64_t off[7] = {};
    std::vector<std::array<std::int64_t, 7>> at(sizes.size());
    const std::size_t eb[7] = {sizeof(typename Config::param_type), storage_bytes<typename Config::aux_type>,
                               sizeof(typename Config::grad_type), storage_bytes<typename S0::code_type>,
                               storage_bytes<typename S0::scale_type>, storage_bytes<typename S1::code_type>,
                               storage_bytes<typename S1::scale_type>};
    for (std::size_t i = 0; i < sizes.size(); ++i) {
      const std::int64_t n = sizes[i];
      const std::int64_t cnt[7] = {n, n, n, n, codec::scale_count<S0>(n), n, codec::scale_count<S1>(n)};
      for (int k = 0; k < 7; ++k) {
        at[i][k] = off[k];
        off[k] += round(cnt[k] * static_cast<std::int64_t>(eb[k]));
      }
      params += n;
      moved_bytes += layout::bytes<Config>::moved_for_size(n);
    }
    char* base[7];
    for (int k = 0; k < 7; ++k) {
      void* p = nullptr;
      if (off[k]) {
        BENCH_CUDA(cudaMalloc(&p, static_cast<std::size_t>(off[k])));
        BENCH_CUDA(cudaMemset(p, 0, static_cast<std::size_t>(off[k])));
      }
      arenas.push_back(p);
      base[k] = static_cast<char*>(p);
    }
    for (std::size_t i = 0; i < sizes.size(); ++i) {
      tensor_ref<Config> r;
      using R = tensor_ref<Config>;
      auto ptr = [&](int k, auto* tag) {
        using P = std::remove_pointer_t<decltype(tag)>;
        return eb[k] ? reinterpret_cast<P*>(base[k] + at[i][k]) : static_cast<P*>(nullptr);
      };
      r.param = ptr(0, static_cast<typename R::param_type*>(nullptr));
      r.aux = ptr(1, static_cast<typename R::aux_type*>(nullptr));
      r.grad = ptr(2, static_cast<typename R::grad_type*>(nullptr));
      flashoptim::slot_at<0>(r.states).codes = ptr(3, static_cast<typename R::template code_t<0>*>(nullptr));
      flashoptim::slot_at<0>(r.states).scales = ptr(4, static_cast<typename R::template scale_t<0>*>(nullptr));
      if constexpr (Config::num_slots > 1) {  // one-state rules have no slot 1
        flashoptim::slot_at<1>(r.states).codes = ptr(5, static_cast<typename R::template code_t<1>*>(nullptr));
        flashoptim::slot_at<1>(r.states).scales = ptr(6, static_cast<typename R::template scale_t<1>*>(nullptr));
      }
      r.size = sizes[i];
      r.seed = i + 1;
      refs.push_back(r);
    }
    // The arenas are contiguous: initialize each as one array (as many
    // elements as the smallest of the three holds).
    std::int64_t n = off[0] / static_cast<std::int64_t>(eb[0]);
    if (eb[1]) n = std::min<std::int64_t>(n, off[1] / static_cast<std::int64_t>(eb[1]));
    n = std::min<std::int64_t>(n, off[2] / static_cast<std::int64_t>(eb[2]));
    init_kernel<Config><<<132 * 8, 256>>>(n, reinterpret_cast<typename Config::param_type*>(base[0]),
                                          reinterpret_cast<typename Config::aux_type*>(base[1]),
                                          reinterpret_cast<typename Config::grad_type*>(base[2]));
    BENCH_CUDA(cudaGetLastError());
    BENCH_CUDA(cudaDeviceSynchronize());
  }
  ~workspace() {
    for (void* p : arenas)
      if (p) cudaFree(p);
  }
};

__global__ void advance_step(std::int64_t* step) { ++*step; }

template <class Config>
typename Config::hyper bench_hyper() {
  typename Config::hyper h;
  h.lr = 1e-3;
  if constexpr (std::is_same<typename Config::rule, rule::sgd>::value ||
                std::is_same<typename Config::rule, rule::sgdw>::value)
    h.momentum = Config::state0::stores_state ? 0.9 : 0.0;
  return h;
}

/// The per-launch times of one timed loop, in ms.
struct launch_times {
  std::vector<double> ms;
  /// The median (bench_gpu::median): the row's time.
  double median() const { return ms.empty() ? 0.0 : bench_gpu::median(ms); }
  double mean() const {
    double t = 0;
    for (double m : ms) t += m;
    return ms.empty() ? 0.0 : t / static_cast<double>(ms.size());
  }
};

void set_counters(benchmark::State& st, const launch_times& t, std::int64_t bytes, std::int64_t params,
                  std::int64_t tensors) {
  const double ms = t.median();
  const double gbps = static_cast<double>(bytes) / (ms * 1e-3) / 1e9;
  st.counters["ms"] = ms;
  st.counters["mean_ms"] = t.mean();
  st.counters["launches"] = static_cast<double>(t.ms.size());
  st.counters["GBps"] = gbps;
  st.counters["pct_copy"] = 100.0 * gbps / g_copy_gbps;
  st.counters["copy_GBps"] = g_copy_gbps;
  st.counters["bytes"] = static_cast<double>(bytes);
  st.counters["params"] = static_cast<double>(params);
  st.counters["tensors"] = static_cast<double>(tensors);
  st.counters["bytes_per_param"] = static_cast<double>(bytes) / static_cast<double>(params);
  st.counters["floor_ms"] = static_cast<double>(bytes) / (g_copy_gbps * 1e9) * 1e3;
}

/// The SM clock, power and limit fraction of the timed loop, where NVML is found.
void set_telemetry(benchmark::State& st, const bench_gpu::telemetry::summary& t) {
  if (!t.valid) return;
  st.counters["sm_mhz"] = t.sm_mhz;
  st.counters["power_w"] = t.power_w;
  st.counters["capped"] = t.capped;
}

/// Runs `launch` (work queued on `stream`) once per benchmark iteration,
/// timed with CUDA events around it (manual time); returns each launch's
/// milliseconds.
template <class Launch>
launch_times time_iterations(benchmark::State& st, cudaStream_t stream, Launch&& launch) {
  cudaEvent_t e0, e1;
  BENCH_CUDA(cudaEventCreate(&e0));
  BENCH_CUDA(cudaEventCreate(&e1));
  launch_times t;
  for (auto _ : st) {
    BENCH_CUDA(cudaEventRecord(e0, stream));
    launch();
    BENCH_CUDA(cudaEventRecord(e1, stream));
    BENCH_CUDA(cudaEventSynchronize(e1));
    float ms = 0;
    BENCH_CUDA(cudaEventElapsedTime(&ms, e0, e1));
    st.SetIterationTime(ms * 1e-3);
    t.ms.push_back(ms);
  }
  BENCH_CUDA(cudaEventDestroy(e0));
  BENCH_CUDA(cudaEventDestroy(e1));
  return t;
}

/// Device = true: the kernel's device-inputs variant (lr and step count read
/// from device memory, scalars made by each block), which device::optimizer
/// launches; the step count advances on the device between launches.
template <class Config, class Policy, bool Device = false>
void bm_step(benchmark::State& st, shape sh) {
  workspace<Config> w(sh.sizes);
  auto zero_rows = [&] {
    const auto n = static_cast<double>(w.refs[0].size);
    const auto first = static_cast<std::int64_t>(sh.zero_begin * n), last = static_cast<std::int64_t>(sh.zero_end * n);
    using G = typename Config::grad_type;
    // All-zero bytes are +0 in every gradient format.
    BENCH_CUDA(cudaMemset(const_cast<G*>(w.refs[0].grad) + first, 0, static_cast<std::size_t>(last - first) * sizeof(G)));
    // (on the legacy stream, which the launches' non-blocking stream does
    // not wait for)
    BENCH_CUDA(cudaDeviceSynchronize());
  };
  if (sh.zero_end > sh.zero_begin && sh.dense_steps == 0) zero_rows();
  device::step_plan<Config, Policy> plan;
  status s = plan.build(w.refs.data(), w.refs.size());
  if (!s.ok()) {
    st.SkipWithError(s.what());
    return;
  }
  const auto h = bench_hyper<Config>();
  cudaStream_t stream;
  BENCH_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  std::int64_t step = 1;
  double* d_lr = nullptr;
  std::int64_t* d_step = nullptr;
  device::device_inputs in;
  if constexpr (Device) {
    BENCH_CUDA(cudaMalloc(&d_lr, sizeof(double)));
    BENCH_CUDA(cudaMalloc(&d_step, sizeof(std::int64_t)));
    BENCH_CUDA(cudaMemcpy(d_lr, &h.lr, sizeof(double), cudaMemcpyHostToDevice));
    BENCH_CUDA(cudaMemcpy(d_step, &step, sizeof step, cudaMemcpyHostToDevice));
    in.lr = d_lr;
    in.step = d_step;
  }
  auto launch = [&] {
    if constexpr (Device) {
      s = plan.step_async(h, step_args{}, in, stream);
      advance_step<<<1, 1, 0, stream>>>(d_step);
    } else {
      step_args a;
      a.step = step++;
      s = plan.step_async(h, a, stream);
    }
  };
  if (sh.dense_steps > 0) {
    for (int i = 0; i < sh.dense_steps; ++i) launch();
    BENCH_CUDA(cudaStreamSynchronize(stream));
    zero_rows();
    for (int i = 0; i < sh.idle_steps; ++i) launch();
  }
  for (int i = 0; i < 3; ++i) launch();
  BENCH_CUDA(cudaStreamSynchronize(stream));
  g_telemetry->start();
  const launch_times t = time_iterations(st, stream, launch);
  set_telemetry(st, g_telemetry->stop());
  // The same launches back to back, no synchronization between them (what
  // the development A/B harnesses time): beside the row's time, to tell the
  // cost of a launch timed alone.
  const double burst_ms = bench_gpu::time_ms(stream, launch);
  if constexpr (Device) {
    BENCH_CUDA(cudaFree(d_lr));
    BENCH_CUDA(cudaFree(d_step));
  }
  if (!s.ok()) st.SkipWithError(s.what());
  set_counters(st, t, w.moved_bytes, w.params, static_cast<std::int64_t>(w.refs.size()));
  st.counters["burst_ms"] = burst_ms;
  st.counters["grid"] = plan.ref().grid();
  BENCH_CUDA(cudaStreamDestroy(stream));
}

/// The gradient-statistics launch over the same table (reads the gradients once).
template <class Config>
void bm_grad_stats(benchmark::State& st, shape sh) {
  workspace<Config> w(sh.sizes);
  device::step_plan<Config> plan;
  status s = plan.build(w.refs.data(), w.refs.size());
  if (!s.ok()) {
    st.SkipWithError(s.what());
    return;
  }
  device::grad_stats* out = nullptr;
  BENCH_CUDA(cudaMalloc(&out, sizeof(*out)));
  s = plan.grad_stats_async(out, nullptr);
  const launch_times t = time_iterations(st, nullptr, [&] { s = plan.grad_stats_async(out, nullptr); });
  const std::int64_t bytes = w.params * static_cast<std::int64_t>(sizeof(typename Config::grad_type));
  set_counters(st, t, bytes, w.params, static_cast<std::int64_t>(w.refs.size()));
  BENCH_CUDA(cudaFree(out));
}

/// The layout's memory-pattern ceiling (bench_ceiling.cuh): the step's
/// bytes in the step's pattern, no arithmetic. One tensor whose size is a
/// whole number of 2048-element units.
template <class Config>
void bm_ceiling(benchmark::State& st, shape sh) {
  using S0 = typename Config::state0;
  using S1 = typename Config::state1;
  constexpr int P = sizeof(typename Config::param_type), A = storage_bytes<typename Config::aux_type>,
                G = sizeof(typename Config::grad_type), C0 = storage_bytes<typename S0::code_type>,
                C1 = storage_bytes<typename S1::code_type>;
  constexpr int K0 = codec::is_grouped<S0>::value ? storage_bytes<typename S0::scale_type> : 0;
  constexpr int K1 = codec::is_grouped<S1>::value ? storage_bytes<typename S1::scale_type> : 0;
  constexpr int C1s = Config::num_slots > 1 ? C1 : 0, K1s = Config::num_slots > 1 ? K1 : 0;  // one-state rules
  if (sh.sizes.size() != 1 || sh.sizes[0] % 2048 != 0) {
    st.SkipWithError("one tensor of whole 2048-element units");
    return;
  }
  workspace<Config> w(sh.sizes);
  const auto& r = w.refs[0];
  bench_gpu::pattern_buffers b{};
  b.param = reinterpret_cast<char*>(r.param);
  b.aux = reinterpret_cast<char*>(r.aux);
  b.grad = reinterpret_cast<const char*>(r.grad);
  b.code0 = reinterpret_cast<char*>(flashoptim::slot_at<0>(r.states).codes);
  b.scale0 = reinterpret_cast<char*>(flashoptim::slot_at<0>(r.states).scales);
  if constexpr (Config::num_slots > 1) {
    b.code1 = reinterpret_cast<char*>(flashoptim::slot_at<1>(r.states).codes);
    b.scale1 = reinterpret_cast<char*>(flashoptim::slot_at<1>(r.states).scales);
  }
  constexpr int R = tuning::default_step_policy<Config>::type::warp_tiles;  // the step's warp tiles
  auto kernel = bench_gpu::pattern_kernel<P, A, G, C0, K0, C1s, K1s, R>;
  constexpr int smem = bench_gpu::pattern_shared_bytes<P, A, G, C0, K0, C1s, K1s, R>();
  BENCH_CUDA(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  int sms = 0;
  BENCH_CUDA(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  int per_sm = 0;
  BENCH_CUDA(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, 256, smem));
  const int grid = sms * std::min(per_sm, 2);
  const std::int64_t units = sh.sizes[0] / 2048;
  auto launch = [&] { kernel<<<grid, 256, smem>>>(b, units); };
  for (int i = 0; i < 3; ++i) launch();
  BENCH_CUDA(cudaGetLastError());
  BENCH_CUDA(cudaDeviceSynchronize());
  g_telemetry->start();
  const launch_times t = time_iterations(st, nullptr, launch);
  set_telemetry(st, g_telemetry->stop());
  set_counters(st, t, w.moved_bytes, w.params, 1);
  st.counters["grid"] = grid;
}

namespace c = flashoptim::codec;
/// The default bf16 + int8 split, and the paper's (its checkpoints' bytes).
using split8 = c::rounded_split;
using ulp8 = c::ulp_correction<bf16, std::int8_t>;
using dm = c::defaults::momentum;
using dv = c::defaults::second_moment;
namespace p = c::precision;

using adamw_default = step_config<rule::adamw, split8, bf16, dm, dv>;
using lion_default = step_config<rule::lion, split8, bf16, dm>;
using sgd_momentum = step_config<rule::sgd, split8, bf16, dm>;
using sgd_plain = step_config<rule::sgd, split8, bf16>;
using adamw_ulp8 = step_config<rule::adamw, ulp8, bf16, dm, dv>;
using lion_ulp8 = step_config<rule::lion, ulp8, bf16, dm>;
using sgd_momentum_ulp8 = step_config<rule::sgd, ulp8, bf16, dm>;
using adamw_bf16_native = step_config<rule::adamw, c::native<bf16>, bf16, dm, dv>;
using adamw_fp32_native = step_config<rule::adamw, c::native<float>, float, dm, dv>;
using adamw_bf16_master = step_config<rule::adamw, c::fp32_master<bf16>, bf16, dm, dv>;
using adamw_ulp16 = step_config<rule::adamw, c::ulp_correction<bf16, std::int16_t>, bf16, dm, dv>;
using adamw_fp16_ulp8 = step_config<rule::adamw, c::ulp_correction<fp16, std::int8_t>, fp16, dm, dv>;
using adamw_exact = step_config<rule::adamw, c::exact_split, bf16, dm, dv>;
using adamw_reference = step_config<rule::adamw, ulp8, bf16, c::reference::momentum, c::reference::second_moment>;
using adamw_fp32_states = step_config<rule::adamw, split8, bf16, p::fp32, p::fp32>;
using adamw_bf16_states = step_config<rule::adamw, split8, bf16, p::bf16, p::bf16>;
using adamw_bf16_sr_states = step_config<rule::adamw, split8, bf16, p::bf16_sr, p::bf16_sr>;
using adamw_fp16_states = step_config<rule::adamw, split8, bf16, p::fp16, p::fp16>;
using adamw_fp8_states = step_config<rule::adamw, split8, bf16, p::fp8_momentum, p::fp8_second_moment>;
/// torch's layouts, for comparison with its fused AdamW in the same table.
using adamw_torch_fp32 = step_config<rule::adamw, c::native<float>, float, p::fp32, p::fp32>;
using adamw_torch_bf16 = step_config<rule::adamw, c::native<bf16>, bf16, p::bf16, p::bf16>;

template <class Config>
using default_policy = typename tuning::default_step_policy<Config>::type;

/// `ceiling/<config>/<shape>`: bm_ceiling of the configuration's layout.
template <class Config>
void add_ceiling(const char* config, const shape& sh) {
  const std::string name = std::string("ceiling/") + config + "/" + sh.name;
  benchmark::RegisterBenchmark(name.c_str(), bm_ceiling<Config>, sh)
      ->UseManualTime()
      ->Unit(benchmark::kMillisecond)
      ->MinTime(0.3);
}

template <class Config, class Policy = default_policy<Config>, bool Device = false>
void add(const char* config, const shape& sh, const char* policy = "default") {
  const std::string name = std::string("step/") + config + "/" + sh.name + "/" + policy;
  benchmark::RegisterBenchmark(name.c_str(), bm_step<Config, Policy, Device>, sh)
      ->UseManualTime()
      ->Unit(benchmark::kMillisecond)
      ->MinTime(0.3);
}

}  // namespace

int main(int argc, char** argv) {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) {
    std::printf("no usable CUDA device: nothing to benchmark\n");
    return 0;
  }
  g_copy_gbps = measure_copy_bandwidth();
  benchmark::AddCustomContext("copy_GBps", std::to_string(g_copy_gbps));
  cudaDeviceProp prop{};
  BENCH_CUDA(cudaGetDeviceProperties(&prop, 0));
  benchmark::AddCustomContext("device", prop.name);
  bench_gpu::telemetry telemetry;
  g_telemetry = &telemetry;
  benchmark::AddCustomContext("telemetry", telemetry.available() ? "nvml" : "none");

  const shape f = flat(), l = llama(), m = many();
  // The targets (BENCHMARKS.md).
  add<adamw_default>("adamw_default", f);
  add<adamw_default>("adamw_default", l);
  // What device::optimizer launches: the same kernel reading lr and the step
  // count on the GPU.
  add<adamw_default, default_policy<adamw_default>, true>("adamw_default", f, "device_inputs");
  add<adamw_default, default_policy<adamw_default>, true>("adamw_default", l, "device_inputs");
#if !defined(FLASHOPTIM_BENCH_ONLY_DEFAULT)  // a quick build for A/B measurements
  add<adamw_default>("adamw_default", m);
  add<adamw_default>("adamw_default", flat_zero_rows());
  add<adamw_default>("adamw_default", flat_idle_rows());
  add<lion_default>("lion_default", f);
  add<sgd_momentum>("sgd_momentum", f);
  add<sgd_plain>("sgd_plain", f);
  add<adamw_bf16_native>("adamw_bf16_native", f);
  add<adamw_fp32_native>("adamw_fp32_native", f);
  add<adamw_bf16_master>("adamw_bf16_fp32_master", f);
  add<adamw_ulp16>("adamw_bf16_ulp16", f);
  add<adamw_fp16_ulp8>("adamw_fp16_ulp8", f);
  add<adamw_exact>("adamw_exact_split", f);
  add<adamw_ulp8>("adamw_bf16_ulp8", f);
  add<lion_ulp8>("lion_bf16_ulp8", f);
  add<sgd_momentum_ulp8>("sgd_momentum_bf16_ulp8", f);
  add<adamw_reference>("adamw_reference_states", f);
  add<adamw_fp32_states>("adamw_fp32_states", f);
  add<adamw_bf16_states>("adamw_bf16_states", f);
  add<adamw_bf16_sr_states>("adamw_bf16_sr_states", f);
  add<adamw_fp16_states>("adamw_fp16_states", f);
  add<adamw_fp8_states>("adamw_fp8_states", f);
  add<adamw_torch_fp32>("adamw_torch_layout_fp32", f);
  add<adamw_torch_bf16>("adamw_torch_layout_bf16", f);
  add<adamw_torch_fp32>("adamw_torch_layout_fp32", l);
  // The layouts' memory-pattern ceilings (same bytes, no arithmetic).
  add_ceiling<adamw_default>("adamw_default", f);
  add_ceiling<lion_default>("lion_default", f);
  add_ceiling<sgd_momentum>("sgd_momentum", f);
  add_ceiling<adamw_bf16_native>("adamw_bf16_native", f);
  add_ceiling<adamw_fp16_ulp8>("adamw_fp16_ulp8", f);
  add_ceiling<adamw_reference>("adamw_reference_states", f);
  add_ceiling<adamw_bf16_states>("adamw_bf16_states", f);
  add_ceiling<adamw_fp8_states>("adamw_fp8_states", f);
  add_ceiling<adamw_fp32_states>("adamw_fp32_states", f);
  add_ceiling<adamw_torch_bf16>("adamw_torch_layout_bf16", f);
  // Tuning candidates for the default configuration (docs/gpu.md, "Tuning").
  // step_policy<threads, elements per thread, min blocks per SM, tables, branch-free>
  add<adamw_default, tuning::step_policy<256, 16, 2, true, true>>("adamw_default", f, "t256_n16_b2");
  add<adamw_default, tuning::step_policy<256, 8, 2, true, false>>("adamw_default", f, "t256_n8_b2_branchy");
  add<adamw_default, tuning::step_policy<256, 8, 2, false, true>>("adamw_default", f, "t256_n8_b2_notab");
  add<adamw_default, tuning::step_policy<128, 16, 4, true, true>>("adamw_default", f, "t128_n16_b4");
  add<adamw_default, tuning::step_policy<512, 16, 1, true, true>>("adamw_default", f, "t512_n16_b1");
  add<adamw_default, tuning::step_policy<256, 16, 1, true, true>>("adamw_default", f, "t256_n16_b1");
  add<adamw_default, tuning::step_policy<256, 8, 2, true, true>>("adamw_default", f, "t256_n8_b2");  // = previous
  add<adamw_default, tuning::step_policy<256, 8, 3, true, true>>("adamw_default", f, "t256_n8_b3");
  add<adamw_default, tuning::step_policy<128, 8, 6, true, true>>("adamw_default", f, "t128_n8_b6");
  // The previous default policy on the target cases, and the variants of the
  // proven-range policy (docs/gpu.md, "Instruction budget"; the unstaged
  // default was t256_n8_b3_checked):
  // step_policy<threads, elements, min blocks/SM, tables, branch-free,
  //             proven ranges, unit runs, range checked, L2 prefetch>
  add<adamw_default, tuning::previous_step_policy>("adamw_default", f, "previous");
  add<adamw_default, tuning::previous_step_policy>("adamw_default", l, "previous");
  add<adamw_default, tuning::previous_step_policy>("adamw_default", m, "previous");
  add<lion_default, tuning::previous_step_policy>("lion_default", f, "previous");
  add<sgd_momentum, tuning::previous_step_policy>("sgd_momentum", f, "previous");
  using proven_b2 = tuning::step_policy<256, 8, 2, true, true, true, false, false>;
  using runs_b2 = tuning::step_policy<256, 8, 2, true, true, true, true, false>;
  using checked_b2 = tuning::step_policy<256, 8, 2, true, true, true, true, true>;
  using checked_b3 = tuning::step_policy<256, 8, 3, true, true, true, true, true>;  // = default
  using prefetch_b2 = tuning::step_policy<256, 8, 2, true, true, true, true, true, true>;
  using prefetch_b3 = tuning::step_policy<256, 8, 3, true, true, true, true, true, true>;
  add<adamw_default, proven_b2>("adamw_default", f, "t256_n8_b2_proven");
  add<adamw_default, runs_b2>("adamw_default", f, "t256_n8_b2_proven_runs");
  add<adamw_default, checked_b2>("adamw_default", f, "t256_n8_b2_checked");
  add<adamw_default, checked_b3>("adamw_default", f, "t256_n8_b3_checked");
  add<adamw_default, prefetch_b2>("adamw_default", f, "t256_n8_b2_checked_prefetch");
  add<adamw_default, prefetch_b3>("adamw_default", f, "t256_n8_b3_checked_prefetch");
  add<adamw_default, checked_b2>("adamw_default", l, "t256_n8_b2_checked");
  add<adamw_default, prefetch_b3>("adamw_default", l, "t256_n8_b3_checked_prefetch");
  add<adamw_default, checked_b2>("adamw_default", m, "t256_n8_b2_checked");
  add<lion_default, checked_b2>("lion_default", f, "t256_n8_b2_checked");
  add<sgd_momentum, checked_b2>("sgd_momentum", f, "t256_n8_b2_checked");
  // Loads staged through shared memory (the last argument: stages; the
  // default is s3_t256_n8_b2; tuning/step_policy.hpp has the table).
  using s2_b3 = tuning::step_policy<256, 8, 3, true, true, true, true, true, false, 2>;
  using s3_b3 = tuning::step_policy<256, 8, 3, true, true, true, true, true, false, 3>;
  using s2_b2 = tuning::step_policy<256, 8, 2, true, true, true, true, true, false, 2>;
  using s4_b2 = tuning::step_policy<256, 8, 2, true, true, true, true, true, false, 4>;
  using s3_t128_b6 = tuning::step_policy<128, 8, 6, true, true, true, true, true, false, 3>;
  add<adamw_default, s2_b3>("adamw_default", f, "s2_t256_n8_b3");
  add<adamw_default, s3_b3>("adamw_default", f, "s3_t256_n8_b3");
  add<adamw_default, s2_b2>("adamw_default", f, "s2_t256_n8_b2");
  add<adamw_default, s4_b2>("adamw_default", f, "s4_t256_n8_b2");
  add<adamw_default, s3_t128_b6>("adamw_default", f, "s3_t128_n8_b6");
  add<adamw_default, s3_b3>("adamw_default", l, "s3_t256_n8_b3");
  add<adamw_default, checked_b3>("adamw_default", l, "t256_n8_b3_checked");
  add<lion_default, checked_b3>("lion_default", f, "t256_n8_b3_checked");
  add<sgd_momentum, checked_b3>("sgd_momentum", f, "t256_n8_b3_checked");
  add<adamw_bf16_master, checked_b3>("adamw_bf16_fp32_master", f, "t256_n8_b3_checked");
#endif
  // The gradient statistics launch.
#if !defined(FLASHOPTIM_BENCH_ONLY_DEFAULT)
  benchmark::RegisterBenchmark("grad_stats/adamw_default/flat268M", bm_grad_stats<adamw_default>, f)
      ->UseManualTime()
      ->Unit(benchmark::kMillisecond)
      ->MinTime(0.3);
  benchmark::RegisterBenchmark("grad_stats/adamw_default/llama1B", bm_grad_stats<adamw_default>, l)
      ->UseManualTime()
      ->Unit(benchmark::kMillisecond)
      ->MinTime(0.3);
#endif

  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
