#!/usr/bin/env bash
# SPDX-FileCopyrightText: 2026 flashoptim authors
# SPDX-License-Identifier: Apache-2.0
#
# The sharding round on a machine with two (or more) H200s (nvidia-h200-x2):
# the shard tests on the CPU and one GPU, compute-sanitizer memcheck on the
# GPU test's small cases, the NCCL step with both flat layouts verified bit
# for bit against an unsharded replica (test_shard_nccl), then timed
# (bench_shard_nccl: step phases, reduce-scatter / all-gather bus bandwidth,
# 1 GiB collectives as in docs/performance-method.md), and the ZeRO-2
# example (examples/shard). A short table comes last.
#
#   BIN=<folder with the built executables> OUT=<log folder> tools/shard_device_round.sh
#
# BIN defaults to build/shard (configure here with -DCMAKE_CUDA_ARCHITECTURES=90
# and build test_shard_cpu test_shard_gpu test_shard_nccl bench_shard_nccl
# flashoptim_example_shard_step; the
# executables link CUDA statically and NCCL dynamically). When BIN lacks
# them, this script builds them with the release preset, pointing CMake at
# the NCCL of PyTorch's wheel (nvidia-nccl-cu13); if the full configure
# fails there (no doctest, say), it builds the example alone (no verification
# or timing then).
# NCCL at run time: the wheel's lib folder goes first on LD_LIBRARY_PATH.
# NVLink multicast stays off: NCCL_NVLS_ENABLE=0 for everything below.
# Writes two files under $OUT/shard: summary.txt and logs.tgz. About 2-3
# minutes with prebuilt executables.
set -u
export NCCL_NVLS_ENABLE=0
export NCCL_DEBUG=${NCCL_DEBUG:-WARN}
BIN=${BIN:-build/shard}
FINAL=${OUT:-out}/shard
WORK=${WORK:-/tmp/flashoptim_shard_round}
mkdir -p "$FINAL" "$WORK"
summary=$WORK/summary.txt
: > "$summary"
note() { echo "$*" | tee -a "$summary"; }
pack() {
  tar czf "$FINAL/logs.tgz" -C "$(dirname "$WORK")" "$(basename "$WORK")" 2> /dev/null
  cp "$summary" "$FINAL/summary.txt"
}
find_bin() { find "$BIN" build/release build/shard-device -name "$1" -type f -perm -u+x 2> /dev/null | head -1; }

# ---- machine and NCCL
nvidia-smi -L > "$WORK/gpu.txt" 2>&1
nvidia-smi topo -m >> "$WORK/gpu.txt" 2>&1
note "gpus: $(nvidia-smi -L 2> /dev/null | wc -l) ($(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2> /dev/null | head -1))"
NCCL_DIR=$(python3 -c 'import nvidia.nccl as m; print(list(m.__path__)[0])' 2> /dev/null)
if [ -n "$NCCL_DIR" ] && [ -d "$NCCL_DIR/lib" ]; then
  export LD_LIBRARY_PATH="$NCCL_DIR/lib:${LD_LIBRARY_PATH:-}"
  note "nccl: $NCCL_DIR ($(ls "$NCCL_DIR/lib" | tr '\n' ' '); headers: $([ -f "$NCCL_DIR/include/nccl.h" ] && echo yes || echo no))"
else
  note "nccl: PyTorch's nvidia-nccl wheel not found; relying on the default library path"
fi

# ---- executables: carried, or built here
if [ -z "$(find_bin test_shard_nccl)" ] || [ -z "$(find_bin bench_shard_nccl)" ] || [ -z "$(find_bin test_shard_gpu)" ]; then
  start=$SECONDS
  nccl_root=()
  [ -n "$NCCL_DIR" ] && nccl_root=(-DFLASHOPTIM_NCCL_ROOT="$NCCL_DIR")
  if cmake --preset release "${nccl_root[@]}" > "$WORK/build.log" 2>&1; then
    cmake --build build/release -j "$(nproc)" --target test_shard_cpu test_shard_gpu test_shard_nccl bench_shard_nccl \
      flashoptim_example_shard_step \
      >> "$WORK/build.log" 2>&1
    note "build (release preset): rc=$? ($((SECONDS - start)) s)"
  else
    note "configure (release preset) failed: $(grep -m1 -E 'CMake Error|Could not find' "$WORK/build.log"); building the example alone"
    cmake -S . -B build/shard-device -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 \
      -DFLASHOPTIM_BUILD_TESTS=OFF -DFLASHOPTIM_BUILD_BENCHMARKS=OFF "${nccl_root[@]}" >> "$WORK/build.log" 2>&1 &&
      cmake --build build/shard-device -j "$(nproc)" --target flashoptim_example_shard_step >> "$WORK/build.log" 2>&1
    note "build (example alone): rc=$? ($((SECONDS - start)) s)"
  fi
  pack
