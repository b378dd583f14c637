#!/usr/bin/env python3
"""Medians per variant, binary and pass from a round's ab_<binary>_<pass>.txt logs, and each binary's
ratio to a baseline binary in the same pass, e.g. python3 summarize_multi.py round_b6 cur"""
import re, sys, glob, collections
d, base = sys.argv[1], sys.argv[2]
med = collections.defaultdict(dict)
for f in sorted(glob.glob(f"{d}/ab_*_*.txt")):
    tree, p = re.match(r".*/ab_(\w+?)_(\d+)\.txt", f).groups()
    for line in open(f):
        m = re.match(r"(.*?)\s+med\s+([\d.]+)", line)
        if m:
            med[m.group(1).strip()][(tree, int(p))] = float(m.group(2))
trees = sorted({t for v in med.values() for (t, _) in v} - {base})
passes = sorted({p for v in med.values() for (_, p) in v})
for t in trees:
    print(f"\n{t} / {base}, per pass (medians, ms)")
    print("| variant | " + " | ".join(f"pass {p}" for p in passes) + " |")
    print("|---|" + "---|" * len(passes))
    for name, v in med.items():
        cells = [f"{v[(base, p)]:.4f} -> {v[(t, p)]:.4f} ({v[(t, p)] / v[(base, p)]:.3f})" if (t, p) in v and (base, p) in v else "" for p in passes]
        print(f"| {name} | " + " | ".join(cells) + " |")
