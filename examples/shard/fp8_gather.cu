// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// A ZeRO-style step over NCCL whose model weights are FP8 (e4m3) with block
// scales (docs/fp8-params.md), one process driving every visible GPU
// (ncclCommInitAll, as shard_step.cu). The model reads only its FP8 copy:
// 1 byte per parameter plus one fp32 scale per block, the same on every
// rank. Each rank keeps the master (bf16 + int8 correction) and the 8-bit
// states of its own shard only. Each step:
//
//   1. backward: each rank's gradient of its own minibatch (a noisy
//      quadratic bowl) at the dequantized FP8 weights, full flat buffer
//   2. reduce: each owner gets the sum over ranks of its shard
//   3. the shard's step: device::step_plan over layout::shard_views
//   4. the shard's FP8 write: kernel::fp8_param_plan over the shard's
//      pieces, each a tensor of the same form (fp8_shard_shape)
//   5. gather the FP8 values and scales into every rank's full copy
//
// The flat buffer is layout::fp8_packed_plan's: no FP8 block crosses ranks,
// so a rank's scales are computed from its own master alone (no amax
// all-reduce) and the gather moves 1 B per parameter plus the scales,
// against 2 B for a bf16 gather.
//
// Verification: a reference on GPU 0 steps the unsharded tensors with the
// same reduced gradients and writes the FP8 copy of the whole tensors; every
// rank's gathered values and scales must equal it byte for byte (and its
// master shard the reference's). The reference master is also written on
// the CPU (cpu::fp8_param_write_serial), whole and cut as fp8_packed_plan
// cuts it for 2, 3, 4 and 8 ranks, so the shard-to-tensor mapping is
// checked for several ranks even on one GPU. NVLink multicast stays off
// (NCCL_NVLS_ENABLE=0). Exit 0 on success, 1 on any mismatch (or if the
// loss did not fall), 77 without a GPU.
#include <flashoptim/cpu/fp8_param.hpp>
#include <flashoptim/device/step_plan.cuh>
#include <flashoptim/flashoptim.hpp>
#include <flashoptim/kernel/fp8_param_kernel.cuh>
#include <flashoptim/layout/fp8_shard.hpp>
#include <flashoptim/layout/shard.hpp>

#include <cuda_runtime.h>
#include <nccl.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace fo = flashoptim;
using fo::bf16;
using fo::fp8_e4m3;
using cfg = fo::step_config<fo::rule::adamw, fo::codec::ulp_correction<bf16, std::int8_t>, bf16,
                            fo::codec::defaults::momentum, fo::codec::defaults::second_moment>;
using fp8_ref = fo::fp8_param_ref<cfg::master, fp8_e4m3>;
using aux_t = cfg::aux_type;

static void check(const fo::status& s) {
  if (!s.ok()) std::fprintf(stderr, "error: %s\n", s.what()), std::exit(1);
}
static void check(cudaError_t e) {
  if (e != cudaSuccess) std::fprintf(stderr, "CUDA error: %s\n", cudaGetErrorString(e)), std::exit(1);
}
static void check(ncclResult_t r) {
  if (r != ncclSuccess) std::fprintf(stderr, "NCCL error: %s\n", ncclGetErrorString(r)), std::exit(1);
}

// The model: its tensors' FP8 forms, packed; scales concatenated in tensor order.
struct model {
  std::vector<fo::fp8_block_shape> shapes;
  std::vector<float> amplitude;                   // of each tensor's target
  std::vector<std::int64_t> offset, scale_offset;  // first element / scale of each tensor
  std::int64_t elements = 0, scales = 0;
};

