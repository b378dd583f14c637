#!/bin/bash
# Round X (ninth session): the final tree, warp tiles the default of the rounded split with 8-bit integer states.
# (1) every single-GPU test binary but the exhaustive one; memcheck of the fused FP8 and optimizer tests;
# (2) BENCHMARKS.md's run with the peers (tools/bench_report.py).
set -u
R=$(pwd); export LD_LIBRARY_PATH=$R/.dev/bin/lib; export PYTHONUNBUFFERED=1; L=/tmp/logs_x; mkdir -p $L /tmp/x9
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw,temperature.gpu --format=csv,noheader
tar -xJf .dev/x9/t.tar.xz -C /tmp/x9
for t in test_gpu_step_parity test_gpu_finite_property test_gpu_step_inputs test_gpu_fp8_step test_gpu_optimizer test_gpu_huge \
         test_gpu_offload test_gpu_optimizer_offload test_gpu_grad_pass test_gpu_optimizer_fp8 test_gpu_extension test_gpu_fp8_param test_gpu_optimizer_io; do
  s=$SECONDS; timeout 150 /tmp/x9/t/$t > $L/$t.log 2>&1; rc=$?
  echo "$t rc=$rc ($((SECONDS-s)) s) $(grep -a 'test cases' $L/$t.log | tr -s ' ')"
  [ $rc -ne 0 ] && grep -a -m3 -B2 -A12 "ERROR\|CRASHED" $L/$t.log | head -40
done
for t in test_gpu_fp8_param test_gpu_optimizer; do
  s=$SECONDS; timeout 60 compute-sanitizer --tool memcheck --error-exitcode 3 /tmp/x9/t/$t > $L/memcheck_$t.log 2>&1
  echo "memcheck $t rc=$? ($((SECONDS-s)) s) $(grep -E 'ERROR SUMMARY' $L/memcheck_$t.log | tail -1) $(grep -a 'test cases' $L/memcheck_$t.log | tr -s ' ')"
done
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/paper $R/.whl/flashoptim-0.1.4*.whl > $L/paper_install.log 2>&1; echo "paper install rc=$?"
s=$SECONDS; PYTHONPATH=/tmp/paper timeout $((430 - SECONDS)) python3 tools/bench_report.py --bench "$R/.dev/x9/bench_gpu_step:/default/|^ceiling/" --paper --out $L/BENCHMARKS.md --json $L/bench_gpu.json --torch-json $L/torch.json --paper-json $L/paper.json --append bench/results/2026-12-03/session7/offload.md --notes docs/benchmark-notes.md > $L/table.txt 2> $L/bench.log; echo "bench_report rc=$? ($((SECONDS-s)) s)"; head -40 $L/table.txt; grep "targets met" $L/table.txt; grep -i "fail\|error\|not timed" $L/bench.log | head
rm -f $L/*.part; tar czf $OUT/x.tgz -C $L . ; echo "done $SECONDS s"
