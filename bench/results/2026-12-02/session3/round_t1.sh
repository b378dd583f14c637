#!/bin/bash
# Round T, call 1 (2026-12-02, session 3): build every GPU test and the three GPU benchmarks from .snap, run the
# GPU tests except the exhaustive sweeps, and A/B the changed layouts (ab3_old: f268d12's headers, ab3_new: .snap's).
set -u
R=$(pwd); B=$R/build/dev; L=$R/build/logs_t1; mkdir -p $L $R/build/bin
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader
cd $R/.snap
T="test_gpu_exhaustive test_gpu_extension test_gpu_finite_property test_gpu_fp8_param test_gpu_fp8_step test_gpu_grad_pass test_gpu_huge test_gpu_offload test_gpu_optimizer test_gpu_optimizer_fp8 test_gpu_optimizer_io test_gpu_optimizer_offload test_gpu_step_inputs test_gpu_step_parity bench_gpu_step bench_gpu_optimizer bench_offload"
s=$SECONDS; cmake --preset release -B $B -DFLASHOPTIM_BUILD_BENCHMARKS=ON > $L/cfg.log 2>&1
cmake --build $B -j16 --target $T -- -k 0 > $L/build.log 2>&1; echo "build rc=$? ($((SECONDS-s)) s)"; grep -m8 -B2 " error" $L/build.log | head -30
for n in $T; do e=$(find $B -name $n -type f -perm -u+x | head -1); [ -n "$e" ] && cp $e $R/build/bin/; done
cd $R/build/bin
for t in test_gpu_step_parity test_gpu_step_inputs test_gpu_finite_property test_gpu_fp8_step test_gpu_fp8_param test_gpu_optimizer test_gpu_optimizer_fp8 test_gpu_optimizer_io test_gpu_optimizer_offload test_gpu_offload test_gpu_grad_pass test_gpu_huge test_gpu_extension; do s=$SECONDS; timeout 150 ./$t > $L/$t.log 2>&1; echo "$t rc=$? ($((SECONDS-s)) s) $(grep 'test cases' $L/$t.log)"; grep -a -m3 -B3 -A8 "ERROR\|CRASHED" $L/$t.log | head -16; done
cd $R/.dev/bin; export LD_LIBRARY_PATH=$R/.dev/bin/lib
for r in 1 2; do for v in old new; do ./ab3_$v --benchmark_format=csv 2>/dev/null | grep '^"step' | awk -F, -v v=$v -v r=$r '{printf "pass %s %s %s %.4f ms\n", r, v, $1, $3}'; done; done | tee $L/ab3.txt
cp -r $L $OUT/ 2>/dev/null; echo done