// Rank r's FP8 write: one ref per piece. A piece is whole block-rows of its
// tensor (fp8_packed_plan), so it is a tensor of the same form; its values
// sit at its flat offset and its scales are a slice of its tensor's. The
// pieces' slices follow each other: the rank's scales are one contiguous
// range [*scale_begin, *scale_begin + *scale_count) of the model's, which
// is what the gather sends. master / aux are the rank's shard (element k is
// flat element shard_begin(r) + k); values / scales the whole model's.
static std::vector<fp8_ref> shard_fp8_refs(const model& m, const fo::layout::shard_plan& plan, int r,
                                           const bf16* master, const aux_t* aux, fp8_e4m3* values, float* scales,
                                           std::int64_t* scale_begin, std::int64_t* scale_count) {
  std::vector<fp8_ref> refs;
  std::int64_t next = -1, count = 0;
  for (const fo::layout::shard_piece* pc = plan.pieces_begin(r); pc != plan.pieces_end(r); ++pc) {
    const fo::fp8_block_shape& s = m.shapes[pc->tensor];
    if (!fo::fp8_shard_aligned(s, pc->begin, pc->end))
      std::fprintf(stderr, "rank %d: piece [%lld, %lld) of tensor %zu cuts a block\n", r, (long long)pc->begin,
                   (long long)pc->end, pc->tensor), std::exit(1);
    fp8_ref t;
    t.master = master + pc->local;
    t.aux = aux + pc->local;
    t.values = values + pc->flat;
    t.shape = fo::fp8_shard_shape(s, pc->begin, pc->end);
    const std::int64_t first = m.scale_offset[pc->tensor] + fo::fp8_shard_scale_offset(s, pc->begin);
    if (next >= 0 && first != next)
      std::fprintf(stderr, "rank %d: scales not contiguous\n", r), std::exit(1);
    if (next < 0) *scale_begin = first;
    t.scales = scales + first;
    next = first + t.shape.scale_count();
    count += t.shape.scale_count();
    refs.push_back(t);
  }
  if (next < 0) *scale_begin = 0;
  *scale_count = count;
  return refs;
}

// The initial weights, from the flat index (every rank and the reference agree).
__global__ void init_master(bf16* p, std::int64_t n, std::int64_t flat0) {
  const std::int64_t k = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x;
  if (k < n) p[k] = fo::format::from_float<bf16>(0.02f * cosf(0.37f * float(flat0 + k)));
}

// Rank r's minibatch gradient of one tensor, 0.5 * (w - a sin(i / 1000 + t))^2
// at the model's weight w = float(value) * scale of its block, with noise
// that differs between ranks and steps; the loss without noise into *loss.
__global__ void backward(const fp8_e4m3* values, const float* scales, fo::fp8_block_shape s, std::int64_t flat0,
                         float a, bf16* g, int rank, int step, double* loss) {
  const std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x;
  if (i >= s.size) return;
  const std::int64_t row = i / s.cols, col = i % s.cols;
  const float w = fo::fp8_decode_scaled(values[i], scales[row / s.block_rows * s.scale_cols() + col / 128]);
  const float r = w - a * sinf(0.001f * float(flat0 + i) + float(flat0 % 7));
  const float noise = 0.2f * a * sinf(float(flat0 + i) * 0.37f + 1.3f * float(rank) + 0.7f * float(step));
  g[i] = fo::format::from_float<bf16>(r + noise);
  atomicAdd(loss, 0.5 * double(r) * r);
}

// One rank (or the reference): its GPU, stream, shard master and states,
// full gradient buffer and full FP8 copy.
struct rank_state {
  int device = 0;
  cudaStream_t stream = nullptr;
  ncclComm_t comm = nullptr;
  bf16* master = nullptr;  // this shard's bf16 half of the master
  aux_t* aux = nullptr;    // ... its int8 corrections (inside storage)
  bf16* grad = nullptr;    // the whole flat buffer
  void* storage = nullptr;  // this shard's corrections and states
  fp8_e4m3* values = nullptr;  // the whole model's FP8 copy ...
  float* scales = nullptr;     // ... and its scales
  std::int64_t scale_begin = 0, scale_count = 0;  // this shard's scales among them
  fo::device::step_plan<cfg> plan;                         // this shard's tensor pieces
  fo::kernel::fp8_param_plan<cfg::master, fp8_e4m3> fp8;   // their FP8 write
  double* loss = nullptr;
};

