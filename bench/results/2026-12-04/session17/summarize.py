#!/usr/bin/env python3
"""Medians per variant and pass from a round's <prefix>_<binary>_<pass>.txt logs (session4's ab.cu
output), with each variant's ratio to the first variant of its binary in the same pass.
Usage: python3 summarize.py round_c2"""
import collections, glob, re, sys
d = sys.argv[1]
med = collections.defaultdict(dict)
order = []
for f in sorted(glob.glob(f"{d}/*_*_*.txt")):
    b, p = re.match(r".*/\w+?_(\w+?)_(\d+)\.txt", f).groups()
    for line in open(f):
        m = re.match(r"(.*?)\s+med\s+([\d.]+).*?([\d.]+)% \(med\)", line)
        if m:
            k = (b, m.group(1).strip())
            if k not in order: order.append(k)
            med[k][int(p)] = (float(m.group(2)), float(m.group(3)))
first = {}
for b, n in order:
    first.setdefault(b, (b, n))
print("| binary | variant | " + " | ".join(f"pass {p}: ms (% of copy, / control)" for p in (1, 2, 3)) + " |")
print("|---|---|---|---|---|")
for k in order:
    c = med[first[k[0]]]
    cells = [f"{med[k][p][0]:.4f} ({med[k][p][1]:.1f}%, {med[k][p][0] / c[p][0]:.3f})" if p in med[k] else ""
             for p in (1, 2, 3)]
    print(f"| {k[0]} | {k[1]} | " + " | ".join(cells) + " |")
