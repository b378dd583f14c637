#!/bin/bash
# Round A1 (fifteenth session, H200): the softsign quotient corrected once from rcp.approx and the
# range-checked second-moment code without its sign test.
#   1. A/B: ab_soft.cu against 8b60ca5's headers (abs_old) and this tree's (abs_new), alternated, three
#      passes of 15 interleaved rounds;
#   2. the GPU test binaries the change reaches (build/release, Release, sm_90), then memcheck of
#      parity adamw_default.
# Binaries: $R/.dev/h/a.tar.xz (a/). Usage (repo root): OUT=out .dev/h/round_a1.sh
set -u
R=$(pwd); export LD_LIBRARY_PATH=$R/.dev/bin/lib; L=/tmp/logs_a1; mkdir -p $L /tmp/b
tar -xJf $R/.dev/h/a.tar.xz -C /tmp/b; B=/tmp/b/a
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw,temperature.gpu --format=csv,noheader
for pass in 1 2 3; do
  for b in old new; do
    s=$SECONDS; timeout 120 $B/abs_$b all 15 > $L/ab_${b}_$pass.txt 2>&1
    echo "ab $b pass $pass rc=$? ($((SECONDS-s)) s)"; sed "s/^/  $b$pass /" $L/ab_${b}_$pass.txt
  done
done
for t in test_gpu_exhaustive test_gpu_step_parity test_gpu_finite_property test_gpu_step_inputs test_gpu_fp8_step test_gpu_optimizer; do
  s=$SECONDS; timeout 240 $B/$t > $L/$t.log 2>&1; rc=$?
  echo "$t rc=$rc ($((SECONDS-s)) s) $(grep -a 'test cases' $L/$t.log | tr -s ' ')"
  [ $rc -ne 0 ] && grep -a -m3 -B2 -A12 "ERROR\|CRASHED" $L/$t.log | head -40
done
s=$SECONDS; timeout 100 compute-sanitizer --tool memcheck --error-exitcode 3 $B/test_gpu_step_parity -tc='parity adamw_default*' > $L/memcheck_default.log 2>&1
echo "memcheck parity adamw_default rc=$? ($((SECONDS-s)) s) $(grep -E 'ERROR SUMMARY' $L/memcheck_default.log | tail -1) $(grep -a 'test cases' $L/memcheck_default.log | tr -s ' ')"
tar czf $OUT/a1.tgz -C $L . ; echo "done $SECONDS s"
