#!/bin/bash
# Issue 16, CPU: DeepSpeed 0.16.4's CPU-Adam (Step_AVX<8>, ds_harness.cpp here, built with
# g++ 12 -O3 -march=sapphirerapids -fopenmp -D__AVX512__ against the stub torch/extension.h of
# docs/cpu.md's recipe) beside bench_cpu_step (release preset of this tree, AVX-512 path), on the
# H200 machine's host CPU: interleaved rounds at 16 and 8 threads on 2^26 parameters (the host's L3
# is 300 MiB: the default layout's 2^24 parameters, 210 MB, would fit), 2 threads on 2^24, then one
# core on 32768 parameters (L2). Usage (repo root): BIN=.dev/x12 OUT=out round_x1.sh [ROUNDS]
set -u
rounds=${1:-7}
export LD_LIBRARY_PATH=$PWD/.dev/bin/lib OMP_WAIT_POLICY=passive
lscpu | grep -E "Model name|^CPU\(s\)|Thread|Core|Socket|NUMA node|L2|L3|MHz" > "$OUT/cpu.txt"
grep -m1 flags /proc/cpuinfo | tr ' ' '\n' | grep -E "avx512|amx" | tr '\n' ' ' >> "$OUT/cpu.txt"; echo >> "$OUT/cpu.txt"
free -g >> "$OUT/cpu.txt"
layouts='adamw_rounded_split_default_states|adamw_bf16_ulp8_default_states|adamw_fp32|adamw_bf16_bf16_states|adamw_bf16_ulp8_fp8_states|adamw_bf16_ulp8_fp16_sr_states'
for t in 16 8 2; do
  log=$OUT/t$t.txt
  lg=26; [ "$t" = 2 ] && lg=24
  for r in $(seq "$rounds"); do
    echo "round $r $(date -u +%H:%M:%S) load $(cut -d' ' -f1 /proc/loadavg)" >> "$log"
    OMP_NUM_THREADS=$t "$BIN/ds_harness_spr" $lg 20 | sed 's/^/deepspeed /' >> "$log"
    FLASHOPTIM_BENCH_PARAMS=$((1 << lg)) OMP_NUM_THREADS=$t "$BIN/bench_cpu_step" --benchmark_filter="cpu_step/($layouts)/avx512/threads:$t/" \
      --benchmark_min_time=0.5 2>&1 | grep -E "^cpu_step" | awk '{print "ours", $1, $NF}' >> "$log"
  done
done
log=$OUT/t1_l2.txt
for r in $(seq "$rounds"); do
  echo "round $r $(date -u +%H:%M:%S) load $(cut -d' ' -f1 /proc/loadavg)" >> "$log"
  OMP_NUM_THREADS=1 "$BIN/ds_harness_spr" 15 10000 | sed 's/^/deepspeed /' >> "$log"
  FLASHOPTIM_BENCH_PARAMS=32768 OMP_NUM_THREADS=1 "$BIN/bench_cpu_step" --benchmark_filter="cpu_step/($layouts)/avx512/threads:1/" \
    --benchmark_min_time=0.3 2>&1 | grep -E "^cpu_step" | awk '{print "ours", $1, $NF}' >> "$log"
done
