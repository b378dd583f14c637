#!/bin/bash
# Round I (2026-12-02): BENCHMARKS.md regenerated from one run (torch + the paper's package beside us) on this
# session's kernels; bench_gpu_optimizer, bench_fp8_param, off-load; the Python wheel; the GPT quality run's
# flash_release configuration (4 seeds) and step() timing of every configuration.
set -u
L=/tmp/logs; mkdir -p $L; R=$(pwd); B=/tmp/fo; export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader | tee $L/gpu.txt
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/paper $R/.whl/flashoptim-0.1.4*.whl > $L/paper_install.log 2>&1
cd $R/.snap
( s=$SECONDS; CUDACXX=/usr/local/cuda/bin/nvcc CMAKE_BUILD_PARALLEL_LEVEL=4 python3 -m pip wheel -q --no-build-isolation --no-deps -w /tmp/wheel -C build-dir=/tmp/skb . > $L/wheel.log 2>&1; echo "wheel rc=$? ($((SECONDS-s)) s)" > /tmp/wheel.done ) &
T="bench_gpu_step bench_gpu_optimizer bench_fp8_param bench_offload"
s=$SECONDS; cmake --preset release -B $B -DFLASHOPTIM_BUILD_BENCHMARKS=ON > $L/cfg.log 2>&1
cmake --build $B -j12 --target $T -- -k 0 > $L/build.log 2>&1; echo "cxx build rc=$? ($((SECONDS-s)) s)"; grep -m8 -B2 " error" $L/build.log | head -30
mkdir -p /tmp/bin; for n in $T; do e=$(find $B -name $n -type f -perm -u+x | head -1); [ -n "$e" ] && cp $e /tmp/bin/; done
while [ ! -f /tmp/wheel.done ]; do sleep 2; done; cat /tmp/wheel.done
cd /tmp/bin
s=$SECONDS; OMP_WAIT_POLICY=passive timeout 100 ./bench_offload --fraction 0.5 --repeats 15 > $L/offload.md 2> $L/offload.log; echo "offload bench rc=$? ($((SECONDS-s)) s)"; grep "whole off-load" $L/offload.md
cd $R/.snap; s=$SECONDS; PYTHONPATH=/tmp/paper timeout 200 python3 tools/bench_report.py --bench /tmp/bin/bench_gpu_step:/default/ --paper --out $L/BENCHMARKS.md --json $L/bench_gpu.json --torch-json $L/torch.json --paper-json $L/paper.json --append $L/offload.md --notes docs/benchmark-notes.md > $L/table.txt 2> $L/bench.log; echo "bench_report rc=$? ($((SECONDS-s)) s)"; cat $L/table.txt | head -40; grep -i "fail\|error\|not timed" $L/bench.log | head
cd /tmp/bin; s=$SECONDS; timeout 60 ./bench_gpu_optimizer $L/bench_optimizer.csv > $L/bench_optimizer.md 2>&1; echo "bench_optimizer rc=$? ($((SECONDS-s)) s)"; tail -8 $L/bench_optimizer.md
s=$SECONDS; timeout 60 ./bench_fp8_param $L/bench_fp8.csv > $L/bench_fp8.md 2>&1; echo "bench_fp8 rc=$? ($((SECONDS-s)) s)"; grep -E "optimizer|fused" $L/bench_fp8.md
PIP_BREAK_SYSTEM_PACKAGES=1 python3 -m pip install -q --no-deps --force-reinstall /tmp/wheel/flashoptim_kernels*.whl > $L/install.log 2>&1; echo "install rc=$?"
mkdir -p /tmp/gpt /tmp/gpt_old && tar xzf $R/.snap/bench/results/2026-12-01/gpt_quality/gpt_runs.tgz -C /tmp/gpt_old
s=$SECONDS; PYTHONPATH=/tmp/paper timeout 170 python3 $R/.snap/python/bench/gpt_quality.py run --seeds 0,1,2,3 --configs flash_release --out /tmp/gpt/new > $L/gpt_run.log 2>&1; echo "gpt flash_release rc=$? ($((SECONDS-s)) s)"; tail -3 $L/gpt_run.log
s=$SECONDS; PYTHONPATH=/tmp/paper timeout 120 python3 $R/.snap/python/bench/gpt_quality.py time --configs torch_fp32,flash,flash_release,torch_bf16,paper --out /tmp/gpt/new > $L/gpt_time.log 2>&1; echo "gpt time rc=$? ($((SECONDS-s)) s)"; tail -3 $L/gpt_time.log
python3 $R/.snap/python/bench/gpt_quality.py report /tmp/gpt_old/gpt /tmp/gpt/new --md $L/quality.md --png $L/gpt-quality.png > $L/report.log 2>&1; echo "report rc=$?"; cat $L/quality.md | head -20
cd /tmp/gpt && tar czf $L/gpt_new.tgz new
cd /tmp/logs && tar czf $OUT/logs.tgz . && echo packed
