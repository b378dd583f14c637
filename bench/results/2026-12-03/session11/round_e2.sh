#!/bin/bash
# Round E2 (eleventh session, the lease of round E1 where it stayed warm): BENCHMARKS.md's run with the peers
# (tools/bench_report.py: bench_gpu_step of this tree, torch fused AdamW, the paper's package 0.1.4); then Nsight
# Compute on round D's binary (ab_stages, session10): Lion and SGD momentum with warp tiles (R = 4), 2 stages (the
# new default) against 3 (the old one): time, DRAM throughput, instructions, issue activity and stall reasons;
# racecheck of the small 2-stage warp-tile case and of the whole warp-tile case.
set -u
R=$(pwd); export LD_LIBRARY_PATH=$R/.dev/bin/lib; export PYTHONUNBUFFERED=1; L=/tmp/logs_e2; mkdir -p $L
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw,temperature.gpu --format=csv,noheader
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/paper $R/.whl/flashoptim-0.1.4*.whl > $L/paper_install.log 2>&1; echo "paper install rc=$?"
s=$SECONDS; PYTHONPATH=/tmp/paper timeout 400 python3 tools/bench_report.py --bench "$R/.dev/e/bench_gpu_step:/default/|^ceiling/" --paper --out $L/BENCHMARKS.md --json $L/bench_gpu.json --torch-json $L/torch.json --paper-json $L/paper.json --append bench/results/2026-12-03/session7/offload.md --notes docs/benchmark-notes.md > $L/table.txt 2> $L/bench.log; echo "bench_report rc=$? ($((SECONDS-s)) s)"; head -40 $L/table.txt; grep "targets met" $L/table.txt; grep -i "fail\|error\|not timed" $L/bench.log | head
M=smsp__inst_executed.sum,smsp__issue_active.avg.pct_of_peak_sustained_active,gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,sm__cycles_elapsed.avg.per_second
for r in long_scoreboard short_scoreboard wait barrier no_instruction math_pipe_throttle mio_throttle lg_throttle not_selected; do
  M=$M,smsp__average_warps_issue_stalled_${r}_per_issue_active.ratio
done
for l in lion_default/r4_s2 lion_default/r4_s3 sgd_momentum/r4_s2 sgd_momentum/r4_s3; do
  n=${l//\//_}; s=$SECONDS; timeout 60 ncu -k regex:step_kernel -c 2 --metrics $M $R/.dev/r5/ab_stages $l 1 1 > $L/ncu_$n.txt 2>&1; echo "ncu $n rc=$? ($((SECONDS-s)) s)"
  grep -E "inst_executed|issue_active|gpu__time|dram__|cycles_elapsed|long_scoreboard|short_scoreboard|wait|barrier|not_selected|ERROR|rror" $L/ncu_$n.txt | tail -12 | sed -E 's/^ +//' | cut -c1-110
done
mkdir -p /tmp/b && [ -x /tmp/b/t/test_gpu_step_parity ] || tar -xJf $R/.dev/e/t.tar.xz -C /tmp/b
for tc in 'parity: warp tiles\, 2 stages\, small' 'parity: warp tiles'; do
  n=$(echo "$tc" | tr -c 'a-z0-9\n' '_'); s=$SECONDS; timeout 200 compute-sanitizer --tool racecheck --error-exitcode 3 /tmp/b/t/test_gpu_step_parity -tc="$tc" > $L/san_racecheck_$n.log 2>&1
  echo "racecheck $tc rc=$? ($((SECONDS-s)) s) $(grep -E 'SUMMARY' $L/san_racecheck_$n.log | tail -1) $(grep -a 'test cases' $L/san_racecheck_$n.log | tr -s ' ')"
done
rm -f $L/*.part; tar czf $OUT/e2.tgz -C $L . ; echo "done $SECONDS s"
