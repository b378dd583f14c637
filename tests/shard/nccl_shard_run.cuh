// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// The NCCL sharded step (ZeRO-2 style) as a harness shared by the test
// (tests/shard/shard_nccl_test.cu: verified byte for byte against an
// unsharded replica) and the benchmark (bench/shard/bench_shard_nccl.cu:
// timed by phase). One process drives every GPU (ncclCommInitAll; each
// collective issued for all ranks between ncclGroupStart and ncclGroupEnd):
//
//   every rank:  full bf16 parameters and gradients (the model's flat buffer)
//                + the int8 corrections and 8-bit states of its shard only
//   1. reduce-scatter the bf16 gradients      (each rank: the sum over ranks, for its shard)
//   2. gradient statistics of the shard; all-reduce them (sum of squares,
//      non-finite flag) so every rank clips by the global norm and skips
//      the same steps
//   3. step the shard: device::step_plan over layout::shard_views
//   4. all-gather the updated bf16 parameters
//
// With verify set, a reference replica on GPU 0 steps the unsharded tensors
// with the gradients NCCL produced and the same clipping multiplier; one
// step has an inf injected on the last rank, in an element the first rank
// owns, so every rank must skip it. compare_with_reference() then compares
// every parameter, correction, code and scale of every rank with it.
//
// Layouts: --layout padded (default; layout::shard_plan::padded: equal
// shards, ncclReduceScatter / ncclAllGather) or packed (shard_plan::packed:
// uneven shards, grouped ncclReduce / ncclBroadcast, one per rank).
// NCCL's NVLink multicast (NVLS) is never used: the programs set
// NCCL_NVLS_ENABLE=0 unless the environment sets it, and nothing here
// creates multicast objects. Everything allocated is freed by ~shard_run.
#pragma once

#include <cuda_runtime.h>
#include <nccl.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "flashoptim/device/shard_stats.cuh"
#include "flashoptim/device/state_init.cuh"
#include "flashoptim/device/step_plan.cuh"
#include "flashoptim/flashoptim.hpp"
#include "flashoptim/layout/shard.hpp"

namespace shard_nccl {

namespace fo = flashoptim;
namespace fl = flashoptim::layout;
using config = fo::step_config<fo::rule::adamw, fo::codec::ulp_correction<fo::bf16, std::int8_t>, fo::bf16,
                               fo::codec::defaults::momentum, fo::codec::defaults::second_moment>;
/// The usual mixed-precision baseline for the byte report: fp32 master and moments.
using fp32_baseline = fo::step_config<fo::rule::adamw, fo::codec::fp32_master<fo::bf16>, fo::bf16,
                                      fo::codec::precision::fp32, fo::codec::precision::fp32>;

// Throwing helpers belong to test and benchmark programs; the library returns statuses.
inline void check(const fo::status& s, const char* what) {
  if (!s.ok()) throw std::runtime_error(std::string(what) + ": " + s.what());
}
inline void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(e));
}
inline void check(ncclResult_t r, const char* what) {
  if (r != ncclSuccess) throw std::runtime_error(std::string(what) + ": " + ncclGetErrorString(r));
}
#define CHECK_CALL(expr) check((expr), #expr)



struct options {
  int ranks = 0;  // 0: every visible GPU
  int require_ranks = 1;
  bool padded = true;
  int layers = 16;
  int width = 2048;
  int vocab = 50257;
  int verify_steps = 4;
  int inf_step = 3;  // 0: none
  int steps = 20;
  int warmup = 3;
  double max_norm = 1.0;
  double bench_mib = 1024;
  bool verify = true;
};

