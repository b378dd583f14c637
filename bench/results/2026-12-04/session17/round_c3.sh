#!/bin/bash
# Round C3 (seventeenth session, H200): 512 threads x 16 elements (1 block per SM) for every layout (ab_t512_{e,f,g}.cu,
# each binary its layouts' default policy beside the candidates). Three passes of 15 interleaved rounds
# per binary, the binaries' order reversed in pass 2.
# Binaries: $R/.dev/h/c3/. Usage (repo root): OUT=out bench/results/2026-12-04/session17/round_c3.sh
set -u
R=$(pwd); export LD_LIBRARY_PATH=$R/.dev/bin/lib; L=/tmp/logs_c3; mkdir -p $L
B=$R/.dev/h/c3
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw,temperature.gpu --format=csv,noheader
for pass in 1 2 3; do
  order="e f g"; [ $pass = 2 ] && order="g f e"
  for b in $order; do
    s=$SECONDS; timeout 150 $B/abt_$b all 15 > $L/abt_${b}_$pass.txt 2>&1
    echo "abp $b pass $pass rc=$? ($((SECONDS-s)) s)"; sed "s/^/  $b$pass /" $L/abt_${b}_$pass.txt
  done
done
tar czf $OUT/c3.tgz -C $L . ; echo "done $SECONDS s"
