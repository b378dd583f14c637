#!/bin/bash
# Round C5 (seventeenth session, H200, C4's lease): Nsight Compute (--set full, one launch, ncu's locked
# clock) of the paper's split's AdamW and the reference layout at 256 x 8 (2 blocks per SM) and 512 x 16
# (1 block per SM), from round C3's binaries (copied to .dev/h/c5); then BENCHMARKS.md's run with the peers (torch's fused
# AdamW, the paper's package 0.1.4) on the tree with wide tiles, decided before it ran to be the file's
# run. Binaries: $R/.dev/h/c5/ (abt_f, abt_g) and $R/.dev/h/f.tar.xz (e/).
# Usage (repo root): OUT=out bench/results/2026-12-04/session17/round_c5.sh
set -u
R=$(pwd); export LD_LIBRARY_PATH=$R/.dev/bin/lib PYTHONUNBUFFERED=1; L=/tmp/logs_c5; mkdir -p $L /tmp/b
tar -xJf $R/.dev/h/f.tar.xz -C /tmp/b; B=/tmp/b/e
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw,temperature.gpu --format=csv,noheader
N="ncu --set full --import-source no --kernel-name-base demangled --kernel-name regex:step_kernel --launch-skip 3 --launch-count 1"
for v in "f:ulp8 default" "f:ulp8 t512 n16" "g:ref default" "g:ref t512 n16"; do
  b=${v%%:*}; f=${v#*:}; n=$(echo "$f" | tr -dc 'a-z0-9'); s=$SECONDS
  timeout 70 $N -o $L/ncu_$n $R/.dev/h/c5/abt_$b "$f" 1 4 > $L/ncu_run_$n.txt 2>&1; rc=$?
  ncu -i $L/ncu_$n.ncu-rep --page details > $L/ncu_$n.txt 2>&1
  echo "== $f rc=$rc ($((SECONDS-s)) s)"
  grep -E "^ +(Duration|SM Frequency|Executed Instructions  |Issue Slots Busy|DRAM Throughput|Registers Per Thread|Achieved Occupancy|Memory Throughput|L2 Hit Rate|Mem Busy) " $L/ncu_$n.txt | tr -s ' ' | head -12
done
rm -f $L/*.ncu-rep
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/paper $R/.whl/flashoptim-0.1.4*.whl > $L/paper_install.log 2>&1; echo "paper install rc=$?"
s=$SECONDS; PYTHONPATH=/tmp/paper timeout 300 python3 tools/bench_report.py --bench "$B/bench_gpu_step:/default/|^ceiling/" --paper --out $L/BENCHMARKS.md --json $L/bench_gpu.json --torch-json $L/torch.json --paper-json $L/paper.json --append bench/results/2026-12-03/session7/offload.md --notes docs/benchmark-notes.md > $L/table.txt 2> $L/bench.log; echo "bench_report rc=$? ($((SECONDS-s)) s)"; grep -E "targets met" $L/table.txt | head; grep -i "fail\|error\|not timed" $L/bench.log | head
nvidia-smi --query-gpu=name,clocks.sm,power.draw,temperature.gpu --format=csv,noheader
rm -f $L/*.part; tar czf $OUT/c5.tgz -C $L . ; echo "done $SECONDS s"
