#!/bin/bash
# Round G4 (prepared in the twentieth session): ab_tiny.cu (the tiny-tolerant option off and on:
# dense, rows never touched, rows left idle; default layout and fp8 states; Lion as the control) over
# four passes of 15 interleaved rounds. Binary: $R/.dev/h/g4/abt.
# Usage (repo root): OUT=out bench/results/2026-12-04/session20/round_g4.sh
set -u
R=$(pwd); export LD_LIBRARY_PATH=$R/.dev/bin/lib; L=/tmp/logs_g4; mkdir -p $L
B=$R/.dev/h/g4
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.limit,temperature.gpu --format=csv > $L/smi.txt 2>&1
for i in 1 2 3 4; do
  s=$SECONDS; timeout 200 $B/abt all 15 > $L/pass${i}_abt.txt 2>&1
  echo "== pass $i ($((SECONDS-s)) s)"; grep " med " $L/pass${i}_abt.txt
done
tar czf $OUT/g4.tgz -C $L . ; echo "done $SECONDS s"
