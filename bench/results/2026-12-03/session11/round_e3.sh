#!/bin/bash
# Round E3 (eleventh session): round D's A/B again in another lease (ab_stages of session10: R = 4 with 2, 3 and 4
# stages against R = 1, 21 interleaved rounds, three passes) for Lion and SGD momentum; then Nsight Compute on the
# 2- and 3-stage kernels with the GPU's clock left free (--clock-control none; round E2 ran at ncu's locked base clock).
set -u
R=$(pwd); export LD_LIBRARY_PATH=$R/.dev/bin/lib; L=/tmp/logs_e3; mkdir -p $L
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw,temperature.gpu --format=csv,noheader
for pass in 1 2 3; do
  for l in lion_default sgd_momentum; do
    s=$SECONDS; timeout 60 $R/.dev/r5/ab_stages $l 21 > $L/ab_stages_${l}_$pass.txt 2>&1; echo "ab_stages $l pass $pass rc=$? ($((SECONDS-s)) s)"
    grep -v '^copy' $L/ab_stages_${l}_$pass.txt
  done
done
nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv,noheader
M=smsp__inst_executed.sum,smsp__issue_active.avg.pct_of_peak_sustained_active,gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,sm__cycles_elapsed.avg.per_second,smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio
for l in lion_default/r4_s2 lion_default/r4_s3 sgd_momentum/r4_s2 sgd_momentum/r4_s3; do
  n=${l//\//_}; s=$SECONDS; timeout 60 ncu --clock-control none -k regex:step_kernel -c 3 --metrics $M $R/.dev/r5/ab_stages $l 3 1 > $L/ncu_free_$n.txt 2>&1; echo "ncu free $n rc=$? ($((SECONDS-s)) s)"
  grep -E "gpu__time|dram__|cycles_elapsed|long_scoreboard" $L/ncu_free_$n.txt | sed -E 's/^ +//; s/ +/ /g' | cut -c1-110
done
tar czf $OUT/e3.tgz -C $L . ; echo "done $SECONDS s"
