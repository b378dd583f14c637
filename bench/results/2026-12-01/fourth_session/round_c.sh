#!/bin/bash
set -u
L=/tmp/logs; mkdir -p $L; R=$(pwd); B=/tmp/fo
cd $R/.snap; s=$SECONDS; cmake --preset release -B $B -DFLASHOPTIM_BUILD_BENCHMARKS=ON > $L/cfg.log 2>&1
cmake --build $B -j15 --target test_gpu_optimizer_offload bench_fp8_param -- -k 0 > $L/build.log 2>&1; echo "cxx build rc=$? ($((SECONDS-s)) s)"; grep -m8 -B2 " error" $L/build.log | head -30
T=$(find $B -name test_gpu_optimizer_offload -type f | head -1); F=$(find $B -name bench_fp8_param -type f | head -1)
s=$SECONDS; OMP_WAIT_POLICY=passive timeout 100 $T > $L/opt_offload.log 2>&1; echo "test_gpu_optimizer_offload rc=$? ($((SECONDS-s)) s) $(grep -E 'test cases' $L/opt_offload.log)"; grep -a -m4 -B3 -A8 "ERROR\|CRASHED" $L/opt_offload.log | head -40
s=$SECONDS; OMP_WAIT_POLICY=passive timeout 120 compute-sanitizer --tool memcheck --error-exitcode 3 $T > $L/mc_opt.log 2>&1; echo "memcheck optimizer_offload (all cases) rc=$? ($((SECONDS-s)) s) $(grep 'ERROR SUMMARY' $L/mc_opt.log | tail -1)"
N="ncu --kernel-name-base demangled --section SpeedOfLight --section Occupancy --section LaunchStats --section ComputeWorkloadAnalysis --section InstructionStats --section WarpStateStats"
for k in fused:"ulp_correction<flashoptim::bf16, signed char>.*fp8_e4m3" plain:"ulp_correction<flashoptim::bf16, signed char>.*void"; do s=$SECONDS; timeout 90 $N --kernel-name regex:"${k#*:}" --launch-skip 2 --launch-count 1 $F /tmp/x.csv > $L/ncu_${k%%:*}.txt 2>&1; echo "ncu ${k%%:*} rc=$? ($((SECONDS-s)) s)"; grep -E "step_kernel|Duration|DRAM Throughput|Compute \(SM\)|Executed Ipc A|Issue Slots Busy|Executed Instructions  |Registers Per|Achieved Occupancy|Warp Cycles Per Issued|Local" $L/ncu_${k%%:*}.txt | cut -c1-160 | head -16; done
