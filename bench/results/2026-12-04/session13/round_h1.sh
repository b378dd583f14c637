#!/bin/bash
# Round H1 (thirteenth session, H200): the range-checked attempt without master_update's keep select for
# the rounded split and native<T> (codec::reencodes_every_pair), and the CPU vector encode's folds.
#   1. A/B: ab_keep.cu built against b867dc1's headers (abk_old) and this tree's (abk_new), alternated,
#      two passes each of 15 interleaved rounds;
#   2. every single-GPU test binary of this tree (build/lead, Release, sm_90), test_gpu_exhaustive beside
#      them; synccheck and racecheck of the small warp-tile cases, memcheck of the optimizer tests;
#   3. the Python package built here while the tests run, then its pytest on the GPU.
# Binaries: $R/.dev/h/t.tar.xz (t/: the test binaries, the A/B pair). Usage (repo root): OUT=out round_h1.sh
set -u
R=$(pwd); export LD_LIBRARY_PATH=$R/.dev/bin/lib; export PYTHONUNBUFFERED=1; L=/tmp/logs_h1; mkdir -p $L /tmp/b
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw,temperature.gpu --format=csv,noheader
tar -xJf $R/.dev/h/t.tar.xz -C /tmp/b
for pass in 1 2; do
  for b in old new; do
    s=$SECONDS; timeout 100 /tmp/b/t/abk_$b all 15 > $L/ab_${b}_$pass.txt 2>&1
    echo "ab $b pass $pass rc=$? ($((SECONDS-s)) s)"; sed "s/^/  $b$pass /" $L/ab_${b}_$pass.txt
  done
done
( s=$SECONDS; CUDACXX=/usr/local/cuda/bin/nvcc CMAKE_BUILD_PARALLEL_LEVEL=12 timeout 400 python3 -m pip wheel -q --no-build-isolation --no-deps -w /tmp/b/wheel -C build-dir=/tmp/b/skb . > $L/wheel.log 2>&1; echo "wheel rc=$? ($((SECONDS-s)) s)" > /tmp/b/wheel.done ) &
( s=$SECONDS; timeout 300 /tmp/b/t/test_gpu_exhaustive > $L/test_gpu_exhaustive.log 2>&1; echo "test_gpu_exhaustive rc=$? ($((SECONDS-s)) s) $(grep -a 'test cases' $L/test_gpu_exhaustive.log | tr -s ' ')" > /tmp/b/ex.done ) &
for t in test_gpu_step_parity test_gpu_finite_property test_gpu_step_inputs test_gpu_fp8_step test_gpu_optimizer test_gpu_huge \
         test_gpu_offload test_gpu_optimizer_offload test_gpu_grad_pass test_gpu_optimizer_fp8 test_gpu_extension test_gpu_fp8_param test_gpu_optimizer_io; do
  s=$SECONDS; timeout 200 /tmp/b/t/$t > $L/$t.log 2>&1; rc=$?
  echo "$t rc=$rc ($((SECONDS-s)) s) $(grep -a 'test cases' $L/$t.log | tr -s ' ')"
  [ $rc -ne 0 ] && grep -a -m3 -B2 -A12 "ERROR\|CRASHED" $L/$t.log | head -40
done
# (doctest splits -tc at commas: "\," keeps one in a name.)
for tool in synccheck racecheck; do
  for tc in 'parity: warp tiles\, small' 'parity: warp tiles\, 2 stages\, small'; do
    n=$(echo "$tc" | tr -c 'a-z0-9\n' '_'); s=$SECONDS; timeout 100 compute-sanitizer --tool $tool --error-exitcode 3 /tmp/b/t/test_gpu_step_parity -tc="$tc" > $L/san_${tool}_$n.log 2>&1
    echo "$tool $tc rc=$? ($((SECONDS-s)) s) $(grep -E 'SUMMARY' $L/san_${tool}_$n.log | tail -1) $(grep -a 'test cases' $L/san_${tool}_$n.log | tr -s ' ')"
  done
done
for t in test_gpu_optimizer_fp8 test_gpu_optimizer test_gpu_step_inputs; do
  s=$SECONDS; timeout 100 compute-sanitizer --tool memcheck --error-exitcode 3 /tmp/b/t/$t > $L/memcheck_$t.log 2>&1
  echo "memcheck $t rc=$? ($((SECONDS-s)) s) $(grep -E 'ERROR SUMMARY' $L/memcheck_$t.log | tail -1) $(grep -a 'test cases' $L/memcheck_$t.log | tr -s ' ')"
done
while [ ! -f /tmp/b/ex.done ] || [ ! -f /tmp/b/wheel.done ]; do sleep 2; done
cat /tmp/b/ex.done /tmp/b/wheel.done; tail -3 $L/wheel.log
PIP_BREAK_SYSTEM_PACKAGES=1 python3 -m pip install -q --no-deps --force-reinstall /tmp/b/wheel/*.whl > $L/install.log 2>&1; echo "install rc=$?"
s=$SECONDS; (cd /tmp && timeout 200 python3 -m pytest -q -rs $R/python/tests) > $L/pytest.log 2>&1; echo "pytest rc=$? ($((SECONDS-s)) s) $(tail -1 $L/pytest.log)"; grep -a -m5 -A20 "FAILED\|Error" $L/pytest.log | head -40
rm -f $L/*.part; tar czf $OUT/h1.tgz -C $L . ; echo "done $SECONDS s"
