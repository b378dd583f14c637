#!/bin/bash
# Round E4 (eleventh session): the tree as committed (the one-state rules keep 3 stages): test_gpu_step_parity; then
# BENCHMARKS.md's sustained timing of Lion and SGD momentum, 2 stages (round E2's bench_gpu_step) against 3 (this
# tree's), the two binaries alternated, three passes; then BENCHMARKS.md's run with the peers from this tree.
set -u
R=$(pwd); export LD_LIBRARY_PATH=$R/.dev/bin/lib; export PYTHONUNBUFFERED=1; L=/tmp/logs_e4; mkdir -p $L /tmp/b4
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw,temperature.gpu --format=csv,noheader
s=$SECONDS; timeout 200 $R/.dev/e4/test_gpu_step_parity > $L/test_gpu_step_parity.log 2>&1; echo "test_gpu_step_parity rc=$? ($((SECONDS-s)) s) $(grep -a 'test cases' $L/test_gpu_step_parity.log | tr -s ' ')"
F='^step/(lion_default|sgd_momentum)/flat268M/default'
for pass in 1 2 3; do
  for b in s2 s3; do
    bin=$R/.dev/e4/bench_gpu_step; [ $b = s2 ] && bin=$R/.dev/e/bench_gpu_step
    timeout 60 $bin --benchmark_filter="$F" > $L/sustained_${b}_$pass.txt 2>&1
    echo "$b pass $pass: $(grep -E '^step/' $L/sustained_${b}_$pass.txt | awk '{print $1, $2, $3}' | tr '\n' ' ')"
  done
done
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/paper $R/.whl/flashoptim-0.1.4*.whl > $L/paper_install.log 2>&1; echo "paper install rc=$?"
s=$SECONDS; PYTHONPATH=/tmp/paper timeout 300 python3 tools/bench_report.py --bench "$R/.dev/e4/bench_gpu_step:/default/|^ceiling/" --paper --out $L/BENCHMARKS.md --json $L/bench_gpu.json --torch-json $L/torch.json --paper-json $L/paper.json --append bench/results/2026-12-03/session7/offload.md --notes docs/benchmark-notes.md > $L/table.txt 2> $L/bench.log; echo "bench_report rc=$? ($((SECONDS-s)) s)"; head -40 $L/table.txt; grep "targets met" $L/table.txt; grep -i "fail\|error\|not timed" $L/bench.log | head
rm -f $L/*.part; tar czf $OUT/e4.tgz -C $L . ; echo "done $SECONDS s"
