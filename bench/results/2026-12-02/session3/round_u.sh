#!/bin/bash
# Round U (2026-12-02, session 3): binaries built on the development machine (build/lead, release, sm_90) from the
# tree with the fp8 hardware decode, carried as .dev/u.tar.xz. GPU tests of what changed since round T, A/B of three
# trees in one lease (ab3_old: f268d12, ab3_t: round T's tree, ab3_new2: this tree), then BENCHMARKS.md's run.
set -u
R=$(pwd); L=/tmp/logs_u; mkdir -p $L /tmp/u; export PYTHONUNBUFFERED=1
tar xJf $R/.dev/u.tar.xz -C /tmp/u; export LD_LIBRARY_PATH=$R/.dev/bin/lib; cd /tmp/u
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
s=$SECONDS; timeout 120 ./test_gpu_exhaustive -tc="the kernel's shared-memory tables*,proven element rules*" > $L/exhaustive.log 2>&1; echo "test_gpu_exhaustive [tables/cvt decode, element rules] rc=$? ($((SECONDS-s)) s) $(grep 'test cases' $L/exhaustive.log)"; grep -a "cvt\|ERROR" $L/exhaustive.log | head -12
for t in test_gpu_step_parity test_gpu_finite_property test_gpu_fp8_step test_gpu_optimizer_fp8 test_gpu_step_inputs; do s=$SECONDS; timeout 120 ./$t > $L/$t.log 2>&1; echo "$t rc=$? ($((SECONDS-s)) s) $(grep 'test cases' $L/$t.log)"; grep -a -m3 -B3 -A8 "ERROR\|CRASHED" $L/$t.log | head -16; done
s=$SECONDS; timeout 60 compute-sanitizer --tool memcheck --error-exitcode 9 ./test_gpu_step_parity -tc="parity adamw_fp8_states,parity sgdw_exact_fp8" > $L/memcheck.log 2>&1; echo "memcheck parity fp8 rc=$? ($((SECONDS-s)) s)"; tail -1 $L/memcheck.log
for r in 1 2; do for v in old t new2; do $R/.dev/bin/ab3_$v --benchmark_format=csv 2>/dev/null | grep '^"step' | awk -F, -v v=$v -v r=$r '{printf "pass %s %-5s %s %.4f ms\n", r, v, $1, $3}'; done; done | tee $L/ab3.txt
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/paper $R/.whl/flashoptim-0.1.4*.whl > $L/paper_install.log 2>&1
for r in 1 2; do s=$SECONDS; OMP_WAIT_POLICY=passive timeout 60 ./bench_offload --fraction 0.5 --repeats 15 > $L/offload$r.md 2> $L/offload$r.log; echo "offload bench $r rc=$? ($((SECONDS-s)) s)"; grep "CPU step of\|whole off-load" $L/offload$r.md; done
cd $R/.snap; s=$SECONDS; PYTHONPATH=/tmp/paper timeout 200 python3 tools/bench_report.py --bench /tmp/u/bench_gpu_step:/default/ --paper --out $L/BENCHMARKS.md --json $L/bench_gpu.json --torch-json $L/torch.json --paper-json $L/paper.json --append $L/offload2.md --notes docs/benchmark-notes.md > $L/table.txt 2> $L/bench.log; echo "bench_report rc=$? ($((SECONDS-s)) s)"; head -40 $L/table.txt; grep -i "fail\|error\|not timed" $L/bench.log | head
tar czf $OUT/u.tgz -C $L . ; echo done
