#!/bin/bash
# Round M, second call: A/B of this tree (.snap) against the commit before it (.snapold), same lease.
set -u
L=/tmp/logs2; mkdir -p $L; R=$(pwd); cd /tmp
b() { nvcc -O3 -std=c++17 -arch=sm_90 --expt-relaxed-constexpr $3 -I$R/.$2/include -I$R/.$2/bench/gpu $4 -lbenchmark -lpthread -o $1 2>&1 | grep error; }
b ab_new snap -DFLASHOPTIM_BENCH_ONLY_DEFAULT $R/.dev/ab_inputs.cu & b ab_old snapold -DFLASHOPTIM_BENCH_ONLY_DEFAULT $R/.dev/ab_inputs.cu &
b bs_new snap -DFLASHOPTIM_BENCH_ONLY_DEFAULT $R/.dev/ab_layouts.cu & b bs_old snapold -DFLASHOPTIM_BENCH_ONLY_DEFAULT $R/.dev/ab_layouts.cu & wait; ls -la ab_* bs_* | awk '{print $5, $9}'
for r in 1 2; do for v in old new; do echo "[$v] $(./ab_$v | head -2 | tr '\n' ' ')"; done; done
for v in old new; do ./ab_$v llama | head -1 | sed "s/^/[$v] /"; done
for r in 1 2; do for v in old new; do ./bs_$v --benchmark_format=csv 2>/dev/null | grep '^"step' | sed "s/^/$v /" | cut -c1-400 ; done; done | tee $L/ab.txt
cd /tmp/logs2 && tar czf $OUT/logs2.tgz . && echo packed
