#!/bin/bash
# Round H1 (twenty-first session): session20's round G1 over binaries built from this session's tree
# with the tiny-tolerant second attempt on in default_step_policy (every layout with the zero-tolerant
# attempt) and test_gpu_zero_gradients' idle-rows case expecting no exact step: every single-GPU test,
# the demo and the training check, the exhaustive sweeps of the proven fast paths (the lifts among
# them), compute-sanitizer over the zero-gradient and tiny-tolerant cases.
# Binaries: $TAR (default $R/.dev/h/g1on.tar.xz, f/; stripped, not committed).
# Usage (repo root): OUT=out bench/results/2026-12-05/session21/round_h1.sh
set -u
R=$(pwd); TAR=${TAR:-$R/.dev/h/g1on.tar.xz}; export LD_LIBRARY_PATH=$R/.dev/bin/lib PYTHONUNBUFFERED=1; L=${L:-/tmp/logs_h1}; mkdir -p $L /tmp/b
tar -xJf $TAR -C /tmp/b; B=/tmp/b/f
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw,temperature.gpu --format=csv,noheader
for t in test_gpu_zero_gradients test_gpu_step_parity test_gpu_finite_property test_gpu_step_inputs test_gpu_fp8_step test_gpu_optimizer \
         test_gpu_huge test_gpu_offload test_gpu_optimizer_offload test_gpu_grad_pass test_gpu_optimizer_fp8 test_gpu_fp8_param \
         test_gpu_extension test_gpu_optimizer_io; do
  s=$SECONDS; timeout 200 $B/$t > $L/$t.log 2>&1; rc=$?
  echo "$t rc=$rc ($((SECONDS-s)) s) $(grep -a 'test cases' $L/$t.log | tr -s ' ')"
  [ $rc -ne 0 ] && grep -a -m3 -B2 -A12 "ERROR\|CRASHED" $L/$t.log | head -40
done
s=$SECONDS; timeout 200 $B/test_shard_gpu > $L/test_shard_gpu.log 2>&1; echo "test_shard_gpu rc=$? ($((SECONDS-s)) s) $(grep -a 'test cases' $L/test_shard_gpu.log | tr -s ' ')"
s=$SECONDS; timeout 120 $B/flashoptim_demo > $L/demo.log 2>&1; echo "flashoptim_demo rc=$? ($((SECONDS-s)) s)"; tail -3 $L/demo.log
s=$SECONDS; timeout 90 $B/flashoptim_train --device gpu --steps 300 --configs fp32,bf16,flash --check > $L/train_check.log 2>&1; echo "flashoptim_train --check rc=$? ($((SECONDS-s)) s)"; tail -4 $L/train_check.log
s=$SECONDS; timeout 240 $B/test_gpu_exhaustive -tc="proven fast paths*" > $L/test_gpu_exhaustive_fast_paths.log 2>&1
echo "test_gpu_exhaustive (proven fast paths) rc=$? ($((SECONDS-s)) s) $(grep -a 'test cases' $L/test_gpu_exhaustive_fast_paths.log | tr -s ' ')"
grep -a "proven" $L/test_gpu_exhaustive_fast_paths.log | head -8
for tool in memcheck racecheck synccheck; do
  s=$SECONDS
  timeout 150 compute-sanitizer --tool $tool --error-exitcode 3 $B/test_gpu_zero_gradients -tc="zero gradients: other step policies" > $L/san_${tool}_zero.log 2>&1
  echo "$tool zero policies rc=$? ($((SECONDS-s)) s) $(grep -E 'SUMMARY' $L/san_${tool}_zero.log | tail -1) $(grep -a 'test cases' $L/san_${tool}_zero.log | tr -s ' ')"
done
s=$SECONDS
timeout 150 compute-sanitizer --tool memcheck --error-exitcode 3 $B/test_gpu_zero_gradients -tc="zero gradients: the tiny-tolerant*" > $L/san_memcheck_tiny.log 2>&1
echo "memcheck zero tiny rc=$? ($((SECONDS-s)) s) $(grep -E 'SUMMARY' $L/san_memcheck_tiny.log | tail -1) $(grep -a 'test cases' $L/san_memcheck_tiny.log | tr -s ' ')"
s=$SECONDS
timeout 150 compute-sanitizer --tool memcheck --error-exitcode 3 $B/test_gpu_zero_gradients -tc="zero gradients: the paper's split*" > $L/san_memcheck_wide.log 2>&1
echo "memcheck zero wide rc=$? ($((SECONDS-s)) s) $(grep -E 'SUMMARY' $L/san_memcheck_wide.log | tail -1) $(grep -a 'test cases' $L/san_memcheck_wide.log | tr -s ' ')"
case $L in $OUT/*) ;; *) tar czf $OUT/h1.tgz -C $L . ;; esac; echo "done $SECONDS s"
