#!/bin/bash
# Round A2 (tenth session): the warp tiles' loop with 2 tiles per turn (ab_u2: R = 4 is two turns of a loop whose
# body holds 2 tiles; built from .dev/u2/include) against the rolled loop (ab_old, 09d5e40), the same A/B as
# round A1 (21 interleaved rounds, two passes); then Nsight Compute: instructions and the warps' stall reasons
# (no_instruction: waiting on the instruction fetch) for R = 1, the rolled R = 4 (ab_old), R = 4 with 2 tiles per
# turn (ab_u2) and R = 4 fully unrolled (ab_new of round A1).
set -u
R=$(pwd); export LD_LIBRARY_PATH=$R/.dev/bin/lib; L=/tmp/logs_a2; mkdir -p $L
D=$R/.dev/r1
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw,temperature.gpu --format=csv,noheader
for pass in 1 2; do
  for l in adamw_default lion_default sgd_momentum adamw_fp8_states adamw_bf16_native adamw_fp16_ulp8 adamw_ulp16 adamw_reference; do
    for b in u2 old; do
      s=$SECONDS; timeout 60 $D/ab_$b $l 21 > $L/ab_${b}_${l}_$pass.txt 2>&1; echo "ab_$b $l pass $pass rc=$? ($((SECONDS-s)) s)"
      grep -v '^copy' $L/ab_${b}_${l}_$pass.txt
    done
  done
done
nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv,noheader
M=smsp__inst_executed.sum,smsp__issue_active.avg.pct_of_peak_sustained_active,gpu__time_duration.sum
for r in no_instruction long_scoreboard short_scoreboard wait barrier math_pipe_throttle mio_throttle lg_throttle not_selected branch_resolving dispatch_stall; do
  M=$M,smsp__average_warps_issue_stalled_${r}_per_issue_active.ratio
done
for b in u2 old new; do
  for l in adamw_default/ adamw_fp16_ulp8/; do
    n=${l%/}; s=$SECONDS; timeout 120 ncu -k regex:step_kernel -c 2 --metrics $M $D/ab_$b $l 1 1 > $L/ncu_${b}_$n.txt 2>&1; echo "ncu $b $n rc=$? ($((SECONDS-s)) s)"
    grep -E "inst_executed|issue_active|gpu__time|no_instruction|long_scoreboard|wait|math_pipe|not_selected|ERROR|rror" $L/ncu_${b}_$n.txt | sed -E 's/^ +//' | cut -c1-110
  done
done
tar czf $OUT/a2.tgz -C $L . ; echo "done $SECONDS s"
