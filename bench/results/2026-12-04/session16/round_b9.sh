#!/bin/bash
# Round B9 (sixteenth session, H200, a new lease): BENCHMARKS.md's run with the peers (torch's fused
# AdamW, the paper's package 0.1.4) on the final tree again, the same binary as B7 (whose lease held the
# 8-bit steps at 1722-1894 MHz). Decided before it ran: BENCHMARKS.md is generated from this run, and
# the notes print B7's and B3's beside it.
# Binaries: $R/.dev/h/d.tar.xz (d/). Usage (repo root): OUT=out bench/results/2026-12-04/session16/round_b9.sh
set -u
R=$(pwd); export LD_LIBRARY_PATH=$R/.dev/bin/lib PYTHONUNBUFFERED=1; L=/tmp/logs_b9; mkdir -p $L /tmp/b
tar -xJf $R/.dev/h/d.tar.xz -C /tmp/b; B=/tmp/b/d
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw,temperature.gpu --format=csv,noheader
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/paper $R/.whl/flashoptim-0.1.4*.whl > $L/paper_install.log 2>&1; echo "paper install rc=$?"
s=$SECONDS; PYTHONPATH=/tmp/paper timeout 300 python3 tools/bench_report.py --bench "$B/bench_gpu_step:/default/|^ceiling/" --paper --out $L/BENCHMARKS.md --json $L/bench_gpu.json --torch-json $L/torch.json --paper-json $L/paper.json --append bench/results/2026-12-03/session7/offload.md --notes docs/benchmark-notes.md > $L/table.txt 2> $L/bench.log; echo "bench_report rc=$? ($((SECONDS-s)) s)"; grep -E "targets met" $L/table.txt | head; grep -i "fail\|error\|not timed" $L/bench.log | head
nvidia-smi --query-gpu=name,clocks.sm,power.draw,temperature.gpu --format=csv,noheader
rm -f $L/*.part; tar czf $OUT/b9.tgz -C $L . ; echo "done $SECONDS s"
