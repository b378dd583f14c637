#!/bin/bash
# Rounds G4 and H1 in one lease (twenty-first session: device starts were scarce, so one call does
# both, and writes its logs straight under $OUT, which comes back even if the call runs out of time).
# 1. session20's round G4: ab_tiny.cu (abt, built from c4a6888's headers), the tiny-tolerant option
#    off and on, one pass of 15 interleaved rounds, alone on the GPU.
# 2. session20's round G1 (round_g1.sh) over binaries built from this session's tree with the option on in
#    default_step_policy: test_gpu_exhaustive's proven fast paths in the background while every
#    other GPU test, the demo, the training check and compute-sanitizer run.
# Binaries (stripped, not committed): $R/.dev/h/h12/abt, $R/.dev/h/g1on.tar.xz (f/).
# Usage (repo root): OUT=out bench/results/2026-12-05/session21/round_h12.sh
set -u
R=$(pwd); export LD_LIBRARY_PATH=$R/.dev/bin/lib PYTHONUNBUFFERED=1; L=$OUT/g4; mkdir -p $L /tmp/b
(tar -xJf $R/.dev/h/g1on.tar.xz -C /tmp/b; touch /tmp/b/unpacked) &
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.limit,temperature.gpu --format=csv > $L/smi.txt 2>&1
cat $L/smi.txt
s=$SECONDS; timeout 170 $R/.dev/h/h12/abt all 15 > $L/pass1_abt.txt 2>&1
echo "== G4 pass 1 rc=$? ($((SECONDS-s)) s)"; grep " med " $L/pass1_abt.txt
wait; L=$OUT/h1; mkdir -p $L; B=/tmp/b/f; ls $B | wc -l
( s=$SECONDS; timeout 300 $B/test_gpu_exhaustive -tc="proven fast paths*" > $L/test_gpu_exhaustive_fast_paths.log 2>&1
  echo "test_gpu_exhaustive (proven fast paths) rc=$? ($((SECONDS-s)) s) $(grep -a 'test cases' $L/test_gpu_exhaustive_fast_paths.log | tr -s ' ')" > $L/ex.done ) &
for t in test_gpu_zero_gradients test_gpu_step_parity test_gpu_finite_property test_gpu_step_inputs test_gpu_fp8_step test_gpu_optimizer \
         test_gpu_huge test_gpu_offload test_gpu_optimizer_offload test_gpu_grad_pass test_gpu_optimizer_fp8 test_gpu_fp8_param \
         test_gpu_extension test_gpu_optimizer_io test_shard_gpu; do
  s=$SECONDS; timeout 200 $B/$t -d > $L/$t.log 2>&1; rc=$?
  echo "$t rc=$rc ($((SECONDS-s)) s) $(grep -a 'test cases' $L/$t.log | tr -s ' ')"
  [ $rc -ne 0 ] && grep -a -m3 -B2 -A12 "ERROR\|CRASHED" $L/$t.log | head -40
done
for tool in memcheck racecheck synccheck; do
  s=$SECONDS
  timeout 100 compute-sanitizer --tool $tool --error-exitcode 3 $B/test_gpu_zero_gradients -tc="zero gradients: the tiny-tolerant*" > $L/san_${tool}_tiny.log 2>&1
  echo "$tool zero tiny rc=$? ($((SECONDS-s)) s) $(grep -E 'SUMMARY' $L/san_${tool}_tiny.log | tail -1) $(grep -a 'test cases' $L/san_${tool}_tiny.log | tr -s ' ')"
done
s=$SECONDS
timeout 100 compute-sanitizer --tool memcheck --error-exitcode 3 $B/test_gpu_zero_gradients -tc="zero gradients: every range-checked*" > $L/san_memcheck_layouts.log 2>&1
echo "memcheck zero layouts rc=$? ($((SECONDS-s)) s) $(grep -E 'SUMMARY' $L/san_memcheck_layouts.log | tail -1) $(grep -a 'test cases' $L/san_memcheck_layouts.log | tr -s ' ')"
s=$SECONDS; timeout 60 $B/flashoptim_train --device gpu --steps 300 --configs fp32,bf16,flash --check > $L/train_check.log 2>&1; echo "flashoptim_train --check rc=$? ($((SECONDS-s)) s)"; tail -4 $L/train_check.log
s=$SECONDS; timeout 60 $B/flashoptim_demo > $L/demo.log 2>&1; echo "flashoptim_demo rc=$? ($((SECONDS-s)) s)"; tail -3 $L/demo.log
wait; cat $L/ex.done; grep -a "proven" $L/test_gpu_exhaustive_fast_paths.log | head -12
echo "done $SECONDS s"
