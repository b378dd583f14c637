#!/bin/bash
# Round C3 (fourteenth session, H200 machine's host CPU): the same step on its AVX-512 and AVX2 paths
# (cpu::step_options' isa; the same bytes) on 16 threads, 2^26 parameters, beside DeepSpeed's mixed step:
# whether 256-bit code keeps a higher clock on 16 busy cores (round F2). The order of the two paths is
# reversed every other round. Binaries: $R/.dev/h/f2.tar.xz (c/bench_fin, c/ds_harness_spr).
# Usage (repo root): OUT=out round_c3.sh [ROUNDS]
set -u
rounds=${1:-4}
R=$(pwd); export LD_LIBRARY_PATH=$R/.dev/bin/lib OMP_WAIT_POLICY=passive; L=/tmp/logs_c3; mkdir -p $L /tmp/f2
[ -d /tmp/f2/c ] || tar -xJf $R/.dev/h/f2.tar.xz -C /tmp/f2; B=/tmp/f2/c
layouts='adamw_rounded_split_default_states|adamw_bf16_bf16_states'
run() {  # run <isa> <threads>
  FLASHOPTIM_BENCH_PARAMS=$((1 << 26)) OMP_NUM_THREADS=$2 timeout 60 $B/bench_fin --benchmark_filter="cpu_step/($layouts)/$1/threads:$2/" \
    --benchmark_min_time=0.5 2>&1 | grep -E "^cpu_step" | awk -v b=$1 '{print b, $1, $NF}' >> $L/t16.txt
}
for r in $(seq "$rounds"); do
  echo "round $r $(date -u +%H:%M:%S) load $(cut -d' ' -f1 /proc/loadavg)" >> $L/t16.txt
  OMP_NUM_THREADS=16 timeout 60 $B/ds_harness_spr 26 20 | sed 's/^/deepspeed /' >> $L/t16.txt
  if [ $((r % 2)) -eq 1 ]; then run avx512 16; run avx2 16; else run avx2 16; run avx512 16; fi
done
cat $L/t16.txt; tar czf $OUT/c3.tgz -C $L . ; echo "done $SECONDS s"
