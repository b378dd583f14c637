#!/bin/bash
# Round D (tenth session): stages with warp tiles (ab_stages.cu): R = 4 two per turn with 2, 3 and 4 stages (and 5
# for fp8 states) against R = 1 with the default's stages, 21 interleaved rounds, three passes.
set -u
R=$(pwd); export LD_LIBRARY_PATH=$R/.dev/bin/lib; L=/tmp/logs_d; mkdir -p $L
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw,temperature.gpu --format=csv,noheader
for pass in 1 2 3; do
  for l in adamw_default lion_default sgd_momentum adamw_fp8_states; do
    s=$SECONDS; timeout 60 $R/.dev/r5/ab_stages $l 21 > $L/ab_stages_${l}_$pass.txt 2>&1; echo "ab_stages $l pass $pass rc=$? ($((SECONDS-s)) s)"
    grep -v '^copy' $L/ab_stages_${l}_$pass.txt
  done
done
tar czf $OUT/d.tgz -C $L . ; echo "done $SECONDS s"
