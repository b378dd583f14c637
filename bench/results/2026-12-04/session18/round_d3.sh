#!/bin/bash
# Round D3 (eighteenth session, H200): ab_zero.cu, built as is (abz) and with
# -DFLASHOPTIM_AB_ZERO_TOLERANT (abz_tol: the range check also accepts m = +0 and v = +0, sqrt's
# fast path clamps its rsqrt operand so that sqrt(+0) = +0, the second moment's code tests n for
# zero), the binaries alternated over four passes of 15 interleaved rounds: what exact zeros in the
# gradient cost the range-checked step (contiguous zero rows, sparse zeros), what accepting them
# costs on dense gradients, and Lion (no range check) as the control.
# Usage (repo root): OUT=out bench/results/2026-12-04/session18/round_d3.sh
set -u
R=$(pwd); export LD_LIBRARY_PATH=$R/.dev/bin/lib; L=/tmp/logs_d3; mkdir -p $L
B=$R/.dev/h/d3
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.limit,temperature.gpu --format=csv > $L/smi.txt 2>&1
i=0
for b in abz abz_tol abz_tol abz abz abz_tol abz_tol abz; do
  i=$((i+1)); s=$SECONDS; $B/$b all 15 > $L/pass${i}_$b.txt 2>&1
  echo "== pass $i $b ($((SECONDS-s)) s)"; grep " med " $L/pass${i}_$b.txt
done
tar czf $OUT/d3.tgz -C $L . ; echo "done $SECONDS s"
