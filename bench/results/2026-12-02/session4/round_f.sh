#!/bin/bash
# Round C (session 4): interleaved A/B of stage counts for fp8 / reference / Lion (25 rounds) with SM clock
# and power sampled, then a smoke run of bench_gpu_step's new ceiling rows and telemetry.
set -u
R=$(pwd); L=/tmp/logs_c; mkdir -p $L /tmp/b; export LD_LIBRARY_PATH=$R/.dev/bin/lib
tar xJf $R/.dev/r.tar.xz -C /tmp/b
(nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,clocks_throttle_reasons.active --format=csv,noheader -lms 100 > $L/smi.csv 2>&1 &)
$R/.dev/bin/ab_fp8 all 25 > $L/ab_fp8.txt 2>&1; echo "ab rc=$?"; cat $L/ab_fp8.txt
pkill nvidia-smi
awk -F, '{gsub(/ MHz/,"",$2); gsub(/ W/,"",$3); s+=$2; p+=$3; n++} END {printf "smi: %d samples, mean SM %.0f MHz, mean %.0f W\n", n, s/n, p/n}' $L/smi.csv
s=$SECONDS; timeout 120 /tmp/b/bench_gpu_step --benchmark_filter='^ceiling/(adamw_default|adamw_fp8_states|lion_default|adamw_torch_layout_bf16|adamw_reference_states)|^step/(adamw_default|adamw_fp8_states)/flat268M/default' --benchmark_counters_tabular=true > $L/smoke.txt 2>&1; echo "smoke rc=$? ($((SECONDS-s)) s)"; grep -v "^---" $L/smoke.txt | tail -9
tar czf $OUT/c.tgz -C $L . ; echo done
