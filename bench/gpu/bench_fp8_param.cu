// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// The step writing FP8 weights with block scales (docs/fp8-params.md) beside
// the step writing bf16 weights, same master and states (AdamW, the default
// 8-bit states, bf16 gradients). The issue's target: <= 1.1x the bf16 step.
//   bf16 + int8 master:  rounded_split step (the default; its bf16 half is
//                        the model's weight) | the same step + the FP8 pass
//                        (the bf16 half is then the optimizer's own)
//   fp32 master:         fp32_master<bf16> step (bf16 weight + fp32 copy) |
//                        native<float> step + the FP8 pass (4 B master, 1 B FP8)
// each with 1 x 128 and 128 x 128 blocks, and the FP8 pass alone with its
// bandwidth (master read + values written + scales); and the step with the
// FP8 write fused into it (device::fp8_step_plan: 1 x 128 blocks, written
// from the new master in registers, no second read). Shapes: one 16384^2
// matrix (268M) and the Llama-3.2-1B list (147 tensors: 2-D weights, 1-D
// norms). Time: CUDA events around 20 steps, median of 7 repetitions.
// Prints a markdown table; with an argument, also writes it as CSV there.
//   bench_fp8_param [out.csv]
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "bench_timing.cuh"
#include "flashoptim/flashoptim.hpp"
#include "flashoptim/device/fp8_step_plan.cuh"
#include "flashoptim/device/step_plan.cuh"
#include "flashoptim/kernel/fp8_param_kernel.cuh"
#include "flashoptim/kernel/init_kernels.cuh"
#include "flashoptim/optim/device_optimizer.cuh"

using namespace flashoptim;

namespace {

template <class Master>
using adamw_cfg = step_config<rule::adamw, Master, bf16, codec::defaults::momentum, codec::defaults::second_moment>;

__global__ void fill(float* x, bf16* g, std::int64_t n, std::uint64_t seed) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    std::uint64_t v = (static_cast<std::uint64_t>(i) + seed) * 0x9e3779b97f4a7c15ull;
    v ^= v >> 31;
    const float u = static_cast<float>(v >> 40) * (1.0f / 16777216.0f) - 0.5f;
    x[i] = 0.05f * u;
    g[i] = format::from_float<bf16>(1e-3f * (0.25f - u));
  }
}

/// A tensor's shape: rows x cols, or (cols == 0) 1-D of `rows` elements.
struct shape2 {
  std::int64_t rows, cols;
  std::int64_t size() const { return cols == 0 ? rows : rows * cols; }
};

/// Every tensor's param, correction, grad and states on the device, the
/// master split from the same fp32 values for every configuration.
template <class Cfg>
struct tensors {
  std::vector<tensor_ref<Cfg>> refs;
  std::vector<void*> allocs;
  explicit tensors(const std::vector<shape2>& shapes) {
    float* x = nullptr;
    std::int64_t most = 0;
    for (const auto& s : shapes) most = std::max(most, s.size());
    BENCH_CUDA(cudaMalloc(&x, most * sizeof(float)));
    for (std::size_t i = 0; i < shapes.size(); ++i) {
      const std::int64_t n = shapes[i].size();
      tensor_ref<Cfg> t;
      void *p, *g, *st;
      const auto l = state_layout<Cfg>::for_size(n);
      BENCH_CUDA(cudaMalloc(&p, n * sizeof(typename Cfg::param_type)));
      BENCH_CUDA(cudaMalloc(&g, n * sizeof(bf16)));
      BENCH_CUDA(cudaMalloc(&st, l.bytes));
      BENCH_CUDA(cudaMemset(st, 0, l.bytes));
      t.param = static_cast<typename Cfg::param_type*>(p);
      t.grad = static_cast<bf16*>(g);
      t.size = n;
      t.seed = i;
      l.carve(st, t);
      fill<<<132 * 8, 256>>>(x, static_cast<bf16*>(g), n, i);
      kernel::split_kernel<typename Cfg::master><<<132 * 8, 256>>>(x, n, t.param, t.aux);
      refs.push_back(t);
      allocs.insert(allocs.end(), {p, g, st});
    }
    BENCH_CUDA(cudaDeviceSynchronize());
    cudaFree(x);
  }
  ~tensors() {
    for (auto* a : allocs) cudaFree(a);
  }
};