inline options parse(int argc, char** argv) {
  options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> const char* {
      if (i + 1 >= argc) throw std::runtime_error("missing value after " + a);
      return argv[++i];
    };
    if (a == "--ranks")
      o.ranks = std::atoi(next());
    else if (a == "--require-ranks")
      o.require_ranks = std::atoi(next());
    else if (a == "--layout") {
      const std::string v = next();
      if (v != "padded" && v != "packed") throw std::runtime_error("--layout takes padded or packed, not " + v);
      o.padded = v == "padded";
    }
    else if (a == "--layers")
      o.layers = std::atoi(next());
    else if (a == "--width")
      o.width = std::atoi(next());
    else if (a == "--vocab")
      o.vocab = std::atoi(next());
    else if (a == "--verify-steps")
      o.verify_steps = std::atoi(next());
    else if (a == "--inf-step")
      o.inf_step = std::atoi(next());
    else if (a == "--steps")
      o.steps = std::atoi(next());
    else if (a == "--warmup")
      o.warmup = std::atoi(next());
    else if (a == "--max-norm")
      o.max_norm = std::atof(next());
    else if (a == "--bench-mib")
      o.bench_mib = std::atof(next());
    else if (a == "--no-verify")
      o.verify = false;
    else if (a == "--small") {
      o.layers = 2;
      o.width = 256;
      o.vocab = 1003;
      o.steps = 5;
      o.bench_mib = 16;
    } else
      throw std::runtime_error("unknown option " + a + " (see the comment at the top of tests/shard/nccl_shard_run.cuh)");
  }
  return o;
}

/// A GPT-like list: embedding, per layer two norms, attention and MLP with
/// biases, a final norm, and a few odd sizes (partial groups of 32).
inline std::vector<std::int64_t> model_sizes(const options& o) {
  const std::int64_t d = o.width;
  std::vector<std::int64_t> s = {std::int64_t{o.vocab} * d};
  for (int l = 0; l < o.layers; ++l) {
    for (std::int64_t n : {d, d, 3 * d * d, 3 * d, d * d, d, d, d, 4 * d * d, 4 * d, 4 * d * d, d}) s.push_back(n);
  }
  for (std::int64_t n :
       {d, d, std::int64_t{1}, std::int64_t{31}, std::int64_t{33}, std::int64_t{1000}, std::int64_t{4097}})
    s.push_back(n);
  return s;
}

// ------------------------------------------------------------ small kernels
static __device__ float unit_value(std::uint64_t seed, std::uint64_t a, std::uint64_t i) {
  const std::uint32_t r = fo::format::random_bits(seed, a, i);
  return static_cast<float>(static_cast<std::int32_t>(r)) * 4.656612873077393e-10f;  // [-1, 1)
}

/// Initial fp32 weights of flat element i (the same on every GPU).
static __global__ void init_weights_kernel(float* x, std::int64_t n) {
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
    x[i] = 0.02f * unit_value(0x5eed, 0, static_cast<std::uint64_t>(i));
}

/// This rank's gradient contribution for a step: magnitudes spread over
/// 2^0 ... 2^-11 by 1024-element blocks, so group scales differ.
static __global__ void gradients_kernel(fo::bf16* g, std::int64_t n, std::uint64_t step, int rank) {
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    const float mag = ldexpf(1e-3f, -static_cast<int>((i >> 10) % 12));
    g[i] = fo::format::from_float<fo::bf16>(
        mag * unit_value(0x9a11 + static_cast<std::uint64_t>(rank), step, static_cast<std::uint64_t>(i)));
  }
}

static __global__ void set_bf16_kernel(fo::bf16* p, float v) { *p = fo::format::from_float<fo::bf16>(v); }

/// Counts differing bytes; *first = smallest differing offset.
static __global__ void compare_kernel(const unsigned char* a, const unsigned char* b, std::int64_t n,
                               unsigned long long* count, unsigned long long* first) {
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  unsigned long long mine = 0;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    if (a[i] != b[i]) {
      ++mine;
      atomicMin(first, static_cast<unsigned long long>(i));
    }
  }
  if (mine) atomicAdd(count, mine);
}

inline int grid_for(std::int64_t n) { return static_cast<int>(std::min<std::int64_t>((n + 255) / 256, 132 * 8)); }

