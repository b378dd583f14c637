#!/bin/bash
# Round N (sixth session): the off-load pipeline, diagnosis and the per-thread flow.
export LD_LIBRARY_PATH=$PWD/.dev/bin/lib
D=.dev/off
lscpu | grep -E "Model name|^CPU\(s\)|L3|NUMA node\(s\)"
echo "== trace (one cpu::step per chunk vs per-thread flow), default OMP env"
timeout 100 .dev/otrace/offload_trace; echo "trace rc=$?"
echo "== test_gpu_offload"
timeout 200 $D/test_gpu_offload; echo "test_gpu_offload rc=$?"
echo "== memcheck, the team case"
timeout 200 compute-sanitizer --tool memcheck $D/test_gpu_offload -tc="*chunk team*" 2>&1 | tail -4; echo "memcheck rc=${PIPESTATUS[0]}"
echo "== test_gpu_optimizer_offload"
timeout 200 $D/test_gpu_optimizer_offload; echo "test_gpu_optimizer_offload rc=$?"
echo "== example"
timeout 100 $D/flashoptim_example_offload_gpu | tail -5; echo "example rc=${PIPESTATUS[0]}"
for w in passive default; do
  for r in 1 2; do
    for v in old new; do
      echo "== bench_offload $v round $r OMP_WAIT_POLICY=$w"
      if [ $w = passive ]; then export OMP_WAIT_POLICY=passive; else unset OMP_WAIT_POLICY; fi
      timeout 120 $D/bench_offload_$v --fraction 0.5 --repeats 15 > $OUT/bench_offload_${v}_${w}_$r.md; echo "rc=$?"
      grep -E "whole off-load|CPU step of|at once" $OUT/bench_offload_${v}_${w}_$r.md
    done
  done
done
unset OMP_WAIT_POLICY
echo "== trace, OMP_WAIT_POLICY=passive"
OMP_WAIT_POLICY=passive timeout 100 .dev/otrace/offload_trace; echo "trace rc=$?"
