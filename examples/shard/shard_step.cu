// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// A ZeRO-2 optimizer step over NCCL, one process driving every visible GPU
// (ncclCommInitAll; collectives for all ranks between ncclGroupStart and
// ncclGroupEnd). The model's tensors are laid out as one flat buffer
// (layout::shard_plan::padded: equal shards, group-aligned). Every rank holds
// the full bf16 parameters and gradients but the int8 corrections and 8-bit
// states of its own shard only. Each step:
//
//   1. backward: each rank's gradient of its own minibatch (here a noisy
//      quadratic bowl) into its full gradient buffer
//   2. reduce-scatter: each rank gets the sum over ranks of its shard
//   3. statistics of the shard (sum of squares, non-finite flag),
//      all-reduced, so every rank clips by the global norm (and would skip
//      the same overflowing step); the multiplier averages over ranks
//   4. the shard's step: device::step_plan over layout::shard_views
//   5. all-gather the updated bf16 parameters
//
// Verification against an unsharded run is tests/shard (test_shard_nccl),
// timing bench/shard (bench_shard_nccl). NVLink multicast stays off
// (NCCL_NVLS_ENABLE=0). Exit 0 when every rank ends with the same
// parameters and the loss fell, 1 otherwise, 77 without a GPU.
#include <flashoptim/device/shard_stats.cuh>
#include <flashoptim/device/state_init.cuh>
#include <flashoptim/device/step_plan.cuh>
#include <flashoptim/flashoptim.hpp>
#include <flashoptim/layout/shard.hpp>

#include <cuda_runtime.h>
#include <nccl.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

namespace fo = flashoptim;
using fo::bf16;
using cfg = fo::step_config<fo::rule::adamw, fo::codec::ulp_correction<bf16, std::int8_t>, bf16,
                            fo::codec::defaults::momentum, fo::codec::defaults::second_moment>;

static void check(const fo::status& s) {
  if (!s.ok()) std::fprintf(stderr, "error: %s\n", s.what()), std::exit(1);
}
static void check(cudaError_t e) {
  if (e != cudaSuccess) std::fprintf(stderr, "CUDA error: %s\n", cudaGetErrorString(e)), std::exit(1);
}
static void check(ncclResult_t r) {
  if (r != ncclSuccess) std::fprintf(stderr, "NCCL error: %s\n", ncclGetErrorString(r)), std::exit(1);
}

// Rank r's minibatch gradient of 0.5 * (p - sin(i / 1000))^2, with noise
// that differs between ranks and steps; the loss without noise into *loss.
__global__ void backward(const bf16* p, bf16* g, std::int64_t n, int rank, int step, double* loss) {
  const std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x;
  if (i >= n) return;
  const float r = fo::format::to_float(p[i]) - sinf(0.001f * float(i));
  const float noise = 0.1f * sinf(float(i) * 0.37f + 1.3f * float(rank) + 0.7f * float(step));
  g[i] = fo::format::from_float<bf16>(r + noise);
  atomicAdd(loss, 0.5 * double(r) * r);
}

// One rank: its GPU, stream, communicator, full buffers and shard state.
struct rank_state {
  cudaStream_t stream = nullptr;
  ncclComm_t comm = nullptr;
  bf16 *param = nullptr, *grad = nullptr;  // the whole flat buffer (padding included)
  void* storage = nullptr;                 // this shard's corrections and states
  fo::device::step_plan<cfg> plan;         // this shard's tensor pieces
  fo::device::grad_stats* stats = nullptr;
  std::int64_t* next_step = nullptr;
  double *multiplier = nullptr, *loss = nullptr;
};

