#!/bin/bash
# Round E2 (nineteenth session, H200): test_gpu_zero_gradients, then ab_zero3.cu (the zero-tolerant
# attempt on and off per layout and tile shape, one binary) over four passes of 15 interleaved
# rounds. Binaries: $R/.dev/h/e2/. Usage (repo root): OUT=out bench/results/2026-12-04/session19/round_e2.sh
set -u
R=$(pwd); export LD_LIBRARY_PATH=$R/.dev/bin/lib; L=/tmp/logs_e2; mkdir -p $L
B=$R/.dev/h/e2
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.limit,temperature.gpu --format=csv > $L/smi.txt 2>&1
s=$SECONDS; timeout 300 $B/test_gpu_zero_gradients > $L/test_gpu_zero_gradients.log 2>&1; rc=$?
echo "test_gpu_zero_gradients rc=$rc ($((SECONDS-s)) s) $(grep -a 'test cases' $L/test_gpu_zero_gradients.log | tr -s ' ')"
[ $rc -ne 0 ] && grep -a -m4 -B2 -A14 "ERROR\|CRASHED" $L/test_gpu_zero_gradients.log | head -80
for i in 1 2 3 4; do
  s=$SECONDS; timeout 150 $B/abz3 all 15 > $L/pass${i}_abz3.txt 2>&1
  echo "== pass $i ($((SECONDS-s)) s)"; grep " med " $L/pass${i}_abz3.txt
done
tar czf $OUT/e2.tgz -C $L . ; echo "done $SECONDS s"
