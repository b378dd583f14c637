#!/bin/bash
# Round R (2026-12-02, session 2): the device bf16 conversion without its NaN test in front (binaries built on the
# development machine from the working tree, carried in .dev/bin): the exhaustive conversion sweep, step parity,
# the finite-property tests, then A/B of the native-bf16 layouts (abn_old: 5d340d9, abn_new: the tree).
set -u
R=$(pwd); export LD_LIBRARY_PATH=$R/.dev/bin/lib; cd $R/.dev/bin
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
s=$SECONDS; timeout 100 ./test_gpu_exhaustive -tc="fp32 -> bf16 / fp16 / fp8*" > /tmp/ex.log 2>&1; echo "exhaustive [fp32 -> bf16/fp16/fp8] rc=$? ($((SECONDS-s)) s) $(grep 'test cases' /tmp/ex.log)"; grep -a -m5 -B2 -A6 "ERROR" /tmp/ex.log | head -20
for t in test_gpu_step_parity test_gpu_finite_property; do s=$SECONDS; timeout 100 ./$t > /tmp/$t.log 2>&1; echo "$t rc=$? ($((SECONDS-s)) s) $(grep 'test cases' /tmp/$t.log)"; grep -a -m4 -B3 -A8 "ERROR\|CRASHED" /tmp/$t.log | head -20; done
for r in 1 2; do for v in old new; do ./abn_$v --benchmark_format=csv 2>/dev/null | grep '^"step' | awk -F, -v v=$v '{printf "%s %s %.4f ms %.1f%%\n", v, $1, $3, $(NF-1)}'; done; done
