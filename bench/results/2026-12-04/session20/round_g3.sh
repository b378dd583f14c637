#!/bin/bash
# Round G3 (prepared in the twentieth session): the Python package of the tree with the tiny-tolerant option built on the GPU machine
# (pip wheel, no build isolation), installed, and its pytest run on the GPU.
# Usage (repo root): OUT=out bench/results/2026-12-04/session20/round_g3.sh
set -u
R=$(pwd); export PYTHONUNBUFFERED=1; L=/tmp/logs_g3; mkdir -p $L /tmp/g3
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw,temperature.gpu --format=csv,noheader
s=$SECONDS; CUDACXX=/usr/local/cuda/bin/nvcc CMAKE_BUILD_PARALLEL_LEVEL=16 timeout 420 python3 -m pip wheel -q --no-build-isolation --no-deps -w /tmp/g3/wheel -C build-dir=/tmp/g3/skb . > $L/wheel.log 2>&1; echo "wheel rc=$? ($((SECONDS-s)) s)"; tail -3 $L/wheel.log
PIP_BREAK_SYSTEM_PACKAGES=1 python3 -m pip install -q --no-deps --force-reinstall /tmp/g3/wheel/*.whl > $L/install.log 2>&1; echo "install rc=$?"
s=$SECONDS; (cd /tmp && timeout 150 python3 -m pytest -q -rs $R/python/tests) > $L/pytest.log 2>&1; echo "pytest rc=$? ($((SECONDS-s)) s) $(tail -1 $L/pytest.log)"; grep -a -m5 -A20 "FAILED\|Error" $L/pytest.log | head -40
tar czf $OUT/g3.tgz -C $L . ; echo "done $SECONDS s"
