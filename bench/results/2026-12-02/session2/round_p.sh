#!/bin/bash
# Round P (2026-12-02, session 2): BENCHMARKS.md regenerated from one run (torch + the paper's package beside us)
# after the stage-ring alignment and the two-stage random bits; bench_gpu_optimizer (device inputs), off-load.
set -u
L=/tmp/logs; mkdir -p $L; R=$(pwd); B=/tmp/fo; export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader | tee $L/gpu.txt
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/paper $R/.whl/flashoptim-0.1.4*.whl > $L/paper_install.log 2>&1
cd $R/.snap; T="bench_gpu_step bench_gpu_optimizer bench_offload"
s=$SECONDS; cmake --preset release -B $B -DFLASHOPTIM_BUILD_BENCHMARKS=ON > $L/cfg.log 2>&1
cmake --build $B -j15 --target $T -- -k 0 > $L/build.log 2>&1; echo "build rc=$? ($((SECONDS-s)) s)"; grep -m8 -B2 " error" $L/build.log | head -30
mkdir -p /tmp/bin; for n in $T; do e=$(find $B -name $n -type f -perm -u+x | head -1); [ -n "$e" ] && cp $e /tmp/bin/; done
cd /tmp/bin
s=$SECONDS; OMP_WAIT_POLICY=passive timeout 100 ./bench_offload --fraction 0.5 --repeats 15 > $L/offload.md 2> $L/offload.log; echo "offload bench rc=$? ($((SECONDS-s)) s)"; grep "whole off-load" $L/offload.md
cd $R/.snap; s=$SECONDS; PYTHONPATH=/tmp/paper timeout 200 python3 tools/bench_report.py --bench /tmp/bin/bench_gpu_step:/default/ --paper --out $L/BENCHMARKS.md --json $L/bench_gpu.json --torch-json $L/torch.json --paper-json $L/paper.json --append $L/offload.md --notes docs/benchmark-notes.md > $L/table.txt 2> $L/bench.log; echo "bench_report rc=$? ($((SECONDS-s)) s)"; cat $L/table.txt | head -40; grep -i "fail\|error\|not timed" $L/bench.log | head
cd /tmp/bin; s=$SECONDS; timeout 60 ./bench_gpu_optimizer $L/bench_optimizer.csv > $L/bench_optimizer.md 2>&1; echo "bench_optimizer rc=$? ($((SECONDS-s)) s)"; tail -12 $L/bench_optimizer.md
cd /tmp/logs && tar czf $OUT/logs.tgz . && echo packed
