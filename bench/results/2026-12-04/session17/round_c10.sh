#!/bin/bash
# Round C10 (seventeenth session, H200): test_gpu_exhaustive built from this session's tree (the
# element functions of the sixteenth session's review commit 36f754f, floor_code, which round B2 did
# not run: B2 ran 1eb7293's).
# Binary: $R/.dev/h/x/. Usage (repo root): OUT=out bench/results/2026-12-04/session17/round_c10.sh
set -u
R=$(pwd); export LD_LIBRARY_PATH=$R/.dev/bin/lib; L=/tmp/logs_c10; mkdir -p $L
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw,temperature.gpu --format=csv,noheader
s=$SECONDS; timeout 500 $R/.dev/h/x/test_gpu_exhaustive > $L/test_gpu_exhaustive.log 2>&1; rc=$?
echo "test_gpu_exhaustive rc=$rc ($((SECONDS-s)) s) $(grep -a 'test cases' $L/test_gpu_exhaustive.log | tr -s ' ')"
tar czf $OUT/c10.tgz -C $L . ; echo "done $SECONDS s"
