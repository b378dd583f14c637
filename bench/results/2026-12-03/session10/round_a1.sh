#!/bin/bash
# Round A1 (tenth session): the warp tiles' loop unrolled over a warp's R tiles. ab_new (this tree) and ab_old
# (09d5e40, the rolled loop) are ab_warp.cu of session 9 built against each tree's headers: each times R = 1 against
# R = 4 (and 8 for AdamW and Lion; AdamW's Llama list too), 21 interleaved rounds; two passes, the binaries
# alternating per layout. Then Nsight Compute instruction counts of ab_new's kernels.
set -u
R=$(pwd); export LD_LIBRARY_PATH=$R/.dev/bin/lib; L=/tmp/logs_a1; mkdir -p $L
D=$R/.dev/r1
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw,temperature.gpu --format=csv,noheader
for pass in 1 2; do
  for l in adamw_default lion_default sgd_momentum adamw_fp8_states adamw_bf16_native adamw_fp16_ulp8 adamw_ulp16 adamw_reference; do
    for b in new old; do
      s=$SECONDS; timeout 60 $D/ab_$b $l 21 > $L/ab_${b}_${l}_$pass.txt 2>&1; echo "ab_$b $l pass $pass rc=$? ($((SECONDS-s)) s)"
      grep -v '^copy' $L/ab_${b}_${l}_$pass.txt
    done
  done
done
nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv,noheader
M=smsp__inst_executed.sum,smsp__issue_active.avg.pct_of_peak_sustained_active,dram__throughput.avg.pct_of_peak_sustained_elapsed,gpu__time_duration.sum
for l in adamw_default/ lion_default/ adamw_fp8_states/; do
  n=${l%/}; s=$SECONDS; timeout 90 ncu -k regex:step_kernel -c 4 --metrics $M $D/ab_new $l 1 1 > $L/ncu_$n.txt 2>&1; echo "ncu $n rc=$? ($((SECONDS-s)) s)"
  grep -E "step_kernel|inst_executed|issue_active|dram__throughput|gpu__time" $L/ncu_$n.txt | sed -E 's/^ +//' | cut -c1-100
done
tar czf $OUT/a1.tgz -C $L . ; echo "done $SECONDS s"
