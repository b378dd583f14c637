#!/bin/bash
# Round D1 (eighteenth session, H200): why fp16 + int8 runs slower than bf16 + int8 (the paper's
# split) at the same instruction count per tile, and why 512 x 16 tiles help bf16 (-10%) and hurt
# fp16 (+8-11%). Nsight Compute (--set full) on the seventeenth session's A/B binary abt_f
# (ab_t512_f.cu, built at 94c7d2c; no kernel changed since), one variant per filter, so
# --launch-skip 3 is the fourth step launch of that variant.
# Usage (repo root): OUT=out bench/results/2026-12-04/session18/round_d1.sh
set -u
R=$(pwd); export LD_LIBRARY_PATH=$R/.dev/bin/lib; L=/tmp/logs_d1; mkdir -p $L
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.limit --format=csv > $L/smi.txt 2>&1
N="ncu --set full --import-source no --kernel-name-base demangled --kernel-name regex:step_kernel --launch-skip 3 --launch-count 1"
for f in "fp16 ulp8 default" "fp16 ulp8 t512 n16"; do
  n=$(echo "$f" | tr -dc 'a-z0-9'); s=$SECONDS
  timeout 90 $N -o $L/ncu_$n $R/.dev/h/c5/abt_f "$f" 1 6 > $L/ncu_run_$n.txt 2>&1; rc=$?
  ncu -i $L/ncu_$n.ncu-rep --page details > $L/ncu_$n.txt 2>&1
  ncu -i $L/ncu_$n.ncu-rep --page raw --csv > $L/raw_$n.csv 2>&1
  echo "== $f rc=$rc ($((SECONDS-s)) s)"; grep -m1 "step_kernel" $L/ncu_$n.txt | grep -o "adam_rule\|lion\|sgd_rule\|fp16\|step_policy<[0-9]*, [0-9]*, [0-9]*" | tr '\n' ' '; echo
  grep -E "^ +(Duration|SM Frequency|Executed Instructions  |Issue Slots Busy|DRAM Throughput|Registers Per Thread|Achieved Occupancy|Mem Busy|L2 Hit Rate|Local Memory Spilling Requests) " $L/ncu_$n.txt | tr -s ' ' | head -14
done
rm -f $L/*.ncu-rep; tar czf $OUT/d1.tgz -C $L . ; echo "done $SECONDS s"