// ------------------------------------------------------------ one rank
struct rank_state {
  int device = 0;
  cudaStream_t stream = nullptr;
  ncclComm_t comm = nullptr;
  fo::bf16* param = nullptr;  // full flat buffer
  fo::bf16* grad = nullptr;   // full flat buffer
  void* storage = nullptr;    // corrections and states of the shard
  fl::shard_storage<config> layout;
  fl::shard_buffers<config> buffers;
  fo::device::step_plan<config> plan;
  fo::device::grad_stats* stats = nullptr;
  std::int64_t* step = nullptr;
  double* multiplier = nullptr;
  std::vector<cudaEvent_t> events;  // 5 per timed step

  /// Frees everything allocate() and the timing made (each pointer may be null).
  void free_all() noexcept {
    if (cudaSetDevice(device) != cudaSuccess) return;
    plan = fo::device::step_plan<config>();  // its device table
    for (cudaEvent_t e : events) cudaEventDestroy(e);
    events.clear();
    for (void* p : {static_cast<void*>(param), static_cast<void*>(grad), storage, static_cast<void*>(stats),
                    static_cast<void*>(step), static_cast<void*>(multiplier)})
      if (p != nullptr) cudaFree(p);
    param = grad = nullptr;
    storage = nullptr;
    stats = nullptr;
    step = nullptr;
    multiplier = nullptr;
    if (stream != nullptr) cudaStreamDestroy(stream);
    stream = nullptr;
  }
};

struct shard_run {
  options opt;
  std::vector<std::int64_t> sizes;
  std::vector<std::uint64_t> seeds;
  fl::shard_plan plan;
  std::vector<rank_state> ranks;
  config::hyper hyper;
  // reference replica on GPU 0
  fl::shard_plan ref_plan;
  rank_state ref;

  int R() const { return plan.ranks(); }

  shard_run() = default;
  shard_run(const shard_run&) = delete;
  shard_run& operator=(const shard_run&) = delete;
  ~shard_run() {
    for (auto& s : ranks) {
      if (s.comm != nullptr) {
        cudaSetDevice(s.device);
        ncclCommDestroy(s.comm);
      }
      s.free_all();
    }
    ref.free_all();
  }

  void allocate(rank_state& s, const fl::shard_plan& p, int r, bool with_stream) {
    CHECK_CALL(cudaSetDevice(s.device));
    if (with_stream) CHECK_CALL(cudaStreamCreateWithFlags(&s.stream, cudaStreamNonBlocking));
    const std::size_t flat = static_cast<std::size_t>(p.flat_size());
    CHECK_CALL(cudaMalloc(&s.param, std::max<std::size_t>(flat, 1) * sizeof(fo::bf16)));
    CHECK_CALL(cudaMalloc(&s.grad, std::max<std::size_t>(flat, 1) * sizeof(fo::bf16)));
    CHECK_CALL(cudaMemset(s.param, 0, flat * sizeof(fo::bf16)));
    CHECK_CALL(cudaMemset(s.grad, 0, flat * sizeof(fo::bf16)));
    s.layout = fl::shard_storage<config>::for_rank(p, r);
    CHECK_CALL(cudaMalloc(&s.storage, std::max<std::int64_t>(s.layout.bytes, 256)));
    CHECK_CALL(cudaMemset(s.storage, 0, static_cast<std::size_t>(s.layout.bytes)));
    s.layout.carve(s.storage, s.buffers);
    s.buffers.param = s.param + p.shard_begin(r);
    s.buffers.grad = s.grad + p.shard_begin(r);
    std::vector<fo::tensor_ref<config>> views;
    CHECK_CALL(fl::shard_views<config>(p, r, s.buffers, seeds.data(), views));
    CHECK_CALL(s.plan.build(views.data(), views.size()));
    CHECK_CALL(cudaMalloc(&s.stats, sizeof(fo::device::grad_stats)));
    CHECK_CALL(cudaMalloc(&s.step, sizeof(std::int64_t)));
    CHECK_CALL(cudaMalloc(&s.multiplier, sizeof(double)));
    const std::int64_t one = 1;
    CHECK_CALL(cudaMemcpy(s.step, &one, sizeof one, cudaMemcpyHostToDevice));
    // the memsets and copies above ran on the legacy stream, which the
    // non-blocking streams do not wait for
    CHECK_CALL(cudaDeviceSynchronize());
  }

