#!/usr/bin/env python3
"""new / old per variant and pass from a round's ab_{old,new}_<pass>.txt logs (medians of the
interleaved rounds), e.g. python3 summarize_ab.py round_b1"""
import re, sys, glob, collections
d = sys.argv[1]
med = collections.defaultdict(dict)
for f in sorted(glob.glob(f"{d}/ab_*_*.txt")):
    tree, p = re.match(r".*/ab_(\w+?)_(\d+)\.txt", f).groups()
    for line in open(f):
        m = re.match(r"(.*?)\s+med\s+([\d.]+)", line)
        if m and not line.startswith("copy"):
            med[m.group(1).strip()][(tree, int(p))] = float(m.group(2))
passes = sorted({p for v in med.values() for (_, p) in v})
print("| variant | " + " | ".join(f"pass {p}: old / new ms (new / old)" for p in passes) + " |")
print("|---|" + "---|" * len(passes))
for name, v in med.items():
    cells = []
    for p in passes:
        o, n = v.get(("old", p)), v.get(("new", p))
        cells.append(f"{o:.4f} / {n:.4f} ({n / o:.3f})" if o and n else "")
    print(f"| {name} | " + " | ".join(cells) + " |")
