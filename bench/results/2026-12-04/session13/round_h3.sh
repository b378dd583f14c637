#!/bin/bash
# Round H3 (thirteenth session, H200): BENCHMARKS.md's run of this tree (bench_gpu_step of build/lead,
# Release, sm_90) with the peers in the same lease: torch's fused AdamW and the paper's package 0.1.4.
# Binaries: $R/.dev/h/c.tar.xz (c/). Usage (repo root): OUT=out round_h3.sh
set -u
R=$(pwd); export LD_LIBRARY_PATH=$R/.dev/bin/lib PYTHONUNBUFFERED=1; L=/tmp/logs_h3; mkdir -p $L /tmp/c
tar -xJf $R/.dev/h/c.tar.xz -C /tmp/c; B=/tmp/c/c
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw,temperature.gpu --format=csv,noheader
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/paper $R/.whl/flashoptim-0.1.4*.whl > $L/paper_install.log 2>&1; echo "paper install rc=$?"
s=$SECONDS; PYTHONPATH=/tmp/paper timeout 540 python3 tools/bench_report.py --bench "$B/bench_gpu_step:/default/|^ceiling/" --paper --out $L/BENCHMARKS.md --json $L/bench_gpu.json --torch-json $L/torch.json --paper-json $L/paper.json --append bench/results/2026-12-03/session7/offload.md --notes docs/benchmark-notes.md > $L/table.txt 2> $L/bench.log; echo "bench_report rc=$? ($((SECONDS-s)) s)"; grep -E "adamw_default / flat|lion_default / flat|sgd_momentum / flat|native / flat|targets met" $L/table.txt | head; grep -i "fail\|error\|not timed" $L/bench.log | head
rm -f $L/*.part; tar czf $OUT/h3.tgz -C $L . ; echo "done $SECONDS s"
