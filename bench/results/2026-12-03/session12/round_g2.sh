#!/bin/bash
# Round G2 (twelfth session, H200): this tree's GPU tests that the int16 decode's Newton step and
# the bf16 + int16 split's warp tiles touch, then BENCHMARKS.md's run with the peers.
#   test_gpu_exhaustive: the proven ULP decode on every pair, and the kernel's decode tables
#   test_gpu_step_parity (every case), test_gpu_finite_property (every case)
# Binaries: build/lead (Release, sm_90) stripped into $BIN. Usage (repo root): BIN=.dev/g2 OUT=out round_g2.sh
set -u
R=$(pwd); export LD_LIBRARY_PATH=$R/.dev/bin/lib PYTHONUNBUFFERED=1; L=/tmp/logs_g2; mkdir -p $L
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw,temperature.gpu --format=csv,noheader
run() {  # name timeout args...
  local n=$1 t=$2; shift 2; local s=$SECONDS
  timeout "$t" "$@" > "$L/$n.log" 2>&1; echo "$n rc=$? ($((SECONDS-s)) s) $(grep -a 'test cases' "$L/$n.log" | tr -s ' ')"
}
run exhaustive_ulp_decode 150 "$BIN/test_gpu_exhaustive" -tc='proven ULP decode*,the kernel*shared-memory tables*'
run test_gpu_step_parity 240 "$BIN/test_gpu_step_parity"
run test_gpu_finite_property 120 "$BIN/test_gpu_finite_property"
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/paper $R/.whl/flashoptim-0.1.4*.whl > $L/paper_install.log 2>&1; echo "paper install rc=$?"
s=$SECONDS; PYTHONPATH=/tmp/paper timeout 300 python3 tools/bench_report.py --bench "$BIN/bench_gpu_step:/default/|^ceiling/" --paper --out $L/BENCHMARKS.md --json $L/bench_gpu.json --torch-json $L/torch.json --paper-json $L/paper.json --append bench/results/2026-12-03/session7/offload.md --notes docs/benchmark-notes.md > $L/table.txt 2> $L/bench.log; echo "bench_report rc=$? ($((SECONDS-s)) s)"; grep -E "ulp16|adamw_default / flat|targets met" $L/table.txt | head; grep -i "fail\|error\|not timed" $L/bench.log | head
rm -f $L/*.part; tar czf $OUT/g2.tgz -C $L . ; echo "done $SECONDS s"
