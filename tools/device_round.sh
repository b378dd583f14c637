#!/usr/bin/env bash
# SPDX-FileCopyrightText: 2026 flashoptim authors
# SPDX-License-Identifier: Apache-2.0
#
# The whole GPU round on a machine with H200s, from executables built
# elsewhere (tools/stage_device_bin.sh collects them into one folder) or
# there (the build stage; executables built on a machine with another CUDA
# driver may refuse to start: "CUDA driver version is insufficient"):
#   build   configures the release preset with benchmarks into $WORK/build
#           and builds every GPU test, benchmark and example; BIN then
#           points at the executables it made
#   tests   every GPU test (GPU == CPU bit for bit, off-load, shards on one
#           GPU), compute-sanitizer memcheck and racecheck on small cases,
#           and the demo
#   python  the Python package with its CUDA half (pip wheel, no build
#           isolation: the machine has no network), python/tests under
#           pytest, and the GPT quality run's gradient-release
#           configuration and step timing (python/bench/gpt_quality.py;
#           the paper's package is imported from $PAPER_SITE when set)
#   bench   the step benchmarks with torch's fused AdamW beside them
#           (BENCHMARKS.md) and the off-load benchmark
#   shard   tools/shard_device_round.sh: the NCCL example on every GPU
#   ncu     Nsight Compute counters of one default AdamW step (tuning)
#
#   BIN=<staged executables> OUT=<log folder> tools/device_round.sh tests bench shard
#   OUT=<log folder> tools/device_round.sh build tests python ncu
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
  run zero_gradients 200 test_gpu_zero_gradients
  run inputs 120 test_gpu_step_inputs
  run finite 200 test_gpu_finite_property
  run huge 120 test_gpu_huge
  run offload 300 test_gpu_offload
  run shard_gpu 200 test_shard_gpu
  run extension 200 test_gpu_extension
  run grad_pass 200 test_gpu_grad_pass
  run optimizer 200 test_gpu_optimizer
  run optimizer_io 200 test_gpu_optimizer_io
  run optimizer_offload 300 test_gpu_optimizer_offload
  run fp8_param 200 test_gpu_fp8_param
  run fp8_step 300 test_gpu_fp8_step
  run optimizer_fp8 200 test_gpu_optimizer_fp8
  run example_fp8_gather 60 flashoptim_example_fp8_gather
  run demo 120 flashoptim_demo
  run example_groups_graph 60 flashoptim_example_groups_graph
  run example_offload_gpu 60 flashoptim_example_offload_gpu
  # --source: the corpus and plots come from this copy of the tree, not the
  # build machine's path compiled into the binary
  run train_gpu 150 flashoptim_train --device gpu --source "$PWD" --out "$WORK/tests/train"
  run train_check 60 flashoptim_train --device gpu --steps 300 --configs fp32,bf16,flash --check --source "$PWD"
  run train_check_offload 60 flashoptim_train --device gpu --steps 300 --configs fp32,bf16,flash --check --offload 0.5 \
    --source "$PWD"
  wait $ex
  sanitize memcheck_parity memcheck test_gpu_step_parity -tc="N = 0*,many tensors*,parity adamw_default"
  sanitize memcheck_inputs memcheck test_gpu_step_inputs -tc="skip*,device inputs*,bad inputs*,gradient statistics*"
  sanitize racecheck_inputs racecheck test_gpu_step_inputs -tc="skip*,gradient statistics*"
  sanitize racecheck_parity racecheck test_gpu_step_parity -tc="parity adamw_default"
  sanitize memcheck_offload memcheck test_gpu_offload -tc="*bad inputs*,*changed tensors*"
  sanitize memcheck_memory_kinds memcheck test_gpu_step_inputs -tc="buffers the device cannot read*"
  sanitize memcheck_optimizer memcheck test_gpu_optimizer_offload -tc="*rebinds*,*init without gradients*"
  sanitize memcheck_fp8_step memcheck test_gpu_fp8_step -tc="*one tensor*"
  grep -E "^(C5|GPU|demo)|GPU:|bit" "$WORK/tests/demo.log" | tail -5 >> "$SUMMARY"
  stage_end
}