int main() {
  int R = 0;
  if (cudaGetDeviceCount(&R) != cudaSuccess || R == 0) {
    std::printf("no usable CUDA device: skipping\n");
    return 77;
  }
  setenv("NCCL_NVLS_ENABLE", "0", 0);
  const std::vector<std::int64_t> sizes = {1 << 20, 4096, 1 << 20, 4096, 1000, 33};  // odd sizes: partial groups
  fo::layout::shard_plan plan;
  check(fo::layout::shard_plan::padded(sizes.data(), sizes.size(), R, plan));
  const std::vector<std::uint64_t> seeds(sizes.size(), 0);  // stochastic rounding keys (unused by this config)
  const std::int64_t flat = plan.flat_size(), shard = plan.shard_size(0);
  std::int64_t unsharded = 0;  // optimizer state bytes of the whole model (layout/bytes.hpp)
  for (std::int64_t n : sizes) unsharded += fo::layout::bytes<cfg>::state_for_size(n);
  std::printf("%d rank(s), %zu tensors, flat buffer %lld elements, %lld per shard; optimizer state on rank 0: "
              "%lld bytes of %lld unsharded\n", R, sizes.size(), (long long)flat, (long long)shard,
              (long long)fo::layout::shard_state_bytes<cfg>(plan, 0), (long long)unsharded);

  std::vector<rank_state> ranks(R);
  std::vector<ncclComm_t> comms(R);
  std::vector<int> devices(R);
  for (int r = 0; r < R; ++r) devices[r] = r;
  check(ncclCommInitAll(comms.data(), R, devices.data()));
  for (int r = 0; r < R; ++r) {
    rank_state& s = ranks[r];
    check(cudaSetDevice(r));
    s.comm = comms[r];
    check(cudaStreamCreateWithFlags(&s.stream, cudaStreamNonBlocking));
    check(cudaMalloc(&s.param, flat * sizeof(bf16)));
    check(cudaMalloc(&s.grad, flat * sizeof(bf16)));
    check(cudaMemset(s.param, 0, flat * sizeof(bf16)));  // zero weights: corrections and states zero too
    // The shard's corrections and states, one allocation cut into pieces.
    const auto storage = fo::layout::shard_storage<cfg>::for_rank(plan, r);
    check(cudaMalloc(&s.storage, storage.bytes));
    check(cudaMemset(s.storage, 0, storage.bytes));
    fo::layout::shard_buffers<cfg> b;
    storage.carve(s.storage, b);
    b.param = s.param + plan.shard_begin(r);  // the shard's slice of the full buffers
    b.grad = s.grad + plan.shard_begin(r);
    std::vector<fo::tensor_ref<cfg>> views;   // one view per tensor piece in the shard
    check(fo::layout::shard_views<cfg>(plan, r, b, seeds.data(), views));
    check(s.plan.build(views.data(), views.size()));
    check(cudaMalloc(&s.stats, sizeof(fo::device::grad_stats)));
    check(cudaMalloc(&s.multiplier, sizeof(double)));
    check(cudaMalloc(&s.loss, sizeof(double)));
    check(cudaMalloc(&s.next_step, sizeof(std::int64_t)));
    const std::int64_t one = 1;
    check(cudaMemcpy(s.next_step, &one, sizeof one, cudaMemcpyHostToDevice));
    check(cudaDeviceSynchronize());  // the legacy-stream copies above before the non-blocking stream
  }

  cfg::hyper h;
  h.lr = 1e-2;
  const int steps = 100;
  double first_loss = 0.0, last_loss = 0.0;
  for (int step = 1; step <= steps; ++step) {
    for (int r = 0; r < R; ++r) {  // 1. backward
      check(cudaSetDevice(r));
      check(cudaMemsetAsync(ranks[r].loss, 0, sizeof(double), ranks[r].stream));
      backward<<<unsigned((flat + 255) / 256), 256, 0, ranks[r].stream>>>(ranks[r].param, ranks[r].grad, flat, r,
                                                                         step, ranks[r].loss);
    }
    check(ncclGroupStart());  // 2. reduce-scatter, in place
    for (int r = 0; r < R; ++r)
      check(ncclReduceScatter(ranks[r].grad, ranks[r].grad + plan.shard_begin(r), shard, ncclBfloat16, ncclSum,
                              ranks[r].comm, ranks[r].stream));
    check(ncclGroupEnd());
    for (int r = 0; r < R; ++r) {  // 3. the shard's statistics ...
      check(cudaSetDevice(r));
      check(ranks[r].plan.grad_stats_async(ranks[r].stats, ranks[r].stream));
    }
    check(ncclGroupStart());  // ... summed over ranks
    for (auto& s : ranks) {
      check(ncclAllReduce(&s.stats->sum_squares, &s.stats->sum_squares, 1, ncclFloat64, ncclSum, s.comm, s.stream));
      check(ncclAllReduce(&s.stats->non_finite, &s.stats->non_finite, 1, ncclInt32, ncclMax, s.comm, s.stream));
    }
    check(ncclGroupEnd());
    for (int r = 0; r < R; ++r) {  // clip to global norm 1 of the mean gradient, 4. step the shard
      rank_state& s = ranks[r];
      check(cudaSetDevice(r));
      check(fo::device::clip_grad_multiplier_async(s.stats, 1.0, 1.0 / R, s.multiplier, s.stream));
      fo::device::device_inputs in;
      in.step = s.next_step;
      in.skip = &s.stats->non_finite;
      in.inv_grad_scale = s.multiplier;
      check(s.plan.step_async(h, fo::step_args{}, in, s.stream));
      check(fo::device::advance_step_async(s.next_step, &s.stats->non_finite, s.stream));
    }
    check(ncclGroupStart());  // 5. all-gather the parameters, in place
    for (int r = 0; r < R; ++r)
      check(ncclAllGather(ranks[r].param + plan.shard_begin(r), ranks[r].param, shard, ncclBfloat16, ranks[r].comm,
                          ranks[r].stream));
    check(ncclGroupEnd());
    check(cudaSetDevice(0));
    check(cudaMemcpyAsync(&last_loss, ranks[0].loss, sizeof(double), cudaMemcpyDeviceToHost, ranks[0].stream));
    check(cudaStreamSynchronize(ranks[0].stream));
    if (step == 1) first_loss = last_loss;
    if (step == 1 || step % 25 == 0) std::printf("step %3d  loss %.2f\n", step, last_loss);
  }

  // Every rank must hold the same parameters after the all-gather.
  std::vector<bf16> mine(flat), first(flat);
  std::size_t differ = 0;
  for (int r = 0; r < R; ++r) {
    check(cudaSetDevice(r));
    check(cudaStreamSynchronize(ranks[r].stream));
    check(cudaMemcpy(r == 0 ? first.data() : mine.data(), ranks[r].param, flat * sizeof(bf16), cudaMemcpyDeviceToHost));
    for (std::int64_t i = 0; r > 0 && i < flat; ++i) differ += mine[i].bits != first[i].bits;
  }
  const bool fell = last_loss < first_loss / 10.0;
  std::printf("loss %.2f -> %.2f (%s); ranks' parameters: %zu elements differ\n", first_loss, last_loss,
              fell ? "fell 10-fold" : "DID NOT FALL", differ);

  for (int r = 0; r < R; ++r) {  // free everything, on each rank's GPU
    rank_state& s = ranks[r];
    check(cudaSetDevice(r));
    s.plan = fo::device::step_plan<cfg>();
    for (void* p : {(void*)s.param, (void*)s.grad, s.storage, (void*)s.stats, (void*)s.multiplier, (void*)s.loss,
                    (void*)s.next_step})
      check(cudaFree(p));
    check(ncclCommDestroy(s.comm));
    check(cudaStreamDestroy(s.stream));
  }
  return fell && differ == 0 ? 0 : 1;
}
