#!/bin/bash
# Round B6 (sixteenth session, H200): the scale write-back once per R tiles with the new scales in two
# write entries (no store over a word the group's other lanes read; this tree, abw2_wb2) against 1eb7293
# (abw2_cur) and 1eb7293 + session15/writeback.patch (abw2_wb), four passes of 15 interleaved rounds, the
# order rotated; then test_gpu_step_parity of this tree, synccheck and racecheck of the small warp-tile
# cases, memcheck of the warp-tile case.
# Binaries: $R/.dev/h/a/ and $R/.dev/h/c/. Usage (repo root): OUT=out bench/results/2026-12-04/session16/round_b6.sh
set -u
R=$(pwd); export LD_LIBRARY_PATH=$R/.dev/bin/lib; L=/tmp/logs_b6; mkdir -p $L; B=$R/.dev/h/c
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw,temperature.gpu --format=csv,noheader
for pass in 1 2 3 4; do
  case $pass in 1) order="cur wb wb2";; 2) order="wb2 cur wb";; 3) order="wb wb2 cur";; 4) order="wb2 wb cur";; esac
  for b in $order; do
    s=$SECONDS; timeout 150 $R/.dev/h/a/abw2_$b all 15 > $L/ab_${b}_$pass.txt 2>&1
    echo "ab $b pass $pass rc=$? ($((SECONDS-s)) s)"; sed "s/^/  $b$pass /" $L/ab_${b}_$pass.txt
  done
done
s=$SECONDS; timeout 200 $B/test_gpu_step_parity > $L/test_gpu_step_parity.log 2>&1; rc=$?
echo "test_gpu_step_parity rc=$rc ($((SECONDS-s)) s) $(grep -a 'test cases' $L/test_gpu_step_parity.log | tr -s ' ')"
[ $rc -ne 0 ] && grep -a -m3 -B2 -A12 "ERROR\|CRASHED" $L/test_gpu_step_parity.log | head -40
for tool in synccheck racecheck memcheck; do
  for tc in 'parity: warp tiles\, small' 'parity: warp tiles\, 2 stages\, small'; do
    n=$(echo "$tc" | tr -dc 'a-z0-9' | tail -c 12); s=$SECONDS
    timeout 100 compute-sanitizer --tool $tool --error-exitcode 3 $B/test_gpu_step_parity -tc="$tc" > $L/san_${tool}_$n.log 2>&1
    echo "$tool $tc rc=$? ($((SECONDS-s)) s) $(grep -E 'SUMMARY' $L/san_${tool}_$n.log | tail -1) $(grep -a 'test cases' $L/san_${tool}_$n.log | tr -s ' ')"
  done
done
tar czf $OUT/b6.tgz -C $L . ; echo "done $SECONDS s"
