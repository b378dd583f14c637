#!/usr/bin/env bash
# SPDX-FileCopyrightText: 2026 flashoptim authors
# SPDX-License-Identifier: Apache-2.0
#
# The whole GPU round on a machine with H200s, from executables built
# elsewhere (tools/stage_device_bin.sh collects them into one folder):
#   tests   every GPU test (GPU == CPU bit for bit, off-load, shards on one
#           GPU), compute-sanitizer memcheck and racecheck on small cases,
#           and the demo
#   bench   the step benchmarks with torch's fused AdamW beside them
#           (BENCHMARKS.md) and the off-load benchmark
#   shard   tools/shard_device_round.sh: the NCCL example on every GPU
#   ncu     Nsight Compute counters of one default AdamW step (tuning)
#
#   BIN=<staged executables> OUT=<log folder> tools/device_round.sh tests bench shard
#
# Each stage packs its logs into $OUT/<stage>.tgz and a summary into
# $OUT/<stage>.txt as soon as it ends (a run cut short still returns what
# it did); the summaries are printed last.
set -u
export NCCL_NVLS_ENABLE=0
BIN=${BIN:-.device/bin}
OUT=${OUT:-out}
WORK=${WORK:-/tmp/flashoptim_device_round}
mkdir -p "$OUT" "$WORK"
export OMP_WAIT_POLICY=passive
[ -d "$BIN/lib" ] && export LD_LIBRARY_PATH="$(cd "$BIN/lib" && pwd):${LD_LIBRARY_PATH:-}"

stage_begin() {
  STAGE=$1
  mkdir -p "$WORK/$STAGE"
  SUMMARY=$WORK/$STAGE/summary.txt
  : > "$SUMMARY"
}
note() { echo "$*" | tee -a "$SUMMARY"; }
stage_end() {
  tar czf "$OUT/$STAGE.tgz" -C "$WORK" "$STAGE" 2> /dev/null
  cp "$SUMMARY" "$OUT/$STAGE.txt"
}
run() {  # label, timeout, executable, args...
  local label=$1 t=$2 exe=$BIN/$3
  shift 3
  if [ ! -x "$exe" ]; then
    note "$label: NOT STAGED"
    return
  fi
  local start=$SECONDS
  timeout "$t" "$exe" "$@" > "$WORK/$STAGE/$label.log" 2>&1
  note "$label: rc=$? ($((SECONDS - start)) s) $(grep -E '^\[doctest\] (test cases|assertions)|ERROR SUMMARY|RACECHECK SUMMARY' "$WORK/$STAGE/$label.log" | tr '\n' ' ')"
}
sanitize() {  # label, tool, executable, args...
  local label=$1 tool=$2 exe=$BIN/$3
  shift 3
  local start=$SECONDS
  timeout 150 compute-sanitizer --tool "$tool" --error-exitcode 3 "$exe" "$@" > "$WORK/$STAGE/$label.log" 2>&1
  note "$label: rc=$? ($((SECONDS - start)) s) $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$WORK/$STAGE/$label.log" | tail -1)"
}

do_tests() {
  stage_begin tests
  note "gpus: $(nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader | tr '\n' ';')"
  # the exhaustive sweeps keep the CPU busy; run them beside the others
  run exhaustive 400 test_gpu_exhaustive &
  local ex=$!
  run parity 300 test_gpu_step_parity
  run inputs 120 test_gpu_step_inputs
  run finite 200 test_gpu_finite_property
  run huge 120 test_gpu_huge
  run offload 300 test_gpu_offload
  run shard_gpu 200 test_shard_gpu
  run demo 120 flashoptim_demo
  wait $ex
  sanitize memcheck_parity memcheck test_gpu_step_parity -tc="N = 0*,many tensors*,parity adamw_default"
  sanitize memcheck_inputs memcheck test_gpu_step_inputs -tc="skip*,device inputs*,bad inputs*,gradient statistics*"
  sanitize racecheck_inputs racecheck test_gpu_step_inputs -tc="skip*,gradient statistics*"
  sanitize racecheck_parity racecheck test_gpu_step_parity -tc="parity adamw_default"
  sanitize memcheck_offload memcheck test_gpu_offload -tc="*bad inputs*,*changed tensors*"
  sanitize memcheck_memory_kinds memcheck test_gpu_step_inputs -tc="buffers the device cannot read*"
  grep -E "^(C5|GPU|demo)|GPU:|bit" "$WORK/tests/demo.log" | tail -5 >> "$SUMMARY"
  stage_end
}

