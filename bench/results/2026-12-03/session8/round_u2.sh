#!/bin/bash
# Round U2: (1) the default policy against the synced one (a block barrier before each staged tile),
# interleaved; (2) the GPU tests built with the synced default; (3) compute-sanitizer.
export LD_LIBRARY_PATH=$PWD/.dev/bin/lib
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw,temperature.gpu --format=csv,noheader
s=$SECONDS; timeout 240 .dev/u8/ab_sync all 15 > $OUT/ab_sync.txt 2>&1; echo "ab_sync rc=$? ($((SECONDS-s)) s)"; cat $OUT/ab_sync.txt
nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv,noheader
mkdir -p /tmp/u8 && tar -xJf .dev/u8/t.tar.xz -C /tmp/u8
for t in test_gpu_step_parity test_gpu_finite_property test_gpu_step_inputs test_gpu_fp8_step test_gpu_optimizer test_gpu_huge \
         test_gpu_offload test_gpu_optimizer_offload test_gpu_grad_pass test_gpu_optimizer_fp8 test_gpu_extension test_gpu_fp8_param test_gpu_optimizer_io; do
  s=$SECONDS; timeout 150 /tmp/u8/t/$t > $OUT/$t.log 2>&1; rc=$?
  echo "$t rc=$rc ($((SECONDS-s)) s) $(grep -a 'test cases' $OUT/$t.log | tr -s ' ')"
  [ $rc -ne 0 ] && grep -a -m3 -B2 -A8 "ERROR\|CRASHED" $OUT/$t.log | head -24
done
for tool in synccheck racecheck memcheck; do
  s=$SECONDS; timeout 100 compute-sanitizer --tool $tool --error-exitcode 3 /tmp/u8/t/test_gpu_optimizer > $OUT/san_$tool.log 2>&1
  echo "$tool test_gpu_optimizer rc=$? ($((SECONDS-s)) s) $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $OUT/san_$tool.log | tail -1) $(grep -a 'test cases' $OUT/san_$tool.log | tr -s ' ')"
done
