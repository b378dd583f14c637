#!/bin/bash
# Round H3 (twenty-first session): session20's round G2 (BENCHMARKS.md's run with the peers: torch's
# fused AdamW, the paper's package 0.1.4) with bench_gpu_step built from this session's tree, the
# tiny-tolerant attempt on by default; decided before it ran to be the file's run. Logs straight
# under $OUT/g2. Binary (stripped, not committed): $R/.dev/h/g2on/bench_gpu_step.
# Usage (repo root): OUT=out bench/results/2026-12-05/session21/round_h3.sh
set -u
R=$(pwd); export LD_LIBRARY_PATH=$R/.dev/bin/lib PYTHONUNBUFFERED=1; L=$OUT/g2; mkdir -p $L
B=$R/.dev/h/g2on
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw,temperature.gpu --format=csv,noheader
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/paper $R/.whl/flashoptim-0.1.4*.whl > $L/paper_install.log 2>&1; echo "paper install rc=$?"
s=$SECONDS; PYTHONPATH=/tmp/paper timeout 500 python3 tools/bench_report.py --bench "$B/bench_gpu_step:/default/|^ceiling/" --paper --out $L/BENCHMARKS.md --json $L/bench_gpu.json --torch-json $L/torch.json --paper-json $L/paper.json --append bench/results/2026-12-03/session7/offload.md --notes docs/benchmark-notes.md > $L/table.txt 2> $L/bench.log; echo "bench_report rc=$? ($((SECONDS-s)) s)"; grep -E "targets met" $L/table.txt | head; grep -i "fail\|error\|not timed" $L/bench.log | head
nvidia-smi --query-gpu=name,clocks.sm,power.draw,temperature.gpu --format=csv,noheader
rm -f $L/*.part; echo "done $SECONDS s"
