#!/usr/bin/env python3
# SPDX-FileCopyrightText: 2026 flashoptim authors
# SPDX-License-Identifier: Apache-2.0
"""Checks that README code snippets are code that CI compiles and runs.

A snippet in README.md is announced by a comment line

    <!-- snippet: examples/quickstart/quickstart_cpu.cpp adopt-cpu -->

followed by a fenced code block. The block must equal the regions of that
file marked with `// [adopt-cpu]` lines (a region is the lines between two
such markers), each region stripped of its common indentation, regions
joined by a `// ...` line. Exit 0 when every snippet matches, 1 (with a
diff) when one does not, when a marker names a missing file or region, or
when the README has no snippet at all (so the check cannot pass vacuously).

Usage: check_readme_snippets.py [repository root, default: this file's ../]
"""
import difflib
import os
import re
import sys
import textwrap

MARKER = re.compile(r"^<!-- snippet: (\S+) (\S+) -->$")


def regions(path, tag):
    """The file's regions for `tag`, dedented, joined by '// ...'."""
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    fence = "// [" + tag + "]"
    parts, current = [], None
    for line in lines:
        if line.strip() == fence:
            if current is None:
                current = []
            else:
                parts.append(textwrap.dedent("\n".join(current)))
                current = None
        elif current is not None:
            current.append(line)
    if current is not None:
        raise ValueError(f"{path}: region '{tag}' is opened but never closed")
    if not parts:
        raise ValueError(f"{path}: no region marked '{fence}'")
    return "\n// ...\n".join(parts)


def readme_snippets(readme):
    """(file, tag, README line number, code) for every announced snippet."""
    lines = readme.split("\n")
    out = []
    for i, line in enumerate(lines):
        m = MARKER.match(line.strip())
        if not m:
            continue
        j = i + 1
        while j < len(lines) and not lines[j].strip():
            j += 1
        if j >= len(lines) or not lines[j].startswith("```"):
            raise ValueError(f"README.md:{i + 1}: a snippet marker must be followed by a fenced code block")
        k = j + 1
        while k < len(lines) and not lines[k].startswith("```"):
            k += 1
        if k >= len(lines):
            raise ValueError(f"README.md:{j + 1}: the code block is not closed")
        out.append((m.group(1), m.group(2), i + 1, "\n".join(lines[j + 1:k])))
    return out


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    with open(os.path.join(root, "README.md"), encoding="utf-8") as f:
        readme = f.read()
    try:
        snippets = readme_snippets(readme)
        if not snippets:
            raise ValueError("README.md has no '<!-- snippet: FILE TAG -->' marker: nothing is checked")
        failed = 0
        for path, tag, line, code in snippets:
            want = regions(os.path.join(root, path), tag)
            if code.rstrip("\n") == want.rstrip("\n"):
                print(f"ok: README.md:{line} == {path} [{tag}]")
                continue
            failed += 1
            print(f"MISMATCH: README.md:{line} differs from {path} [{tag}]:")
            for d in difflib.unified_diff(want.split("\n"), code.split("\n"), f"{path} [{tag}]", f"README.md:{line}",
                                          lineterm="", n=2):
                print(d)
    except (OSError, ValueError) as e:
        print(f"error: {e}")
        return 1
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
