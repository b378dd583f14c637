#!/bin/bash
# Round F1 (fourteenth session, H200 machine): the final tree's checks.
#   1. the Python package built on that machine (pip wheel, as round H1 of the thirteenth session) while
#      the CPU test binaries of this tree (build/release) run on the host's AVX-512 path, then the GPU
#      off-load tests (build/lead: cpu::step on the host beside the GPU step), then the package's pytest.
# Binaries: $R/.dev/h/f14.tar.xz (c/tests, c/gpu). Usage (repo root): OUT=out round_f1.sh
set -u
R=$(pwd); export LD_LIBRARY_PATH=$R/.dev/bin/lib OMP_WAIT_POLICY=passive; L=/tmp/logs_f1; mkdir -p $L /tmp/f
tar -xJf $R/.dev/h/f14.tar.xz -C /tmp/f; B=/tmp/f/c
( s=$SECONDS; CUDACXX=/usr/local/cuda/bin/nvcc CMAKE_BUILD_PARALLEL_LEVEL=12 timeout 400 python3 -m pip wheel -q --no-build-isolation --no-deps -w /tmp/f/wheel -C build-dir=/tmp/f/skb . > $L/wheel.log 2>&1; echo "wheel rc=$? ($((SECONDS-s)) s)" > /tmp/f/wheel.done ) &
cd $B/tests
for t in test_cpu_ops test_cpu_golden_bytes test_cpu_step_codecs test_cpu_step_masters test_cpu_step_rules test_cpu_finite_property \
         test_cpu_step_api test_cpu_isa_flags test_step_parity test_fp8_param test_extension_cpu test_io_resume test_offload_cpu \
         test_cpu_optimizer test_cpu_optimizer_fp8 test_grad_pass_cpu test_shard_cpu; do
  s=$SECONDS; timeout 200 ./$t > $L/$t.log 2>&1; rc=$?
  echo "$t rc=$rc ($((SECONDS-s)) s) $(grep -a 'test cases' $L/$t.log | tr -s ' ')"
  [ $rc -ne 0 ] && grep -a -m3 -B2 -A12 "ERROR\|CRASHED" $L/$t.log | head -40
done
cd $B/gpu
for t in test_gpu_offload test_gpu_optimizer_offload; do
  s=$SECONDS; timeout 200 ./$t > $L/$t.log 2>&1; rc=$?
  echo "$t rc=$rc ($((SECONDS-s)) s) $(grep -a 'test cases' $L/$t.log | tr -s ' ')"
  [ $rc -ne 0 ] && grep -a -m3 -B2 -A12 "ERROR\|CRASHED" $L/$t.log | head -40
done
cd $R
while [ ! -f /tmp/f/wheel.done ]; do sleep 2; done
cat /tmp/f/wheel.done; tail -3 $L/wheel.log
PIP_BREAK_SYSTEM_PACKAGES=1 python3 -m pip install -q --no-deps --force-reinstall /tmp/f/wheel/*.whl > $L/install.log 2>&1; echo "install rc=$?"
s=$SECONDS; (cd /tmp && timeout 200 python3 -m pytest -q -rs $R/python/tests) > $L/pytest.log 2>&1; echo "pytest rc=$? ($((SECONDS-s)) s) $(tail -1 $L/pytest.log)"; grep -a -m5 -A20 "FAILED\|Error" $L/pytest.log | head -40
tar czf $OUT/f1.tgz -C $L . ; echo "done $SECONDS s"
