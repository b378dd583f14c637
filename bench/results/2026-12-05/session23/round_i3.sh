#!/bin/bash
# Round I3 (twenty-third session): BENCHMARKS.md's run on one H200, alone on the machine: bench_gpu_step
# built at adbdbda (per-launch median, mean and 20-back-to-back columns) with the peers (torch's
# fused AdamW, the paper's package 0.1.4), then the off-load bench (f = 0.5, 31 repeats). Round I1 ran
# the same on an H100 and lost torch.json to the returned-file limit: the JSONs come back as one tgz.
# Binaries (stripped, not committed): .device/bench_adbdbda.tar.xz, carried with .whl.
# Usage (repo root): OUT=out bench/results/2026-12-05/session23/round_i3.sh
set -u
R=$(pwd); L=$OUT; S=$L/summary.txt; W=/tmp/i3; mkdir -p $W; : > $S
note() { echo "$*" | tee -a $S; }
mkdir -p .device/bin && tar -C .device/bin -xJf .device/bench_adbdbda.tar.xz
B=$R/.device/bin; export LD_LIBRARY_PATH=$B/lib PYTHONUNBUFFERED=1
note "gpu: $(nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,power.draw,power.limit,temperature.gpu --format=csv,noheader)"
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/paper $R/.whl/flashoptim-0.1.4*.whl > $W/paper_install.log 2>&1; note "paper install rc=$?"
s=$SECONDS; PYTHONPATH=/tmp/paper timeout 300 python3 tools/bench_report.py --bench "$B/bench_gpu_step:/default/|^ceiling/" --paper \
  --out $L/BENCHMARKS.md --json $W/bench_gpu.json --torch-json $W/torch.json --paper-json $W/paper.json \
  --notes docs/benchmark-notes.md > $L/table.txt 2> $W/bench.log
note "bench_report rc=$? ($((SECONDS-s)) s)"; grep -E "targets met" $L/table.txt | head -3 >> $S; grep -i "fail\|error\|not timed" $W/bench.log | head >> $S
note "gpu after: $(nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv,noheader)"
s=$SECONDS; timeout 120 $B/bench_offload --fraction 0.5 --repeats 31 > $L/offload.md 2> $W/offload.log
note "offload bench rc=$? ($((SECONDS-s)) s)"
rm -f $W/*.part; tar czf $L/raw.tgz -C $W . ; note "done $SECONDS s"
