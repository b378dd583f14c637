#!/bin/bash
# Round D2 (eighteenth session, H200): ab_redo.cu built with the exact redo inlined (abr_inl, this
# tree's kernel) and out of line (abr_out), rotated in one lease: four passes of 15 interleaved
# rounds, binaries alternated (inl, out, out, inl, ...); then Nsight Compute of fp16 + int8 at
# 512 x 16 and the paper's split's default in abr_out (one variant per filter, the fourth step launch).
# Usage (repo root): OUT=out bench/results/2026-12-04/session18/round_d2.sh
set -u
R=$(pwd); export LD_LIBRARY_PATH=$R/.dev/bin/lib; L=/tmp/logs_d2; mkdir -p $L
B=$R/.dev/h/d2
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.limit,temperature.gpu --format=csv > $L/smi.txt 2>&1
(nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv -lms 200 > $L/smi_trace.csv 2>&1 &)
i=0
for b in inl out out inl inl out out inl; do
  i=$((i+1)); s=$SECONDS
  $B/abr_$b all 15 > $L/pass${i}_$b.txt 2>&1
  echo "== pass $i $b ($((SECONDS-s)) s)"; grep " med " $L/pass${i}_$b.txt
done
pkill -f "nvidia-smi --query-gpu=timestamp" || true
N="ncu --set full --import-source no --kernel-name-base demangled --kernel-name regex:step_kernel --launch-skip 3 --launch-count 1"
for f in "fp16 ulp8 t512" "ulp8 default"; do
  n=$(echo "$f" | tr -dc 'a-z0-9'); s=$SECONDS
  timeout 90 $N -o $L/ncu_out_$n $B/abr_out "$f" 1 6 > $L/ncu_run_$n.txt 2>&1; rc=$?
  ncu -i $L/ncu_out_$n.ncu-rep --page details > $L/ncu_out_$n.txt 2>&1
  ncu -i $L/ncu_out_$n.ncu-rep --page raw --csv > $L/raw_out_$n.csv 2>&1
  echo "== ncu out $f rc=$rc ($((SECONDS-s)) s)"
  grep -E "^ +(Duration|Executed Instructions  |Issue Slots Busy|DRAM Throughput|Registers Per Thread|Achieved Occupancy) " $L/ncu_out_$n.txt | tr -s ' '
done
rm -f $L/*.ncu-rep; tar czf $OUT/d2.tgz -C $L . ; echo "done $SECONDS s"
