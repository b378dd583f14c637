#!/usr/bin/env bash
# SPDX-FileCopyrightText: 2026 flashoptim authors
# SPDX-License-Identifier: Apache-2.0
#
# Regenerates README.md's memory table from layout/ (tests/core/layout_test
# fails while README.md is stale).
set -euo pipefail
cd "$(dirname "$0")/.."
cmake --preset release >/dev/null
cmake --build build/release --target flashoptim_layout_table >/dev/null
table=$(build/release/bench/core/flashoptim_layout_table)
python3 - "$table" <<'PY'
import sys, re
table = sys.argv[1] + "\n"
readme = open("README.md").read()
begin, end = "<!-- layout-table:begin -->\n", "<!-- layout-table:end -->"
i, j = readme.index(begin) + len(begin), readme.index(end)
open("README.md", "w").write(readme[:i] + table + readme[j:])
PY
echo "README.md memory table updated"
