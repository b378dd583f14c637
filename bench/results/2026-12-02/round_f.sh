#!/bin/bash
# Round F (2026-12-02): the FP8 verification owed (test_gpu_optimizer_fp8, FP8 kernels under compute-sanitizer,
# the FP8 gather example) + SASS of the step kernels for the instruction budget.
set -u
L=/tmp/logs; mkdir -p $L; R=$(pwd); B=/tmp/fo; export NCCL_NVLS_ENABLE=0 OMP_WAIT_POLICY=passive
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader | tee $L/gpu.txt
cd $R/.snap; s=$SECONDS; cmake --preset release -B $B -DFLASHOPTIM_BUILD_BENCHMARKS=ON > $L/cfg.log 2>&1
T="test_gpu_optimizer_fp8 test_gpu_fp8_step test_gpu_fp8_param flashoptim_example_fp8_gather test_gpu_optimizer"
cmake --build $B -j16 --target $T -- -k 0 > $L/build.log 2>&1; echo "cxx build rc=$? ($((SECONDS-s)) s)"; grep -m8 -B2 " error" $L/build.log | head -30
mkdir -p /tmp/bin; for n in $T; do e=$(find $B -name $n -type f -perm -u+x | head -1); [ -n "$e" ] && cp $e /tmp/bin/; done
cd /tmp/bin
for t in $T; do s=$SECONDS; timeout 120 ./$t > $L/$t.log 2>&1; echo "$t rc=$? ($((SECONDS-s)) s) $(grep -E 'test cases' $L/$t.log)"; grep -a -m4 -B3 -A8 "ERROR\|CRASHED" $L/$t.log | head -40; done
tail -6 $L/flashoptim_example_fp8_gather.log
( for b in test_gpu_fp8_step test_gpu_optimizer; do cuobjdump -sass ./$b > $L/sass_$b.txt 2>&1; done; echo sass done ) &
for spec in "memcheck|test_gpu_optimizer_fp8|*" "memcheck|test_gpu_fp8_step|*AdamW bf16*,*one tensor*,*non-finite*" "memcheck|test_gpu_fp8_param|*" "racecheck|test_gpu_fp8_step|*one tensor*" "racecheck|test_gpu_fp8_param|*every tensor*"; do IFS='|' read tool t tc <<< "$spec"; s=$SECONDS; timeout 75 compute-sanitizer --tool $tool --error-exitcode 3 ./$t -tc="$tc" > $L/san_${tool}_$t.log 2>&1; echo "$tool $t [$tc] rc=$? ($((SECONDS-s)) s) $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $L/san_${tool}_$t.log | tail -1) $(grep -E 'test cases' $L/san_${tool}_$t.log)"; done
wait
cd /tmp/logs && tar czf $OUT/logs.tgz . && echo packed
