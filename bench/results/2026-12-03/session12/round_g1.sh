#!/bin/bash
# Twelfth session, round G1 (H200): ab_ulp16.cu's two binaries alternated, two passes each,
# 21 interleaved rounds per run. Usage (repo root): BIN=.dev/x12g OUT=out round_g1.sh
set -u
export LD_LIBRARY_PATH=$PWD/.dev/bin/lib
nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv > "$OUT/gpu.txt"
for pass in 1 2; do
  for t in old new; do
    echo "== pass $pass $t $(date -u +%H:%M:%S)" >> "$OUT/g1.txt"
    "$BIN/ab16_$t" all 21 >> "$OUT/g1.txt" 2>&1
  done
done
