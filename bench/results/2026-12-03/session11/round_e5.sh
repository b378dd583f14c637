#!/bin/bash
# Round E5 (eleventh session): the CPU step's tests on the H200 machine's CPU, which has AVX-512 (the development
# machine's CPU of this session has none, so test_cpu_isa_flags skipped there): binaries of the release preset
# built on the development machine with the host's tile loops rolled (5b2ed53), run as ctest runs them.
set -u
R=$(pwd); export LD_LIBRARY_PATH=$R/.dev/bin/lib
grep -m1 "model name" /proc/cpuinfo; echo "avx512: $(grep -o -w 'avx512f\|avx512bw\|avx512vl\|avx512dq\|avx512_bf16\|avx512_fp16' /proc/cpuinfo | sort -u | tr '\n' ' ')"; nproc
for t in test_cpu_isa_flags test_cpu_golden_bytes test_cpu_step_rules test_cpu_step_masters test_cpu_step_codecs test_cpu_ops test_cpu_step_api test_cpu_finite_property test_step_parity; do
  s=$SECONDS; OMP_WAIT_POLICY=passive timeout 200 $R/.dev/cpu/$t > $OUT/$t.log 2>&1; rc=$?
  echo "$t rc=$rc ($((SECONDS-s)) s) $(grep -a 'test cases' $OUT/$t.log | tr -s ' ')"
  [ $rc -ne 0 ] && tail -20 $OUT/$t.log
done
echo "done $SECONDS s"
