#!/bin/bash
# Round A7 (fifteenth session, H200): the landed kernels (2511789's tree, build/release): synccheck and
# racecheck of the small warp-tile cases, test_gpu_step_parity, test_gpu_extension, test_gpu_optimizer_io.
# Binaries: $R/.dev/h/f.tar.xz (f/). Usage (repo root): OUT=out .dev/h/round_a7.sh
set -u
R=$(pwd); export LD_LIBRARY_PATH=$R/.dev/bin/lib; L=/tmp/logs_a7; mkdir -p $L /tmp/b7
tar -xJf $R/.dev/h/f.tar.xz -C /tmp/b7; B=/tmp/b7/f
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw,temperature.gpu --format=csv,noheader
for tool in synccheck racecheck; do
  for tc in 'parity: warp tiles\, small' 'parity: warp tiles\, 2 stages\, small'; do
    n=$(echo "$tc" | tr -dc 'a-z0-9' | tail -c 12); s=$SECONDS
    timeout 100 compute-sanitizer --tool $tool --error-exitcode 3 $B/test_gpu_step_parity -tc="$tc" > $L/san_${tool}_$n.log 2>&1
    echo "$tool $tc rc=$? ($((SECONDS-s)) s) $(grep -E 'SUMMARY' $L/san_${tool}_$n.log | tail -1) $(grep -a 'test cases' $L/san_${tool}_$n.log | tr -s ' ')"
  done
done
for t in test_gpu_step_parity test_gpu_extension test_gpu_optimizer_io; do
  s=$SECONDS; timeout 200 $B/$t > $L/$t.log 2>&1; rc=$?
  echo "$t rc=$rc ($((SECONDS-s)) s) $(grep -a 'test cases' $L/$t.log | tr -s ' ')"
  [ $rc -ne 0 ] && grep -a -m3 -B2 -A12 "ERROR\|CRASHED" $L/$t.log | head -40
done
tar czf $OUT/a7.tgz -C $L . ; echo "done $SECONDS s"
