#!/bin/bash
# Round A: timing of the probe configs, then Nsight Compute (full set) on four step kernels.
cd .dev/bin
mkdir -p $OUT/a
nvidia-smi > $OUT/a/smi.txt 2>&1
which ncu >> $OUT/a/smi.txt 2>&1; ncu --version >> $OUT/a/smi.txt 2>&1
./probe all > $OUT/a/time.txt 2>&1
cat $OUT/a/time.txt
for k in adamw_default adamw_fp8_states adamw_bf16_states lion_default; do
  s=$(date +%s)
  timeout 150 ncu --set full --import-source yes --clock-control none -k regex:step_kernel --launch-skip 1 --launch-count 1 -f -o $OUT/a/$k ./probe $k 3 > $OUT/a/$k.log 2>&1
  echo "$k ncu rc $? $(( $(date +%s) - s )) s"
  ncu -i $OUT/a/$k.ncu-rep --page details --print-details all > $OUT/a/$k.details.txt 2>&1
  ncu -i $OUT/a/$k.ncu-rep --page raw --csv > $OUT/a/$k.raw.csv 2>&1
  ncu -i $OUT/a/$k.ncu-rep --page source --print-source sass --csv > $OUT/a/$k.sass.csv 2>&1
done
cd $OUT && tar -cJf a.tar.xz a && rm -rf a
ls -la $OUT