static void setup(rank_state& s, const model& m, const fo::layout::shard_plan& plan, int r, int device) {
  s.device = device;
  check(cudaSetDevice(device));
  check(cudaStreamCreateWithFlags(&s.stream, cudaStreamNonBlocking));
  const std::int64_t n = plan.shard_size(r);
  check(cudaMalloc(&s.master, (n > 0 ? n : 1) * sizeof(bf16)));
  if (n > 0) init_master<<<unsigned((n + 255) / 256), 256>>>(s.master, n, plan.shard_begin(r));
  check(cudaGetLastError());
  check(cudaMalloc(&s.grad, m.elements * sizeof(bf16)));
  const auto storage = fo::layout::shard_storage<cfg>::for_rank(plan, r);
  check(cudaMalloc(&s.storage, storage.bytes > 0 ? storage.bytes : 256));
  check(cudaMemset(s.storage, 0, storage.bytes));  // zero corrections and states
  fo::layout::shard_buffers<cfg> b;
  storage.carve(s.storage, b);
  s.aux = b.aux;
  b.param = s.master;
  b.grad = s.grad + plan.shard_begin(r);
  const std::vector<std::uint64_t> seeds(m.shapes.size(), 0);
  std::vector<fo::tensor_ref<cfg>> views;
  check(fo::layout::shard_views<cfg>(plan, r, b, seeds.data(), views));
  check(s.plan.build(views.data(), views.size()));
  check(cudaMalloc(&s.values, m.elements));
  check(cudaMalloc(&s.scales, m.scales * sizeof(float)));
  check(cudaMemset(s.values, 0, m.elements));
  check(cudaMemset(s.scales, 0, m.scales * sizeof(float)));
  const auto refs = shard_fp8_refs(m, plan, r, s.master, s.aux, s.values, s.scales, &s.scale_begin, &s.scale_count);
  check(s.fp8.build(refs.data(), refs.size()));
  check(cudaMalloc(&s.loss, sizeof(double)));
  check(cudaDeviceSynchronize());  // the legacy-stream work above before the non-blocking stream
}

static void release(rank_state& s) {
  check(cudaSetDevice(s.device));
  s.plan = fo::device::step_plan<cfg>();
  s.fp8 = fo::kernel::fp8_param_plan<cfg::master, fp8_e4m3>();
  for (void* p : {(void*)s.master, (void*)s.grad, s.storage, (void*)s.values, (void*)s.scales, (void*)s.loss})
    check(cudaFree(p));
  if (s.comm != nullptr) check(ncclCommDestroy(s.comm));
  check(cudaStreamDestroy(s.stream));
}

template <class T>
static std::vector<T> to_host(const T* p, std::int64_t n, int device) {
  std::vector<T> h(static_cast<std::size_t>(n));
  check(cudaSetDevice(device));
  check(cudaMemcpy(h.data(), p, n * sizeof(T), cudaMemcpyDeviceToHost));
  return h;
}
template <class T>
static std::size_t differ(const std::vector<T>& a, const std::vector<T>& b) {
  std::size_t d = 0;
  for (std::size_t i = 0; i < a.size(); ++i) d += std::memcmp(&a[i], &b[i], sizeof(T)) != 0;
  return d;
}

