"""Medians (min-max) of a cpu_round.sh round directory, and per-round ratios of ours to
DeepSpeed on the layouts they share: python3 summarize.py DIR"""
import re, statistics, sys, pathlib

PAIRS = [("adamw_fp32", "fp32/fp32"), ("adamw_bf16_bf16_states", "bf16/bf16"),
         ("adamw_rounded_split_default_states", "bf16/fp32")]


def rounds(text):
    out = []
    for line in text.splitlines():
        if line.startswith("round "):
            out.append({})
            continue
        m = re.match(r"deepspeed (\S+) ([\d.]+)", line)
        if m:
            out[-1]["deepspeed " + m.group(1)] = float(m.group(2))
            continue
        m = re.match(r"ours cpu_step/([^/]+)/\S+ params/s=([\d.]+)([MG])/s", line)
        if m:
            out[-1]["ours " + m.group(1)] = float(m.group(2)) / (1000 if m.group(3) == "M" else 1)
    return out


def fmt(v):
    return f"{statistics.median(v):.3f} ({min(v):.3f}-{max(v):.3f})"


d = pathlib.Path(sys.argv[1])
for f in ("t2.txt", "t1_l2.txt"):
    p = d / f
    if not p.exists():
        continue
    rs = rounds(p.read_text())
    keys = list(dict.fromkeys(k for r in rs for k in r))
    print(f"== {f} (G params/s, median (min-max) of {len(rs)} rounds)")
    for k in keys:
        print(f"{k:45s} {fmt([r[k] for r in rs if k in r])}")
    for ours, ds in PAIRS:
        ratios = [r["ours " + ours] / r["deepspeed " + ds] for r in rs if "ours " + ours in r and "deepspeed " + ds in r]
        if ratios:
            print(f"ours {ours} / deepspeed {ds}, per round: {fmt(ratios)}")
