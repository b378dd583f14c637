#!/bin/bash
# Round J (2026-12-02): the optimizer FP8 test's many-groups case; the wheel (CUDA half) and pytest python/tests.
set -u
L=/tmp/logs; mkdir -p $L; R=$(pwd); B=/tmp/fo; export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 OMP_WAIT_POLICY=passive
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $L/gpu.txt
cd $R/.snap
( s=$SECONDS; CUDACXX=/usr/local/cuda/bin/nvcc CMAKE_BUILD_PARALLEL_LEVEL=6 python3 -m pip wheel -q --no-build-isolation --no-deps -w /tmp/wheel -C build-dir=/tmp/skb . > $L/wheel.log 2>&1; echo "wheel rc=$? ($((SECONDS-s)) s)" > /tmp/wheel.done ) &
T="test_gpu_optimizer_fp8 test_gpu_fp8_param"
s=$SECONDS; cmake --preset release -B $B > $L/cfg.log 2>&1; echo "configure rc=$?"
cmake --build $B -j8 --target $T -- -k 0 > $L/build.log 2>&1; echo "cxx build rc=$? ($((SECONDS-s)) s)"; grep -m8 -B2 " error" $L/build.log | head -30
mkdir -p /tmp/bin; for n in $T; do e=$(find $B -name $n -type f -perm -u+x | head -1); [ -n "$e" ] && cp $e /tmp/bin/; done
cd /tmp/bin
for t in $T; do s=$SECONDS; timeout 100 ./$t > $L/$t.log 2>&1; echo "$t rc=$? ($((SECONDS-s)) s) $(grep -E 'test cases' $L/$t.log)"; grep -a -m4 -B3 -A8 "ERROR\|CRASHED" $L/$t.log | head -40; done
s=$SECONDS; timeout 60 compute-sanitizer --tool memcheck --error-exitcode 3 ./test_gpu_optimizer_fp8 -tc="*more groups*" > $L/san.log 2>&1; echo "memcheck optimizer_fp8 [*more groups*] rc=$? ($((SECONDS-s)) s) $(grep 'ERROR SUMMARY' $L/san.log | tail -1)"
while [ ! -f /tmp/wheel.done ]; do sleep 2; done; cat /tmp/wheel.done; grep -m5 -E " error|Error " $L/wheel.log
PIP_BREAK_SYSTEM_PACKAGES=1 python3 -m pip install -q --no-deps --force-reinstall /tmp/wheel/flashoptim_kernels*.whl > $L/install.log 2>&1; echo "install rc=$?"
cd /tmp && s=$SECONDS; timeout 220 python3 -m pytest -q -rs -x $R/.snap/python/tests > $L/pytest.log 2>&1; echo "pytest rc=$? ($((SECONDS-s)) s)"; grep -E "passed|failed|FAILED|Error" $L/pytest.log | tail -5
cd /tmp/logs && tar czf $OUT/logs.tgz . && echo packed
