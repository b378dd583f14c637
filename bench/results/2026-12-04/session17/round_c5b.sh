#!/bin/bash
# Round C5b (seventeenth session, H200, C4's lease): round C5's Nsight Compute of the paper's split
# measured SGD momentum, not AdamW: the filter "ulp8 default" matches four variants of abt_f, whose
# trial launches come first (AdamW, fp16 + int8, Lion, SGD momentum), so --launch-skip 3 took SGD
# momentum's. Here --launch-skip 5: AdamW's second launch after the four trials.
# Usage (repo root): OUT=out bench/results/2026-12-04/session17/round_c5b.sh
set -u
R=$(pwd); export LD_LIBRARY_PATH=$R/.dev/bin/lib; L=/tmp/logs_c5b; mkdir -p $L
N="ncu --set full --import-source no --kernel-name-base demangled --kernel-name regex:step_kernel --launch-skip 5 --launch-count 1"
for f in "ulp8 default" "ulp8 t512 n16"; do
  n=$(echo "$f" | tr -dc 'a-z0-9'); s=$SECONDS
  timeout 70 $N -o $L/ncu_$n $R/.dev/h/c5/abt_f "$f" 1 4 > $L/ncu_run_$n.txt 2>&1; rc=$?
  ncu -i $L/ncu_$n.ncu-rep --page details > $L/ncu_$n.txt 2>&1
  echo "== $f rc=$rc ($((SECONDS-s)) s)"; grep -m1 "step_kernel" $L/ncu_$n.txt | grep -o "adam_rule\|lion\|sgd_rule\|fp16\|step_policy<[0-9]*, [0-9]*, [0-9]*" | tr '\n' ' '; echo
  grep -E "^ +(Duration|SM Frequency|Executed Instructions  |Issue Slots Busy|DRAM Throughput|Registers Per Thread|Achieved Occupancy|Mem Busy|L2 Hit Rate) " $L/ncu_$n.txt | tr -s ' ' | head -12
done
rm -f $L/*.ncu-rep; tar czf $OUT/c5b.tgz -C $L . ; echo "done $SECONDS s"
