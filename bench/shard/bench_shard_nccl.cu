// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// The NCCL sharded step (tests/shard/nccl_shard_run.cuh) timed: the whole
// step by phase (reduce-scatter, statistics + all-reduce + clip, local step,
// all-gather; the slowest rank), then the two collectives alone on the
// model's buffer and on a --bench-mib buffer (bus bandwidth as nccl-tests
// defines it), and one RESULT line for scripts. Verification is
// tests/shard/shard_nccl_test.cu (test_shard_nccl). Options: --layout
// padded|packed, --ranks R, --require-ranks R, --small, --layers/--width/
// --vocab, --steps, --warmup, --max-norm, --bench-mib. Exit status: 0, 1 on
// error, 77 fewer GPUs than --require-ranks.
#include "shard/nccl_shard_run.cuh"

using namespace shard_nccl;

namespace {

double elapsed_ms(cudaEvent_t a, cudaEvent_t b) {
  float ms = 0.0f;
  check(cudaEventElapsedTime(&ms, a, b), "cudaEventElapsedTime");
  return ms;
}

/// Times `iters` runs of one collective over `count` bf16 elements per
/// rank's full buffer; returns milliseconds per run (slowest rank).
template <class Fn>
double time_collective(shard_run& run, Fn&& fn, int iters) {
  for (int i = 0; i < 3; ++i) fn();
  run.sync_all();
  std::vector<cudaEvent_t> start(run.ranks.size()), stop(run.ranks.size());
  for (std::size_t r = 0; r < run.ranks.size(); ++r) {
    CHECK_CALL(cudaSetDevice(run.ranks[r].device));
    CHECK_CALL(cudaEventCreate(&start[r]));
    CHECK_CALL(cudaEventCreate(&stop[r]));
    CHECK_CALL(cudaEventRecord(start[r], run.ranks[r].stream));
  }
  for (int i = 0; i < iters; ++i) fn();
  double worst = 0.0;
  for (std::size_t r = 0; r < run.ranks.size(); ++r) {
    CHECK_CALL(cudaSetDevice(run.ranks[r].device));
    CHECK_CALL(cudaEventRecord(stop[r], run.ranks[r].stream));
  }
  run.sync_all();
  for (std::size_t r = 0; r < run.ranks.size(); ++r) {
    worst = std::max(worst, elapsed_ms(start[r], stop[r]) / iters);
    cudaEventDestroy(start[r]);
    cudaEventDestroy(stop[r]);
  }
  return worst;
}

int run_main(const options& opt) {
  const int go = start(opt);
  if (go >= 0) return go;
  shard_run run;
  run.opt = opt;
  run.opt.verify = false;  // no reference replica, no injected inf
  run.setup();
  report_bytes(run);
  const auto& plan = run.plan;
  const int R = run.R();
  const double N = static_cast<double>(plan.total_elements());
  std::int64_t max_state = 0;
  for (int r = 0; r < R; ++r) max_state = std::max(max_state, fl::shard_state_bytes<config>(plan, r));
  std::int64_t step = 1;

  // ---- timing of the whole step, by phase
  for (auto& s : run.ranks) {
    CHECK_CALL(cudaSetDevice(s.device));
    s.events.resize(static_cast<std::size_t>(5 * opt.steps));
    for (auto& e : s.events) CHECK_CALL(cudaEventCreate(&e));
  }
  for (int i = 0; i < opt.warmup; ++i, ++step) run.sharded_step(step, -1);
  for (int i = 0; i < opt.steps; ++i, ++step) run.sharded_step(step, 5L * i);
  run.sync_all();
  double phase[4] = {0, 0, 0, 0}, total = 0, best = 1e30;
  for (int i = 0; i < opt.steps; ++i) {
    double worst_total = 0.0;
    for (std::size_t r = 0; r < run.ranks.size(); ++r) {
      const auto& e = run.ranks[r].events;
      const std::size_t b = 5u * static_cast<std::size_t>(i);
      if (r == 0)
        for (int k = 0; k < 4; ++k) phase[k] += elapsed_ms(e[b + k], e[b + k + 1]);
      worst_total = std::max(worst_total, elapsed_ms(e[b], e[b + 4]));
    }
    total += worst_total;
    best = std::min(best, worst_total);
  }
  const double n_steps = opt.steps;
  const double rs_ms = phase[0] / n_steps, stats_ms = phase[1] / n_steps, local_ms = phase[2] / n_steps,
               ag_ms = phase[3] / n_steps, step_ms = total / n_steps;
  // nccl-tests' bus bandwidth: bytes of the whole buffer / time * (R - 1) / R
  const double model_bytes = 2.0 * static_cast<double>(plan.flat_size());
  const double bus = R > 1 ? (R - 1.0) / R : 1.0;
  auto busbw = [&](double bytes, double ms) { return ms > 0 ? bytes / (ms * 1e-3) * bus / 1e9 : 0.0; };
  std::printf("step (mean of %d after %d warm-up, slowest rank): %.3f ms (best %.3f)\n", opt.steps, opt.warmup, step_ms,
              best);
  std::int64_t local_traffic = 0;  // what rank 0's local step must move (layout::bytes)
  for (const auto* pc = plan.pieces_begin(0); pc != plan.pieces_end(0); ++pc)
    local_traffic += fl::bytes<config>::moved_for_size(pc->size());
  std::printf(
      "  rank 0 phases: reduce-scatter %.3f ms (bus %.0f GB/s), stats + all-reduce + clip %.3f ms, "
      "local step %.3f ms (%.0f GB/s of layout::bytes traffic), all-gather %.3f ms (bus %.0f GB/s)\n",
      rs_ms, busbw(model_bytes, rs_ms), stats_ms, local_ms,
      local_ms > 0 ? 1e-6 * static_cast<double>(local_traffic) / local_ms : 0.0, ag_ms, busbw(model_bytes, ag_ms));

  // ---- the collectives alone: the model's buffer and a 1 GiB one (docs/performance-method.md)
  const int iters = 20;
  std::vector<fo::bf16*> grads, params;
  for (auto& s : run.ranks) grads.push_back(s.grad), params.push_back(s.param);
  const double rs_model = time_collective(
      run, [&] { run.reduce_scatter(grads.data()); }, iters);
  const double ag_model = time_collective(
      run, [&] { run.all_gather(params.data()); }, iters);
  std::printf(
      "collectives alone, model buffer %.3f GB: reduce-scatter %.3f ms (bus %.0f GB/s), all-gather %.3f ms "
      "(bus %.0f GB/s)\n",
      1e-9 * model_bytes, rs_model, busbw(model_bytes, rs_model), ag_model, busbw(model_bytes, ag_model));
  double rs_big = 0, ag_big = 0, big_bytes = 0;
  if (opt.bench_mib > 0 && opt.padded) {
    // equal shards of a buffer of bench_mib MiB (in place, like the step)
    const std::int64_t count = static_cast<std::int64_t>(opt.bench_mib * 1048576.0 / 2) / (32 * R) * (32 * R);
    big_bytes = 2.0 * static_cast<double>(count);
    std::vector<fo::bf16*> bufs;
    for (auto& s : run.ranks) {
      CHECK_CALL(cudaSetDevice(s.device));
      fo::bf16* b = nullptr;
      CHECK_CALL(cudaMalloc(&b, static_cast<std::size_t>(count) * sizeof(fo::bf16)));
      CHECK_CALL(cudaMemset(b, 0, static_cast<std::size_t>(count) * sizeof(fo::bf16)));
      bufs.push_back(b);
    }
    const std::size_t per = static_cast<std::size_t>(count / R);
    auto rs = [&] {
      CHECK_CALL(ncclGroupStart());
      for (int r = 0; r < R; ++r) {
        auto& s = run.ranks[static_cast<std::size_t>(r)];
        CHECK_CALL(ncclReduceScatter(bufs[r], bufs[r] + per * r, per, ncclBfloat16, ncclSum, s.comm, s.stream));
      }
      CHECK_CALL(ncclGroupEnd());
    };
    auto ag = [&] {
      CHECK_CALL(ncclGroupStart());
      for (int r = 0; r < R; ++r) {
        auto& s = run.ranks[static_cast<std::size_t>(r)];
        CHECK_CALL(ncclAllGather(bufs[r] + per * r, bufs[r], per, ncclBfloat16, s.comm, s.stream));
      }
      CHECK_CALL(ncclGroupEnd());
    };
    rs_big = time_collective(run, rs, iters);
    ag_big = time_collective(run, ag, iters);
    std::printf(
        "collectives alone, %.0f MiB buffer: reduce-scatter %.3f ms (bus %.0f GB/s), all-gather %.3f ms "
        "(bus %.0f GB/s) [docs/performance-method.md: 1 GiB, 2.07 / 2.01 ms, about 265 GB/s]\n",
        big_bytes / 1048576.0, rs_big, busbw(big_bytes, rs_big), ag_big, busbw(big_bytes, ag_big));
    for (std::size_t r = 0; r < bufs.size(); ++r) {
      CHECK_CALL(cudaSetDevice(run.ranks[r].device));
      CHECK_CALL(cudaFree(bufs[r]));
    }
  }
  std::printf("floor (collectives alone + local step): %.3f ms; measured step %.3f ms\n",
              rs_model + ag_model + local_ms, step_ms);
  // one line for scripts
  std::printf(
      "RESULT layout=%s ranks=%d params_M=%.1f verify=%s step_ms=%.3f rs_ms=%.3f ag_ms=%.3f local_ms=%.3f "
      "rs_busbw=%.0f ag_busbw=%.0f rs1g_ms=%.3f ag1g_ms=%.3f rs1g_busbw=%.0f ag1g_busbw=%.0f "
      "state_B_per_param=%.3f\n",
      opt.padded ? "padded" : "packed", R, N / 1e6, "off", step_ms,
      rs_model, ag_model, local_ms, busbw(model_bytes, rs_model), busbw(model_bytes, ag_model), rs_big, ag_big,
      busbw(big_bytes, rs_big), busbw(big_bytes, ag_big), max_state / N);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run_main(parse(argc, argv));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