  /// Weights from the same fp32 values on every GPU; each rank initializes
  /// its shard (param + correction), then the parameters are all-gathered.
  void initialize(rank_state& s, const fl::shard_plan& p, float* x) {
    CHECK_CALL(cudaSetDevice(s.device));
    init_weights_kernel<<<grid_for(p.flat_size()), 256, 0, s.stream>>>(x, p.flat_size());
    CHECK_CALL(cudaGetLastError());
    for (const auto& t : s.plan.tensors()) {
      const std::int64_t flat = (t.param - s.param);  // views point into the full buffer
      CHECK_CALL(fo::device::init_tensor_async<config>(x + flat, t, s.stream));
    }
  }

  void setup() {
    int devices = 0;
    CHECK_CALL(cudaGetDeviceCount(&devices));
    const int n = opt.ranks > 0 ? std::min(opt.ranks, devices) : devices;
    sizes = model_sizes(opt);
    seeds.resize(sizes.size());
    for (std::size_t i = 0; i < sizes.size(); ++i) seeds[i] = 0x1234 + i;
    if (opt.padded) {
      CHECK_CALL(fl::shard_plan::padded(sizes.data(), sizes.size(), n, plan));
      CHECK_CALL(fl::shard_plan::padded(sizes.data(), sizes.size(), 1, ref_plan));
    } else {
      CHECK_CALL(fl::shard_plan::packed(sizes.data(), sizes.size(), n, plan));
      CHECK_CALL(fl::shard_plan::packed(sizes.data(), sizes.size(), 1, ref_plan));
    }
    if (!plan.group_aligned()) throw std::runtime_error("the plan is not group-aligned");
    hyper.lr = 1e-3;
    hyper.weight_decay = 0.1;
    hyper.beta2 = 0.95;

    ranks.resize(static_cast<std::size_t>(n));
    std::vector<int> devlist(static_cast<std::size_t>(n));
    for (int r = 0; r < n; ++r) devlist[static_cast<std::size_t>(r)] = ranks[static_cast<std::size_t>(r)].device = r;
    std::vector<ncclComm_t> comms(static_cast<std::size_t>(n));
    CHECK_CALL(ncclCommInitAll(comms.data(), n, devlist.data()));
    for (int r = 0; r < n; ++r) {
      auto& s = ranks[static_cast<std::size_t>(r)];
      s.comm = comms[static_cast<std::size_t>(r)];
      allocate(s, plan, r, true);
    }
    // init: each rank its shard, then all-gather the parameters
    for (int r = 0; r < n; ++r) {
      auto& s = ranks[static_cast<std::size_t>(r)];
      CHECK_CALL(cudaSetDevice(s.device));
      float* x = nullptr;
      CHECK_CALL(cudaMalloc(&x, std::max<std::int64_t>(plan.flat_size(), 1) * sizeof(float)));
      initialize(s, plan, x);
      CHECK_CALL(cudaStreamSynchronize(s.stream));
      CHECK_CALL(cudaFree(x));
    }
    all_gather();
    sync_all();
    if (opt.verify) {
      ref.device = 0;
      allocate(ref, ref_plan, 0, true);
      float* x = nullptr;
      CHECK_CALL(cudaSetDevice(0));
      CHECK_CALL(cudaMalloc(&x, std::max<std::int64_t>(ref_plan.flat_size(), 1) * sizeof(float)));
      initialize(ref, ref_plan, x);
      CHECK_CALL(cudaStreamSynchronize(ref.stream));
      CHECK_CALL(cudaFree(x));
    }
  }

  void sync_all() {
    for (auto& s : ranks) {
      CHECK_CALL(cudaSetDevice(s.device));
      CHECK_CALL(cudaStreamSynchronize(s.stream));
    }
  }

