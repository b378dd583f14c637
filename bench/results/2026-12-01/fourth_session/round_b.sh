#!/bin/bash
# Round B: the fixed optimizer tests; BENCHMARKS.md from one run with torch and the paper's package beside; off-load, optimizer, FP8 benches.
set -u
L=/tmp/logs; mkdir -p $L; R=$(pwd); export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0
B=/tmp/fo
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader | tee $L/gpu.txt
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/paper $R/.whl/flashoptim-0.1.4*.whl > $L/paper_install.log 2>&1
cd $R/.snap
T="test_gpu_optimizer test_gpu_optimizer_offload bench_gpu_step bench_gpu_optimizer bench_fp8_param bench_offload"
s=$SECONDS; cmake --preset release -B $B -DFLASHOPTIM_BUILD_BENCHMARKS=ON > $L/cfg.log 2>&1
cmake --build $B -j15 --target $T -- -k 0 > $L/build.log 2>&1; echo "cxx build rc=$? ($((SECONDS-s)) s)"; grep -m8 -B2 " error" $L/build.log | head -30
mkdir -p /tmp/bin; for n in $T; do e=$(find $B -name $n -type f -perm -u+x | head -1); [ -n "$e" ] && cp $e /tmp/bin/; done
cd /tmp/bin
for t in test_gpu_optimizer test_gpu_optimizer_offload; do s=$SECONDS; OMP_WAIT_POLICY=passive timeout 100 ./$t > $L/$t.log 2>&1; echo "$t rc=$? ($((SECONDS-s)) s) $(grep -E 'test cases' $L/$t.log | tr '\n' ' ')"; grep -a -m4 -B3 -A8 "ERROR\|CRASHED" $L/$t.log | head -40; done
s=$SECONDS; timeout 90 compute-sanitizer --tool memcheck --error-exitcode 3 ./test_gpu_optimizer_offload -tc="*rebinds*,*init without gradients*,*graph*" > $L/mc_opt.log 2>&1; echo "memcheck optimizer_offload rc=$? ($((SECONDS-s)) s) $(grep 'ERROR SUMMARY' $L/mc_opt.log | tail -1)"
s=$SECONDS; timeout 120 ./bench_offload --fraction 0.5 --repeats 15 > $L/offload.md 2> $L/offload.log; echo "offload bench rc=$? ($((SECONDS-s)) s)"; tail -12 $L/offload.md
cd $R/.snap; s=$SECONDS; PYTHONPATH=/tmp/paper timeout 330 python3 tools/bench_report.py --bench /tmp/bin/bench_gpu_step:/default/ --paper --out $L/BENCHMARKS.md --json $L/bench_gpu.json --torch-json $L/torch.json --paper-json $L/paper.json --append $L/offload.md --notes docs/benchmark-notes.md > $L/table.txt 2> $L/bench.log; echo "bench_report rc=$? ($((SECONDS-s)) s)"; cat $L/table.txt; grep -i "fail\|error\|not timed" $L/bench.log | head
cd /tmp/bin; s=$SECONDS; timeout 60 ./bench_gpu_optimizer $L/bench_optimizer.csv > $L/bench_optimizer.md 2>&1; echo "bench_optimizer rc=$? ($((SECONDS-s)) s)"; tail -14 $L/bench_optimizer.md
s=$SECONDS; timeout 90 ./bench_fp8_param $L/bench_fp8.csv > $L/bench_fp8.md 2>&1; echo "bench_fp8 rc=$? ($((SECONDS-s)) s)"; tail -30 $L/bench_fp8.md
