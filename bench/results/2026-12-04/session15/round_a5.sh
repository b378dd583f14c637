#!/bin/bash
# Round A5 (fifteenth session, H200): warp tiles (R = 4) for the paper's split and fp16 + int8 against
# their default R = 1, one binary (ab_r4.cu), three passes of 15 interleaved rounds.
# Binaries: $R/.dev/h/r.tar.xz (r/). Usage (repo root): OUT=out .dev/h/round_a5.sh
set -u
R=$(pwd); export LD_LIBRARY_PATH=$R/.dev/bin/lib; L=/tmp/logs_a5; mkdir -p $L /tmp/b5
tar -xJf $R/.dev/h/r.tar.xz -C /tmp/b5; B=/tmp/b5/r
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw,temperature.gpu --format=csv,noheader
for pass in 1 2 3; do
  s=$SECONDS; timeout 120 $B/abr4 all 15 > $L/ab_$pass.txt 2>&1
  echo "ab pass $pass rc=$? ($((SECONDS-s)) s)"; sed "s/^/  $pass /" $L/ab_$pass.txt
done
tar czf $OUT/a5.tgz -C $L . ; echo "done $SECONDS s"
