#!/bin/bash
# Round H4 (thirteenth session, H200): the final tree. test_gpu_step_parity (the native-only
# checked_reencode policy; master_update's NaN rule on the host; the "every stored parameter pattern"
# case), test_gpu_finite_property, then BENCHMARKS.md's run with the peers (torch's fused AdamW, the
# paper's package 0.1.4) in the same lease.
# Binaries: $R/.dev/h/f.tar.xz (f/: parity, finite property, bench_gpu_step of build/lead). Usage: OUT=out round_h4.sh
set -u
R=$(pwd); export LD_LIBRARY_PATH=$R/.dev/bin/lib PYTHONUNBUFFERED=1; L=/tmp/logs_h4; mkdir -p $L /tmp/f
tar -xJf $R/.dev/h/f.tar.xz -C /tmp/f; B=/tmp/f/f
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw,temperature.gpu --format=csv,noheader
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/paper $R/.whl/flashoptim-0.1.4*.whl > $L/paper_install.log 2>&1; echo "paper install rc=$?"
s=$SECONDS; PYTHONPATH=/tmp/paper timeout 300 python3 tools/bench_report.py --bench "$B/bench_gpu_step:/default/|^ceiling/" --paper --out $L/BENCHMARKS.md --json $L/bench_gpu.json --torch-json $L/torch.json --paper-json $L/paper.json --append bench/results/2026-12-03/session7/offload.md --notes docs/benchmark-notes.md > $L/table.txt 2> $L/bench.log; echo "bench_report rc=$? ($((SECONDS-s)) s)"; grep -E "targets met" $L/table.txt | head; grep -i "fail\|error\|not timed" $L/bench.log | head
for t in test_gpu_step_parity test_gpu_finite_property; do
  s=$SECONDS; timeout 200 $B/$t > $L/$t.log 2>&1; rc=$?
  echo "$t rc=$rc ($((SECONDS-s)) s) $(grep -a 'test cases' $L/$t.log | tr -s ' ')"
  [ $rc -ne 0 ] && grep -a -m3 -B2 -A12 "ERROR\|CRASHED" $L/$t.log | head -40
done
rm -f $L/*.part; tar czf $OUT/h4.tgz -C $L . ; echo "done $SECONDS s"
