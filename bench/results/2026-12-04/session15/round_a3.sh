#!/bin/bash
# Round A3 (fifteenth session, H200): Nsight Compute (--set full, one launch after three, at ncu's locked
# base clock) of the step kernel in abs_old (8b60ca5's headers) and abs_new (this tree) for the default
# AdamW, fp16 + int8, the reference layout and SGD momentum with the paper's split.
# Binaries: $R/.dev/h/a.tar.xz (a/). Usage (repo root): OUT=out .dev/h/round_a3.sh
set -u
R=$(pwd); export LD_LIBRARY_PATH=$R/.dev/bin/lib; L=/tmp/logs_a3; mkdir -p $L /tmp/b3
tar -xJf $R/.dev/h/a.tar.xz -C /tmp/b3; B=/tmp/b3/a
N="ncu --set full --import-source no --kernel-name-base demangled --kernel-name regex:step_kernel --launch-skip 3 --launch-count 1"
for v in adamw_default adamw_fp16_ulp8 adamw_reference_states sgd_momentum_bf16_ulp8; do
  for b in old new; do
    s=$SECONDS; timeout 120 $N -o $L/ncu_${v}_$b $B/abs_$b $v 1 4 > $L/ncu_run_${v}_$b.txt 2>&1; rc=$?
    ncu -i $L/ncu_${v}_$b.ncu-rep --page details > $L/ncu_${v}_$b.txt 2>&1
    echo "== $v $b rc=$rc ($((SECONDS-s)) s)"
    grep -E "^ +(Duration|SM Frequency|Executed Instructions  |Issue Slots Busy|Issued Warp Per Scheduler|DRAM Throughput|Registers Per Thread|No Eligible|Memory Throughput) " $L/ncu_${v}_$b.txt | tr -s ' ' | head -12
  done
done
rm -f $L/*.ncu-rep; tar czf $OUT/a3.tgz -C $L . ; echo "done $SECONDS s"
