#!/bin/bash
export OMP_WAIT_POLICY=passive OMP_NUM_THREADS=2
for r in 1 2 3 4 5; do
  echo "round $r $(date -u +%H:%M:%S) load $(cut -d' ' -f1 /proc/loadavg)"
  /tmp/ds/ds_harness
  /work/main/build/lead/bench/cpu/bench_cpu_step --benchmark_filter='cpu_step/(adamw_rounded_split_default_states|adamw_bf16_bf16_states|adamw_fp32)/avx512/threads:2' --benchmark_min_time=0.5 2>&1 | grep -E "^cpu_step" | awk '{print $1, $NF}'
done
