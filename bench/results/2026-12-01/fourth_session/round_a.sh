#!/bin/bash
# Round A: build every GPU target (persistent in .devb while the machine is warm) + the wheel; every GPU test; pytest; main job; examples; memcheck.
set -u
L=/tmp/logs; mkdir -p $L; R=$(pwd); export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 OMP_WAIT_POLICY=passive
B=$R/.devb/fo; mkdir -p $R/.devb
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader | tee $L/gpu.txt
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/paper $R/.whl/flashoptim-0.1.4*.whl > $L/paper_install.log 2>&1
cd $R/.snap
( s=$SECONDS; CUDACXX=/usr/local/cuda/bin/nvcc CMAKE_BUILD_PARALLEL_LEVEL=3 python3 -m pip wheel -v --no-build-isolation --no-deps -w $R/.devb/wheel -C build-dir=$R/.devb/skb . > $L/wheel.log 2>&1; echo "wheel rc=$? ($((SECONDS-s)) s)" > /tmp/wheel.done ) &
TESTS="test_gpu_optimizer_offload test_gpu_fp8_param test_gpu_fp8_step test_gpu_step_inputs test_gpu_optimizer test_gpu_optimizer_io test_gpu_grad_pass test_gpu_offload test_gpu_step_parity test_gpu_extension test_gpu_huge test_gpu_finite_property test_shard_gpu test_gpu_exhaustive"
OTHER="flashoptim_train flashoptim_demo flashoptim_example_groups_graph flashoptim_example_offload_gpu bench_gpu_optimizer bench_fp8_param bench_gpu_step bench_offload"
s=$SECONDS; cmake --preset release -B $B -DFLASHOPTIM_BUILD_BENCHMARKS=ON > $L/cfg.log 2>&1
cmake --build $B -j13 --target $TESTS $OTHER -- -k 0 > $L/build.log 2>&1; echo "cxx build rc=$? ($((SECONDS-s)) s)"; grep -m8 -B2 " error" $L/build.log | head -30
mkdir -p $R/.devb/bin; for n in $TESTS $OTHER; do e=$(find $B -name $n -type f -perm -u+x | head -1); [ -n "$e" ] && cp $e $R/.devb/bin/; done
cd $R/.devb/bin
( timeout 300 ./test_gpu_exhaustive > $L/test_gpu_exhaustive.log 2>&1; echo "test_gpu_exhaustive rc=$? $(grep -E 'test cases' $L/test_gpu_exhaustive.log)" > /tmp/ex.done ) &
for t in $TESTS; do [ $t = test_gpu_exhaustive ] && continue
  s=$SECONDS; timeout 200 ./$t > $L/$t.log 2>&1; echo "$t rc=$? ($((SECONDS-s)) s) $(grep -E 'test cases' $L/$t.log | tr '\n' ' ')"; grep -a -m3 -B3 -A8 "ERROR\|CRASHED" $L/$t.log | head -30; done
cd /tmp; k=0; for args in "" "--steps 300 --configs fp32,bf16,flash --check" "--steps 300 --configs fp32,bf16,flash --check --offload 0.5" "--steps 300 --weight-decay 0.1"; do s=$SECONDS; timeout 100 $R/.devb/bin/flashoptim_train --device gpu $args --out $L/tr$((++k)) > $L/tr$k.log 2>&1; echo "train [$args] rc=$? ($((SECONDS-s)) s)"; tail -4 $L/tr$k.log; done
for e in flashoptim_example_groups_graph flashoptim_example_offload_gpu flashoptim_demo; do (cd /tmp && timeout 90 $R/.devb/bin/$e > $L/$e.log 2>&1); echo "$e rc=$?"; tail -3 $L/$e.log; done
while [ ! -f /tmp/wheel.done ]; do sleep 2; done; cat /tmp/wheel.done; grep -m5 -E " error|Error " $L/wheel.log
PIP_BREAK_SYSTEM_PACKAGES=1 python3 -m pip install -q --no-deps --force-reinstall $R/.devb/wheel/*.whl > $L/install.log 2>&1; echo "install rc=$?"
cd /tmp && s=$SECONDS; timeout 200 python3 -m pytest -q -rs -x $R/.snap/python/tests > $L/pytest.log 2>&1; echo "pytest rc=$? ($((SECONDS-s)) s)"; grep -E "passed|failed|FAILED|Error" $L/pytest.log | head -20
while [ ! -f /tmp/ex.done ]; do sleep 2; done; cat /tmp/ex.done
cd $R/.devb/bin
for spec in "memcheck|test_gpu_fp8_step|*one tensor*" "memcheck|test_gpu_optimizer_offload|*rebinds*,*init without gradients*" "memcheck|test_gpu_fp8_param|*" "memcheck|test_gpu_step_inputs|skip*,device inputs*,bad inputs*" "racecheck|test_gpu_fp8_step|*one tensor*"; do IFS='|' read tool t tc <<< "$spec"; s=$SECONDS; timeout 120 compute-sanitizer --tool $tool --error-exitcode 3 ./$t -tc="$tc" > $L/san_${tool}_$t.log 2>&1; echo "$tool $t [$tc] rc=$? ($((SECONDS-s)) s) $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $L/san_${tool}_$t.log | tail -1)"; done