  // ---------------------------------------------------------- collectives
  /// Each rank ends up with the sum over ranks of its shard of the gradients.
  void reduce_scatter(fo::bf16* const* bufs) {
    CHECK_CALL(ncclGroupStart());
    for (int r = 0; r < R(); ++r) {
      auto& s = ranks[static_cast<std::size_t>(r)];
      if (plan.equal_shards()) {
        const std::size_t count = static_cast<std::size_t>(plan.shard_size(0));
        CHECK_CALL(
            ncclReduceScatter(bufs[r], bufs[r] + plan.shard_begin(r), count, ncclBfloat16, ncclSum, s.comm, s.stream));
      } else {
        for (int root = 0; root < R(); ++root) {  // uneven shards: one reduce per owner
          const std::size_t count = static_cast<std::size_t>(plan.shard_size(root));
          if (count == 0) continue;
          fo::bf16* p = bufs[r] + plan.shard_begin(root);
          CHECK_CALL(ncclReduce(p, p, count, ncclBfloat16, ncclSum, root, s.comm, s.stream));
        }
      }
    }
    CHECK_CALL(ncclGroupEnd());
  }
  void reduce_scatter() {
    std::vector<fo::bf16*> b;
    for (auto& s : ranks) b.push_back(s.grad);
    reduce_scatter(b.data());
  }
  /// Every rank ends up with every rank's shard of the parameters.
  void all_gather(fo::bf16* const* bufs) {
    CHECK_CALL(ncclGroupStart());
    for (int r = 0; r < R(); ++r) {
      auto& s = ranks[static_cast<std::size_t>(r)];
      if (plan.equal_shards()) {
        const std::size_t count = static_cast<std::size_t>(plan.shard_size(0));
        CHECK_CALL(ncclAllGather(bufs[r] + plan.shard_begin(r), bufs[r], count, ncclBfloat16, s.comm, s.stream));
      } else {
        for (int root = 0; root < R(); ++root) {
          const std::size_t count = static_cast<std::size_t>(plan.shard_size(root));
          if (count == 0) continue;
          fo::bf16* p = bufs[r] + plan.shard_begin(root);
          CHECK_CALL(ncclBroadcast(p, p, count, ncclBfloat16, root, s.comm, s.stream));
        }
      }
    }
    CHECK_CALL(ncclGroupEnd());
  }
  void all_gather() {
    std::vector<fo::bf16*> b;
    for (auto& s : ranks) b.push_back(s.param);
    all_gather(b.data());
  }

  // ---------------------------------------------------------- the step
  void make_gradients(std::int64_t step) {
    for (int r = 0; r < R(); ++r) {
      auto& s = ranks[static_cast<std::size_t>(r)];
      CHECK_CALL(cudaSetDevice(s.device));
      gradients_kernel<<<grid_for(plan.flat_size()), 256, 0, s.stream>>>(s.grad, plan.flat_size(),
                                                                         static_cast<std::uint64_t>(step), r);
      CHECK_CALL(cudaGetLastError());
    }
    if (opt.verify && step == opt.inf_step) {
      // an inf from the last rank, in an element the first rank owns
      auto& s = ranks.back();
      CHECK_CALL(cudaSetDevice(s.device));
      set_bf16_kernel<<<1, 1, 0, s.stream>>>(s.grad + plan.pieces_begin(0)->flat + 5, INFINITY);
      CHECK_CALL(cudaGetLastError());
    }
  }