/// The FP8 copy of every tensor of ts (values + scales) and its plan.
template <class Cfg>
struct fp8_copy {
  using M = typename Cfg::master;
  kernel::fp8_param_plan<M, fp8_e4m3> plan;
  std::vector<fp8_param_ref<M, fp8_e4m3>> refs;
  std::vector<void*> allocs;
  std::int64_t moved = 0;  // bytes the pass must move
  fp8_copy(const tensors<Cfg>& ts, const std::vector<shape2>& shapes, fp8_block_kind kind) {
    for (std::size_t i = 0; i < shapes.size(); ++i) {
      const auto& t = ts.refs[i];
      fp8_param_ref<M, fp8_e4m3> r;
      r.master = t.param;
      r.aux = t.aux;
      r.shape = shapes[i].cols == 0 ? fp8_shape_1d(shapes[i].rows) : fp8_shape_2d(shapes[i].rows, shapes[i].cols, kind);
      void *v, *s;
      BENCH_CUDA(cudaMalloc(&v, r.shape.size));
      BENCH_CUDA(cudaMalloc(&s, r.shape.scale_count() * sizeof(float)));
      r.values = static_cast<fp8_e4m3*>(v);
      r.scales = static_cast<float*>(s);
      allocs.insert(allocs.end(), {v, s});
      refs.push_back(r);
      moved += r.shape.size * static_cast<std::int64_t>(sizeof(typename Cfg::param_type) +
                                                        storage_bytes<typename Cfg::aux_type>) +
               fp8_param_bytes(r.shape);
    }
    BENCH_OK(plan.build(refs.data(), refs.size()));
  }
  ~fp8_copy() {
    for (auto* a : allocs) cudaFree(a);
  }
};

using bench_gpu::time_ms;

struct row {
  std::string shapes, master, what;
  double ms, ratio, gbps;
};

/// The step alone under Cfg (the bf16-weight baseline when Cfg's param is
/// the model's bf16 weight).
template <class Cfg>
double step_alone(const std::vector<shape2>& shapes, cudaStream_t stream) {
  tensors<Cfg> ts(shapes);
  device::step_plan<Cfg> plan;
  BENCH_OK(plan.build(ts.refs.data(), ts.refs.size()));
  typename Cfg::hyper h;
  h.lr = 1e-4;
  h.weight_decay = 0.1;
  std::int64_t step = 0;
  return time_ms(stream, [&] {
    step_args a;
    a.step = ++step;
    BENCH_OK(plan.step_async(h, a, stream));
  });
}

/// The step under Cfg followed by the FP8 pass; also the pass alone.
template <class Cfg>
void step_with_fp8(const std::string& name, const std::string& master, const std::vector<shape2>& shapes,
                   double baseline, cudaStream_t stream, std::vector<row>& rows) {
  tensors<Cfg> ts(shapes);
  device::step_plan<Cfg> plan;
  BENCH_OK(plan.build(ts.refs.data(), ts.refs.size()));
  typename Cfg::hyper h;
  h.lr = 1e-4;
  h.weight_decay = 0.1;
  for (auto kind : {fp8_block_kind::row_1x128, fp8_block_kind::tile_128x128}) {
    const char* k = kind == fp8_block_kind::row_1x128 ? "1x128" : "128x128";
    fp8_copy<Cfg> copy(ts, shapes, kind);
    std::int64_t step = 0;
    const fp8_param_options o{};
    const double both = time_ms(stream, [&] {
      step_args a;
      a.step = ++step;
      BENCH_OK(plan.step_async(h, a, stream));
      BENCH_OK(copy.plan.write_async(o, stream));
    });
    const double pass = time_ms(stream, [&] { BENCH_OK(copy.plan.write_async(o, stream)); });
    rows.push_back({name, master, std::string("step + FP8 e4m3 write, ") + k + " blocks", both, both / baseline, 0});
    rows.push_back({name, master, std::string("FP8 write alone, ") + k + " blocks", pass, pass / baseline,
                    static_cast<double>(copy.moved) / (pass * 1e6)});
    if (kind != fp8_block_kind::row_1x128) continue;
    // The same copy written by the step itself (every shape here has rows
    // of a multiple of 128 columns, or is 1-D).
    std::vector<device::fp8_step_output<fp8_e4m3>> outs;
    for (const auto& r : copy.refs) outs.push_back({r.values, r.scales, r.shape});
    device::fp8_step_plan<Cfg, fp8_e4m3> fused;
    BENCH_OK(fused.build(ts.refs.data(), outs.data(), outs.size()));
    step = 0;
    const double f = time_ms(stream, [&] {
      step_args a;
      a.step = ++step;
      BENCH_OK(fused.step_async(h, a, o, stream));
    });
    rows.push_back({name, master, std::string("fused step writing FP8 e4m3, ") + k + " blocks", f, f / baseline, 0});
  }
}

