#!/bin/bash
# Round H4 (twenty-first session), on the tree with the tiny-tolerant attempt on by default:
# 1. the Python package's wheel built in the background (no build isolation) while the correctness
#    checks run: test_gpu_zero_gradients' idle-rows case from c4a6888's build (the zero-tolerant
#    attempt alone: the stuck tiles take the exact step), this tree's test_gpu_zero_gradients if
#    carried (with the case that shows both), flashoptim_train's GPU check (this tree's build, with
#    --source: the device's copy of the tree lives elsewhere than the build's);
# 2. then, alone on the machine, round H3's BENCHMARKS.md run with the peers (bench_report.py);
# 3. then the wheel installed and python/tests run on the GPU.
# Logs straight under $OUT. Binaries (stripped, not committed): .dev/h/h4, .dev/h/g2on.
# Usage (repo root): OUT=out bench/results/2026-12-05/session21/round_h4.sh
set -u
R=$(pwd); export LD_LIBRARY_PATH=$R/.dev/bin/lib PYTHONUNBUFFERED=1; L=$OUT/h4; mkdir -p $L /tmp/g3
( s=$SECONDS; CUDACXX=/usr/local/cuda/bin/nvcc CMAKE_BUILD_PARALLEL_LEVEL=12 timeout 300 python3 -m pip wheel -q --no-build-isolation --no-deps -w /tmp/g3/wheel -C build-dir=/tmp/g3/skb . > $L/wheel.log 2>&1; echo "wheel rc=$? ($((SECONDS-s)) s)" > $L/wheel.done ) &
H=$R/.dev/h/h4
s=$SECONDS; timeout 100 $H/test_gpu_zero_gradients_c4a6888 -tc="idle rows: m stuck*" > $L/zg_c4a6888_idle.log 2>&1
echo "c4a6888 idle rows (zero-tolerant attempt alone: exact > 0 expected) rc=$? ($((SECONDS-s)) s) $(grep -a 'test cases' $L/zg_c4a6888_idle.log | tr -s ' ')"
if [ -x $H/test_gpu_zero_gradients ]; then
  s=$SECONDS; timeout 150 $H/test_gpu_zero_gradients -d > $L/test_gpu_zero_gradients.log 2>&1
  echo "test_gpu_zero_gradients (this tree) rc=$? ($((SECONDS-s)) s) $(grep -a 'test cases' $L/test_gpu_zero_gradients.log | tr -s ' ')"
fi

s=$SECONDS; timeout 90 $H/flashoptim_train --device gpu --steps 300 --configs fp32,bf16,flash --check --source $R --out $L/train > $L/train_check.log 2>&1; echo "flashoptim_train --check rc=$? ($((SECONDS-s)) s)"; tail -5 $L/train_check.log
wait; cat $L/wheel.done; tail -3 $L/wheel.log
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw,temperature.gpu --format=csv,noheader
OUT=$OUT bash $R/bench/results/2026-12-05/session21/round_h3.sh
PIP_BREAK_SYSTEM_PACKAGES=1 python3 -m pip install -q --no-deps --force-reinstall /tmp/g3/wheel/*.whl > $L/install.log 2>&1; echo "install rc=$?"
s=$SECONDS; (cd /tmp && timeout 150 python3 -m pytest -q -rs $R/python/tests) > $L/pytest.log 2>&1; echo "pytest rc=$? ($((SECONDS-s)) s) $(tail -1 $L/pytest.log)"; grep -a -m5 -A20 "FAILED\|Error" $L/pytest.log | head -40
echo "done $SECONDS s"
