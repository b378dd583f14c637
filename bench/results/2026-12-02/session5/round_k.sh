#!/bin/bash
# Round K (2026-12-02, fifth session): the default bf16 + int8 split is now rounded_split. The Python wheel (CUDA
# half) built here and its pytest; the GPT quality run of the new default (`flash`, four seeds side by side, the
# command of docs/quality.md); the GPU examples and the demo; then BENCHMARKS.md's run (bench_gpu_step with the
# default rows on the rounded split and the paper's split as *_bf16_ulp8 rows).
set -u
R=$(pwd); L=/tmp/logs_k; mkdir -p $L /tmp/k; export PYTHONUNBUFFERED=1
tar xJf $R/.dev/k.tar.xz -C /tmp/k; export LD_LIBRARY_PATH=$R/.dev/bin/lib
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv,noheader | tee $L/gpu.txt
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/paper $R/.whl/flashoptim-0.1.4*.whl > $L/paper_install.log 2>&1
s=$SECONDS; CUDACXX=/usr/local/cuda/bin/nvcc timeout 240 python3 -m pip wheel --no-build-isolation --no-deps -w /tmp/k/wheel -C build-dir=/tmp/k/skbuild . > $L/wheel.log 2>&1; echo "wheel rc=$? ($((SECONDS-s)) s)"; tail -3 $L/wheel.log
PIP_BREAK_SYSTEM_PACKAGES=1 python3 -m pip install -q --no-deps --force-reinstall /tmp/k/wheel/*.whl > $L/install.log 2>&1; echo "install rc=$?"
s=$SECONDS; (cd /tmp && timeout 240 python3 -m pytest -q -rs $R/python/tests) > $L/pytest.log 2>&1; echo "pytest rc=$? ($((SECONDS-s)) s) $(tail -1 $L/pytest.log)"; grep -a -m5 -A20 "FAILED\|Error" $L/pytest.log | head -40
s=$SECONDS; PYTHONPATH=/tmp/paper timeout 200 python3 python/bench/gpt_quality.py run --seeds 0,1,2,3 --configs flash --out $L/gpt > $L/gpt.log 2>&1; echo "gpt flash 4 seeds rc=$? ($((SECONDS-s)) s)"; grep -v "^  " $L/gpt.log | tail -8
cd /tmp/k; for e in flashoptim_example_groups_graph flashoptim_example_offload_gpu flashoptim_demo; do s=$SECONDS; timeout 60 ./$e > $L/$e.log 2>&1; echo "$e rc=$? ($((SECONDS-s)) s)"; tail -3 $L/$e.log; done
s=$SECONDS; OMP_WAIT_POLICY=passive timeout 60 ./bench_offload --fraction 0.5 --repeats 15 > $L/offload.md 2> $L/offload.log; echo "offload bench rc=$? ($((SECONDS-s)) s)"; grep "CPU step of\|whole off-load" $L/offload.md
cd $R; s=$SECONDS; PYTHONPATH=/tmp/paper timeout 200 python3 tools/bench_report.py --bench '/tmp/k/bench_gpu_step:/default/|^ceiling/' --paper --out $L/BENCHMARKS.md --json $L/bench_gpu.json --torch-json $L/torch.json --paper-json $L/paper.json --append $L/offload.md --notes docs/benchmark-notes.md > $L/table.txt 2> $L/bench.log; echo "bench_report rc=$? ($((SECONDS-s)) s)"; head -48 $L/table.txt; grep "targets met" $L/table.txt; grep -i "fail\|error\|not timed" $L/bench.log | head
rm -f $L/*.part; tar czf $OUT/k.tgz -C $L . ; echo done
