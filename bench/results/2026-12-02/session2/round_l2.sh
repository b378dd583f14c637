#!/bin/bash
set -u; R=$(pwd); cd /tmp
b() { nvcc -O3 -std=c++17 -arch=sm_90 --expt-relaxed-constexpr -DFLASHOPTIM_BENCH_ONLY_DEFAULT $2 -I$R/.$3/include -I$R/.$3/bench/gpu $R/.dev/ab_inputs.cu -lbenchmark -lpthread -o ab_$1 2>&1 | grep error; }
b base "" snap & b x1 -DFO_EXP_FP64_PROLOGUE=1 snapx & b x2 -DFO_EXP_FP64_PROLOGUE=2 snapx & b y1 -DFO_EXP_DEV_NOINLINE snapx & b y2 "-DFO_EXP_DEV_NOINLINE -DFO_EXP_FP64_PROLOGUE=2" snapx & wait
for r in 1 2; do for v in base x1 x2 y1 y2; do echo "[$v] $(./ab_$v | head -2 | tr '\n' ' ')"; done; done
