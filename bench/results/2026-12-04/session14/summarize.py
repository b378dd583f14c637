#!/usr/bin/env python3
"""The CPU rounds' logs (t16.txt, t1_l2.txt): medians (min-max) per (binary, layout), DeepSpeed per step,
and per round (whatever order the round ran them in): each binary / old, and each binary / DeepSpeed's
matching step.
Usage: summarize.py LOG..."""
import re, statistics, sys
pair = {'adamw_bf16_bf16_states': 'bf16/bf16', 'adamw_rounded_split_default_states': 'bf16/fp32',
        'adamw_bf16_ulp8_default_states': 'bf16/fp32', 'adamw_fp32': 'fp32/fp32'}


def close(cur, ratios):
    for key, x in cur.items():
        who, lay = key
        if who == 'deepspeed':
            continue
        if pair[lay] in (k[1] for k in cur if k[0] == 'deepspeed'):
            ratios.setdefault(f'{who} {lay} / DeepSpeed {pair[lay]}', []).append(x / cur[('deepspeed', pair[lay])])
        if who != 'old' and ('old', lay) in cur:
            ratios.setdefault(f'{who} / old {lay}', []).append(x / cur[('old', lay)])


for path in sys.argv[1:]:
    rows, ratios, cur = {}, {}, {}
    for line in open(path):
        p = line.split()
        if not p:
            continue
        if p[0] == 'round':
            close(cur, ratios)
            cur = {}
            continue
        if p[0] == 'deepspeed':
            key, x = ('deepspeed', p[1]), float(p[2])
        else:
            m = re.search(r'cpu_step/(\w+)/', p[1]); v = re.search(r'params/s=([\d.]+)([GM])', p[2])
            if not m or not v:
                continue
            key, x = (p[0], m.group(1)), float(v.group(1)) * (1 if v.group(2) == 'G' else 1e-3)
        cur[key] = x
        rows.setdefault(' '.join(key), []).append(x)
    close(cur, ratios)
    print(path)
    for k, v in sorted(rows.items()):
        print(f"  {k:50s} {statistics.median(v):.3f} ({min(v):.3f}-{max(v):.3f}) n={len(v)}")
    for k, v in sorted(ratios.items()):
        print(f"  {k:72s} {statistics.median(v):.3f} ({min(v):.3f}-{max(v):.3f}) n={len(v)}")
