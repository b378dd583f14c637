#!/bin/bash
# Round M (2026-12-02, fifth session): every single-GPU test, built on the development machine from the tree with
# the rounded split as the default (the finite guard's per-mode limit is in every kernel), and memcheck on the
# optimizer test. test_gpu_exhaustive is left out (the device budget; its master-mode case ran in round J).
set -u
R=$(pwd); L=/tmp/logs_m; mkdir -p $L /tmp/m
tar xJf $R/.dev/m.tar.xz -C /tmp/m; export LD_LIBRARY_PATH=$R/.dev/bin/lib; cd /tmp/m
for t in test_gpu_step_parity test_gpu_finite_property test_gpu_step_inputs test_gpu_fp8_step test_gpu_optimizer_fp8 test_gpu_fp8_param test_gpu_optimizer test_gpu_optimizer_io test_gpu_optimizer_offload test_gpu_offload test_gpu_grad_pass test_gpu_extension test_gpu_huge; do s=$SECONDS; to=60; [ $t = test_gpu_step_parity ] && to=90; timeout $to ./$t > $L/$t.log 2>&1; echo "$t rc=$? ($((SECONDS-s)) s) $(grep -a 'test cases' $L/$t.log)"; grep -a -m3 -B3 -A8 "ERROR\|CRASHED" $L/$t.log | head -16; done
s=$SECONDS; timeout 45 compute-sanitizer --tool memcheck --error-exitcode 9 ./test_gpu_optimizer > $L/memcheck_optimizer.log 2>&1; echo "memcheck test_gpu_optimizer rc=$? ($((SECONDS-s)) s)"; tail -1 $L/memcheck_optimizer.log
tar czf $OUT/m.tgz -C $L . ; echo done
