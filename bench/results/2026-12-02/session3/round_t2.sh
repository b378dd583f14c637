#!/bin/bash
# Round T, call 2: the exhaustive device sweeps, memcheck on the changed layouts' parity cases, then BENCHMARKS.md's
# run (torch 2.11 and the paper's flashoptim 0.1.4 in the same lease), bench_gpu_optimizer and the off-load bench.
set -u
R=$(pwd); L=$R/build/logs_t2; mkdir -p $L; export PYTHONUNBUFFERED=1
cd $R/build/bin || { echo "cold machine: no binaries"; exit 3; }
s=$SECONDS; timeout 330 ./test_gpu_exhaustive > $L/exhaustive.log 2>&1; echo "test_gpu_exhaustive rc=$? ($((SECONDS-s)) s) $(grep 'test cases' $L/exhaustive.log)"; grep -a -m5 -B2 -A6 "ERROR" $L/exhaustive.log | head -20
s=$SECONDS; timeout 100 compute-sanitizer --tool memcheck --error-exitcode 9 ./test_gpu_step_parity -tc="parity adamw_reference,parity adamw_fp8_states,parity adam_fp16_reference,parity lion_reference" > $L/memcheck.log 2>&1; echo "memcheck parity (reference, fp8) rc=$? ($((SECONDS-s)) s)"; tail -2 $L/memcheck.log
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/paper $R/.whl/flashoptim-0.1.4*.whl > $L/paper_install.log 2>&1
s=$SECONDS; OMP_WAIT_POLICY=passive timeout 60 ./bench_offload --fraction 0.5 --repeats 15 > $L/offload.md 2> $L/offload.log; echo "offload bench rc=$? ($((SECONDS-s)) s)"; grep "whole off-load" $L/offload.md
cd $R/.snap; s=$SECONDS; PYTHONPATH=/tmp/paper timeout 200 python3 tools/bench_report.py --bench $R/build/bin/bench_gpu_step:/default/ --paper --out $L/BENCHMARKS.md --json $L/bench_gpu.json --torch-json $L/torch.json --paper-json $L/paper.json --append $L/offload.md --notes docs/benchmark-notes.md > $L/table.txt 2> $L/bench.log; echo "bench_report rc=$? ($((SECONDS-s)) s)"; head -45 $L/table.txt; grep -i "fail\|error\|not timed" $L/bench.log | head
cd $R/build/bin; s=$SECONDS; timeout 60 ./bench_gpu_optimizer $L/bench_optimizer.csv > $L/bench_optimizer.md 2>&1; echo "bench_optimizer rc=$? ($((SECONDS-s)) s)"; tail -6 $L/bench_optimizer.md
cp -r $L $OUT/ 2>/dev/null; echo done
