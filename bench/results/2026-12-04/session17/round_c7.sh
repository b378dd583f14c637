#!/bin/bash
# Round C7 (seventeenth session, H200, a new lease): the benchmark with the peers (torch's fused
# AdamW, the paper's package 0.1.4) on the tree with wide tiles again, the same binary as round C5, in
# another lease. Decided before it ran: BENCHMARKS.md stays round C5's run, and the notes print
# this one beside it.
# Binaries: $R/.dev/h/f.tar.xz (e/). Usage (repo root): OUT=out bench/results/2026-12-04/session17/round_c7.sh
set -u
R=$(pwd); export LD_LIBRARY_PATH=$R/.dev/bin/lib PYTHONUNBUFFERED=1; L=/tmp/logs_c7; mkdir -p $L /tmp/b
tar -xJf $R/.dev/h/f.tar.xz -C /tmp/b; B=/tmp/b/e
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw,temperature.gpu --format=csv,noheader
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/paper $R/.whl/flashoptim-0.1.4*.whl > $L/paper_install.log 2>&1; echo "paper install rc=$?"
s=$SECONDS; PYTHONPATH=/tmp/paper timeout 300 python3 tools/bench_report.py --bench "$B/bench_gpu_step:/default/|^ceiling/" --paper --out $L/BENCHMARKS.md --json $L/bench_gpu.json --torch-json $L/torch.json --paper-json $L/paper.json --append bench/results/2026-12-03/session7/offload.md --notes docs/benchmark-notes.md > $L/table.txt 2> $L/bench.log; echo "bench_report rc=$? ($((SECONDS-s)) s)"; grep -E "targets met" $L/table.txt | head; grep -i "fail\|error\|not timed" $L/bench.log | head
nvidia-smi --query-gpu=name,clocks.sm,power.draw,temperature.gpu --format=csv,noheader
rm -f $L/*.part; tar czf $OUT/c7.tgz -C $L . ; echo "done $SECONDS s"
