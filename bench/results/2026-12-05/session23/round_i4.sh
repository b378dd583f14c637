#!/bin/bash
# Round I4 (twenty-third session): the two GPU binaries the staged rounds had missed, built here at
# 391c07e (stripped, not committed: .device/i4): test_gpu_optimizer_fp8 (device::optimizer writing
# FP8 weights) under the test and under compute-sanitizer memcheck, and the fp8_gather example.
# Usage (repo root): OUT=out bench/results/2026-12-05/session23/round_i4.sh
set -u
B=.device/i4; export NCCL_NVLS_ENABLE=0; S=$OUT/summary.txt; : > $S
# the NCCL of PyTorch's wheel, as tools/shard_device_round.sh finds it
NCCL_DIR=$(python3 -c 'import nvidia.nccl as m; print(list(m.__path__)[0])' 2> /dev/null)
export LD_LIBRARY_PATH=$(cd $B/lib && pwd)${NCCL_DIR:+:$NCCL_DIR/lib}
note() { echo "$*" | tee -a $S; }
note "gpu: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)"
s=$SECONDS; timeout 200 $B/test_gpu_optimizer_fp8 > $OUT/optimizer_fp8.log 2>&1
note "test_gpu_optimizer_fp8 rc=$? ($((SECONDS-s)) s) $(grep -a -E '^\[doctest\] (test cases|assertions)' $OUT/optimizer_fp8.log | tr '\n' ' ')"
s=$SECONDS; timeout 60 $B/flashoptim_example_fp8_gather > $OUT/fp8_gather.log 2>&1
note "flashoptim_example_fp8_gather rc=$? ($((SECONDS-s)) s)"; tail -5 $OUT/fp8_gather.log >> $S
s=$SECONDS; timeout 120 compute-sanitizer --tool memcheck --error-exitcode 3 $B/test_gpu_optimizer_fp8 > $OUT/memcheck_optimizer_fp8.log 2>&1
note "memcheck test_gpu_optimizer_fp8 rc=$? ($((SECONDS-s)) s) $(grep -a 'ERROR SUMMARY' $OUT/memcheck_optimizer_fp8.log | tail -1)"