  /// Statistics of each shard, all-reduced; clipping multiplier; the step.
  void stats_and_clip() {
    for (auto& s : ranks) {
      CHECK_CALL(cudaSetDevice(s.device));
      CHECK_CALL(s.plan.grad_stats_async(s.stats, s.stream));
    }
    CHECK_CALL(ncclGroupStart());
    for (auto& s : ranks) {
      CHECK_CALL(
          ncclAllReduce(&s.stats->sum_squares, &s.stats->sum_squares, 1, ncclFloat64, ncclSum, s.comm, s.stream));
      CHECK_CALL(ncclAllReduce(&s.stats->non_finite, &s.stats->non_finite, 1, ncclInt32, ncclMax, s.comm, s.stream));
    }
    CHECK_CALL(ncclGroupEnd());
    for (auto& s : ranks) {
      CHECK_CALL(cudaSetDevice(s.device));
      CHECK_CALL(fo::device::clip_grad_multiplier_async(s.stats, opt.max_norm, 1.0, s.multiplier, s.stream));
    }
  }
  void local_step(rank_state& s, const fo::device::grad_stats* skip_from, const double* multiplier) {
    CHECK_CALL(cudaSetDevice(s.device));
    fo::device::device_inputs in;
    in.step = s.step;
    in.skip = &skip_from->non_finite;
    in.inv_grad_scale = multiplier;
    CHECK_CALL(s.plan.step_async(hyper, fo::step_args{}, in, s.stream));
    CHECK_CALL(fo::device::advance_step_async(s.step, &skip_from->non_finite, s.stream));
  }

  void record(rank_state& s, std::size_t index) {
    CHECK_CALL(cudaSetDevice(s.device));
    CHECK_CALL(cudaEventRecord(s.events[index], s.stream));
  }

  /// One sharded step; events[base + 0..4] around its phases when timed.
  void sharded_step(std::int64_t step, long base) {
    make_gradients(step);
    if (base >= 0)
      for (auto& s : ranks) record(s, static_cast<std::size_t>(base));
    reduce_scatter();
    if (base >= 0)
      for (auto& s : ranks) record(s, static_cast<std::size_t>(base) + 1);
    if (opt.verify && base < 0) copy_reduced_gradients();
    stats_and_clip();
    if (base >= 0)
      for (auto& s : ranks) record(s, static_cast<std::size_t>(base) + 2);
    for (auto& s : ranks) local_step(s, s.stats, s.multiplier);
    if (base >= 0)
      for (auto& s : ranks) record(s, static_cast<std::size_t>(base) + 3);
    all_gather();
    if (base >= 0)
      for (auto& s : ranks) record(s, static_cast<std::size_t>(base) + 4);
  }

  // ---------------------------------------------------------- verification
  /// The reference replica gets exactly the gradients NCCL produced: each
  /// rank's reduced shard, copied to GPU 0.
  void copy_reduced_gradients() {
    sync_all();
    for (int r = 0; r < R(); ++r) {
      const auto& s = ranks[static_cast<std::size_t>(r)];
      const std::int64_t b = plan.shard_begin(r);
      const std::int64_t e = std::min(plan.shard_end(r), ref_plan.flat_size());
      if (e > b)
        CHECK_CALL(cudaMemcpyPeerAsync(ref.grad + b, 0, s.grad + b, s.device,
                                       static_cast<std::size_t>(e - b) * sizeof(fo::bf16), ref.stream));
    }
  }
  void reference_step() {
    sync_all();  // rank 0's multiplier is ready
    CHECK_CALL(cudaSetDevice(0));
    CHECK_CALL(ref.plan.grad_stats_async(ref.stats, ref.stream));
    local_step(ref, ref.stats, ranks[0].multiplier);
    CHECK_CALL(cudaStreamSynchronize(ref.stream));
  }

