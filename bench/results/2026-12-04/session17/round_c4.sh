#!/bin/bash
# Round C4 (seventeenth session, H200): the tree with the paper's split's 512 x 16 tiles
# (tuning::default_step_policy's wide_tiles): every single-GPU test binary the step reaches but the
# exhaustive sweeps (no element function changed), then synccheck, racecheck and memcheck of the new
# long-run case and memcheck of the paper's split's parity suite and the reference layout's.
# Binaries: $R/.dev/h/e.tar.xz (e/). Usage (repo root): OUT=out bench/results/2026-12-04/session17/round_c4.sh
set -u
R=$(pwd); export LD_LIBRARY_PATH=$R/.dev/bin/lib PYTHONUNBUFFERED=1; L=/tmp/logs_c4; mkdir -p $L /tmp/b
tar -xJf $R/.dev/h/e.tar.xz -C /tmp/b; B=/tmp/b/e
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw,temperature.gpu --format=csv,noheader
for t in test_gpu_step_parity test_gpu_finite_property test_gpu_step_inputs test_gpu_fp8_step test_gpu_optimizer test_gpu_huge test_gpu_offload \
         test_gpu_optimizer_offload test_gpu_grad_pass test_gpu_optimizer_fp8 test_gpu_fp8_param test_gpu_extension test_gpu_optimizer_io; do
  s=$SECONDS; timeout 200 $B/$t > $L/$t.log 2>&1; rc=$?
  echo "$t rc=$rc ($((SECONDS-s)) s) $(grep -a 'test cases' $L/$t.log | tr -s ' ')"
  [ $rc -ne 0 ] && grep -a -m3 -B2 -A12 "ERROR\|CRASHED" $L/$t.log | head -40
done
for tool in synccheck racecheck memcheck; do
  s=$SECONDS
  timeout 150 compute-sanitizer --tool $tool --error-exitcode 3 $B/test_gpu_step_parity -tc="parity: the paper's split's 512 x 16 tiles\, long runs" > $L/san_${tool}_wide.log 2>&1
  echo "$tool wide rc=$? ($((SECONDS-s)) s) $(grep -E 'SUMMARY' $L/san_${tool}_wide.log | tail -1) $(grep -a 'test cases' $L/san_${tool}_wide.log | tr -s ' ')"
done
for tc in 'parity adamw_default' 'parity adamw_reference*'; do
  n=$(echo "$tc" | tr -dc 'a-z_'); s=$SECONDS
  timeout 120 compute-sanitizer --tool memcheck --error-exitcode 3 $B/test_gpu_step_parity -tc="$tc" > $L/memcheck_$n.log 2>&1
  echo "memcheck $tc rc=$? ($((SECONDS-s)) s) $(grep -E 'ERROR SUMMARY' $L/memcheck_$n.log | tail -1) $(grep -a 'test cases' $L/memcheck_$n.log | tr -s ' ')"
done
tar czf $OUT/c4.tgz -C $L . ; echo "done $SECONDS s"
