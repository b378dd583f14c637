#!/usr/bin/env python3
"""Medians (min-max) per layout and side of cpu_ds_vs_ours.sh's output."""
import re, statistics, sys
rows = {}
for line in open(sys.argv[1]):
    p = line.split()
    if not p: continue
    if p[0] == 'deepspeed':
        rows.setdefault(('DeepSpeed', p[1]), []).append(float(p[2]))
    elif p[0] in ('before', 'after'):
        m = re.search(r'cpu_step/(\w+)/', p[1]); v = re.search(r'params/s=([\d.]+)([GM])', p[2])
        rows.setdefault((p[0], m.group(1)), []).append(float(v.group(1)) * (1 if v.group(2) == 'G' else 1e-3))
for k, v in sorted(rows.items(), key=lambda kv: (kv[0][1], kv[0][0])):
    print(f"{k[1]:40s} {k[0]:10s} {statistics.median(v):.3f} ({min(v):.3f}-{max(v):.3f}) n={len(v)}")
# paired: after / before per round, per layout
pairs = {}
cur = {}
for line in open(sys.argv[1]):
    p = line.split()
    if p and p[0] == 'round':
        cur = {}
    elif p and p[0] in ('before', 'after'):
        m = re.search(r'cpu_step/(\w+)/', p[1]); v = re.search(r'params/s=([\d.]+)([GM])', p[2])
        x = float(v.group(1)) * (1 if v.group(2) == 'G' else 1e-3)
        cur[(p[0], m.group(1))] = x
        if p[0] == 'after' and ('before', m.group(1)) in cur:
            pairs.setdefault(m.group(1), []).append(x / cur[('before', m.group(1))])
for k, v in sorted(pairs.items()):
    print(f"{k:40s} after/before per round: median {statistics.median(v):.3f} ({min(v):.3f}-{max(v):.3f}) n={len(v)}")
