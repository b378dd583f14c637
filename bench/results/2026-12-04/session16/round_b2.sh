#!/bin/bash
# Round B2 (sixteenth session, H200): the GPU tests the change reaches, on this tree (build/release,
# Release, sm_90): the exhaustive sweeps (floor_word and the code elements on every fp32 input), step
# parity, the finite property, step inputs, fp8 step and the optimizer; memcheck of parity adamw_default.
# Binaries: $R/.dev/h/b.tar.xz (b/). Usage (repo root): OUT=out bench/results/2026-12-04/session16/round_b2.sh
set -u
R=$(pwd); export LD_LIBRARY_PATH=$R/.dev/bin/lib; L=/tmp/logs_b2; mkdir -p $L /tmp/b
tar -xJf $R/.dev/h/b.tar.xz -C /tmp/b; B=/tmp/b/b
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw,temperature.gpu --format=csv,noheader
for t in test_gpu_exhaustive test_gpu_step_parity test_gpu_finite_property test_gpu_step_inputs test_gpu_fp8_step test_gpu_optimizer; do
  s=$SECONDS; timeout 280 $B/$t > $L/$t.log 2>&1; rc=$?
  echo "$t rc=$rc ($((SECONDS-s)) s) $(grep -a 'test cases' $L/$t.log | tr -s ' ')"
  [ $rc -ne 0 ] && grep -a -m3 -B2 -A12 "ERROR\|CRASHED" $L/$t.log | head -40
done
grep -a 'floor word\|softsign int8\|sqrt uint8' $L/test_gpu_exhaustive.log
s=$SECONDS; timeout 100 compute-sanitizer --tool memcheck --error-exitcode 3 $B/test_gpu_step_parity -tc='parity adamw_default*' > $L/memcheck_default.log 2>&1
echo "memcheck parity adamw_default rc=$? ($((SECONDS-s)) s) $(grep -E 'ERROR SUMMARY' $L/memcheck_default.log | tail -1) $(grep -a 'test cases' $L/memcheck_default.log | tr -s ' ')"
tar czf $OUT/b2.tgz -C $L . ; echo "done $SECONDS s"
