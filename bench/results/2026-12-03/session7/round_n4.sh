#!/bin/bash
# Round N4: FP8 parameters with the default master (rounded_split): the GPU tests that now include it,
# memcheck on its cases, and bench_fp8_param (its bf16 + int8 rows now the rounded split).
export LD_LIBRARY_PATH=$PWD/.dev/bin/lib
D=.dev/fp8
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
for t in test_gpu_fp8_param test_gpu_fp8_step test_gpu_optimizer_fp8; do
  s=$SECONDS; timeout 200 $D/$t > $OUT/$t.log 2>&1; echo "$t rc=$? ($((SECONDS-s)) s) $(grep -a 'test cases' $OUT/$t.log)"
  grep -a -m3 -B3 -A8 "ERROR\|CRASHED" $OUT/$t.log | head -20
done
for spec in "test_gpu_fp8_param|*the CPU's bytes*" "test_gpu_fp8_step|*rounded-split*" "test_gpu_optimizer_fp8|*bf16 + int8 master*"; do
  IFS='|' read t tc <<< "$spec"; s=$SECONDS
  timeout 150 compute-sanitizer --tool memcheck --error-exitcode 3 $D/$t -tc="$tc" > $OUT/memcheck_$t.log 2>&1
  echo "memcheck $t [$tc] rc=$? ($((SECONDS-s)) s) $(grep -E 'ERROR SUMMARY' $OUT/memcheck_$t.log | tail -1) $(grep -a 'test cases' $OUT/memcheck_$t.log)"
done
s=$SECONDS; timeout 300 $D/bench_fp8_param $OUT/bench_fp8.csv > $OUT/bench_fp8.md 2> $OUT/bench_fp8.log; echo "bench_fp8_param rc=$? ($((SECONDS-s)) s)"
cat $OUT/bench_fp8.md
