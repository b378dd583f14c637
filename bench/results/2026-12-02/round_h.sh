#!/bin/bash
# Round H (2026-12-02): the optimizer's fused FP8 launch; the FP8 pass (raw loads, float amax, paired conversions)
# with 1 vs 2 blocks per SM; tests + memcheck; bench_fp8_param.
set -u
L=/tmp/logs; mkdir -p $L; R=$(pwd); B=/tmp/fo; export NCCL_NVLS_ENABLE=0 OMP_WAIT_POLICY=passive
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader | tee $L/gpu.txt
NV="nvcc -O3 -std=c++17 -arch=sm_90"
rm -rf /tmp/b2 && cp -r $R/.snap /tmp/b2 && sed -i 's/__global__ void __launch_bounds__(fp8_threads)$/__global__ void __launch_bounds__(fp8_threads, 2)/' /tmp/b2/include/flashoptim/kernel/fp8_param_kernel.cuh && grep -c "fp8_threads, 2" /tmp/b2/include/flashoptim/kernel/fp8_param_kernel.cuh
for v in b1 b2; do T=$R/.snap; [ $v = b2 ] && T=/tmp/b2
  ( s=$SECONDS; $NV -I$T/include -I$T/bench/gpu $T/bench/gpu/bench_fp8_param.cu -o /tmp/bf_$v > $L/nvcc_bf_$v.log 2>&1; echo "bf_$v rc=$? ($((SECONDS-s)) s)" ) &
done
cd $R/.snap; s=$SECONDS; cmake --preset release -B $B -DFLASHOPTIM_BUILD_BENCHMARKS=ON > $L/cfg.log 2>&1
T="test_gpu_optimizer_fp8 test_gpu_fp8_param test_gpu_fp8_step test_gpu_optimizer test_gpu_optimizer_offload test_gpu_optimizer_io"
cmake --build $B -j13 --target $T -- -k 0 > $L/build.log 2>&1; echo "cxx build rc=$? ($((SECONDS-s)) s)"; grep -m8 -B2 " error" $L/build.log | head -30
wait; grep -m5 -B2 " error" $L/nvcc_*.log | head -20
mkdir -p /tmp/bin; for n in $T; do e=$(find $B -name $n -type f -perm -u+x | head -1); [ -n "$e" ] && cp $e /tmp/bin/; done
cd /tmp/bin
for t in $T; do s=$SECONDS; timeout 150 ./$t > $L/$t.log 2>&1; echo "$t rc=$? ($((SECONDS-s)) s) $(grep -E 'test cases' $L/$t.log)"; grep -a -m4 -B3 -A8 "ERROR\|CRASHED" $L/$t.log | head -40; done
for spec in "memcheck|test_gpu_optimizer_fp8|*" "memcheck|test_gpu_fp8_param|*" "memcheck|test_gpu_fp8_step|*one tensor*,*non-finite*" "racecheck|test_gpu_fp8_param|*list in one launch*"; do IFS='|' read tool t tc <<< "$spec"; s=$SECONDS; timeout 75 compute-sanitizer --tool $tool --error-exitcode 3 ./$t -tc="$tc" > $L/san_${tool}_$t.log 2>&1; echo "$tool $t [$tc] rc=$? ($((SECONDS-s)) s) $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $L/san_${tool}_$t.log | tail -1) $(grep -E 'test cases' $L/san_${tool}_$t.log)"; done
cd /tmp
for i in 1 2; do for v in b1 b2; do s=$SECONDS; timeout 80 ./bf_$v $L/bf_${v}_$i.csv > $L/bf_${v}_$i.md 2>&1; echo "bench_fp8 $v #$i rc=$? ($((SECONDS-s)) s)"; done; done
for v in b1 b2; do echo "== bench_fp8 $v #2"; cat $L/bf_${v}_2.md | grep "|" | grep -v "^|---" ; done
cd /tmp/logs && tar czf $OUT/logs.tgz . && echo packed
