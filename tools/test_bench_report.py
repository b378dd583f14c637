#!/usr/bin/env python3
# SPDX-FileCopyrightText: 2026 flashoptim authors
# SPDX-License-Identifier: Apache-2.0
"""Tests of tools/bench_report.py's timing statistic, without a GPU: the
report rebuilt (--from-json) from a saved run, as saved and with the counters
bench_gpu_step writes since the twenty-second session (mean_ms beside the
median per launch, burst_ms for the step rows), and README's performance
table, which names the run's device. Standard library only.

  test_bench_report.py <repository root>
"""

import json
import os
import subprocess
import sys
import tempfile
import unittest

ROOT = None
RUN = "bench/results/2026-12-05/session21/round_h4"
ROW = "| adamw_default / flat268M | 1 | 268.4 M | 12.500 |"


def rebuild(d, bench_path, *extra):
    """tools/bench_report.py --from-json on bench_path and the saved run's
    torch and paper timings, BENCHMARKS.md written into folder d."""
    subprocess.run([sys.executable, "tools/bench_report.py", "--from-json", bench_path, f"{RUN}/torch.json",
                    "--paper-json", f"{RUN}/paper.json", "--out", os.path.join(d, "BENCHMARKS.md"), *extra],
                   cwd=ROOT, check=True, capture_output=True, text=True)


class TimingStatisticTest(unittest.TestCase):
    def report(self, bench_json):
        with tempfile.TemporaryDirectory(prefix="bench_report_") as d:
            path = os.path.join(d, "bench_gpu.json")
            with open(path, "w") as f:
                json.dump(bench_json, f)
            rebuild(d, path)
            with open(os.path.join(d, "BENCHMARKS.md")) as f:
                return f.read()

    def saved(self):
        with open(os.path.join(ROOT, RUN, "bench_gpu.json")) as f:
            return json.load(f)

    def row(self, text):
        lines = [l for l in text.splitlines() if l.startswith(ROW)]
        self.assertTrue(lines, "the default AdamW row is missing")
        return lines[0]

    def test_saved_run_says_mean_and_has_no_burst_column(self):
        text = self.report(self.saved())
        self.assertIn("mean over Google Benchmark's iterations", text)
        self.assertNotIn("median of its launches", text)
        self.assertNotIn("20 back to back", text)
        self.assertIn("| 0.913 |", self.row(text))

    def test_per_launch_median_and_burst(self):
        data = self.saved()
        for b in data["benchmarks"]:
            if "ms" in b:
                b["mean_ms"] = b["ms"] * 1.02
            if b["name"].startswith("step/adamw_default/flat268M/default"):
                b["ms"], b["mean_ms"], b["burst_ms"] = 0.900, 0.931, 0.876
        text = self.report(data)
        self.assertIn("median of its launches", text)
        self.assertNotIn("mean over Google Benchmark's iterations", text)
        self.assertIn("20 back to back, ms per step", text)
        row = self.row(text)
        # the row's time is the counter `ms` (the median); the mean and the
        # burst beside it
        cells = [c.strip() for c in row.strip("|").split("|")]
        self.assertEqual(cells[4], "0.900")
        self.assertEqual(cells[-2], "0.931")
        self.assertEqual(cells[-1], "0.876")
        # a step row without a burst (an older binary's row mixed in) prints a dash
        other = [l for l in text.splitlines() if l.startswith("| lion_default / flat268M |")]
        self.assertTrue(other and other[0].rstrip().endswith("| - |"))


class ReadmeTableTest(unittest.TestCase):
    def test_table_names_the_runs_device(self):
        # README's performance table says which card its run was on: the
        # file runs moved from an H200 to an H100 (twenty-third session)
        with tempfile.TemporaryDirectory(prefix="bench_report_") as d:
            readme = os.path.join(d, "README.md")
            with open(readme, "w") as f:
                f.write("# x\n\n<!-- perf-table:begin -->\nold\n<!-- perf-table:end -->\n")
            rebuild(d, f"{RUN}/bench_gpu.json", "--readme", readme)
            with open(readme) as f:
                text = f.read()
        with open(os.path.join(ROOT, RUN, "bench_gpu.json")) as f:
            device = json.load(f)["context"]["device"]
        self.assertIn(f"One run of 2026-12-05 on one {device}, every row measured in it", text)
        self.assertNotIn("old", text)


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    ROOT = os.path.abspath(sys.argv.pop(1))
    unittest.main()
