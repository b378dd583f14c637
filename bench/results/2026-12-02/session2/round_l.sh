#!/bin/bash
# Round L (2026-12-02 session 2): where the device-inputs kernel loses 8%: bench both variants, Nsight Compute both.
set -u
L=/tmp/logs; mkdir -p $L; R=$(pwd); T=$R/.snap; cd /tmp
s=$SECONDS; nvcc -O3 -std=c++17 -arch=sm_90 -DFLASHOPTIM_BENCH_ONLY_DEFAULT -I$T/include -I$T/bench/gpu $T/bench/gpu/bench_step.cu -lbenchmark -lpthread -o bs > $L/build.log 2>&1; echo "build rc=$? ($((SECONDS-s)) s)"; tail -5 $L/build.log
for r in 1; do ./bs --benchmark_filter='adamw_default/' > $L/bench_$r.txt 2>&1; grep -E "^step/" $L/bench_$r.txt | awk '{print $1, $2, $3}' ; done
N="ncu --set full --import-source no --kernel-name-base demangled --kernel-name regex:step_kernel --launch-skip 3 --launch-count 1"
for v in default device_inputs; do s=$SECONDS; timeout 150 $N -o $L/ncu_$v ./bs --benchmark_filter="adamw_default/flat268M/$v/" > $L/ncu_run_$v.txt 2>&1; echo "ncu $v rc=$? ($((SECONDS-s)) s)"
  ncu -i $L/ncu_$v.ncu-rep --page details > $L/ncu_$v.txt 2>&1
  ncu -i $L/ncu_$v.ncu-rep --page source --csv --print-source sass > $L/ncu_src_$v.csv 2>&1
  ncu -i $L/ncu_$v.ncu-rep --page raw --csv > $L/ncu_raw_$v.csv 2>&1
  grep -E "Duration|Issue Slots Busy|Executed Instructions  |Registers Per|Achieved Occupancy|Warp Cycles Per Issued|DRAM Throughput|Block Limit|Dynamic Shared|Static Shared|Waves|Grid Size" $L/ncu_$v.txt | cut -c1-110; done
cd /tmp/logs && tar czf $OUT/logs.tgz --exclude='*.ncu-rep' . && cp /tmp/logs/*.ncu-rep $OUT/ 2>/dev/null; echo packed