int main() {
  int R = 0;
  if (cudaGetDeviceCount(&R) != cudaSuccess || R == 0) {
    std::printf("no usable CUDA device: skipping\n");
    return 77;
  }
  setenv("NCCL_NVLS_ENABLE", "0", 0);
  using fo::fp8_block_kind;
  model m;  // 2-D weights with 128 x 128 blocks (one with partial tiles), a 1-D tensor with 1 x 128 blocks
  m.shapes = {fo::fp8_shape_2d(256, 512, fp8_block_kind::tile_128x128),
              fo::fp8_shape_2d(384, 256, fp8_block_kind::tile_128x128),
              fo::fp8_shape_2d(200, 300, fp8_block_kind::tile_128x128), fo::fp8_shape_1d(1000)};
  m.amplitude = {0.5f, 0.2f, 0.05f, 0.01f};
  for (const auto& s : m.shapes) {
    m.offset.push_back(m.elements);
    m.scale_offset.push_back(m.scales);
    m.elements += s.size;
    m.scales += s.scale_count();
  }
  fo::layout::shard_plan plan, whole;
  check(fo::layout::fp8_packed_plan(m.shapes.data(), m.shapes.size(), R, plan));
  check(fo::layout::fp8_packed_plan(m.shapes.data(), m.shapes.size(), 1, whole));  // the reference's
  std::printf("%d rank(s), %zu tensors, %lld parameters, %lld FP8 blocks\n", R, m.shapes.size(),
              (long long)m.elements, (long long)m.scales);

  std::vector<rank_state> ranks(R);
  std::vector<ncclComm_t> comms(R);
  std::vector<int> devices(R);
  for (int r = 0; r < R; ++r) devices[r] = r;
  check(ncclCommInitAll(comms.data(), R, devices.data()));
  for (int r = 0; r < R; ++r) {
    setup(ranks[r], m, plan, r, r);
    ranks[r].comm = comms[r];
    std::printf("  rank %d: elements [%lld, %lld), scales [%lld, %lld)\n", r, (long long)plan.shard_begin(r),
                (long long)plan.shard_end(r), (long long)ranks[r].scale_begin,
                (long long)(ranks[r].scale_begin + ranks[r].scale_count));
  }
  rank_state ref;
  setup(ref, m, whole, 0, 0);

  auto sync_all = [&] {
    for (auto& s : ranks) check(cudaSetDevice(s.device)), check(cudaStreamSynchronize(s.stream));
    check(cudaSetDevice(0)), check(cudaStreamSynchronize(ref.stream));
  };
  // Each rank's FP8 write of its shard, then the gather into every rank's
  // full copy. fp8_packed_plan cuts at block-rows, so shards (and their
  // scale counts) differ between ranks, and ncclAllGather takes one count
  // for every rank: padding each shard to the largest would move the padding
  // and leave it between the shards of the gathered copy. One ncclBroadcast
  // per owner, grouped, moves exactly the model's bytes into place (the
  // harness of tests/shard does the same for packed plans).
  auto write_and_gather = [&] {
    for (auto& s : ranks) check(cudaSetDevice(s.device)), check(s.fp8.write_async({}, s.stream));
    check(ncclGroupStart());
    for (auto& s : ranks)
      for (int root = 0; root < R; ++root) {
        const rank_state& o = ranks[root];
        if (plan.shard_size(root) > 0) {
          fp8_e4m3* v = s.values + plan.shard_begin(root);
          check(ncclBroadcast(v, v, plan.shard_size(root), ncclUint8, root, s.comm, s.stream));
        }
        if (o.scale_count > 0) {
          float* sc = s.scales + o.scale_begin;
          check(ncclBroadcast(sc, sc, o.scale_count, ncclFloat32, root, s.comm, s.stream));
        }
      }
    check(ncclGroupEnd());
    check(cudaSetDevice(0));
    check(ref.fp8.write_async({}, ref.stream));
  };
  write_and_gather();  // the model's first FP8 copy

  cfg::hyper h;
  h.lr = 1e-2;
  const int steps = 100;
  double first_loss = 0.0, last_loss = 0.0;
  for (int step = 1; step <= steps; ++step) {
    for (int r = 0; r < R; ++r) {  // 1. backward at the FP8 weights
      rank_state& s = ranks[r];
      check(cudaSetDevice(s.device));
      check(cudaMemsetAsync(s.loss, 0, sizeof(double), s.stream));
      for (std::size_t t = 0; t < m.shapes.size(); ++t)
        backward<<<unsigned((m.shapes[t].size + 255) / 256), 256, 0, s.stream>>>(
            s.values + m.offset[t], s.scales + m.scale_offset[t], m.shapes[t], m.offset[t], m.amplitude[t],
            s.grad + m.offset[t], r, step, s.loss);
      check(cudaGetLastError());
    }
    check(ncclGroupStart());  // 2. reduce, one per owner (uneven shards), in place
    for (int r = 0; r < R; ++r)
      for (int root = 0; root < R; ++root) {
        if (plan.shard_size(root) == 0) continue;
        bf16* p = ranks[r].grad + plan.shard_begin(root);
        check(ncclReduce(p, p, plan.shard_size(root), ncclBfloat16, ncclSum, root, ranks[r].comm, ranks[r].stream));
      }
    check(ncclGroupEnd());
    // The reference takes the owners' reduced shards: the same gradients.
    for (int root = 0; root < R; ++root) {
      if (plan.shard_size(root) == 0) continue;
      const std::int64_t b = plan.shard_begin(root);
      check(cudaSetDevice(root));
      check(cudaMemcpyPeerAsync(ref.grad + b, 0, ranks[root].grad + b, root, plan.shard_size(root) * sizeof(bf16),
                                ranks[root].stream));
    }
    sync_all();
    const fo::step_args args{step, 1.0 / R};  // the mean over ranks' minibatches
    for (auto& s : ranks)  // 3. step the shard
      check(cudaSetDevice(s.device)), check(s.plan.step_async(h, args, s.stream));
    check(cudaSetDevice(0));
    check(ref.plan.step_async(h, args, ref.stream));
    write_and_gather();  // 4. and 5.
    check(cudaSetDevice(0));
    check(cudaMemcpyAsync(&last_loss, ranks[0].loss, sizeof(double), cudaMemcpyDeviceToHost, ranks[0].stream));
    sync_all();  // also: the reference's step is done before the next step's copies overwrite its gradient
    if (step == 1) first_loss = last_loss;
    if (step == 1 || step % 25 == 0) std::printf("step %3d  loss %.4f\n", step, last_loss);
  }

  // Every rank's FP8 copy against the reference's, byte for byte; every
  // master shard against the reference master's slice.
  const auto ref_values = to_host(ref.values, m.elements, 0);
  const auto ref_scales = to_host(ref.scales, m.scales, 0);
  const auto ref_master = to_host(ref.master, m.elements, 0);
  const auto ref_aux = to_host(ref.aux, m.elements, 0);
  std::size_t bad = 0;
  for (int r = 0; r < R; ++r) {
    const rank_state& s = ranks[r];
    const std::size_t dv = differ(to_host(s.values, m.elements, r), ref_values);
    const std::size_t ds = differ(to_host(s.scales, m.scales, r), ref_scales);
    const auto mine = to_host(s.master, plan.shard_size(r), r);
    const std::vector<bf16> slice(ref_master.begin() + plan.shard_begin(r), ref_master.begin() + plan.shard_end(r));
    const std::size_t dm = differ(mine, slice);
    std::printf("rank %d against the unsharded reference: %zu FP8 values, %zu scales, %zu master elements differ\n",
                r, dv, ds, dm);
    bad += dv + ds + dm;
  }
  // The reference master written on the CPU: whole, and cut as fp8_packed_plan
  // cuts it for several ranks (every block written once: the buffers start
  // as 0xff bytes, a NaN scale and an e4m3 NaN, which no write leaves).
  for (int cut : {1, 2, 3, 4, 8}) {
    fo::layout::shard_plan p;
    check(fo::layout::fp8_packed_plan(m.shapes.data(), m.shapes.size(), cut, p));
    std::vector<fp8_e4m3> values(m.elements, fp8_e4m3{0xff});
    std::vector<float> scales(m.scales);
    std::memset(scales.data(), 0xff, scales.size() * sizeof(float));
    for (int r = 0; r < cut; ++r) {
      std::int64_t sb = 0, sn = 0;
      const auto refs = shard_fp8_refs(m, p, r, ref_master.data() + p.shard_begin(r), ref_aux.data() + p.shard_begin(r),
                                       values.data(), scales.data(), &sb, &sn);
      check(fo::cpu::fp8_param_write_serial(refs.data(), refs.size()));
    }
    const std::size_t d = differ(values, ref_values) + differ(scales, ref_scales);
    std::printf("CPU write of the reference master in %d shard(s): %zu bytes differ from the GPU's\n", cut, d);
    bad += d;
  }

  const double fp8_bytes = double(m.elements + 4 * m.scales) / double(m.elements);
  std::printf("gather: %lld value bytes + %lld scale bytes = %.4f B per parameter (1 + 4/16384 for 128 x 128 blocks, "
              "1 + 4/128 for 1 x 128), against 2 B per parameter for a bf16 gather: %.2fx fewer bytes\n",
              (long long)m.elements, (long long)(4 * m.scales), fp8_bytes, 2.0 / fp8_bytes);
  const bool fell = last_loss < first_loss / 10.0;
  std::printf("loss %.4f -> %.4f (%s); %s\n", first_loss, last_loss, fell ? "fell 10-fold" : "DID NOT FALL",
              bad == 0 ? "every rank's FP8 copy equals the reference" : "MISMATCH");

  for (auto& s : ranks) release(s);
  release(ref);
  return fell && bad == 0 ? 0 : 1;
}