/// device::optimizer's step_async over the same tensors, without and with
/// FP8 copies (set_fp8_outputs): the 1 x 128 copies are written by the
/// step's own launch, the 128 x 128 ones by the pass after it (1-D tensors
/// keep 1 x 128 blocks in both).
template <class Cfg>
void optimizer_rows(const std::string& name, const std::string& master, const std::vector<shape2>& shapes,
                    cudaStream_t stream, std::vector<row>& rows) {
  tensors<Cfg> ts(shapes);
  std::vector<optim::param_group<Cfg>> groups(1);
  groups[0].hyper.lr = 1e-4;
  groups[0].hyper.weight_decay = 0.1;
  for (std::size_t i = 0; i < shapes.size(); ++i) {
    optim::param_spec s;
    s.param = ts.refs[i].param;
    s.grad = ts.refs[i].grad;
    s.size = shapes[i].size();
    if (shapes[i].cols != 0) {
      s.rows = shapes[i].rows;
      s.cols = shapes[i].cols;
    }
    groups[0].params.push_back(s);
  }
  optim::optimizer_options o;
  o.lr_check = optim::lr_check_mode::off;
  device::optimizer<Cfg> opt;
  BENCH_OK(opt.init(groups, o, stream));
  const double base = time_ms(stream, [&] { BENCH_OK(opt.step_async(stream)); });
  rows.push_back({name, master, "device::optimizer step", base, 1.0, 0});
  for (auto kind : {fp8_block_kind::row_1x128, fp8_block_kind::tile_128x128}) {
    fp8_copy<Cfg> copy(ts, shapes, kind);
    std::vector<optim::fp8_output<fp8_e4m3>> outs;
    for (std::size_t i = 0; i < shapes.size(); ++i)
      outs.push_back({copy.refs[i].values, copy.refs[i].scales, shapes[i].cols == 0 ? fp8_block_kind::row_1x128 : kind});
    BENCH_OK(opt.set_fp8_outputs(outs, {}, stream));
    const double t = time_ms(stream, [&] { BENCH_OK(opt.step_async(stream)); });
    rows.push_back({name, master,
                    std::string("device::optimizer step writing FP8 e4m3 copies, ") +
                        (kind == fp8_block_kind::row_1x128 ? "1x128 (in the step's launch)" : "128x128 (pass after it)"),
                    t, t / base, 0});
    opt.clear_fp8_outputs();
  }
}

void run(const std::string& name, const std::vector<shape2>& shapes, std::vector<row>& rows) {
  cudaStream_t stream;
  BENCH_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  {
    using bf16_weights = adamw_cfg<codec::rounded_split>;
    const double base = step_alone<bf16_weights>(shapes, stream);
    rows.push_back({name, "bf16 + int8", "step writing bf16 weights", base, 1.0, 0});
    step_with_fp8<bf16_weights>(name, "bf16 + int8", shapes, base, stream, rows);
    optimizer_rows<bf16_weights>(name, "bf16 + int8", shapes, stream, rows);
  }
  {
    const double base = step_alone<adamw_cfg<codec::fp32_master<bf16>>>(shapes, stream);
    rows.push_back({name, "fp32", "step writing bf16 weights (fp32_master<bf16>)", base, 1.0, 0});
    step_with_fp8<adamw_cfg<codec::native<float>>>(name, "fp32", shapes, base, stream, rows);
  }
  BENCH_CUDA(cudaStreamDestroy(stream));
}

std::vector<shape2> llama() {
  std::vector<shape2> s;
  const std::int64_t d = 2048, kv = 512, ff = 8192, vocab = 128256;
  s.push_back({vocab, d});
  for (int l = 0; l < 16; ++l)
    for (shape2 x : {shape2{d, d}, shape2{kv, d}, shape2{kv, d}, shape2{d, d}, shape2{ff, d}, shape2{ff, d},
                     shape2{d, ff}, shape2{d, 0}, shape2{d, 0}})
      s.push_back(x);
  s.push_back({d, 0});
  s.push_back({vocab, d});
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) {
    std::printf("no usable CUDA device: nothing to benchmark\n");
    return 0;
  }
  cudaDeviceProp prop{};
  BENCH_CUDA(cudaGetDeviceProperties(&prop, 0));
  std::vector<row> rows;
  run("16384x16384", {{16384, 16384}}, rows);
  run("llama1B (147 tensors)", llama(), rows);
  std::printf("device: %s\n\n| shapes | master | what | ms | x bf16-weight step | pass GB/s |\n|---|---|---|---:|---:|---:|\n",
              prop.name);
  for (const auto& r : rows) {
    char gb[32] = "";
    if (r.gbps > 0) std::snprintf(gb, sizeof gb, "%.0f", r.gbps);
    std::printf("| %s | %s | %s | %.4f | %.3f | %s |\n", r.shapes.c_str(), r.master.c_str(), r.what.c_str(), r.ms,
                r.ratio, gb);
  }
  if (argc > 1) {
    FILE* f = std::fopen(argv[1], "w");
    if (f == nullptr) {
      std::fprintf(stderr, "cannot write %s\n", argv[1]);
      return 1;
    }
    std::fprintf(f, "shapes,master,what,ms,ratio,pass_gbps\n");
    for (const auto& r : rows)
      std::fprintf(f, "\"%s\",\"%s\",\"%s\",%.6f,%.6f,%.1f\n", r.shapes.c_str(), r.master.c_str(), r.what.c_str(), r.ms,
                   r.ratio, r.gbps);
    std::fclose(f);
  }
  return 0;
}
