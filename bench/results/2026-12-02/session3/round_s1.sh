#!/bin/bash
# Round S, call 1 (2026-12-02, session 3): build every GPU test and bench_gpu_step from .snap (HEAD), run the step's
# parity, launch-API and finite-property tests, the stage-ring mutant, and a first look at the changed layouts.
set -u
R=$(pwd); B=$R/build/dev; L=$R/build/logs; mkdir -p $L
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader
cd $R/.snap
T="test_gpu_exhaustive test_gpu_extension test_gpu_finite_property test_gpu_fp8_param test_gpu_fp8_step test_gpu_grad_pass test_gpu_huge test_gpu_offload test_gpu_optimizer test_gpu_optimizer_fp8 test_gpu_optimizer_io test_gpu_optimizer_offload test_gpu_step_inputs test_gpu_step_parity bench_gpu_step"
s=$SECONDS; cmake --preset release -B $B -DFLASHOPTIM_BUILD_BENCHMARKS=ON > $L/cfg.log 2>&1
cmake --build $B -j16 --target $T -- -k 0 > $L/build.log 2>&1; echo "build rc=$? ($((SECONDS-s)) s)"; grep -m8 -B2 " error" $L/build.log | head -30
mkdir -p $R/build/bin; for n in $T; do e=$(find $B -name $n -type f -perm -u+x | head -1); [ -n "$e" ] && cp $e $R/build/bin/; done
cd $R/build/bin
for t in test_gpu_step_parity test_gpu_step_inputs test_gpu_finite_property; do s=$SECONDS; timeout 150 ./$t > $L/$t.log 2>&1; echo "$t rc=$? ($((SECONDS-s)) s) $(grep 'test cases' $L/$t.log)"; grep -a -m4 -B3 -A8 "ERROR\|CRASHED" $L/$t.log | head -20; done
s=$SECONDS; LD_LIBRARY_PATH=$R/.dev/bin/lib timeout 60 $R/.dev/bin/mutant_step_inputs -tc="the stage ring*" > $L/mutant.log 2>&1; echo "mutant (stage_base without rounding) rc=$? ($((SECONDS-s)) s) $(grep 'test cases' $L/mutant.log)"; grep -a -m3 -A3 "ERROR" $L/mutant.log | head -12
timeout 120 ./bench_gpu_step --benchmark_filter='^step/(adamw_default|adamw_fp8_states|adamw_reference_states|adamw_fp16_ulp8|adamw_bf16_native|lion_default|sgd_momentum)/flat268M/default/' --benchmark_format=csv 2>$L/bench1.err > $L/bench1.csv; python3 -c "
import csv,sys
rows=[r for r in csv.reader(open('$L/bench1.csv'))]
h=next(i for i,r in enumerate(rows) if r and r[0]=='name'); hd=rows[h]
for r in rows[h+1:]:
  d=dict(zip(hd,r)); print(d['name'].split('/min_time')[0], round(float(d['real_time']),4), 'ms', round(float(d['pct_copy']),1), '% copy', d['copy_GBps'])
" 
grep -i "copy" $L/bench1.err | head -3
cp -r $L $OUT/ 2>/dev/null; echo done
