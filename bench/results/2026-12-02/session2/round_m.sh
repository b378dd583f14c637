#!/bin/bash
# Round M (2026-12-02, session 2): the 128-byte-aligned stage ring and the two-stage random bits: GPU tests,
# compute-sanitizer, then A/B (this tree vs HEAD before it, .snapold) of the host/device-input step and the SR layouts.
set -u
L=/tmp/logs; mkdir -p $L; R=$(pwd); B=/tmp/fo; export NCCL_NVLS_ENABLE=0 OMP_WAIT_POLICY=passive
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader | tee $L/gpu.txt
cd $R/.snap; s=$SECONDS; cmake --preset release -B $B -DFLASHOPTIM_BUILD_BENCHMARKS=ON > $L/cfg.log 2>&1
T="test_gpu_step_parity test_gpu_finite_property test_gpu_step_inputs test_gpu_optimizer test_gpu_optimizer_fp8 test_gpu_fp8_step test_gpu_grad_pass test_gpu_optimizer_offload test_gpu_huge test_gpu_optimizer_io"
cmake --build $B -j15 --target $T -- -k 0 > $L/build.log 2>&1; echo "build rc=$? ($((SECONDS-s)) s)"; grep -m8 -B2 " error" $L/build.log | head -30
mkdir -p /tmp/bin; for n in $T; do e=$(find $B -name $n -type f -perm -u+x | head -1); [ -n "$e" ] && cp $e /tmp/bin/; done
cd /tmp/bin
for t in $T; do s=$SECONDS; timeout 120 ./$t > $L/$t.log 2>&1; echo "$t rc=$? ($((SECONDS-s)) s) $(grep -E 'test cases' $L/$t.log)"; grep -a -m4 -B3 -A8 "ERROR\|CRASHED" $L/$t.log | head -30; done
s=$SECONDS; timeout 150 compute-sanitizer --tool memcheck --error-exitcode 3 ./test_gpu_step_parity -tc="*sr*,*previous and candidate*,*groups: one launch*" > $L/san_mem.log 2>&1; echo "memcheck step_parity rc=$? ($((SECONDS-s)) s) $(grep 'ERROR SUMMARY' $L/san_mem.log | tail -1) $(grep 'test cases' $L/san_mem.log)"
s=$SECONDS; timeout 150 compute-sanitizer --tool racecheck --error-exitcode 3 ./test_gpu_step_inputs > $L/san_race.log 2>&1; echo "racecheck step_inputs rc=$? ($((SECONDS-s)) s) $(grep -E 'RACECHECK SUMMARY|ERROR SUMMARY' $L/san_race.log | tail -1) $(grep 'test cases' $L/san_race.log)"
s=$SECONDS; timeout 100 compute-sanitizer --tool memcheck --error-exitcode 3 ./test_gpu_optimizer_fp8 > $L/san_fp8.log 2>&1; echo "memcheck optimizer_fp8 rc=$? ($((SECONDS-s)) s) $(grep 'ERROR SUMMARY' $L/san_fp8.log | tail -1)"
cd /tmp/logs && tar czf $OUT/logs.tgz . && echo packed
