#!/bin/bash
# Round T, call 3: the wheel (CUDA half) and pytest on .snap.
set -u
L=/tmp/logs_t3; mkdir -p $L; R=$(pwd)
cd $R/.snap; s=$SECONDS; CUDACXX=/usr/local/cuda/bin/nvcc CMAKE_BUILD_PARALLEL_LEVEL=15 python3 -m pip wheel -q --no-build-isolation --no-deps -w /tmp/wheel -C build-dir=/tmp/skb . > $L/wheel.log 2>&1; echo "wheel rc=$? ($((SECONDS-s)) s)"; tail -3 $L/wheel.log
PIP_BREAK_SYSTEM_PACKAGES=1 python3 -m pip install -q --no-deps --force-reinstall /tmp/wheel/flashoptim_kernels*.whl > $L/install.log 2>&1; echo "install rc=$?"
cd /tmp && s=$SECONDS; timeout 200 python3 -m pytest -q -rs -x $R/.snap/python/tests > $L/pytest.log 2>&1; echo "pytest rc=$? ($((SECONDS-s)) s)"; tail -8 $L/pytest.log
tar czf $OUT/t3.tgz -C $L . ; tar czf $OUT/t2.tgz -C $R/build logs_t2 logs_t1 2>/dev/null; echo done
