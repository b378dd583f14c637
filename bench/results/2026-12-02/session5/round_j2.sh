#!/bin/bash
# Round J, second call in the same lease: the paper's package, the off-load bench and BENCHMARKS.md's run.
set -u
R=$(pwd); L=/tmp/logs_j2; mkdir -p $L /tmp/j; export PYTHONUNBUFFERED=1
[ -x /tmp/j/bench_gpu_step ] || tar xJf $R/.dev/j.tar.xz -C /tmp/j; export LD_LIBRARY_PATH=$R/.dev/bin/lib; cd /tmp/j
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/paper $R/.whl/flashoptim-0.1.4*.whl > $L/paper_install.log 2>&1
s=$SECONDS; OMP_WAIT_POLICY=passive timeout 60 ./bench_offload --fraction 0.5 --repeats 15 > $L/offload.md 2> $L/offload.log; echo "offload bench rc=$? ($((SECONDS-s)) s)"; grep "CPU step of\|whole off-load" $L/offload.md
cd $R; s=$SECONDS; PYTHONPATH=/tmp/paper timeout 300 python3 tools/bench_report.py --bench '/tmp/j/bench_gpu_step:/default/|^ceiling/' --paper --out $L/BENCHMARKS.md --json $L/bench_gpu.json --torch-json $L/torch.json --paper-json $L/paper.json --append $L/offload.md --notes docs/benchmark-notes.md > $L/table.txt 2> $L/bench.log; echo "bench_report rc=$? ($((SECONDS-s)) s)"; head -80 $L/table.txt; grep -i "fail\|error\|not timed" $L/bench.log | head
tar czf $OUT/j2.tgz -C $L . ; echo done
