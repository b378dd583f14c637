#!/bin/bash
# Round H (2026-12-02, fourth session): binaries built on the development machine (build/lead, release, sm_90)
# with fp8 states on a 5-stage ring: the GPU tests of what changed, memcheck on the new long-run case, then
# BENCHMARKS.md's run (bench_gpu_step with the memory-pattern ceilings and NVML telemetry, torch, the paper's
# package, the off-load benchmark).
set -u
R=$(pwd); L=/tmp/logs_h; mkdir -p $L /tmp/h; export PYTHONUNBUFFERED=1
tar xJf $R/.dev/h.tar.xz -C /tmp/h; export LD_LIBRARY_PATH=$R/.dev/bin/lib; cd /tmp/h
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader | tee $L/gpu.txt
tar czf $OUT/g_partial.tgz -C $L . 2>/dev/null
for t in test_gpu_step_parity test_gpu_fp8_step test_gpu_optimizer_fp8 test_gpu_step_inputs test_gpu_finite_property; do s=$SECONDS; to=60; [ $t = test_gpu_step_parity ] && to=150; timeout $to ./$t > $L/$t.log 2>&1; echo "$t rc=$? ($((SECONDS-s)) s) $(grep -a 'test cases' $L/$t.log)"; grep -a -m3 -B3 -A8 "ERROR\|CRASHED" $L/$t.log | head -16; done
s=$SECONDS; timeout 80 compute-sanitizer --tool memcheck --error-exitcode 9 ./test_gpu_step_parity -tc="parity: fp8 states' 5-stage ring*,parity adamw_fp8_states" > $L/memcheck.log 2>&1; echo "memcheck fp8 rc=$? ($((SECONDS-s)) s)"; tail -1 $L/memcheck.log
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/paper $R/.whl/flashoptim-0.1.4*.whl > $L/paper_install.log 2>&1
s=$SECONDS; OMP_WAIT_POLICY=passive timeout 60 ./bench_offload --fraction 0.5 --repeats 15 > $L/offload.md 2> $L/offload.log; echo "offload bench rc=$? ($((SECONDS-s)) s)"; grep "CPU step of\|whole off-load" $L/offload.md
cd $R; s=$SECONDS; PYTHONPATH=/tmp/paper timeout 240 python3 tools/bench_report.py --bench '/tmp/h/bench_gpu_step:/default/|^ceiling/' --paper --out $L/BENCHMARKS.md --json $L/bench_gpu.json --torch-json $L/torch.json --paper-json $L/paper.json --append $L/offload.md --notes docs/benchmark-notes.md > $L/table.txt 2> $L/bench.log; echo "bench_report rc=$? ($((SECONDS-s)) s)"; head -70 $L/table.txt; grep -i "fail\|error\|not timed" $L/bench.log | head
tar czf $OUT/h.tgz -C $L . ; echo done
