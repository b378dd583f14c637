#!/bin/bash
# Round B2 (tenth session, the lease of round B1 where it stayed warm): BENCHMARKS.md's run with the peers
# (tools/bench_report.py: bench_gpu_step of the final tree, torch fused AdamW, the paper's package 0.1.4).
set -u
R=$(pwd); export LD_LIBRARY_PATH=$R/.dev/bin/lib; export PYTHONUNBUFFERED=1; L=/tmp/logs_b2; mkdir -p $L
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw,temperature.gpu --format=csv,noheader
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/paper $R/.whl/flashoptim-0.1.4*.whl > $L/paper_install.log 2>&1; echo "paper install rc=$?"
s=$SECONDS; PYTHONPATH=/tmp/paper timeout 500 python3 tools/bench_report.py --bench "$R/.dev/r3/bench_gpu_step:/default/|^ceiling/" --paper --out $L/BENCHMARKS.md --json $L/bench_gpu.json --torch-json $L/torch.json --paper-json $L/paper.json --append bench/results/2026-12-03/session7/offload.md --notes docs/benchmark-notes.md > $L/table.txt 2> $L/bench.log; echo "bench_report rc=$? ($((SECONDS-s)) s)"; head -40 $L/table.txt; grep "targets met" $L/table.txt; grep -i "fail\|error\|not timed" $L/bench.log | head
rm -f $L/*.part; tar czf $OUT/b2.tgz -C $L . ; echo "done $SECONDS s"
