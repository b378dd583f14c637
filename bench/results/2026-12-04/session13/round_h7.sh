#!/bin/bash
# Round H7 (thirteenth session, H200): test_gpu_step_parity after the review mend (its step loop one helper; the host decodes fp16 and ULP NaNs
# to the canonical NaN, as the device does; master_update's NaN rule), every case.
# Binaries: $R/.dev/h/p.tar.xz (p/). Usage (repo root): OUT=out round_h7.sh
set -u
R=$(pwd); export LD_LIBRARY_PATH=$R/.dev/bin/lib; L=/tmp/logs_h7; mkdir -p $L /tmp/p
tar -xJf $R/.dev/h/p.tar.xz -C /tmp/p
s=$SECONDS; timeout 200 /tmp/p/p/test_gpu_step_parity > $L/test_gpu_step_parity.log 2>&1; rc=$?
echo "test_gpu_step_parity rc=$rc ($((SECONDS-s)) s) $(grep -a 'test cases' $L/test_gpu_step_parity.log | tr -s ' ')"
[ $rc -ne 0 ] && grep -a -m3 -B2 -A12 "ERROR\|CRASHED" $L/test_gpu_step_parity.log | head -40
s=$SECONDS; timeout 200 compute-sanitizer --tool memcheck --error-exitcode 3 /tmp/p/p/test_gpu_step_parity -tc='parity adamw_default' > $L/memcheck_ulp8.log 2>&1
echo "memcheck parity adamw_default rc=$? ($((SECONDS-s)) s) $(grep -E 'ERROR SUMMARY' $L/memcheck_ulp8.log | tail -1) $(grep -a 'test cases' $L/memcheck_ulp8.log | tr -s ' ')"
tar czf $OUT/h7.tgz -C $L . ; echo "done $SECONDS s"
