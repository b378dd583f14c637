#!/bin/bash
# Round N6/U1: 54ca6c7's off-load binaries (tests, memcheck, bench, example), then the scale-read pattern variants.
bash .dev/off6/round6.sh 2>&1 | tee $OUT/round_n6.log
nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv,noheader
# ceil2 built from ceil2.cu: nvcc -O3 -std=c++17 -arch=sm_90 ceil2.cu -o ceil2
timeout 200 .dev/u7/ceil2 2>&1 | tee $OUT/ceil2.txt
