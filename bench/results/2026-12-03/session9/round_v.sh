#!/bin/bash
# Round V2+V3 (ninth session), one lease: warp tiles as the default of the 4-byte-scale layouts.
# (1) the GPU tests; (2) racecheck / synccheck of the warp tiles' small parity case and memcheck of test_gpu_optimizer;
# (3) the default policy (R = 1) against warp tiles of 4 (and 8 for AdamW and Lion), interleaved, one layout per
# invocation; (4) BENCHMARKS.md's run with the peers (tools/bench_report.py), if time is left.
set -u
R=$(pwd); export LD_LIBRARY_PATH=$R/.dev/bin/lib; export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw,temperature.gpu --format=csv,noheader
mkdir -p /tmp/v9 && tar -xJf .dev/v9/t.tar.xz -C /tmp/v9
for t in test_gpu_step_parity test_gpu_finite_property test_gpu_step_inputs test_gpu_fp8_step test_gpu_optimizer test_gpu_huge \
         test_gpu_offload test_gpu_optimizer_offload test_gpu_grad_pass test_gpu_optimizer_fp8 test_gpu_extension test_gpu_fp8_param test_gpu_optimizer_io; do
  s=$SECONDS; timeout 150 /tmp/v9/t/$t > $OUT/$t.log 2>&1; rc=$?
  echo "$t rc=$rc ($((SECONDS-s)) s) $(grep -a 'test cases' $OUT/$t.log | tr -s ' ')"
  [ $rc -ne 0 ] && grep -a -m3 -B2 -A12 "ERROR\|CRASHED" $OUT/$t.log | head -40
done
for tool in racecheck synccheck; do
  s=$SECONDS; timeout 90 compute-sanitizer --tool $tool --error-exitcode 3 /tmp/v9/t/test_gpu_step_parity -tc="parity: warp tiles, small" > $OUT/san_parity_$tool.log 2>&1
  echo "$tool parity warp tiles small rc=$? ($((SECONDS-s)) s) $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $OUT/san_parity_$tool.log | tail -1) $(grep -a 'test cases' $OUT/san_parity_$tool.log | tr -s ' ')"
done
s=$SECONDS; timeout 60 compute-sanitizer --tool memcheck --error-exitcode 3 /tmp/v9/t/test_gpu_optimizer > $OUT/san_memcheck.log 2>&1
echo "memcheck test_gpu_optimizer rc=$? ($((SECONDS-s)) s) $(grep -E 'ERROR SUMMARY' $OUT/san_memcheck.log | tail -1) $(grep -a 'test cases' $OUT/san_memcheck.log | tr -s ' ')"
for l in adamw_default lion_default sgd_momentum adamw_reference adamw_fp16_ulp8 adamw_bf16_native adamw_ulp16 adamw_fp8_states adamw_bf16_states; do
  s=$SECONDS; timeout 60 .dev/v9/ab_warp $l 11 > $OUT/ab_$l.txt 2>&1; echo "ab $l rc=$? ($((SECONDS-s)) s)"; grep -v '^copy' $OUT/ab_$l.txt
done
nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv,noheader
echo "elapsed $SECONDS s"
if [ $SECONDS -lt 330 ]; then
  L=/tmp/logs_v3; mkdir -p $L
  python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/paper $R/.whl/flashoptim-0.1.4*.whl > $L/paper_install.log 2>&1; echo "paper install rc=$?"
  s=$SECONDS; PYTHONPATH=/tmp/paper timeout $((585 - SECONDS)) python3 tools/bench_report.py --bench "$R/.dev/v9b/bench_gpu_step:/default/|^ceiling/" --paper --out $L/BENCHMARKS.md --json $L/bench_gpu.json --torch-json $L/torch.json --paper-json $L/paper.json --append bench/results/2026-12-03/session7/offload.md --notes docs/benchmark-notes.md > $L/table.txt 2> $L/bench.log; echo "bench_report rc=$? ($((SECONDS-s)) s)"; head -40 $L/table.txt; grep "targets met" $L/table.txt; grep -i "fail\|error\|not timed" $L/bench.log | head
  cp -r $L $OUT/v3
fi
cd $OUT && tar -czf logs.tgz *.log *.txt 2>/dev/null; echo "done $SECONDS s"
