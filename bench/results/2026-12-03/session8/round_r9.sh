#!/bin/bash
# Round R9: cpu::team_size shared by cpu::step and the chunk team: the off-load tests and memcheck.
export LD_LIBRARY_PATH=$PWD/.dev/bin/lib
D=.dev/r9
for t in test_gpu_offload test_gpu_optimizer_offload; do
  s=$SECONDS; timeout 200 $D/$t > $OUT/$t.log 2>&1; echo "$t rc=$? ($((SECONDS-s)) s) $(grep -a 'test cases' $OUT/$t.log | tr -s ' ')"
  grep -a -m3 -B3 -A8 "ERROR\|CRASHED" $OUT/$t.log | head -20
done
for t in test_gpu_offload test_gpu_optimizer_offload; do
  s=$SECONDS; timeout 150 compute-sanitizer --tool memcheck --error-exitcode 3 $D/$t -tc="*chunk team*" > $OUT/memcheck_$t.log 2>&1
  echo "memcheck $t rc=$? ($((SECONDS-s)) s) $(grep -E 'ERROR SUMMARY' $OUT/memcheck_$t.log | tail -1) $(grep -a 'test cases' $OUT/memcheck_$t.log | tr -s ' ')"
done
