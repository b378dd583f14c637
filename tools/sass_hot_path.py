#!/usr/bin/env python3
# SPDX-FileCopyrightText: 2026 flashoptim authors
# SPDX-License-Identifier: Apache-2.0
"""Counts the SASS instructions the fused step issues per element on its
vector path, offline (no GPU): the static count of the block a tile without
special values executes, following that path through the branches.

    nvcc -std=c++17 -O3 -arch=sm_90 --expt-relaxed-constexpr \\
         -I include -cubin -o k.cubin k.cu        # k.cu instantiates one step_kernel
    cuobjdump -sass k.cubin > k.sass
    python3 tools/sass_hot_path.py k.sass [elements_per_thread]

The path starts at the block holding the first 128-bit LDG of the kernel (a
tile's parameter load), or for a staged kernel (cp.async) at its first
`DEPBAR.LE` (where a tile waits for the loads issued a tile earlier), and ends after the stores that follow the last
128-bit STG. Along it, a predicated forward branch is taken when the code it
skips holds a CALL (the slow paths of IEEE division and square root) or a
128-bit LDG (a range-checked tile's exact redo); unconditional forward
branches are followed. Prints the count, the count per element and an
opcode histogram.
"""
import collections
import re
import sys


def opcode(text):
    return re.sub(r"^@!?U?P[T0-9]\s+", "", text).split()[0]


def hot_path(instructions):
    index = {address: i for i, (address, _) in enumerate(instructions)}
    loads = [i for i, (_, s) in enumerate(instructions) if opcode(s) == "LDG.E.128"]
    stores = [i for i, (_, s) in enumerate(instructions) if opcode(s) == "STG.E.128"]
    if not loads or not stores:
        return None
    staged = [i for i, (_, s) in enumerate(instructions) if opcode(s).startswith("DEPBAR.LE")]
    if staged:
        # A staged kernel (cp.async ring): a tile's loads were issued a
        # tile earlier, so the tile's path starts where it waits for them.
        start = staged[0]
    else:
        start = loads[0]
        while start > 0 and not opcode(instructions[start - 1][1]).startswith("BRA"):
            start -= 1
    end = stores[-1]
    while end + 1 < len(instructions) and not opcode(instructions[end + 1][1]).startswith(("BRA", "EXIT")):
        end += 1
    counts = collections.Counter()
    path = []
    i = start
    while i <= end and len(path) < 100000:
        text = instructions[i][1]
        op = opcode(text)
        path.append(text)
        counts[op.split(".")[0]] += 1
        if op.startswith("BRA") and not op.startswith("BRA.DIV"):
            target = index.get(int(re.search(r"0x([0-9a-f]+)", text).group(1), 16))
            if target is not None and target > i:
                skipped = [opcode(t) for _, t in instructions[i + 1:target]]
                if not text.startswith("@") or any(o.startswith("CALL") or o == "LDG.E.128" for o in skipped):
                    i = target
                    continue
        i += 1
        if op.startswith("STG.E.128"):
            while i <= end and not opcode(instructions[i][1]).startswith(("BRA", "EXIT", "BSYNC")):
                path.append(instructions[i][1])
                counts[opcode(instructions[i][1]).split(".")[0]] += 1
                i += 1
            break
    return path, counts


def main():
    text = open(sys.argv[1]).read()
    per_thread = int(sys.argv[2]) if len(sys.argv) > 2 else 8
    for function in re.split(r"\n\s*Function : ", text)[1:]:
        name = function.split("\n", 1)[0]
        instructions = []
        for line in function.split("\n"):
            m = re.match(r"\s*/\*([0-9a-f]{4,})\*/\s+(.*?);", line)
            if m:
                instructions.append((int(m.group(1), 16), m.group(2).strip()))
        result = hot_path(instructions)
        if result is None:
            continue
        path, counts = result
        print(name[:100])
        print(f"  hot path: {len(path)} instructions, {len(path) / per_thread:.1f} per element")
        print("  " + ", ".join(f"{k}:{v}" for k, v in counts.most_common()))


if __name__ == "__main__":
    main()
