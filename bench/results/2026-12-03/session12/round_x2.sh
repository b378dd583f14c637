#!/bin/bash
# Issue 16, CPU, the H200 machine's host (16-core Xeon): where the default layout's time goes
# at 16 threads, and a prefetch for the grouped layouts. Binaries (built on the development
# machine, `c++ -I tests -I <include> -O3 -DNDEBUG -fopenmp bench/cpu/bench_cpu_step.cpp
# -lbenchmark`): base = this tree's headers; pfN = the same with the grouped layouts' block
# loop prefetching the block N blocks ahead (grouped_prefetch.patch here). ds = round_x1's.
# Usage (repo root): BIN=.dev/x12b DS=.dev/x12/ds_harness_spr OUT=out round_x2.sh
set -u
export LD_LIBRARY_PATH=$PWD/.dev/bin/lib OMP_WAIT_POLICY=passive
big=$((1 << 26))
# A: prefetch distance, 16 and 8 threads, interleaved
for r in 1 2 3; do
  for b in base pf1 pf2 pf4; do
    echo "round $r $b $(date -u +%H:%M:%S)" >> "$OUT/a.txt"
    FLASHOPTIM_BENCH_PARAMS=$big OMP_NUM_THREADS=16 "$BIN/bench_$b" \
      --benchmark_filter='cpu_step/adamw_rounded_split_default_states/avx512/threads:(16|8)/' --benchmark_min_time=0.5 2>&1 |
      grep -E "^cpu_step" | awk -v b="$b" '{print b, $1, $NF}' >> "$OUT/a.txt"
  done
  OMP_NUM_THREADS=16 "$DS" 26 20 | grep bf16/fp32 | sed 's/^/deepspeed /' >> "$OUT/a.txt"
done
# B: scaling of the base binary, and the memory ceiling (28 B per parameter)
FLASHOPTIM_BENCH_PARAMS=$big OMP_NUM_THREADS=16 "$BIN/bench_base" \
  --benchmark_filter='cpu_step/(adamw_rounded_split_default_states|adamw_fp32)/avx512/|memory_ceiling_28B' --benchmark_min_time=0.3 \
  > "$OUT/b.txt" 2>&1
# C: one core, 32768 parameters (L2), ours and DeepSpeed alternated
for r in 1 2 3; do
  echo "round $r $(date -u +%H:%M:%S)" >> "$OUT/c.txt"
  OMP_NUM_THREADS=1 "$DS" 15 10000 | sed 's/^/deepspeed /' >> "$OUT/c.txt"
  FLASHOPTIM_BENCH_PARAMS=32768 OMP_NUM_THREADS=1 "$BIN/bench_base" \
    --benchmark_filter='cpu_step/(adamw_rounded_split_default_states|adamw_fp32|adamw_bf16_bf16_states)/avx512/threads:1/' \
    --benchmark_min_time=0.3 2>&1 | grep -E "^cpu_step" | awk '{print "ours", $1, $NF}' >> "$OUT/c.txt"
done
