#!/bin/bash
# Round W (ninth session): warp tiles again, longer: the default policy (R = 1) against warp tiles of 4 (and 8 for
# AdamW and Lion), 31 interleaved rounds, the layouts round V measured apart by more than its noise; Nsight Compute
# on one launch of each AdamW and Lion variant; racecheck of the small warp-tile parity case.
export LD_LIBRARY_PATH=$PWD/.dev/bin/lib
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw,temperature.gpu --format=csv,noheader
for l in adamw_default lion_default sgd_momentum adamw_fp8_states adamw_bf16_native adamw_fp16_ulp8; do
  s=$SECONDS; timeout 90 .dev/w9/ab_warp $l 31 > $OUT/ab2_$l.txt 2>&1; echo "ab $l rc=$? ($((SECONDS-s)) s)"; grep -v '^copy' $OUT/ab2_$l.txt
done
nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv,noheader
M=smsp__inst_executed.sum,smsp__issue_active.avg.pct_of_peak_sustained_active,dram__throughput.avg.pct_of_peak_sustained_elapsed,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sectors_op_read.sum,gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second
for l in adamw_default lion_default; do
  s=$SECONDS; timeout 120 ncu -k regex:step_kernel -c 3 --metrics $M .dev/w9/ab_warp $l 1 1 > $OUT/ncu_$l.txt 2>&1; echo "ncu $l rc=$? ($((SECONDS-s)) s)"
  grep -E "step_kernel|inst_executed|issue_active|dram__throughput|dram__bytes|lts__t_sectors|gpu__time|cycles_elapsed" $OUT/ncu_$l.txt | sed -E 's/^ +//' | cut -c1-140
done
s=$SECONDS; timeout 240 compute-sanitizer --tool racecheck --error-exitcode 3 .dev/w9/test_gpu_step_parity -tc="parity: warp tiles, small" > $OUT/san_parity_racecheck.log 2>&1
echo "racecheck parity warp tiles small rc=$? ($((SECONDS-s)) s) $(grep -E 'RACECHECK SUMMARY' $OUT/san_parity_racecheck.log | tail -1) $(grep -a 'test cases' $OUT/san_parity_racecheck.log | tr -s ' ')"
cd $OUT && tar czf w.tgz *.txt *.log && rm -f *.txt *.log; echo "done $SECONDS s"
