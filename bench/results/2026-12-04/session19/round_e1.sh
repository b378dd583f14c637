#!/bin/bash
# Round E1 (nineteenth session, H200): the zero-tolerant second attempt. test_gpu_zero_gradients
# (every range-checked layout: GPU == CPU bytes and the redo counts), then ab_zero2.cu built before
# (abz2_old) and after (abz2_new) the change, alternated over four passes each of 15 interleaved
# rounds. Binaries: $R/.dev/h/e1/. Usage (repo root): OUT=out bench/results/2026-12-04/session19/round_e1.sh
set -u
R=$(pwd); export LD_LIBRARY_PATH=$R/.dev/bin/lib; L=/tmp/logs_e1; mkdir -p $L
B=$R/.dev/h/e1
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.limit,temperature.gpu --format=csv > $L/smi.txt 2>&1
s=$SECONDS; timeout 300 $B/test_gpu_zero_gradients > $L/test_gpu_zero_gradients.log 2>&1; rc=$?
echo "test_gpu_zero_gradients rc=$rc ($((SECONDS-s)) s) $(grep -a 'test cases' $L/test_gpu_zero_gradients.log | tr -s ' ')"
[ $rc -ne 0 ] && grep -a -m3 -B2 -A14 "ERROR\|CRASHED" $L/test_gpu_zero_gradients.log | head -60
i=0
for b in abz2_old abz2_new abz2_new abz2_old abz2_old abz2_new abz2_new abz2_old; do
  i=$((i+1)); s=$SECONDS; timeout 120 $B/$b all 15 > $L/pass${i}_$b.txt 2>&1
  echo "== pass $i $b ($((SECONDS-s)) s)"; grep " med " $L/pass${i}_$b.txt
done
tar czf $OUT/e1.tgz -C $L . ; echo "done $SECONDS s"
