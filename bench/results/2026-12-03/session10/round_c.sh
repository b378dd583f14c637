#!/bin/bash
# Round C (tenth session): the paper's split (bf16 + int8 ULP correction) with the default states, R = 1 against
# R = 4 (two warp tiles per turn): ab_ulp8.cu (AdamW, Lion, SGD momentum; the rounded split's AdamW beside them),
# 21 interleaved rounds, three passes.
set -u
R=$(pwd); export LD_LIBRARY_PATH=$R/.dev/bin/lib; L=/tmp/logs_c; mkdir -p $L
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw,temperature.gpu --format=csv,noheader
for pass in 1 2 3; do
  for l in adamw_ulp8 lion_ulp8 sgd_momentum_ulp8 adamw_default; do
    s=$SECONDS; timeout 60 $R/.dev/r4/ab_ulp8 $l 21 > $L/ab_ulp8_${l}_$pass.txt 2>&1; echo "ab_ulp8 $l pass $pass rc=$? ($((SECONDS-s)) s)"
    grep -v '^copy' $L/ab_ulp8_${l}_$pass.txt
  done
done
tar czf $OUT/c.tgz -C $L . ; echo "done $SECONDS s"
