#!/bin/bash
# Round A4 (fifteenth session, H200): warp tiles' scales written back once per R tiles.
#   1. A/B: ab_wb.cu against f750d3b's headers (abw_old) and this tree's (abw_new), four passes of 15
#      interleaved rounds, the order of the binaries alternated;
#   2. the GPU test binaries the change reaches (build/release); synccheck and racecheck of the small
#      warp-tile cases, memcheck of parity adamw_default;
#   3. BENCHMARKS.md's run with the peers (bench_gpu_step of this tree).
# Binaries: $R/.dev/h/w.tar.xz (w/). Usage (repo root): OUT=out .dev/h/round_a4.sh
set -u
R=$(pwd); export LD_LIBRARY_PATH=$R/.dev/bin/lib PYTHONUNBUFFERED=1; L=/tmp/logs_a4; mkdir -p $L /tmp/b4
tar -xJf $R/.dev/h/w.tar.xz -C /tmp/b4; B=/tmp/b4/w
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw,temperature.gpu --format=csv,noheader
for pass in 1 2 3 4; do
  order="old new"; [ $((pass % 2)) -eq 0 ] && order="new old"
  for b in $order; do
    s=$SECONDS; timeout 120 $B/abw_$b all 15 > $L/ab_${b}_$pass.txt 2>&1
    echo "ab $b pass $pass rc=$? ($((SECONDS-s)) s)"; sed "s/^/  $b$pass /" $L/ab_${b}_$pass.txt
  done
done
for t in test_gpu_step_parity test_gpu_finite_property test_gpu_step_inputs test_gpu_fp8_step test_gpu_optimizer test_gpu_huge \
         test_gpu_offload test_gpu_optimizer_offload test_gpu_grad_pass test_gpu_optimizer_fp8 test_gpu_fp8_param; do
  s=$SECONDS; timeout 200 $B/$t > $L/$t.log 2>&1; rc=$?
  echo "$t rc=$rc ($((SECONDS-s)) s) $(grep -a 'test cases' $L/$t.log | tr -s ' ')"
  [ $rc -ne 0 ] && grep -a -m3 -B2 -A12 "ERROR\|CRASHED" $L/$t.log | head -40
done
for tool in synccheck racecheck; do
  for tc in 'parity: warp tiles\, small' 'parity: warp tiles\, 2 stages\, small'; do
    n=$(echo "$tc" | tr -dc 'a-z0-9' | tail -c 12); s=$SECONDS
    timeout 100 compute-sanitizer --tool $tool --error-exitcode 3 $B/test_gpu_step_parity -tc="$tc" > $L/san_${tool}_$n.log 2>&1
    echo "$tool $tc rc=$? ($((SECONDS-s)) s) $(grep -E 'SUMMARY' $L/san_${tool}_$n.log | tail -1) $(grep -a 'test cases' $L/san_${tool}_$n.log | tr -s ' ')"
  done
done
s=$SECONDS; timeout 100 compute-sanitizer --tool memcheck --error-exitcode 3 $B/test_gpu_step_parity -tc='parity adamw_default*' > $L/memcheck_default.log 2>&1
echo "memcheck parity adamw_default rc=$? ($((SECONDS-s)) s) $(grep -E 'ERROR SUMMARY' $L/memcheck_default.log | tail -1) $(grep -a 'test cases' $L/memcheck_default.log | tr -s ' ')"
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/paper $R/.whl/flashoptim-0.1.4*.whl > $L/paper_install.log 2>&1; echo "paper install rc=$?"
s=$SECONDS; PYTHONPATH=/tmp/paper timeout 300 python3 tools/bench_report.py --bench "$B/bench_gpu_step:/default/|^ceiling/" --paper --out $L/BENCHMARKS.md --json $L/bench_gpu.json --torch-json $L/torch.json --paper-json $L/paper.json --append bench/results/2026-12-03/session7/offload.md --notes docs/benchmark-notes.md > $L/table.txt 2> $L/bench.log; echo "bench_report rc=$? ($((SECONDS-s)) s)"; grep -E "targets met" $L/table.txt | head; grep -i "fail\|error\|not timed" $L/bench.log | head
rm -f $L/*.part; tar czf $OUT/a4.tgz -C $L . ; echo "done $SECONDS s"
