#!/usr/bin/env python3
"""Warp stall reasons per issued instruction from `ncu --page raw --csv` files (one kernel each):
smsp__average_warps_issue_stalled_<reason>_per_issue_active.ratio, largest first, side by side."""
import csv
import sys

cols = {}
for path in sys.argv[1:]:
    rows = list(csv.reader(open(path)))
    d = dict(zip(rows[0], rows[2]))
    pre, post = "smsp__average_warps_issue_stalled_", "_per_issue_active.ratio"
    vals = {}
    for k, v in d.items():
        if k.startswith(pre) and k.endswith(post):
            try:
                vals[k[len(pre):-len(post)]] = float(v.replace(",", ""))
            except ValueError:
                pass
    cols[path.split("/")[-1]] = vals
names = list(cols)
reasons = sorted({r for v in cols.values() for r in v}, key=lambda r: -max(v.get(r, 0) for v in cols.values()))
print("| stall reason (warps per issued instruction) | " + " | ".join(names) + " |")
print("|---|" + "---|" * len(names))
for r in reasons[:14]:
    print(f"| {r} | " + " | ".join(f"{cols[n].get(r, 0):.3f}" for n in names) + " |")