  /// Bytes of `n` at rank buffer `mine` (device d) that differ from `theirs` on GPU 0.
  unsigned long long differing(int d, const void* mine, const void* theirs, std::int64_t n, unsigned long long& first) {
    first = ~0ull;
    if (n <= 0) return 0;
    CHECK_CALL(cudaSetDevice(d));
    const std::int64_t chunk = std::int64_t{256} << 20;
    unsigned char* scratch = nullptr;
    unsigned long long* counters = nullptr;
    CHECK_CALL(cudaMalloc(&counters, 2 * sizeof(unsigned long long)));
    if (d != 0) CHECK_CALL(cudaMalloc(&scratch, static_cast<std::size_t>(std::min(n, chunk))));
    unsigned long long total = 0;
    for (std::int64_t at = 0; at < n; at += chunk) {
      const std::int64_t len = std::min(chunk, n - at);
      const unsigned char* other = static_cast<const unsigned char*>(theirs) + at;
      if (d != 0) {
        CHECK_CALL(cudaMemcpyPeer(scratch, d, other, 0, static_cast<std::size_t>(len)));
        other = scratch;
      }
      const unsigned long long init[2] = {0, ~0ull};
      CHECK_CALL(cudaMemcpy(counters, init, sizeof init, cudaMemcpyHostToDevice));
      compare_kernel<<<grid_for(len), 256>>>(static_cast<const unsigned char*>(mine) + at, other, len, counters,
                                             counters + 1);
      unsigned long long out[2];
      CHECK_CALL(cudaMemcpy(out, counters, sizeof out, cudaMemcpyDeviceToHost));
      if (out[0] && first == ~0ull) first = static_cast<unsigned long long>(at) + out[1];
      total += out[0];
    }
    if (scratch) CHECK_CALL(cudaFree(scratch));
    CHECK_CALL(cudaFree(counters));
    return total;
  }

  /// Every rank's parameters (whole flat buffer) and shard state against
  /// the reference's; returns the number of differing bytes.
  unsigned long long compare_with_reference() {
    sync_all();
    unsigned long long bad = 0;
    auto report = [&](int r, const char* what, unsigned long long n, unsigned long long first) {
      std::printf("  rank %d %-13s %s", r, what, n ? "DIFFERS" : "bit-identical");
      if (n) std::printf(" (%llu bytes, first at byte %llu)", n, first);
      std::printf("\n");
      bad += n;
    };
    for (int r = 0; r < R(); ++r) {
      const auto& s = ranks[static_cast<std::size_t>(r)];
      unsigned long long first = 0;
      const std::int64_t tensors_end = ref_plan.flat_size();  // the tensors lie in [0, this)
      report(r, "params", differing(s.device, s.param, ref.param, tensors_end * 2, first), first);
      // corrections and codes: the rank's slice of the flat arrays
      const std::int64_t b = plan.shard_begin(r), n = std::min(plan.shard_end(r), tensors_end) - b;
      using R = fo::tensor_ref<config>;
      auto bytes_of = [](auto* p, std::int64_t count) { return count * static_cast<std::int64_t>(sizeof(*p)); };
      report(r, "corrections",
             differing(s.device, s.buffers.aux, ref.buffers.aux + b, bytes_of(s.buffers.aux, n), first), first);
      report(r, "momentum",
             differing(s.device, flashoptim::slot_at<0>(s.buffers.states).codes, flashoptim::slot_at<0>(ref.buffers.states).codes + b, bytes_of(flashoptim::slot_at<0>(s.buffers.states).codes, n), first), first);
      report(r, "second moment",
             differing(s.device, flashoptim::slot_at<1>(s.buffers.states).codes, flashoptim::slot_at<1>(ref.buffers.states).codes + b, bytes_of(flashoptim::slot_at<1>(s.buffers.states).codes, n), first), first);
      // scales: the rank's groups are the unsharded groups [group_offset, +group_count)
      const std::int64_t g = plan.group_offset(r), gn = plan.group_count(r);
      report(r, "scales 0",
             differing(s.device, flashoptim::slot_at<0>(s.buffers.states).scales, flashoptim::slot_at<0>(ref.buffers.states).scales + g, bytes_of(flashoptim::slot_at<0>(s.buffers.states).scales, gn), first),
             first);
      report(r, "scales 1",
             differing(s.device, flashoptim::slot_at<1>(s.buffers.states).scales, flashoptim::slot_at<1>(ref.buffers.states).scales + g, bytes_of(flashoptim::slot_at<1>(s.buffers.states).scales, gn), first),
             first);
      static_assert(sizeof(R::scale_t<0>) == 4 && sizeof(R::aux_type) == 1,
                    "the byte counts above assume this config");
      std::int64_t mine = 0, theirs = 0;
      CHECK_CALL(cudaSetDevice(s.device));
      CHECK_CALL(cudaMemcpy(&mine, s.step, sizeof mine, cudaMemcpyDeviceToHost));
      CHECK_CALL(cudaSetDevice(0));
      CHECK_CALL(cudaMemcpy(&theirs, ref.step, sizeof theirs, cudaMemcpyDeviceToHost));
      std::printf("  rank %d next step     %lld (reference %lld)\n", r, static_cast<long long>(mine),
                  static_cast<long long>(theirs));
      if (mine != theirs) ++bad;
    }
    return bad;
  }
};


