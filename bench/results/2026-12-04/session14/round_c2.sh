#!/bin/bash
# Round C2 (fourteenth session, H200 machine's host CPU, right after F1 in the same lease): the final
# tree's bench_cpu_step (bench_fin) against 1b43dee's headers (bench_old) beside DeepSpeed 0.16.4's CPU-Adam,
# the order of the three reversed every other round (round C1 ran them in one order): 16 threads on 2^26
# parameters, then one core on 32768 (L2).
# Binaries: $R/.dev/h/f14.tar.xz (c/). Usage (repo root): OUT=out round_c2.sh [ROUNDS]
set -u
rounds=${1:-6}
R=$(pwd); export LD_LIBRARY_PATH=$R/.dev/bin/lib OMP_WAIT_POLICY=passive; L=/tmp/logs_c2; mkdir -p $L /tmp/f
[ -d /tmp/f/c ] || tar -xJf $R/.dev/h/f14.tar.xz -C /tmp/f; B=/tmp/f/c
layouts='adamw_rounded_split_default_states|adamw_bf16_ulp8_default_states|adamw_bf16_bf16_states|adamw_fp32'
run() {  # run <who> <threads> <params> <min_time> <log>
  if [ "$1" = ds ]; then
    if [ "$2" = 16 ]; then OMP_NUM_THREADS=16 timeout 60 $B/ds_harness_spr 26 20; else OMP_NUM_THREADS=1 $B/ds_harness_spr 15 10000; fi | sed 's/^/deepspeed /' >> $5
  else
    FLASHOPTIM_BENCH_PARAMS=$3 OMP_NUM_THREADS=$2 timeout 60 $B/bench_$1 --benchmark_filter="cpu_step/($layouts)/avx512/threads:$2/" \
      --benchmark_min_time=$4 2>&1 | grep -E "^cpu_step" | awk -v b=$1 '{print b, $1, $NF}' >> $5
  fi
}
for r in $(seq "$rounds"); do
  echo "round $r $(date -u +%H:%M:%S) load $(cut -d' ' -f1 /proc/loadavg)" >> $L/t16.txt
  if [ $((r % 2)) -eq 1 ]; then order="ds old fin"; else order="fin old ds"; fi
  for w in $order; do run $w 16 $((1 << 26)) 0.5 $L/t16.txt; done
done
for r in $(seq 3); do
  echo "round $r $(date -u +%H:%M:%S) load $(cut -d' ' -f1 /proc/loadavg)" >> $L/t1_l2.txt
  if [ $((r % 2)) -eq 1 ]; then order="ds old fin"; else order="fin old ds"; fi
  for w in $order; do run $w 1 32768 0.3 $L/t1_l2.txt; done
done
echo "cpu rounds done ($SECONDS s)"; cat $L/t16.txt
tar czf $OUT/c2.tgz -C $L . ; echo "done $SECONDS s"
