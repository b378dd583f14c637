#!/bin/bash
# Round N6: the refactor (run_chunk_team sizes its own team): the off-load tests, memcheck, bench, the example.
# memcheck of the team cases, and bench_offload (paired) twice.
export LD_LIBRARY_PATH=$PWD/.dev/bin/lib
D=.dev/off6
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
for t in test_gpu_offload test_gpu_optimizer_offload; do
  s=$SECONDS; timeout 200 $D/$t > $OUT/$t.log 2>&1; echo "$t rc=$? ($((SECONDS-s)) s) $(grep -a 'test cases' $OUT/$t.log) $(grep -a 'assertions' $OUT/$t.log)"
  grep -a -m3 -B3 -A8 "ERROR\|CRASHED" $OUT/$t.log | head -20
done
for spec in "test_gpu_offload|*chunk team*" "test_gpu_optimizer_offload|*chunk team*"; do
  IFS='|' read t tc <<< "$spec"; s=$SECONDS
  timeout 150 compute-sanitizer --tool memcheck --error-exitcode 3 $D/$t -tc="$tc" > $OUT/memcheck_$t.log 2>&1
  echo "memcheck $t [$tc] rc=$? ($((SECONDS-s)) s) $(grep -E 'ERROR SUMMARY' $OUT/memcheck_$t.log | tail -1) $(grep -a 'test cases' $OUT/memcheck_$t.log)"
done
for r in 1 2; do
  timeout 60 $D/bench_offload --fraction 0.5 --repeats 31 > $OUT/n5_$r.md; echo "bench $r rc=$? | $(grep -E 'whole off-load' $OUT/n5_$r.md | cut -d'|' -f3,4 | tr -d '*')"
done
timeout 60 $D/flashoptim_example_offload_gpu | tail -1; echo "example rc=${PIPESTATUS[0]}"
