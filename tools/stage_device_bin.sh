#!/usr/bin/env bash
# SPDX-FileCopyrightText: 2026 flashoptim authors
# SPDX-License-Identifier: Apache-2.0
#
# Collects the executables tools/device_round.sh runs from a build folder
# (default build/release, configured with CMAKE_CUDA_ARCHITECTURES=90) into
# .device/bin, stripped, for the device machine (`carry: [".device"]`).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build/release}
DEST=.device/bin
rm -rf "$DEST"
mkdir -p "$DEST"
for name in test_gpu_exhaustive test_gpu_step_parity test_gpu_zero_gradients test_gpu_step_inputs test_gpu_huge test_gpu_offload \
            test_shard_gpu test_shard_cpu test_shard_nccl bench_shard_nccl flashoptim_demo bench_gpu_step bench_offload \
            test_gpu_finite_property flashoptim_example_shard_step flashoptim_example_groups_graph \
            flashoptim_example_offload_gpu test_gpu_extension test_gpu_grad_pass test_gpu_optimizer \
            test_gpu_optimizer_io test_gpu_optimizer_offload test_gpu_fp8_param test_gpu_fp8_step flashoptim_train \
            bench_gpu_optimizer bench_fp8_param flashoptim_example_fp8_gather test_gpu_optimizer_fp8; do
  exe=$(find "$BUILD" -name "$name" -type f -perm -u+x | head -1)
  if [ -z "$exe" ]; then echo "missing: $name" >&2; continue; fi
  cp "$exe" "$DEST/"
  strip --strip-unneeded "$DEST/$name" 2> /dev/null || true
done
# shared libraries the device image may lack or name differently (Debian's
# Google Benchmark soname, GCC's OpenMP runtime)
mkdir -p "$DEST/lib"
for exe in "$DEST"/*; do
  [ -f "$exe" ] || continue
  ldd "$exe" | awk '/libbenchmark|libgomp/ {print $3}' | while read -r lib; do cp -L "$lib" "$DEST/lib/"; done
done
du -sh "$DEST"
ls -la "$DEST"
