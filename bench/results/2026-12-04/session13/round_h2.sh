#!/bin/bash
# Round H2 (thirteenth session, H200 machine): this tree's final form (Policy::checked_reencode, chosen per
# layout from round H1).
#   1. A/B: ab_keep.cu against b867dc1's headers (abk_old), H1's tree (abk_new: every listed master
#      re-encoded) and this tree (abk_fin), alternated, two passes of 15 interleaved rounds;
#   2. the GPU test binaries the change reaches (build/lead, Release, sm_90); synccheck and racecheck of the
#      small warp-tile cases, memcheck of native<bf16>'s parity case (its attempt re-encodes);
#   3. the CPU step on the host's Xeon (AVX-512): bench_cpu_step against b867dc1's headers (bench_old) and
#      this tree's (bench_new), with DeepSpeed 0.16.4's CPU-Adam (session12's ds_harness), interleaved:
#      16 threads on 2^26 parameters, one core on 32768 (L2).
# Binaries: $R/.dev/h/t.tar.xz (t/), $R/.dev/h/c.tar.xz (c/). Usage (repo root): OUT=out round_h2.sh [ROUNDS]
set -u
rounds=${1:-5}
R=$(pwd); export LD_LIBRARY_PATH=$R/.dev/bin/lib OMP_WAIT_POLICY=passive; L=/tmp/logs_h2; mkdir -p $L /tmp/b /tmp/c
tar -xJf $R/.dev/h/t.tar.xz -C /tmp/b; tar -xJf $R/.dev/h/c.tar.xz -C /tmp/c; B=/tmp/c/c
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw,temperature.gpu --format=csv,noheader
for pass in 1 2; do
  for b in old new fin; do
    s=$SECONDS; timeout 100 /tmp/b/t/abk_$b all 15 > $L/ab_${b}_$pass.txt 2>&1
    echo "ab $b pass $pass rc=$? ($((SECONDS-s)) s)"; sed "s/^/  $b$pass /" $L/ab_${b}_$pass.txt
  done
done
for t in test_gpu_step_parity test_gpu_finite_property test_gpu_step_inputs test_gpu_fp8_step test_gpu_optimizer test_gpu_huge \
         test_gpu_offload test_gpu_optimizer_offload test_gpu_grad_pass test_gpu_optimizer_fp8 test_gpu_extension test_gpu_fp8_param test_gpu_optimizer_io; do
  s=$SECONDS; timeout 200 /tmp/b/t/$t > $L/$t.log 2>&1; rc=$?
  echo "$t rc=$rc ($((SECONDS-s)) s) $(grep -a 'test cases' $L/$t.log | tr -s ' ')"
  [ $rc -ne 0 ] && grep -a -m3 -B2 -A12 "ERROR\|CRASHED" $L/$t.log | head -40
done
for tool in synccheck racecheck; do
  tc='parity: warp tiles\, small'; n=small; s=$SECONDS
  timeout 100 compute-sanitizer --tool $tool --error-exitcode 3 /tmp/b/t/test_gpu_step_parity -tc="$tc" > $L/san_${tool}_$n.log 2>&1
  echo "$tool $tc rc=$? ($((SECONDS-s)) s) $(grep -E 'SUMMARY' $L/san_${tool}_$n.log | tail -1) $(grep -a 'test cases' $L/san_${tool}_$n.log | tr -s ' ')"
done
s=$SECONDS; timeout 150 compute-sanitizer --tool memcheck --error-exitcode 3 /tmp/b/t/test_gpu_step_parity -tc='parity adamw_bf16_native' > $L/memcheck_native.log 2>&1
echo "memcheck parity adamw_bf16_native rc=$? ($((SECONDS-s)) s) $(grep -E 'ERROR SUMMARY' $L/memcheck_native.log | tail -1) $(grep -a 'test cases' $L/memcheck_native.log | tr -s ' ')"
lscpu | grep -E "Model name|^CPU\(s\)|MHz" > $L/cpu.txt
layouts='adamw_rounded_split_default_states|adamw_bf16_ulp8_default_states|adamw_bf16_bf16_states'
for r in $(seq "$rounds"); do
  echo "round $r $(date -u +%H:%M:%S) load $(cut -d' ' -f1 /proc/loadavg)" >> $L/t16.txt
  OMP_NUM_THREADS=16 $B/ds_harness_spr 26 20 | sed 's/^/deepspeed /' >> $L/t16.txt
  for b in old new; do
    FLASHOPTIM_BENCH_PARAMS=$((1 << 26)) OMP_NUM_THREADS=16 $B/bench_$b --benchmark_filter="cpu_step/($layouts)/avx512/threads:16/" \
      --benchmark_min_time=0.5 2>&1 | grep -E "^cpu_step" | awk -v b=$b '{print b, $1, $NF}' >> $L/t16.txt
  done
done
for r in $(seq "$rounds"); do
  echo "round $r $(date -u +%H:%M:%S) load $(cut -d' ' -f1 /proc/loadavg)" >> $L/t1_l2.txt
  OMP_NUM_THREADS=1 $B/ds_harness_spr 15 10000 | sed 's/^/deepspeed /' >> $L/t1_l2.txt
  for b in old new; do
    FLASHOPTIM_BENCH_PARAMS=32768 OMP_NUM_THREADS=1 $B/bench_$b --benchmark_filter="cpu_step/($layouts)/avx512/threads:1/" \
      --benchmark_min_time=0.3 2>&1 | grep -E "^cpu_step" | awk -v b=$b '{print b, $1, $NF}' >> $L/t1_l2.txt
  done
done
echo "cpu rounds done ($SECONDS s)"; cat $L/cpu.txt $L/t16.txt $L/t1_l2.txt
rm -f $L/*.part; tar czf $OUT/h2.tgz -C $L . ; echo "done $SECONDS s"
