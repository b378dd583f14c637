#!/bin/bash
# Round C1 (fourteenth session, H200 machine's host CPU): the CPU vector step's pair stores and byte scan.
#   1. the CPU test binaries that step through the vector path (build/release of this tree), on the
#      host's AVX-512 path (the development machine has AVX2 only);
#   2. bench_cpu_step against 1b43dee's headers (bench_old), with the pair stores (bench_new) and with the
#      pair stores and the sentinel byte scan (bench_new2), beside DeepSpeed 0.16.4's CPU-Adam (session12's
#      ds_harness), interleaved: 16 threads on 2^26 parameters, one core on 32768 (L2).
# Binaries: $R/.dev/h/c14.tar.xz (c/: the benches, ds_harness_spr, the tests). Usage (repo root):
#   OUT=out round_c1.sh [ROUNDS]
set -u
rounds=${1:-5}
R=$(pwd); export LD_LIBRARY_PATH=$R/.dev/bin/lib OMP_WAIT_POLICY=passive; L=/tmp/logs_c1; mkdir -p $L /tmp/c
tar -xJf $R/.dev/h/c14.tar.xz -C /tmp/c; B=/tmp/c/c
lscpu | grep -E "Model name|^CPU\(s\)|Thread|Core|Socket|MHz|Flags" | sed 's/Flags:.*\(avx512_vbmi\b\).*/Flags: ... avx512_vbmi .../' > $L/cpu.txt
grep -o -w -E "avx512(f|bw|vl|dq|_vbmi|_vbmi2|_bf16|_fp16)" /proc/cpuinfo | sort -u | tr '\n' ' ' >> $L/cpu.txt; echo >> $L/cpu.txt
cd $B/tests
for t in test_cpu_ops test_cpu_golden_bytes test_cpu_step_codecs test_cpu_step_masters test_cpu_step_rules test_cpu_finite_property \
         test_cpu_step_api test_cpu_isa_flags test_step_parity test_fp8_param test_extension_cpu test_io_resume test_offload_cpu \
         test_cpu_optimizer test_cpu_optimizer_fp8 test_grad_pass_cpu test_shard_cpu; do
  s=$SECONDS; timeout 150 ./$t > $L/$t.log 2>&1; rc=$?
  echo "$t rc=$rc ($((SECONDS-s)) s) $(grep -a 'test cases' $L/$t.log | tr -s ' ')"
  [ $rc -ne 0 ] && grep -a -m3 -B2 -A12 "ERROR\|CRASHED" $L/$t.log | head -40
done
cd $R
layouts='adamw_rounded_split_default_states|adamw_bf16_ulp8_default_states|adamw_bf16_bf16_states|adamw_fp32'
for r in $(seq "$rounds"); do
  echo "round $r $(date -u +%H:%M:%S) load $(cut -d' ' -f1 /proc/loadavg)" >> $L/t16.txt
  OMP_NUM_THREADS=16 timeout 60 $B/ds_harness_spr 26 20 | sed 's/^/deepspeed /' >> $L/t16.txt
  for b in old new new2; do
    FLASHOPTIM_BENCH_PARAMS=$((1 << 26)) OMP_NUM_THREADS=16 timeout 60 $B/bench_$b --benchmark_filter="cpu_step/($layouts)/avx512/threads:16/" \
      --benchmark_min_time=0.5 2>&1 | grep -E "^cpu_step" | awk -v b=$b '{print b, $1, $NF}' >> $L/t16.txt
  done
done
for r in $(seq 3); do
  echo "round $r $(date -u +%H:%M:%S) load $(cut -d' ' -f1 /proc/loadavg)" >> $L/t1_l2.txt
  OMP_NUM_THREADS=1 $B/ds_harness_spr 15 10000 | sed 's/^/deepspeed /' >> $L/t1_l2.txt
  for b in old new new2; do
    FLASHOPTIM_BENCH_PARAMS=32768 OMP_NUM_THREADS=1 $B/bench_$b --benchmark_filter="cpu_step/($layouts)/avx512/threads:1/" \
      --benchmark_min_time=0.3 2>&1 | grep -E "^cpu_step" | awk -v b=$b '{print b, $1, $NF}' >> $L/t1_l2.txt
  done
done
echo "cpu rounds done ($SECONDS s)"; cat $L/cpu.txt $L/t16.txt $L/t1_l2.txt
tar czf $OUT/c1.tgz -C $L . ; echo "done $SECONDS s"