do_bench() {
  stage_begin bench
  local start=$SECONDS
  # OpenMP's default wait policy, as a trainer runs it (the tests above run
  # passive, beside the exhaustive sweeps); 15 steps per median: the host's
  # CPU speed varies from run to run.
  env -u OMP_WAIT_POLICY timeout 200 "$BIN/bench_offload" --fraction 0.5 --repeats 15 \
    > "$WORK/bench/offload.md" 2> "$WORK/bench/offload.log"
  note "offload bench (f = 0.5): rc=$? ($((SECONDS - start)) s)"
  cat "$WORK/bench/offload.md" >> "$SUMMARY"
  if [ -f "$OUT/shard.txt" ]; then
    { echo "### Sharded step over NCCL (tools/shard_device_round.sh, same machine, same session)"; echo;
      grep -vE '^(gpus|nccl|cpu|gpu|gpu_sr|memcheck|padded|packed|one_rank):' "$OUT/shard.txt"; } > "$WORK/bench/shard.md"
  fi
  start=$SECONDS
  PYTHONUNBUFFERED=1 env -u OMP_WAIT_POLICY timeout 330 python3 tools/bench_report.py --bench "$BIN/bench_gpu_step:${BENCH_FILTER:-/default/}" \
    --out "$WORK/bench/BENCHMARKS.md" --json "$WORK/bench/bench_gpu.json" --torch-json "$WORK/bench/torch.json" \
    --append "$WORK/bench/offload.md" --append "$WORK/bench/shard.md" --notes docs/benchmark-notes.md > "$WORK/bench/table.txt" 2> "$WORK/bench/bench.log"
  note "bench: rc=$? ($((SECONDS - start)) s)"
  cat "$WORK/bench/table.txt" >> "$SUMMARY"
  cp "$WORK/bench/BENCHMARKS.md" "$OUT/" 2> /dev/null
  stage_end
}

do_shard() {
  stage_begin shard
  local start=$SECONDS
  BIN=$BIN OUT=$WORK/shard/out WORK=$WORK/shard/work timeout 400 bash tools/shard_device_round.sh > "$WORK/shard/round.log" 2>&1
  note "shard round: rc=$? ($((SECONDS - start)) s)"
  cat "$WORK/shard/out/shard/summary.txt" >> "$SUMMARY" 2> /dev/null
  stage_end
}

# Hardware counters of one default AdamW step (clocks as found).
do_ncu() {
  stage_begin ncu
  local start=$SECONDS
  timeout 150 ncu --clock-control none --section SpeedOfLight --section Occupancy --section LaunchStats \
    --section WarpStateStats --section SchedulerStats --section MemoryWorkloadAnalysis -k regex:step_kernel -s 2 -c 1 \
    "$BIN/bench_gpu_step" --benchmark_filter='^step/adamw_default/flat268M/default' --benchmark_min_time=0.01 \
    > "$WORK/ncu/ncu.txt" 2>&1
  note "ncu: rc=$? ($((SECONDS - start)) s)"
  grep -E "Duration|Issue Slots Busy|Issued Ipc|Memory Throughput|DRAM Throughput|Achieved Occupancy|Registers Per|No Eligible|Warp Cycles Per Issued" \
    "$WORK/ncu/ncu.txt" | head -20 >> "$SUMMARY"
  stage_end
}

for s in "$@"; do
  case $s in
    tests) do_tests ;;
    ncu) do_ncu ;;
    bench) do_bench ;;
    shard) do_shard ;;
    *) echo "unknown stage $s" ;;
  esac
done
for s in "$@"; do
  echo "=============== $s"
  cat "$OUT/$s.txt" 2> /dev/null
done
