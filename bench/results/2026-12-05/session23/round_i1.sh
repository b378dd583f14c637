#!/bin/bash
# Round I1 (twenty-third session): session22's planned bench round on one H200.
# 1. BENCHMARKS.md's run with the peers (torch's fused AdamW, the paper's package 0.1.4), from
#    bench_gpu_step built at adbdbda (per-launch median, mean and 20-back-to-back columns), alone
#    on the machine;
# 2. the off-load bench (f = 0.5, 31 repeats);
# 3. the Python package's wheel (no build isolation) and python/tests under pytest.
# Binaries (stripped, not committed): .device/bench_adbdbda.tar.xz, carried with .whl.
# Usage (repo root): OUT=out bench/results/2026-12-05/session23/round_i1.sh
set -u
R=$(pwd); L=$OUT; S=$L/summary.txt; : > $S
note() { echo "$*" | tee -a $S; }
mkdir -p .device/bin && tar -C .device/bin -xJf .device/bench_adbdbda.tar.xz
B=$R/.device/bin; export LD_LIBRARY_PATH=$B/lib PYTHONUNBUFFERED=1
note "gpu: $(nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv,noheader)"
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/paper $R/.whl/flashoptim-0.1.4*.whl > $L/paper_install.log 2>&1; note "paper install rc=$?"
s=$SECONDS; PYTHONPATH=/tmp/paper timeout 240 python3 tools/bench_report.py --bench "$B/bench_gpu_step:/default/|^ceiling/" --paper \
  --out $L/BENCHMARKS.md --json $L/bench_gpu.json --torch-json $L/torch.json --paper-json $L/paper.json \
  --notes docs/benchmark-notes.md > $L/table.txt 2> $L/bench.log
note "bench_report rc=$? ($((SECONDS-s)) s)"; grep -E "targets met" $L/table.txt | head -3 >> $S; grep -i "fail\|error\|not timed" $L/bench.log | head >> $S
note "gpu after: $(nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv,noheader)"
s=$SECONDS; timeout 120 $B/bench_offload --fraction 0.5 --repeats 31 > $L/offload.md 2> $L/offload.log
note "offload bench rc=$? ($((SECONDS-s)) s)"; cat $L/offload.md >> $S
s=$SECONDS; CUDACXX=/usr/local/cuda/bin/nvcc CMAKE_BUILD_PARALLEL_LEVEL=16 timeout 130 python3 -m pip wheel -q --no-build-isolation --no-deps \
  -w /tmp/i1/wheel -C build-dir=/tmp/i1/skb . > /tmp/i1_wheel.log 2>&1; note "wheel rc=$? ($((SECONDS-s)) s)"
PIP_BREAK_SYSTEM_PACKAGES=1 python3 -m pip install -q --no-deps --force-reinstall /tmp/i1/wheel/*.whl > /tmp/i1_install.log 2>&1; note "install rc=$?"
s=$SECONDS; (cd /tmp && timeout 100 python3 -m pytest -q -rs $R/python/tests) > /tmp/i1_pytest.log 2>&1
note "pytest rc=$? ($((SECONDS-s)) s) $(tail -1 /tmp/i1_pytest.log)"
grep -a -m5 -A20 "FAILED\|Error" /tmp/i1_pytest.log | head -40 >> $S
tar czf $L/logs.tgz -C / tmp/i1_wheel.log tmp/i1_install.log tmp/i1_pytest.log $L/offload.log $L/bench.log $L/paper_install.log 2>/dev/null
rm -f $L/offload.log $L/bench.log $L/paper_install.log
note "done $SECONDS s"
