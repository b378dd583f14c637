#!/usr/bin/env python3
"""The CPU rounds' logs (t16.txt, t1_l2.txt): medians (min-max) per (binary, layout), DeepSpeed per step,
each binary / old and ours / DeepSpeed's matching step per round (the same round's runs).
Usage: summarize.py LOG..."""
import re, statistics, sys
pair = {'adamw_bf16_bf16_states': 'bf16/bf16', 'adamw_rounded_split_default_states': 'bf16/fp32',
        'adamw_bf16_ulp8_default_states': 'bf16/fp32', 'adamw_fp32': 'fp32/fp32'}
for path in sys.argv[1:]:
    rows, ratios, cur = {}, {}, {}
    for line in open(path):
        p = line.split()
        if not p: continue
        if p[0] == 'round':
            cur = {}
            continue
        if p[0] == 'deepspeed':
            key, x = 'DeepSpeed ' + p[1], float(p[2])
            cur[p[1]] = x
        else:
            m = re.search(r'cpu_step/(\w+)/', p[1]); v = re.search(r'params/s=([\d.]+)([GM])', p[2])
            if not m or not v: continue
            lay, x = m.group(1), float(v.group(1)) * (1 if v.group(2) == 'G' else 1e-3)
            key = p[0] + ' ' + lay
            cur[p[0] + lay] = x
            if pair.get(lay) in cur:
                ratios.setdefault(f'{p[0]} {lay} / DeepSpeed {pair[lay]}', []).append(x / cur[pair[lay]])
            if p[0] != 'old' and 'old' + lay in cur:
                ratios.setdefault(f'{p[0]} / old {lay}', []).append(x / cur['old' + lay])
        rows.setdefault(key, []).append(x)
    print(path)
    for k, v in sorted(rows.items()):
        print(f"  {k:50s} {statistics.median(v):.3f} ({min(v):.3f}-{max(v):.3f}) n={len(v)}")
    for k, v in sorted(ratios.items()):
        print(f"  {k:72s} {statistics.median(v):.3f} ({min(v):.3f}-{max(v):.3f})")
