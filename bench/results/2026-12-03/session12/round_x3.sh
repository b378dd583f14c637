#!/bin/bash
# Probe (not a candidate: wrong values, same operation count otherwise): is the AVX-512 divider
# what bounds the default layout's CPU step on the H200 host's Xeon? bench_cpu_step (as
# round_x2's base) against the same with the momentum decode's division as a multiply (nd1) and
# with that, the softsign encode's and Adam's m / d as multiplies (nd3; divider_probe.patch).
# One core, 32768 parameters (L2), 7 interleaved rounds.
# Usage (repo root): BIN=.dev/x12c OUT=out round_x3.sh
set -u
export LD_LIBRARY_PATH=$PWD/.dev/bin/lib OMP_WAIT_POLICY=passive
which perf > "$OUT/tools.txt" 2>&1
for r in 1 2 3 4 5 6 7; do
  for b in base nd1 nd3; do
    FLASHOPTIM_BENCH_PARAMS=32768 OMP_NUM_THREADS=1 "$BIN/bench_$b" \
      --benchmark_filter='cpu_step/(adamw_rounded_split_default_states|adamw_bf16_ulp8_default_states)/avx512/threads:1/' \
      --benchmark_min_time=0.3 2>&1 | grep -E "^cpu_step" | awk -v b="$b" -v r="$r" '{print r, b, $1, $NF}' >> "$OUT/x3.txt"
  done
  grep MHz /proc/cpuinfo | head -2 >> "$OUT/x3.txt"
done
