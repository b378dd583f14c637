#!/bin/bash
# The portable CPU path (the scalar tile step, cpu::step_tile_at) before (HEAD 3743e3f's bench_cpu_step, its tile
# loops unrolled by GCC's "unroll 32") and after (this tree: rolled), one thread, alternated, five passes.
# Usage: portable.sh OLD_BINARY NEW_BINARY OUT_DIR
set -u
F='^cpu_step/(adamw_rounded_split_default_states|adamw_bf16_ulp8_default_states|adamw_fp32|adamw_bf16_ulp8_fp8_states|lion_bf16_ulp8_default_momentum)/portable/threads:1/'
for pass in 1 2 3 4 5; do
  for b in old new; do
    bin=$1; [ $b = new ] && bin=$2
    $bin --benchmark_filter="$F" --benchmark_min_time=1 > $3/${b}_$pass.txt 2>&1
  done
done
