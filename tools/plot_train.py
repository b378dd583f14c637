#!/usr/bin/env python3
# SPDX-FileCopyrightText: 2026 flashoptim authors
# SPDX-License-Identifier: Apache-2.0
"""Loss curves of a flashoptim_train run.

usage: plot_train.py train_log.csv loss.png

The CSV has the columns step, config, train_loss, val_loss (val_loss empty
between validations; step 0 holds the initial validation loss). Left: the
training loss, smoothed over a window of 5% of the steps; right: the
validation loss. Needs matplotlib.
"""
import csv
import sys
from collections import defaultdict


def read(path):
    train, val = defaultdict(list), defaultdict(list)
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            step, cfg = int(row["step"]), row["config"]
            if row["train_loss"]:
                train[cfg].append((step, float(row["train_loss"])))
            if row["val_loss"]:
                val[cfg].append((step, float(row["val_loss"])))
    return train, val


def smooth(points, window):
    out, acc = [], 0.0
    for i, (s, y) in enumerate(points):
        acc += y
        if i >= window:
            acc -= points[i - window][1]
        out.append((s, acc / min(i + 1, window)))
    return out


def main(argv):
    if len(argv) != 3:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    train, val = read(argv[1])
    if not val:
        print(f"{argv[1]}: no rows", file=sys.stderr)
        return 1
    fig, (a, b) = plt.subplots(1, 2, figsize=(12, 4.5))

    def style(cfg):  # the fp32 references dashed on top: a configuration that tracks them stays visible
        return dict(linestyle="--", zorder=3) if "fp32" in cfg else dict(zorder=2)

    for cfg, pts in train.items():
        w = max(1, len(pts) // 20)
        xs, ys = zip(*smooth(pts, w))
        a.plot(xs, ys, label=cfg, linewidth=1, **style(cfg))
    for cfg, pts in val.items():
        xs, ys = zip(*pts)
        b.plot(xs, ys, label=cfg, marker=".", linewidth=1, **style(cfg))
    a.set_title("training loss (moving average, 5% of the steps)")
    b.set_title("validation loss (held-out last 5% of the corpus)")
    for ax in (a, b):
        ax.set_xlabel("step")
        ax.set_ylabel("nats per byte")
        ax.grid(alpha=0.3)
        ax.legend()
    # the interesting part is the end: clip the first steps' large losses
    finals = [pts[-1][1] for pts in val.values()]
    lo, hi = min(finals), max(finals)
    b.set_ylim(lo - 0.1 * (hi - lo + 0.05), hi + 2.0 * (hi - lo + 0.05))
    a.set_ylim(lo - 0.3 * (hi - lo + 0.05), hi + 3.0 * (hi - lo + 0.05))
    fig.tight_layout()
    fig.savefig(argv[2], dpi=110)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
