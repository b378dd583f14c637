#!/bin/bash
# Issue 16, sixth CPU round: DeepSpeed 0.16.4's Step_AVX<8> (the harness of docs/cpu.md's
# recipe, /tmp/ds/ds_harness) beside bench_cpu_step before (54ca6c7) and after the plain
# layouts' prefetch, interleaved, 2 threads, 2^24 parameters. Usage: cpu_ds_vs_ours.sh BEFORE AFTER [ROUNDS]
export OMP_WAIT_POLICY=passive OMP_NUM_THREADS=2
before=$1; after=$2; rounds=${3:-7}
filter='cpu_step/(adamw_rounded_split_default_states|adamw_fp32|adamw_bf16_bf16_states)/avx512/threads:2/'
grep -m1 "model name" /proc/cpuinfo
for r in $(seq "$rounds"); do
  echo "round $r $(date -u +%H:%M:%S) load $(cut -d' ' -f1 /proc/loadavg)"
  /tmp/ds/ds_harness | sed 's/^/deepspeed /'
  for b in before after; do
    bin=$before; [ "$b" = after ] && bin=$after
    "$bin" --benchmark_filter="$filter" --benchmark_min_time=0.5 2>&1 | grep -E "^cpu_step" | awk -v b="$b" '{print b, $1, $NF}'
  done
done
