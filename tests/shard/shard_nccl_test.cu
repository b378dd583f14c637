// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// The NCCL sharded step (nccl_shard_run.cuh) verified byte for byte against
// an unsharded replica on GPU 0: --verify-steps steps (default 4), an inf
// injected at --inf-step (default 3) on the last rank that every rank must
// skip, then every rank's parameters, corrections, codes, scales and step
// count compared. Options: --layout padded|packed, --ranks R,
// --require-ranks R, --small, --layers/--width/--vocab, --max-norm.
// Exit status: 0 verified (or no GPU and no --require-ranks), 1 mismatch or
// error, 77 fewer GPUs than --require-ranks (ctest: skipped). Timing is
// bench/shard/bench_shard_nccl.cu.
#include "shard/nccl_shard_run.cuh"

using namespace shard_nccl;

static int run_main(const options& opt) {
  const int go = start(opt);
  if (go >= 0) return go;
  shard_run run;
  run.opt = opt;
  run.opt.verify = true;
  run.setup();
  report_bytes(run);
  const int R = run.R();
  int status_code = 0;
  std::int64_t step = 1;
  std::printf("verify: %d steps against an unsharded replica on GPU 0 (inf injected at step %d)\n", opt.verify_steps,
              opt.inf_step);
  double worst_rel = 0.0;
  for (; step <= opt.verify_steps; ++step) {
    run.sharded_step(step, -1);
    run.reference_step();
    run.sync_all();
    fo::device::grad_stats g{}, h{};
    CHECK_CALL(cudaSetDevice(0));
    CHECK_CALL(cudaMemcpy(&g, run.ranks[0].stats, sizeof g, cudaMemcpyDeviceToHost));
    CHECK_CALL(cudaMemcpy(&h, run.ref.stats, sizeof h, cudaMemcpyDeviceToHost));
    const double rel = g.non_finite ? 0.0 : std::fabs(g.sum_squares - h.sum_squares) / h.sum_squares;
    worst_rel = std::max(worst_rel, rel);
    std::printf("  step %lld: global |g| = %.6g (reference %.6g), non-finite %d (reference %d)\n",
                static_cast<long long>(step), std::sqrt(g.sum_squares), std::sqrt(h.sum_squares), g.non_finite,
                h.non_finite);
    if (g.non_finite != h.non_finite) status_code = 1;
  }
  const unsigned long long bad = run.compare_with_reference();
  std::printf(
      "VERIFY %s: sharded over %d GPU(s) vs unsharded on one, %d steps: %llu differing bytes; "
      "global grad norm^2 within %.2g of the reference's\n",
      bad == 0 && status_code == 0 ? "PASS" : "FAIL", R, opt.verify_steps, bad, worst_rel);
  if (bad) status_code = 1;
  return status_code;
}

int main(int argc, char** argv) {
  try {
    return run_main(parse(argc, argv));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
