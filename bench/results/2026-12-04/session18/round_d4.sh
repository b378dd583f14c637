#!/bin/bash
# Round D4 (eighteenth session, H200): ab_fp16nz.cu, four passes of 15 interleaved rounds: fp16 +
# int8 with and without the exact zeros of its gradients, at 256 x 8 and 512 x 16.
# Usage (repo root): OUT=out bench/results/2026-12-04/session18/round_d4.sh
set -u
R=$(pwd); export LD_LIBRARY_PATH=$R/.dev/bin/lib; L=/tmp/logs_d4; mkdir -p $L
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.limit,temperature.gpu --format=csv > $L/smi.txt 2>&1
for i in 1 2 3 4; do
  s=$SECONDS; $R/.dev/h/d4/abnz all 15 > $L/pass${i}_abnz.txt 2>&1
  echo "== pass $i ($((SECONDS-s)) s)"; grep " med " $L/pass${i}_abnz.txt
done
tar czf $OUT/d4.tgz -C $L . ; echo "done $SECONDS s"
