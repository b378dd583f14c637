#!/bin/bash
set -u
L=/tmp/logs; mkdir -p $L; R=$(pwd); B=/tmp/fo; export NCCL_NVLS_ENABLE=0 OMP_WAIT_POLICY=passive
cd $R/.snap; s=$SECONDS; cmake --preset release -B $B -DFLASHOPTIM_BUILD_BENCHMARKS=ON > $L/cfg.log 2>&1
T="test_gpu_optimizer_fp8 flashoptim_example_fp8_gather"
cmake --build $B -j16 --target $T -- -k 0 > $L/build.log 2>&1; echo "cxx build rc=$? ($((SECONDS-s)) s)"; grep -m8 -B2 " error" $L/build.log | head -30
for t in $T; do e=$(find $B -name $t -type f -perm -u+x | head -1); s=$SECONDS; (cd /tmp && timeout 60 $e > $L/$t.log 2>&1); echo "$t rc=$? ($((SECONDS-s)) s) $(grep -E 'test cases' $L/$t.log)"; grep -a -m4 -B3 -A8 "ERROR\|CRASHED" $L/$t.log | head -40; done
tail -14 $L/flashoptim_example_fp8_gather.log