fi

run() {  # label, timeout, executable name, args...
  local label=$1 t=$2 name=$3
  shift 3
  local exe
  exe=$(find_bin "$name")
  if [ -z "$exe" ]; then
    note "$label: NOT BUILT"
    eval "rc_${label//[^a-z0-9]/_}=nb"
    return
  fi
  local start=$SECONDS
  timeout "$t" "$exe" "$@" > "$WORK/$label.log" 2>&1
  local rc=$?
  eval "rc_${label//[^a-z0-9]/_}=$rc"
  note "$label: rc=$rc ($((SECONDS - start)) s) $(grep -E '^\[doctest\] (test cases|assertions)|^VERIFY|^RESULT|ERROR SUMMARY' "$WORK/$label.log" | tr '\n' ' ')"
}

# ---- tests
run cpu 120 test_shard_cpu
run gpu 180 test_shard_gpu
# stochastic rounding of shards on the GPU alone (also part of the run above)
run gpu_sr 120 test_shard_gpu -tc="*stochastic*"
pack
if command -v compute-sanitizer > /dev/null && [ -n "$(find_bin test_shard_gpu)" ]; then
  start=$SECONDS
  timeout 100 compute-sanitizer --tool memcheck --error-exitcode 3 "$(find_bin test_shard_gpu)" \
    -tc="C18 GPU (small)*,GPU: per-rank*" > "$WORK/memcheck.log" 2>&1
  rc_memcheck=$?
  note "memcheck (small shard plans, statistics, clip): rc=$rc_memcheck ($((SECONDS - start)) s) $(grep -E 'ERROR SUMMARY' "$WORK/memcheck.log" | tail -1)"
else
  rc_memcheck=na
  note "memcheck: compute-sanitizer or test_shard_gpu missing"
fi
pack

# ---- the NCCL step: 2 ranks (every GPU), both layouts, verified, then timed;
# a small 1-rank run (NCCL with one rank); the ZeRO-2 example
run verify_padded 150 test_shard_nccl --layout padded --require-ranks 2
pack
run verify_packed 150 test_shard_nccl --layout packed --require-ranks 2
pack
run verify_one_rank 60 test_shard_nccl --ranks 1 --small
pack
run padded 150 bench_shard_nccl --layout padded --require-ranks 2
pack
run packed 150 bench_shard_nccl --layout packed --bench-mib 0 --require-ranks 2
pack
run one_rank 60 bench_shard_nccl --ranks 1 --small
pack
run example 60 flashoptim_example_shard_step
pack

# ---- table
field() { grep -m1 '^RESULT' "$WORK/$1.log" 2> /dev/null | tr ' ' '\n' | grep "^$2=" | cut -d= -f2; }
verified() { grep -m1 '^VERIFY' "$WORK/verify_$1.log" 2> /dev/null | awk '{print $2}' | tr -d ':'; }
{
  echo
  echo "| test | rc |"
  echo "|---|---|"
  echo "| test_shard_cpu (C18 on the CPU) | ${rc_cpu:-?} |"
  echo "| test_shard_gpu (C18 on one GPU) | ${rc_gpu:-?} |"
  echo "| test_shard_gpu stochastic-rounding case | ${rc_gpu_sr:-?} |"
  echo "| memcheck, test_shard_gpu small plans + statistics | ${rc_memcheck:-?} |"
  echo "| flashoptim_example_shard_step (ZeRO-2 example) | ${rc_example:-?} |"
  echo
  echo "| layout | rc (test, bench) | verify | ranks | M params | state B/param/rank | step ms | local step ms | reduce-scatter alone ms (bus GB/s) | all-gather alone ms (bus GB/s) |"
  echo "|---|---|---|---|---|---|---|---|---|---|"
  for l in padded packed one_rank; do
    [ -f "$WORK/$l.log" ] || continue
    echo "| $l | $(eval echo "\${rc_verify_$l:-?}"), $(eval echo "\${rc_$l:-?}") | $(verified $l) | $(field $l ranks) | $(field $l params_M) |" \
      "$(field $l state_B_per_param) | $(field $l step_ms) | $(field $l local_ms) |" \
      "$(field $l rs_ms) ($(field $l rs_busbw)) | $(field $l ag_ms) ($(field $l ag_busbw)) |"
  done
  echo
  echo "1 GiB alone: reduce-scatter $(field padded rs1g_ms) ms ($(field padded rs1g_busbw) GB/s bus)," \
    "all-gather $(field padded ag1g_ms) ms ($(field padded ag1g_busbw) GB/s bus); docs/performance-method.md: 2.07 / 2.01 ms, about 265 GB/s"
} | tee -a "$summary"
pack
