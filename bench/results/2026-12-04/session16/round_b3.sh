#!/bin/bash
# Round B3 (sixteenth session, H200): the rest of the single-GPU test binaries on this tree; synccheck and
# racecheck of the small warp-tile cases; the A/B of round B1 once more (new first); then BENCHMARKS.md's
# run with the peers (torch's fused AdamW, the paper's package 0.1.4) in the same lease, bench_gpu_step of
# this tree (build/release).
# Binaries: $R/.dev/h/b.tar.xz (b/) and $R/.dev/h/a (the A/B). Usage (repo root): OUT=out bench/results/2026-12-04/session16/round_b3.sh
set -u
R=$(pwd); export LD_LIBRARY_PATH=$R/.dev/bin/lib PYTHONUNBUFFERED=1; L=/tmp/logs_b3; mkdir -p $L /tmp/b
tar -xJf $R/.dev/h/b.tar.xz -C /tmp/b; B=/tmp/b/b
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw,temperature.gpu --format=csv,noheader
for t in test_gpu_huge test_gpu_offload test_gpu_optimizer_offload test_gpu_grad_pass test_gpu_optimizer_fp8 test_gpu_fp8_param \
         test_gpu_extension test_gpu_optimizer_io; do
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
for b in new old; do
  s=$SECONDS; timeout 150 $R/.dev/h/a/abf_$b all 15 > $L/ab_${b}_4.txt 2>&1
  echo "ab $b pass 4 rc=$? ($((SECONDS-s)) s)"; sed "s/^/  ${b}4 /" $L/ab_${b}_4.txt
done
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/paper $R/.whl/flashoptim-0.1.4*.whl > $L/paper_install.log 2>&1; echo "paper install rc=$?"
s=$SECONDS; PYTHONPATH=/tmp/paper timeout 300 python3 tools/bench_report.py --bench "$B/bench_gpu_step:/default/|^ceiling/" --paper --out $L/BENCHMARKS.md --json $L/bench_gpu.json --torch-json $L/torch.json --paper-json $L/paper.json --append bench/results/2026-12-03/session7/offload.md --notes docs/benchmark-notes.md > $L/table.txt 2> $L/bench.log; echo "bench_report rc=$? ($((SECONDS-s)) s)"; grep -E "targets met" $L/table.txt | head; grep -i "fail\|error\|not timed" $L/bench.log | head
rm -f $L/*.part; tar czf $OUT/b3.tgz -C $L . ; echo "done $SECONDS s"
