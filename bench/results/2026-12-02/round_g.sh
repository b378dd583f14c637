#!/bin/bash
# Round G (2026-12-02): the FP8 pass kernel (latency, fast decode), the fused FP8 write (float amax, paired
# conversions), the range-checked guard's redundant compares: tests, A/B benches (HEAD vs tree), ncu.
set -u
L=/tmp/logs; mkdir -p $L; R=$(pwd); B=/tmp/fo; export NCCL_NVLS_ENABLE=0 OMP_WAIT_POLICY=passive
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader | tee $L/gpu.txt
NV="nvcc -O3 -std=c++17 -arch=sm_90 -lineinfo"
for v in old new; do T=$R/.snap; [ $v = old ] && T=$R/.snapold
  ( s=$SECONDS; $NV -DFLASHOPTIM_BENCH_ONLY_DEFAULT -I$T/include -I$T/bench/gpu $T/bench/gpu/bench_step.cu -lbenchmark -lpthread -o /tmp/bs_$v > $L/nvcc_bs_$v.log 2>&1; echo "bs_$v rc=$? ($((SECONDS-s)) s)" ) &
  ( s=$SECONDS; $NV -I$T/include -I$T/bench/gpu $T/bench/gpu/bench_fp8_param.cu -o /tmp/bf_$v > $L/nvcc_bf_$v.log 2>&1; echo "bf_$v rc=$? ($((SECONDS-s)) s)" ) &
done
cd $R/.snap; s=$SECONDS; cmake --preset release -B $B -DFLASHOPTIM_BUILD_BENCHMARKS=ON > $L/cfg.log 2>&1
T="test_gpu_fp8_param test_gpu_fp8_step test_gpu_optimizer_fp8 test_gpu_finite_property test_gpu_step_parity test_gpu_step_inputs"
cmake --build $B -j12 --target $T -- -k 0 > $L/build.log 2>&1; echo "cxx build rc=$? ($((SECONDS-s)) s)"; grep -m8 -B2 " error" $L/build.log | head -30
wait; grep -m5 -B2 " error" $L/nvcc_*.log | head -20
mkdir -p /tmp/bin; for n in $T; do e=$(find $B -name $n -type f -perm -u+x | head -1); [ -n "$e" ] && cp $e /tmp/bin/; done
cd /tmp/bin
for t in $T; do s=$SECONDS; timeout 150 ./$t > $L/$t.log 2>&1; echo "$t rc=$? ($((SECONDS-s)) s) $(grep -E 'test cases' $L/$t.log)"; grep -a -m4 -B3 -A8 "ERROR\|CRASHED" $L/$t.log | head -40; done
for spec in "memcheck|test_gpu_fp8_param|*" "memcheck|test_gpu_fp8_step|*AdamW bf16*,*non-finite*" "racecheck|test_gpu_fp8_param|*every tensor*"; do IFS='|' read tool t tc <<< "$spec"; s=$SECONDS; timeout 75 compute-sanitizer --tool $tool --error-exitcode 3 ./$t -tc="$tc" > $L/san_${tool}_$t.log 2>&1; echo "$tool $t [$tc] rc=$? ($((SECONDS-s)) s) $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $L/san_${tool}_$t.log | tail -1) $(grep -E 'test cases' $L/san_${tool}_$t.log)"; done
cd /tmp
for i in 1 2; do for v in old new; do s=$SECONDS; timeout 60 ./bf_$v $L/bf_${v}_$i.csv > $L/bf_${v}_$i.md 2>&1; echo "bench_fp8 $v #$i rc=$? ($((SECONDS-s)) s)"; done; done
for v in old new; do echo "== bench_fp8 $v #2"; grep -E "16384x16384" $L/bf_${v}_2.md | grep "bf16 + int8" ; done
F='--benchmark_filter=step/adamw_default/(flat268M|llama1B)/default'
for i in 1 2 3; do for v in old new; do timeout 60 ./bs_$v "$F" --benchmark_format=json > $L/bs_${v}_$i.json 2> $L/bs_${v}_$i.err; python3 -c "
import json,sys; d=json.load(open('$L/bs_${v}_$i.json'))
print('$v #$i', ' '.join('%s %.4f ms' % (b['name'].split('/')[2], b['real_time']) for b in d['benchmarks']))"; done; done
N="ncu --kernel-name-base demangled --section SpeedOfLight --section Occupancy --section LaunchStats --section InstructionStats --section WarpStateStats"
for v in old new; do s=$SECONDS; timeout 60 $N --kernel-name regex:"step_kernel" --launch-skip 3 --launch-count 1 ./bs_$v --benchmark_filter='step/adamw_default/flat268M/default' > $L/ncu_step_$v.txt 2>&1; echo "ncu step $v rc=$? ($((SECONDS-s)) s)"; grep -E "Duration|Issue Slots Busy|Executed Instructions  |Registers Per|Achieved Occupancy|Warp Cycles Per Issued" $L/ncu_step_$v.txt | cut -c1-120; done
for v in old new; do s=$SECONDS; timeout 60 $N --kernel-name regex:"step_kernel<.*fp8_e4m3" --launch-skip 2 --launch-count 1 ./bf_$v /tmp/x.csv > $L/ncu_fused_$v.txt 2>&1; echo "ncu fused $v rc=$? ($((SECONDS-s)) s)"; grep -E "Duration|Issue Slots Busy|Executed Instructions  |Registers Per|Achieved Occupancy|Local" $L/ncu_fused_$v.txt | cut -c1-120; done
cd /tmp/logs && tar czf $OUT/logs.tgz . && echo packed
