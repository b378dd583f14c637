#!/bin/bash
# Round C1 (seventeenth session, H200): the step's shape re-measured (ab_policy_{ref,ulp,rest,turn}.cu,
# each binary its layouts' default policy beside the candidates). Three passes of 15 interleaved rounds
# per binary, the binaries' order reversed in pass 2.
# Binaries: $R/.dev/h/c1/. Usage (repo root): OUT=out bench/results/2026-12-04/session17/round_c1.sh
set -u
R=$(pwd); export LD_LIBRARY_PATH=$R/.dev/bin/lib; L=/tmp/logs_c1; mkdir -p $L
B=$R/.dev/h/c1
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw,temperature.gpu --format=csv,noheader
for pass in 1 2 3; do
  order="ref ulp rest turn"; [ $pass = 2 ] && order="turn rest ulp ref"
  for b in $order; do
    s=$SECONDS; timeout 150 $B/abp_$b all 15 > $L/abp_${b}_$pass.txt 2>&1
    echo "abp $b pass $pass rc=$? ($((SECONDS-s)) s)"; sed "s/^/  $b$pass /" $L/abp_${b}_$pass.txt
  done
done
tar czf $OUT/c1.tgz -C $L . ; echo "done $SECONDS s"
