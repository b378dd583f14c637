#!/bin/bash
# Round K (2026-12-02): FP8 copies of off-loaded tensors; the checks / tile-amax refactor: the FP8 and optimizer tests.
set -u
L=/tmp/logs; mkdir -p $L; R=$(pwd); B=/tmp/fo; export NCCL_NVLS_ENABLE=0 OMP_WAIT_POLICY=passive
cd $R/.snap; s=$SECONDS; cmake --preset release -B $B > $L/cfg.log 2>&1
T="test_gpu_optimizer_fp8 test_gpu_fp8_param test_gpu_fp8_step test_gpu_optimizer_offload test_gpu_step_inputs"
cmake --build $B -j15 --target $T -- -k 0 > $L/build.log 2>&1; echo "cxx build rc=$? ($((SECONDS-s)) s)"; grep -m8 -B2 " error" $L/build.log | head -30
mkdir -p /tmp/bin; for n in $T; do e=$(find $B -name $n -type f -perm -u+x | head -1); [ -n "$e" ] && cp $e /tmp/bin/; done
cd /tmp/bin
for t in $T; do s=$SECONDS; timeout 60 ./$t > $L/$t.log 2>&1; echo "$t rc=$? ($((SECONDS-s)) s) $(grep -E 'test cases' $L/$t.log)"; grep -a -m4 -B3 -A8 "ERROR\|CRASHED" $L/$t.log | head -40; done
s=$SECONDS; timeout 40 compute-sanitizer --tool memcheck --error-exitcode 3 ./test_gpu_optimizer_fp8 -tc="*off-loaded*" > $L/san.log 2>&1; echo "memcheck optimizer_fp8 [*off-loaded*] rc=$? ($((SECONDS-s)) s) $(grep 'ERROR SUMMARY' $L/san.log | tail -1)"
cd /tmp/logs && tar czf $OUT/logs.tgz . && echo packed
