#!/bin/bash
# Round F3 (nineteenth session, H200, F2's call): the Python package of the tree with the zero-tolerant attempt built on the GPU machine
# (pip wheel, no build isolation), installed, and its pytest run on the GPU.
# Usage (repo root): OUT=out bench/results/2026-12-04/session19/round_f3.sh
set -u
R=$(pwd); export PYTHONUNBUFFERED=1; L=/tmp/logs_f3; mkdir -p $L /tmp/f3
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw,temperature.gpu --format=csv,noheader
s=$SECONDS; CUDACXX=/usr/local/cuda/bin/nvcc CMAKE_BUILD_PARALLEL_LEVEL=16 timeout 420 python3 -m pip wheel -q --no-build-isolation --no-deps -w /tmp/f3/wheel -C build-dir=/tmp/f3/skb . > $L/wheel.log 2>&1; echo "wheel rc=$? ($((SECONDS-s)) s)"; tail -3 $L/wheel.log
PIP_BREAK_SYSTEM_PACKAGES=1 python3 -m pip install -q --no-deps --force-reinstall /tmp/f3/wheel/*.whl > $L/install.log 2>&1; echo "install rc=$?"
s=$SECONDS; (cd /tmp && timeout 150 python3 -m pytest -q -rs $R/python/tests) > $L/pytest.log 2>&1; echo "pytest rc=$? ($((SECONDS-s)) s) $(tail -1 $L/pytest.log)"; grep -a -m5 -A20 "FAILED\|Error" $L/pytest.log | head -40
tar czf $OUT/f3.tgz -C $L . ; echo "done $SECONDS s"
