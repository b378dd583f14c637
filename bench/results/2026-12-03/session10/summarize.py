#!/usr/bin/env python3
"""Tables of a round's A/B outputs (ab_<binary>_<layout>_<pass>.txt: ab_warp.cu's medians of 21 interleaved
rounds) and Nsight Compute outputs (ncu_*.txt). Usage: python3 summarize.py round_a2"""
import collections
import glob
import os
import re
import sys

d = sys.argv[1]
rows = collections.defaultdict(dict)
for f in sorted(glob.glob(os.path.join(d, "ab_*_*.txt"))):
    m = re.match(r"ab_([a-z0-9]+)_(.+)_(\d)\.txt", os.path.basename(f))
    binary, _, p = m.groups()
    for line in open(f):
        if " med " in line:
            name, med = line.split()[0], float(line.split()[2])
            rows[(name, binary)][p] = med
passes = sorted({p for v in rows.values() for p in v})
print("variant                        binary " + " ".join(f"  pass {p}" for p in passes) + "   (ms, medians)")
for (name, binary) in sorted(rows, key=lambda k: (k[0].split("/")[0], k[1], k[0])):
    v = rows[(name, binary)]
    print(f"{name:30s} {binary:6s} " + " ".join(f"{v.get(p, float('nan')):8.4f}" for p in passes))
for f in sorted(glob.glob(os.path.join(d, "ncu_*.txt"))):
    print(os.path.basename(f))
    for line in open(f):
        if re.search(r"inst_executed|issue_active|gpu__time|no_instruction|step_kernel<", line):
            print("  " + line.strip()[:120])
