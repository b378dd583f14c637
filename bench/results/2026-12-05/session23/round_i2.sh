#!/bin/bash
# Round I2 (twenty-third session): every GPU test on one H200 (tools/device_round.sh tests:
# GPU == CPU bit for bit, off-load, shards on one GPU, compute-sanitizer memcheck and racecheck,
# the demo and flashoptim_train's GPU check), from the binaries staged at 1b30024 plus the demo and
# flashoptim_train (.device/tests_plus.tar.xz, not committed).
# Usage (repo root): OUT=out bench/results/2026-12-05/session23/round_i2.sh
set -u
mkdir -p .device/bin && tar -C .device/bin -xJf .device/tests_plus.tar.xz
BIN=.device/bin OUT=$OUT WORK=/tmp/i2 bash tools/device_round.sh tests
