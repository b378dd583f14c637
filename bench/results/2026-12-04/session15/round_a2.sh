#!/bin/bash
# Round A2 (fifteenth session, H200, the lease after A1): the A/B of A1 with the binaries' order reversed
# (abs_new first in each pass, two passes), then BENCHMARKS.md's run with the peers (torch's fused AdamW,
# the paper's package 0.1.4) in the same lease, bench_gpu_step of this tree (build/release).
# Binaries: $R/.dev/h/a.tar.xz (a/). Usage (repo root): OUT=out .dev/h/round_a2.sh
set -u
R=$(pwd); export LD_LIBRARY_PATH=$R/.dev/bin/lib PYTHONUNBUFFERED=1; L=/tmp/logs_a2; mkdir -p $L /tmp/b2
tar -xJf $R/.dev/h/a.tar.xz -C /tmp/b2; B=/tmp/b2/a
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw,temperature.gpu --format=csv,noheader
for pass in 1 2; do
  for b in new old; do
    s=$SECONDS; timeout 120 $B/abs_$b all 15 > $L/ab_${b}_$pass.txt 2>&1
    echo "ab $b pass $pass rc=$? ($((SECONDS-s)) s)"; sed "s/^/  $b$pass /" $L/ab_${b}_$pass.txt
  done
done
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/paper $R/.whl/flashoptim-0.1.4*.whl > $L/paper_install.log 2>&1; echo "paper install rc=$?"
s=$SECONDS; PYTHONPATH=/tmp/paper timeout 480 python3 tools/bench_report.py --bench "$B/bench_gpu_step:/default/|^ceiling/" --paper --out $L/BENCHMARKS.md --json $L/bench_gpu.json --torch-json $L/torch.json --paper-json $L/paper.json --append bench/results/2026-12-03/session7/offload.md --notes docs/benchmark-notes.md > $L/table.txt 2> $L/bench.log; echo "bench_report rc=$? ($((SECONDS-s)) s)"; grep -E "targets met" $L/table.txt | head; grep -i "fail\|error\|not timed" $L/bench.log | head
rm -f $L/*.part; tar czf $OUT/a2.tgz -C $L . ; echo "done $SECONDS s"
