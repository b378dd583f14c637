#!/bin/bash
# Round B5 (sixteenth session, H200): the scale write-back once per R tiles again, on 1eb7293. A/B:
# ab_wb2.cu against 1eb7293 (abw2_cur) and 1eb7293 + session15/writeback.patch (abw2_wb), four passes of
# 15 interleaved rounds, the binaries' order alternated.
# Binaries: $R/.dev/h/a/. Usage (repo root): OUT=out bench/results/2026-12-04/session16/round_b5.sh
set -u
R=$(pwd); export LD_LIBRARY_PATH=$R/.dev/bin/lib; L=/tmp/logs_b5; mkdir -p $L
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw,temperature.gpu --format=csv,noheader
for pass in 1 2 3 4; do
  order="cur wb"; [ $((pass % 2)) -eq 0 ] && order="wb cur"
  for b in $order; do
    s=$SECONDS; timeout 150 $R/.dev/h/a/abw2_$b all 15 > $L/ab_${b}_$pass.txt 2>&1
    echo "ab $b pass $pass rc=$? ($((SECONDS-s)) s)"; sed "s/^/  $b$pass /" $L/ab_${b}_$pass.txt
  done
done
tar czf $OUT/b5.tgz -C $L . ; echo "done $SECONDS s"
