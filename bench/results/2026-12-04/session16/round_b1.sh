#!/bin/bash
# Round B1 (sixteenth session, H200): the codes' floor as FADD.RM on a biased word and the rounded split's
# encode without its NaN select in the range-checked attempt. A/B: ab_floor.cu against b46fb85's headers
# (abf_old) and this tree's (abf_new), alternated, three passes of 15 interleaved rounds (the first pass
# old first, then new first, then old first).
# Binaries: $R/.dev/h/a/. Usage (repo root): OUT=out bench/results/2026-12-04/session16/round_b1.sh
set -u
R=$(pwd); export LD_LIBRARY_PATH=$R/.dev/bin/lib; L=/tmp/logs_b1; mkdir -p $L
B=$R/.dev/h/a
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw,temperature.gpu --format=csv,noheader
for pass in 1 2 3; do
  order="old new"; [ $pass = 2 ] && order="new old"
  for b in $order; do
    s=$SECONDS; timeout 150 $B/abf_$b all 15 > $L/ab_${b}_$pass.txt 2>&1
    echo "ab $b pass $pass rc=$? ($((SECONDS-s)) s)"; sed "s/^/  $b$pass /" $L/ab_${b}_$pass.txt
  done
done
tar czf $OUT/b1.tgz -C $L . ; echo "done $SECONDS s"
