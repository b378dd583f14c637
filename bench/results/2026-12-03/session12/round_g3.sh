#!/bin/bash
# Round G3 (twelfth session, H200): the other GPU tests with int16 corrections (step inputs: the master
# modes; fp8 parameters: the modes' decode; off-load: bf16 + int16 with bf16-SR states), this tree.
# Binaries: build/lead (Release, sm_90) stripped into $BIN. Usage (repo root): BIN=.dev/g3 OUT=out round_g3.sh
set -u
R=$(pwd); export LD_LIBRARY_PATH=$R/.dev/bin/lib
for t in test_gpu_step_inputs test_gpu_fp8_param test_gpu_offload; do
  s=$SECONDS; timeout 150 "$BIN/$t" > "$OUT/$t.log" 2>&1
  echo "$t rc=$? ($((SECONDS-s)) s) $(grep -a 'test cases' "$OUT/$t.log" | tr -s ' ')"
done