/// Before a run: -1 to go on, else the exit status (77: fewer GPUs than
/// --require-ranks; 0 without any GPU when none is required). Keeps NVLink
/// multicast off and prints NCCL's version.
inline int start(const options& opt) {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("no GPU: nothing to do\n");
    return opt.require_ranks > 1 ? 77 : 0;
  }
  const int want = opt.ranks > 0 ? std::min(opt.ranks, devices) : devices;
  if (want < opt.require_ranks) {
    std::printf("%d GPU(s), %d required: skipping\n", want, opt.require_ranks);
    return 77;
  }
  // NVLink multicast stays off (see the top of this file).
  setenv("NCCL_NVLS_ENABLE", "0", 0);
  int version = 0;
  CHECK_CALL(ncclGetVersion(&version));
  std::printf("NCCL %d.%d.%d, NCCL_NVLS_ENABLE=%s, %d rank(s), one process (ncclCommInitAll)\n", version / 10000,
              (version / 100) % 100, version % 100, std::getenv("NCCL_NVLS_ENABLE"), want);
  return -1;
}

/// Bytes per rank of this layout against fp32 master and moments sharded alike.
inline void report_bytes(const shard_run& run) {
  const auto& opt = run.opt;
  const auto& plan = run.plan;
  const int R = run.R();
  std::int64_t max_state = 0, max_state_fp32 = 0, state_all = 0, state_all_fp32 = 0;
  for (int r = 0; r < R; ++r) {
    max_state = std::max(max_state, fl::shard_state_bytes<config>(plan, r));
    std::int64_t b = 0;
    for (const auto* pc = plan.pieces_begin(r); pc != plan.pieces_end(r); ++pc)
      b += fl::bytes<fp32_baseline>::state_for_size(pc->size());
    max_state_fp32 = std::max(max_state_fp32, b);
  }
  for (auto n : run.sizes) {
    state_all += fl::bytes<config>::state_for_size(n);
    state_all_fp32 += fl::bytes<fp32_baseline>::state_for_size(n);
  }
  const double N = static_cast<double>(plan.total_elements());
  std::printf("model: %zu tensors, %.1f M parameters; layout %s: flat buffer %lld elements, shard %lld .. %lld\n",
              run.sizes.size(), N / 1e6, opt.padded ? "padded (ReduceScatter/AllGather)" : "packed (Reduce/Broadcast)",
              static_cast<long long>(plan.flat_size()), static_cast<long long>(plan.shard_size(R - 1)),
              static_cast<long long>(plan.max_shard_size()));
  std::printf(
      "bytes per rank (layout::bytes): bf16 params %.2f GB + bf16 grads %.2f GB + optimizer state %.3f GB "
      "(%.3f B/param; unsharded %.3f B/param)\n",
      2e-9 * plan.flat_size(), 2e-9 * plan.flat_size(), 1e-9 * max_state, max_state / N, state_all / N);
  std::printf(
      "  same model with fp32 master + fp32 moments, sharded alike: optimizer state %.3f GB per rank "
      "(%.3f B/param; unsharded %.3f B/param)\n",
      1e-9 * max_state_fp32, max_state_fp32 / N, state_all_fp32 / N);
  std::printf("  resident per rank: %.3f B/param here vs %.3f B/param with fp32 master and moments\n",
              (4.0 * plan.flat_size() + max_state) / N, (4.0 * plan.flat_size() + max_state_fp32) / N);
}

}  // namespace shard_nccl
