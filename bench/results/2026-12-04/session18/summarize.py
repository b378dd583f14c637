#!/usr/bin/env python3
"""Per variant and binary, the median over passes of each pass's median (ms), from the
pass<i>_<binary>.txt files of a round folder (ab.cu's " med " lines)."""
import collections
import pathlib
import re
import statistics
import sys

rows = collections.defaultdict(lambda: collections.defaultdict(list))
order = []
for f in sorted(pathlib.Path(sys.argv[1]).glob("pass*_*.txt")):
    binary = f.stem.split("_", 1)[1]
    for line in f.read_text().splitlines():
        m = re.match(r"(.*?)\s+med\s+([0-9.]+)\s+min\s+([0-9.]+).*?([0-9.]+)% \(med\)", line)
        if m:
            name = m.group(1).strip()
            if name not in order:
                order.append(name)
            rows[name][binary].append((float(m.group(2)), float(m.group(4))))
binaries = sorted({b for r in rows.values() for b in r})
print("| variant | " + " | ".join(f"{b}: median of pass medians, ms (% of copy) [passes]" for b in binaries) + " |")
print("|---|" + "---|" * len(binaries))
for name in order:
    cells = []
    for b in binaries:
        v = rows[name][b]
        if not v:
            cells.append("")
            continue
        ms = statistics.median(x for x, _ in v)
        pct = statistics.median(p for _, p in v)
        cells.append(f"{ms:.4f} ({pct:.1f}%) [{', '.join(f'{x:.4f}' for x, _ in v)}]")
    print(f"| {name} | " + " | ".join(cells) + " |")
