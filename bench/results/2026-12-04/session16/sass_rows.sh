#!/bin/bash
# SASS along the vector path of each kernels/r_<layout>.cu, against an old header tree and this tree's.
# Usage (repo root; cuobjdump and nvdisasm on PATH):
#   git archive b46fb85 include | tar -x -C /tmp/old
#   bash bench/results/2026-12-04/session16/sass_rows.sh /tmp/old/include /tmp/sass
set -eu
OLD=$1; W=$2; K=bench/results/2026-12-04/session16/kernels; mkdir -p $W
for f in $K/r_*.cu; do
  name=$(basename $f .cu); line=$name
  for t in old new; do
    inc=include; [ $t = old ] && inc=$OLD
    nvcc -std=c++17 -O3 -arch=sm_90 --expt-relaxed-constexpr -I $inc -cubin -o $W/${name}_$t.cubin $f
    cuobjdump -sass $W/${name}_$t.cubin > $W/${name}_$t.sass
    line="$line $t=$(python3 tools/sass_hot_path.py $W/${name}_$t.sass 8 | sed -n 2p | sed 's/.*path: \([0-9]*\) instr.*/\1/')"
  done
  echo "$line"
done
