#!/usr/bin/env bash
# SPDX-FileCopyrightText: 2026 flashoptim authors
# SPDX-License-Identifier: Apache-2.0
#
# Builds the checkpoint-loader fuzzer with clang (address, undefined and
# fuzzer sanitizers) in its own build directory and runs it for a bounded
# time over the committed corpus. Exits non-zero on a crash, leak, sanitizer
# report or build failure.
#   fuzz/run_bounded.sh [seconds=60]
# Needs: clang (14), libclang-rt-14-dev, cmake, ninja-build, nlohmann-json3-dev, zlib1g-dev.
# Environment: FLASHOPTIM_FUZZ_BUILD (build dir, default build/fuzz), CXX_FUZZ (compiler).
set -euo pipefail
seconds=${1:-60}
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${FLASHOPTIM_FUZZ_BUILD:-$root/build/fuzz}
cxx=${CXX_FUZZ:-}
if [ -z "$cxx" ]; then
  for c in clang++-14 clang++; do
    if command -v "$c" >/dev/null 2>&1; then cxx=$c; break; fi
  done
fi
[ -n "$cxx" ] || { echo "run_bounded.sh: no clang++ found" >&2; exit 1; }

cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_COMPILER="$cxx" \
  -DFLASHOPTIM_BUILD_FUZZERS=ON -DFLASHOPTIM_BUILD_TESTS=OFF -DFLASHOPTIM_BUILD_BENCHMARKS=OFF \
  -DFLASHOPTIM_BUILD_EXAMPLES=OFF -DFLASHOPTIM_ENABLE_CUDA=OFF >/dev/null
cmake --build "$build" --target checkpoint_load_fuzzer -j2

# New inputs go to a scratch directory; the committed corpus is read only.
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
artifacts="$build/fuzz-artifacts"
mkdir -p "$artifacts"
"$build/fuzz/checkpoint_load_fuzzer" \
  -max_total_time="$seconds" -max_len=16384 -timeout=10 -rss_limit_mb=2048 \
  -dict="$root/fuzz/checkpoint.dict" -artifact_prefix="$artifacts/" -print_final_stats=1 \
  "$work" "$root/fuzz/corpus"
echo "checkpoint fuzzer: ${seconds}s without a crash, leak or sanitizer report"
