#!/bin/bash
# Round I (2026-12-02, fourth session): the tree with the scales' .L2::256B copies (and fp8 states on 5 stages),
# binaries built on the development machine: the GPU tests of what changed, memcheck, Nsight Compute on the
# Lion kernel without and with the hint (round G's ab_base / ab_s256), then BENCHMARKS.md's run.
set -u
R=$(pwd); L=/tmp/logs_i; mkdir -p $L /tmp/i; export PYTHONUNBUFFERED=1
tar xJf $R/.dev/i.tar.xz -C /tmp/i; export LD_LIBRARY_PATH=$R/.dev/bin/lib; cd /tmp/i
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader | tee $L/gpu.txt
for t in test_gpu_step_parity test_gpu_fp8_step test_gpu_optimizer_fp8 test_gpu_step_inputs test_gpu_finite_property; do s=$SECONDS; to=60; [ $t = test_gpu_step_parity ] && to=150; timeout $to ./$t > $L/$t.log 2>&1; echo "$t rc=$? ($((SECONDS-s)) s) $(grep -a 'test cases' $L/$t.log)"; grep -a -m3 -B3 -A8 "ERROR\|CRASHED" $L/$t.log | head -16; done
s=$SECONDS; timeout 80 compute-sanitizer --tool memcheck --error-exitcode 9 ./test_gpu_step_parity -tc="parity lion_default,parity adamw_default,parity adamw_reference,parity sgdw_momentum" > $L/memcheck.log 2>&1; echo "memcheck rc=$? ($((SECONDS-s)) s)"; tail -1 $L/memcheck.log
for v in base s256; do s=$SECONDS; timeout 60 ncu --section SpeedOfLight --section MemoryWorkloadAnalysis --section MemoryWorkloadAnalysis_Tables --metrics dram__sectors_read.sum,dram__sectors_write.sum,lts__t_sectors_srcunit_tex_op_read_lookup_miss.sum,lts__t_requests_srcunit_tex_op_read.sum --clock-control none -k regex:step_kernel --launch-skip 2 --launch-count 1 $R/.dev/bin/ab_$v lion 1 4 > $L/ncu_lion_$v.txt 2>&1; echo "ncu lion $v rc=$? ($((SECONDS-s)) s)"; grep -E "Duration|DRAM Throughput|dram__sectors_read.sum |lts__t_requests_srcunit_tex_op_read.sum|lookup_miss.sum" $L/ncu_lion_$v.txt | head -6; done
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/paper $R/.whl/flashoptim-0.1.4*.whl > $L/paper_install.log 2>&1
s=$SECONDS; OMP_WAIT_POLICY=passive timeout 60 ./bench_offload --fraction 0.5 --repeats 15 > $L/offload.md 2> $L/offload.log; echo "offload bench rc=$? ($((SECONDS-s)) s)"; grep "CPU step of\|whole off-load" $L/offload.md
cd $R; s=$SECONDS; PYTHONPATH=/tmp/paper timeout 240 python3 tools/bench_report.py --bench '/tmp/i/bench_gpu_step:/default/|^ceiling/' --paper --out $L/BENCHMARKS.md --json $L/bench_gpu.json --torch-json $L/torch.json --paper-json $L/paper.json --append $L/offload.md --notes docs/benchmark-notes.md > $L/table.txt 2> $L/bench.log; echo "bench_report rc=$? ($((SECONDS-s)) s)"; head -70 $L/table.txt; grep -i "fail\|error\|not timed" $L/bench.log | head
tar czf $OUT/i.tgz -C $L . ; echo done
