#!/usr/bin/env python3
"""Medians (min-max) of rounds X2 (prefetch A/B, one core from L2) and X3 (divider probe).
Usage: summarize_x23.py round_x2 round_x3"""
import re, statistics, sys
def rate(s):
    v = re.search(r'params/s=([\d.]+)([GM])', s)
    return float(v.group(1)) * (1 if v.group(2) == 'G' else 1e-3)
def show(rows):
    for k, v in sorted(rows.items()):
        print(f"  {k:60s} {statistics.median(v):.3f} ({min(v):.3f}-{max(v):.3f}) n={len(v)}")
x2, x3 = sys.argv[1], sys.argv[2]
rows = {}
for line in open(x2 + '/a.txt'):
    p = line.split()
    if p[0] in ('base', 'pf1', 'pf2', 'pf4'):
        t = re.search(r'threads:(\d+)', p[1]).group(1)
        rows.setdefault(f'{p[0]} threads:{t}', []).append(rate(p[2]))
    elif p[0] == 'deepspeed':
        rows.setdefault('DeepSpeed bf16/fp32 threads:16', []).append(float(p[2]))
print('X2 A: 2^26 parameters, the default layout (rounded split), G params/s'); show(rows)
rows = {}
for line in open(x2 + '/c.txt'):
    p = line.split()
    if p[0] == 'deepspeed': rows.setdefault('DeepSpeed ' + p[1], []).append(float(p[2]))
    elif p[0] == 'ours': rows.setdefault('ours ' + re.search(r'cpu_step/(\w+)/', p[1]).group(1), []).append(rate(p[2]))
print('X2 C: one core, 32768 parameters (L2), G params/s'); show(rows)
rows = {}
for line in open(x3 + '/x3.txt'):
    p = line.split()
    if len(p) == 4 and p[1] in ('base', 'nd1', 'nd3'):
        rows.setdefault(p[1] + ' ' + re.search(r'cpu_step/(\w+)/', p[2]).group(1), []).append(rate(p[3]))
print('X3: one core, 32768 parameters (L2), G params/s'); show(rows)