do_bench() {
  stage_begin bench
  local start=$SECONDS
  # OpenMP's default wait policy, as a trainer runs it (the tests above run
  # passive, beside the exhaustive sweeps); 15 steps per median: the host's
  # CPU speed varies from run to run.
  env -u OMP_WAIT_POLICY timeout 200 "$BIN/bench_offload" --fraction 0.5 --repeats 31 \
    > "$WORK/bench/offload.md" 2> "$WORK/bench/offload.log"
  note "offload bench (f = 0.5): rc=$? ($((SECONDS - start)) s)"
  cat "$WORK/bench/offload.md" >> "$SUMMARY"
  if [ -f "$OUT/shard.txt" ]; then
    { echo "### Sharded step over NCCL (tools/shard_device_round.sh, same machine, same session)"; echo;
      grep -vE '^(gpus|nccl|cpu|gpu|gpu_sr|memcheck|padded|packed|one_rank):' "$OUT/shard.txt"; } > "$WORK/bench/shard.md"
  fi
  start=$SECONDS
  # the paper's package (PyPI flashoptim 0.1.4) beside torch where $PAPER_SITE holds it
  PYTHONPATH=${PAPER_SITE:-} PYTHONUNBUFFERED=1 env -u OMP_WAIT_POLICY timeout 400 python3 tools/bench_report.py \
    --bench "$BIN/bench_gpu_step:${BENCH_FILTER:-/default/|^ceiling/}" ${PAPER_SITE:+--paper --paper-json "$WORK/bench/paper.json"} \
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

do_build() {
  stage_begin build
  local start=$SECONDS
  cmake --preset release -B "$WORK/build" -DFLASHOPTIM_BUILD_BENCHMARKS=ON > "$WORK/build/configure.log" 2>&1
  cmake --build "$WORK/build" -j "$(nproc)" -- -k 0 > "$WORK/build/build.log" 2>&1
  note "build: rc=$? ($((SECONDS - start)) s)"
  grep -m10 -B2 " error" "$WORK/build/build.log" >> "$SUMMARY"
  mkdir -p "$WORK/bin"
  find "$WORK/build" -type f -perm -u+x \( -name 'test_*' -o -name 'bench_*' -o -name 'flashoptim_*' \) \
    -exec cp {} "$WORK/bin/" \;
  BIN=$WORK/bin
  stage_end
}

do_python() {
  stage_begin python
  local start=$SECONDS d=$WORK/python
  CUDACXX=${CUDACXX:-/usr/local/cuda/bin/nvcc} python3 -m pip wheel -v --no-build-isolation --no-deps -w "$d/wheel" \
    -C build-dir="$d/skbuild" . > "$d/wheel.log" 2>&1
  note "wheel: rc=$? ($((SECONDS - start)) s)"
  PIP_BREAK_SYSTEM_PACKAGES=1 python3 -m pip install -q --no-deps --force-reinstall "$d"/wheel/*.whl > "$d/install.log" 2>&1
  start=$SECONDS
  (cd /tmp && timeout 300 python3 -m pytest -q -rs "$OLDPWD/python/tests") > "$d/pytest.log" 2>&1
  note "pytest: rc=$? ($((SECONDS - start)) s) $(tail -1 "$d/pytest.log")"
  start=$SECONDS
  PYTHONPATH=${PAPER_SITE:-} PYTHONUNBUFFERED=1 timeout 400 python3 python/bench/gpt_quality.py run --seeds 0,1,2,3 \
    --configs flash_release --out "$d/gpt" > "$d/gpt_release.log" 2>&1
  note "gpt flash_release, 4 seeds: rc=$? ($((SECONDS - start)) s)"
  start=$SECONDS
  PYTHONPATH=${PAPER_SITE:-} PYTHONUNBUFFERED=1 timeout 300 python3 python/bench/gpt_quality.py time --out "$d/gpt" \
    > "$d/gpt_time.log" 2>&1
  note "gpt step timing: rc=$? ($((SECONDS - start)) s)"
  grep -v "^  " "$d/gpt_release.log" "$d/gpt_time.log" | tail -12 >> "$SUMMARY"
  stage_end
}

for s in "$@"; do
  case $s in
    build) do_build ;;
    python) do_python ;;
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
