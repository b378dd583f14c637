#!/bin/bash
# Round F2 (fourteenth session, H200 machine): the GPU tests whose harness changed (step_and_compare moved
# into tests/gpu/gpu_harness.hpp, which the extension test now shares), then a look at what bounds the CPU
# step on the host's 16 threads:
#   - diag: the default layout's memory pattern (its 12.5 bytes per element in the same 7 buffers, each
#     thread one contiguous run of groups) with trivial arithmetic, 1-16 threads (.dev-built from
#     round_f2_diag.cpp with g++ -O3 -march=sapphirerapids -mprefer-vector-width=512 -fopenmp);
#   - the default layout's step (this tree's bench_cpu_step) and DeepSpeed's mixed step at 1-16 threads;
#   - 2 threads placed on CPUs {0},{1} and on {0},{8} (whether neighbouring vCPUs share a core).
# Binaries: $R/.dev/h/f2.tar.xz (c/gpu, c/bench_fin, c/ds_harness_spr, c/diag). Usage: OUT=out round_f2.sh
set -u
R=$(pwd); export LD_LIBRARY_PATH=$R/.dev/bin/lib OMP_WAIT_POLICY=passive; L=/tmp/logs_f2; mkdir -p $L /tmp/f2
tar -xJf $R/.dev/h/f2.tar.xz -C /tmp/f2; B=/tmp/f2/c
for t in test_gpu_step_parity test_gpu_extension; do
  s=$SECONDS; timeout 240 $B/gpu/$t > $L/$t.log 2>&1; rc=$?
  echo "$t rc=$rc ($((SECONDS-s)) s) $(grep -a 'test cases' $L/$t.log | tr -s ' ')"
  [ $rc -ne 0 ] && grep -a -m3 -B2 -A12 "ERROR\|CRASHED" $L/$t.log | head -40
done
$B/diag 26 | tee $L/diag.txt
for t in 1 2 4 8 16; do
  steps=$(( t < 4 ? 3 : 10 ))
  echo "threads $t: deepspeed $(OMP_NUM_THREADS=$t timeout 90 $B/ds_harness_spr 26 $steps | grep 'bf16/fp32')" | tee -a $L/scaling.txt
  FLASHOPTIM_BENCH_PARAMS=$((1 << 26)) OMP_NUM_THREADS=$t timeout 90 $B/bench_fin \
    --benchmark_filter="cpu_step/adamw_rounded_split_default_states/avx512/threads:$t/" --benchmark_min_time=0.5 2>&1 \
    | grep -E "^cpu_step" | awk -v t=$t '{print "threads " t ": ours", $NF}' | tee -a $L/scaling.txt
done
for places in "{0},{1}" "{0},{8}" "{0},{1}" "{0},{8}"; do
  FLASHOPTIM_BENCH_PARAMS=$((1 << 24)) OMP_NUM_THREADS=2 OMP_PLACES="$places" OMP_PROC_BIND=true timeout 60 $B/bench_fin \
    --benchmark_filter="cpu_step/adamw_rounded_split_default_states/avx512/threads:2/" --benchmark_min_time=0.5 2>&1 \
    | grep -E "^cpu_step" | awk -v p="$places" '{print "2 threads on", p ":", $NF}' | tee -a $L/places.txt
done
tar czf $OUT/f2.tgz -C $L . ; echo "done $SECONDS s"
