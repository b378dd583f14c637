#!/bin/bash
# Round N2: the off-load step, old (HEAD) and new (the chunk team), interleaved, 6 rounds x 2 wait policies.
export LD_LIBRARY_PATH=$PWD/.dev/bin/lib
D=.dev/off
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
lscpu | grep -E "Model name|^CPU\(s\)"
for r in 1 2 3 4 5 6; do
  for w in passive default; do
    for v in old new; do
      if [ $w = passive ]; then export OMP_WAIT_POLICY=passive; else unset OMP_WAIT_POLICY; fi
      timeout 60 $D/bench_offload_$v --fraction 0.5 --repeats 40 > $OUT/n2_${v}_${w}_$r.md; rc=$?
      echo "$r $w $v rc=$rc $(grep -E 'whole off-load' $OUT/n2_${v}_${w}_$r.md | tr -d '*|' | tr -s ' ')  ## cpu: $(grep -E 'CPU step of' $OUT/n2_${v}_${w}_$r.md | cut -d'|' -f3) ## floor: $(grep -oE 'at once[^:]*: [0-9.]+ ms' $OUT/n2_${v}_${w}_$r.md | grep -oE '[0-9.]+ ms')"
    done
  done
done
