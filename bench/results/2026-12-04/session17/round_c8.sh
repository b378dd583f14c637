#!/bin/bash
# Round C8 (seventeenth session, H200, a new lease): ab_one_state.cu, three passes of 15 interleaved
# rounds (Lion and SGD momentum with the paper's split at 512 x 16 / 256 x 8 with 3 and 2 blocks per SM;
# the default AdamW with 3 / 4 stages).
# Binary: $R/.dev/h/c8/abo. Usage (repo root): OUT=out bench/results/2026-12-04/session17/round_c8.sh
set -u
R=$(pwd); export LD_LIBRARY_PATH=$R/.dev/bin/lib; L=/tmp/logs_c8; mkdir -p $L
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw,temperature.gpu --format=csv,noheader
for pass in 1 2 3; do
  s=$SECONDS; timeout 150 $R/.dev/h/c8/abo all 15 > $L/abo_one_$pass.txt 2>&1
  echo "abo pass $pass rc=$? ($((SECONDS-s)) s)"; sed "s/^/  $pass /" $L/abo_one_$pass.txt
done
tar czf $OUT/c8.tgz -C $L . ; echo "done $SECONDS s"
