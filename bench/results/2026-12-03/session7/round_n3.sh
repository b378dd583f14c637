#!/bin/bash
# Round N3: the off-load tests (team sizes in both paths), then bench_offload with paired ratios;
# old = HEAD's per-chunk pipeline, new = the chunk team; same bench source.
export LD_LIBRARY_PATH=$PWD/.dev/bin/lib
D=.dev/off
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
lscpu | grep -E "Model name|^CPU\(s\)"
timeout 200 $D/test_gpu_offload 2>&1 | tail -3; echo "test_gpu_offload rc=${PIPESTATUS[0]}"
timeout 200 $D/test_gpu_optimizer_offload 2>&1 | tail -3; echo "test_gpu_optimizer_offload rc=${PIPESTATUS[0]}"
echo "== bench_gpu_optimizer (rounded split)"
mkdir -p $OUT/keep
timeout 200 $D/bench_gpu_optimizer $OUT/keep/bench_optimizer.csv | tee $OUT/keep/bench_optimizer.md; echo "bench_gpu_optimizer rc=${PIPESTATUS[0]}"
timeout 200 compute-sanitizer --tool memcheck $D/test_gpu_optimizer_offload -tc="*chunk team*" 2>&1 | tail -2; echo "memcheck rc=${PIPESTATUS[0]}"
for r in 1 2 3 4 5 6; do
  for w in passive default; do
    for v in old new; do
      if [ $w = passive ]; then export OMP_WAIT_POLICY=passive; else unset OMP_WAIT_POLICY; fi
      timeout 60 $D/bench_offload_$v --fraction 0.5 --repeats 31 > $OUT/n3_${v}_${w}_$r.md; rc=$?
      echo "$r $w $v rc=$rc | $(grep -E 'whole off-load' $OUT/n3_${v}_${w}_$r.md | cut -d'|' -f3,4 | tr -d '*')| cpu $(grep -E 'CPU step of' $OUT/n3_${v}_${w}_$r.md | cut -d'|' -f3)"
    done
  done
done
unset OMP_WAIT_POLICY
mkdir -p $OUT/keep; cp $OUT/n3_new_default_1.md $OUT/keep/offload.md
tar czf $OUT/n3_all.tgz -C $OUT $(cd $OUT && ls n3_*.md)
rm -f $OUT/n3_*.md
