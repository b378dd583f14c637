#!/bin/bash
# Round A8 (fifteenth session, H200): the review's mend (ulp_arithmetic::fraction through
# detail::quotient_from_reciprocal; its SASS differs only in which FFMA operand carries the sign):
# test_gpu_exhaustive (every (parameter, correction) pair of the ULP decode), test_gpu_step_parity.
# Binaries: $R/.dev/h/m.tar.xz (m/). Usage (repo root): OUT=out .dev/h/round_a8.sh
set -u
R=$(pwd); export LD_LIBRARY_PATH=$R/.dev/bin/lib; L=/tmp/logs_a8; mkdir -p $L /tmp/b8
tar -xJf $R/.dev/h/m.tar.xz -C /tmp/b8; B=/tmp/b8/m
for t in test_gpu_exhaustive test_gpu_step_parity; do
  s=$SECONDS; timeout 280 $B/$t > $L/$t.log 2>&1; rc=$?
  echo "$t rc=$rc ($((SECONDS-s)) s) $(grep -a 'test cases' $L/$t.log | tr -s ' ')"
  [ $rc -ne 0 ] && grep -a -m3 -B2 -A12 "ERROR\|CRASHED" $L/$t.log | head -40
done
tar czf $OUT/a8.tgz -C $L . ; echo "done $SECONDS s"
