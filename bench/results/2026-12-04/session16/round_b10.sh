#!/bin/bash
# Round B10 (sixteenth session, H200): Nsight Compute (--set full, one launch after three, at ncu's
# locked base clock) of the step kernel for the default AdamW and fp8 states in abf_old (b46fb85's
# headers) and abw2_wb2 (the final kernels: the floor, the NaN select, the write-back).
# Binaries: $R/.dev/h/a/. Usage (repo root): OUT=out bench/results/2026-12-04/session16/round_b10.sh
set -u
R=$(pwd); export LD_LIBRARY_PATH=$R/.dev/bin/lib; L=/tmp/logs_b10; mkdir -p $L; B=$R/.dev/h/a
N="ncu --set full --import-source no --kernel-name-base demangled --kernel-name regex:step_kernel --launch-skip 3 --launch-count 1"
for v in adamw_default adamw_fp8_states; do
  for b in abf_old abw2_wb2; do
    s=$SECONDS; timeout 70 $N -o $L/ncu_${v}_$b $B/$b $v 1 4 > $L/ncu_run_${v}_$b.txt 2>&1; rc=$?
    ncu -i $L/ncu_${v}_$b.ncu-rep --page details > $L/ncu_${v}_$b.txt 2>&1
    echo "== $v $b rc=$rc ($((SECONDS-s)) s)"
    grep -E "^ +(Duration|SM Frequency|Executed Instructions  |Issue Slots Busy|Issued Warp Per Scheduler|DRAM Throughput|Registers Per Thread|No Eligible|Memory Throughput) " $L/ncu_${v}_$b.txt | tr -s ' ' | head -12
  done
done
rm -f $L/*.ncu-rep; tar czf $OUT/b10.tgz -C $L . ; echo "done $SECONDS s"
