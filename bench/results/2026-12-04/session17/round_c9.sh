#!/bin/bash
# Round C9 (seventeenth session, H200): test_gpu_step_parity built from the final tree (after review
# commit 778998c reformatted the new static_asserts and renamed a trait of the policy).
# Binary: $R/.dev/h/g/. Usage (repo root): OUT=out bench/results/2026-12-04/session17/round_c9.sh
set -u
R=$(pwd); export LD_LIBRARY_PATH=$R/.dev/bin/lib; L=/tmp/logs_c9; mkdir -p $L
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw,temperature.gpu --format=csv,noheader
s=$SECONDS; timeout 300 $R/.dev/h/g/test_gpu_step_parity > $L/test_gpu_step_parity.log 2>&1; rc=$?
echo "test_gpu_step_parity rc=$rc ($((SECONDS-s)) s) $(grep -a 'test cases' $L/test_gpu_step_parity.log | tr -s ' ')"
tar czf $OUT/c9.tgz -C $L . ; echo "done $SECONDS s"
