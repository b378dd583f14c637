#!/bin/bash
# Issue 16, CPU, on the development machine (2 vCPUs, AVX2): DeepSpeed 0.16.4's CPU-Adam (ds_harness2.cpp
# here: Step_AVX<8> then Step_1, what its ds_adam_step runs; built with g++ -O3 -march=native -fopenmp
# -D__AVX256__ against docs/cpu.md's stub torch/extension.h) beside bench_cpu_step's AVX2 path, interleaved
# rounds, the two programs' order reversed every other round. 2 threads on 2^24 parameters, then one thread
# on 32768 (L2). Usage (repo root): DS=/tmp/ds/ds_avx2 BENCH=build/release/bench/cpu/bench_cpu_step OUT=dir cpu_round.sh [ROUNDS]
set -u
rounds=${1:-5}
export LD_LIBRARY_PATH=$PWD/.dev/bin/lib OMP_WAIT_POLICY=passive
layouts=${LAYOUTS:-'adamw_rounded_split_default_states|adamw_fp32|adamw_bf16_bf16_states|adamw_bf16_ulp8_fp8_states|adamw_bf16_ulp8_fp16_sr_states'}
lscpu | grep -E "Model name|CPU family|Model:|^CPU\(s\)|Thread|L2|L3" > "$OUT/cpu.txt"
ds() { OMP_NUM_THREADS=$1 "$DS" "$2" "$3" | sed 's/^/deepspeed /'; }
ours() { FLASHOPTIM_BENCH_PARAMS=$((1 << $2)) OMP_NUM_THREADS=$1 "$BENCH" --benchmark_filter="cpu_step/($layouts)/avx2/threads:$1/" \
           --benchmark_min_time=$3 2>&1 | grep -E "^cpu_step" | awk '{print "ours", $1, $NF}'; }
for r in $(seq "$rounds"); do
  echo "round $r $(date -u +%H:%M:%S) load $(cut -d' ' -f1 /proc/loadavg)" >> "$OUT/t2.txt"
  if [ $((r % 2)) = 1 ]; then ds 2 24 20; ours 2 24 0.5; else ours 2 24 0.5; ds 2 24 20; fi >> "$OUT/t2.txt"
done
for r in $(seq "$rounds"); do
  echo "round $r $(date -u +%H:%M:%S) load $(cut -d' ' -f1 /proc/loadavg)" >> "$OUT/t1_l2.txt"
  if [ $((r % 2)) = 1 ]; then ds 1 15 3000; ours 1 15 0.3; else ours 1 15 0.3; ds 1 15 3000; fi >> "$OUT/t1_l2.txt"
done
