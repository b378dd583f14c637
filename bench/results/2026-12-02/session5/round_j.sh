#!/bin/bash
# Round J (2026-12-02, fifth session): rounded_split, binaries built on the development machine. The GPU tests
# of what changed (parity with the new cases, finite property, the exhaustive master-mode sweeps device == host),
# memcheck on the new parity cases, the interleaved A/B of the two bf16 + int8 splits (ab_rs.cu), Nsight Compute
# on one AdamW launch of each, then BENCHMARKS.md's run.
set -u
R=$(pwd); L=/tmp/logs_j; mkdir -p $L /tmp/j; export PYTHONUNBUFFERED=1
tar xJf $R/.dev/j.tar.xz -C /tmp/j; export LD_LIBRARY_PATH=$R/.dev/bin/lib; cd /tmp/j
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv,noheader | tee $L/gpu.txt
for t in test_gpu_step_parity test_gpu_finite_property; do s=$SECONDS; timeout 150 ./$t > $L/$t.log 2>&1; echo "$t rc=$? ($((SECONDS-s)) s) $(grep -a 'test cases' $L/$t.log)"; grep -a -m3 -B3 -A8 "ERROR\|CRASHED" $L/$t.log | head -16; done
s=$SECONDS; timeout 200 ./test_gpu_exhaustive -tc="master modes*" > $L/test_gpu_exhaustive.log 2>&1; echo "test_gpu_exhaustive (master modes) rc=$? ($((SECONDS-s)) s) $(grep -a 'test cases' $L/test_gpu_exhaustive.log)"; grep -a "rounded" $L/test_gpu_exhaustive.log | head -4
s=$SECONDS; timeout 90 compute-sanitizer --tool memcheck --error-exitcode 9 ./test_gpu_step_parity -tc="parity adamw_rounded,parity lion_rounded" > $L/memcheck.log 2>&1; echo "memcheck rc=$? ($((SECONDS-s)) s)"; tail -1 $L/memcheck.log
s=$SECONDS; timeout 120 $R/.dev/bin/ab_rs all 15 > $L/ab_rs.txt 2>&1; echo "ab_rs rc=$? ($((SECONDS-s)) s)"; cat $L/ab_rs.txt
for v in "adamw_default" "adamw rounded"; do f=$(echo $v | tr ' ' _); s=$SECONDS; timeout 60 ncu --section SpeedOfLight --section ComputeWorkloadAnalysis --section LaunchStats --metrics smsp__inst_executed.sum,dram__bytes_read.sum,dram__bytes_write.sum --clock-control none -k regex:step_kernel --launch-skip 2 --launch-count 1 $R/.dev/bin/ab_rs "$v" 1 4 > $L/ncu_$f.txt 2>&1; echo "ncu $v rc=$? ($((SECONDS-s)) s)"; grep -E "Duration|DRAM Throughput|smsp__inst_executed.sum|Issue Slots Busy|SM Frequency" $L/ncu_$f.txt | head -6; done
tar czf $OUT/j1.tgz -C $L . ; echo part1 done
