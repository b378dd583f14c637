#!/bin/bash
# Round C2 (seventeenth session, H200): 16 elements per thread (and 512 threads) for every layout that misses a target (ab_n16_{a,b,c,d}.cu,
# each binary its layouts' default policy beside the candidates). Three passes of 15 interleaved rounds
# per binary, the binaries' order reversed in pass 2.
# Binaries: $R/.dev/h/c2/. Usage (repo root): OUT=out bench/results/2026-12-04/session17/round_c2.sh
set -u
R=$(pwd); export LD_LIBRARY_PATH=$R/.dev/bin/lib; L=/tmp/logs_c2; mkdir -p $L
B=$R/.dev/h/c2
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw,temperature.gpu --format=csv,noheader
for pass in 1 2 3; do
  order="a b c d"; [ $pass = 2 ] && order="d c b a"
  for b in $order; do
    s=$SECONDS; timeout 150 $B/abn_$b all 15 > $L/abn_${b}_$pass.txt 2>&1
    echo "abp $b pass $pass rc=$? ($((SECONDS-s)) s)"; sed "s/^/  $b$pass /" $L/abn_${b}_$pass.txt
  done
done
tar czf $OUT/c2.tgz -C $L . ; echo "done $SECONDS s"
