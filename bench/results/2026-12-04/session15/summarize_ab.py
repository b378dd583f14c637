#!/usr/bin/env python3
"""Per variant, the A/B medians of each pass (old / new, ms) and new/old, for rounds A1 (old first in each
pass), A2 (new first) and A4 (the write-back A/B, the order alternated). Usage: python3 summarize_ab.py
(in this folder)"""
import glob, re, statistics
for rnd in ("round_a1", "round_a2", "round_a4"):
    runs = {}
    for f in sorted(glob.glob(f"{rnd}/ab_*_*.txt")):
        tree, p = re.match(r".*/ab_(old|new)_(\d)\.txt", f).groups()
        for line in open(f):
            m = re.match(r"(\S+).*?\bmed\s+([\d.]+)", line)
            if m and not line.startswith("copy"):
                runs.setdefault(m.group(1), {}).setdefault(int(p), {})[tree] = float(m.group(2))
    print(rnd, "(old / new ms per pass, new/old)")
    for name, passes in runs.items():
        cells = [f"{v['old']:.4f} / {v['new']:.4f}" for _, v in sorted(passes.items())]
        ratios = [v['new'] / v['old'] for v in passes.values()]
        print(f"  {name:24s} " + "   ".join(cells) + f"   new/old {min(ratios):.3f}-{max(ratios):.3f}")
