# SPDX-FileCopyrightText: 2026 flashoptim authors
# SPDX-License-Identifier: Apache-2.0
"""The quality run's script (python/bench/gpt_quality.py) on the CPU, a few
steps: every configuration it can build here trains, gradient release gives
the whole step's losses exactly, and the report reads what the runs wrote."""
import importlib.util
import json
import os

import pytest

torch = pytest.importorskip("torch")

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "..", "bench", "gpt_quality.py")


def load():
    spec = importlib.util.spec_from_file_location("gpt_quality", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_release_equals_the_step_and_the_report_reads_the_runs(tmp_path):
    gq = load()
    data, info = gq.corpus(os.path.join(HERE, "..", "flashoptim_kernels"))  # a small fixed corpus
    assert info["files"] > 0 and len(data) == info["bytes"]
    runs = {}
    for config in ("torch_fp32", "flash", "flash_release"):
        r = gq.train_one(torch, config, 0, 4, data, torch.device("cpu"), batch=2, context=32, eval_every=2,
                         log=lambda m: None)
        r["env"] = gq.environment(torch, torch.device("cpu"), info)
        with open(tmp_path / f"{config}-seed0.json", "w") as fh:
            json.dump(r, fh)
        runs[config] = r
    # gradient release steps each tensor in backward: the same bytes, so the same losses
    assert runs["flash"]["train_loss"] == runs["flash_release"]["train_loss"]
    assert runs["flash"]["final_val"] == runs["flash_release"]["final_val"]
    assert runs["flash"]["bytes_per_param"] < 0.5 * runs["torch_fp32"]["bytes_per_param"]
    assert runs["flash_release"]["grad_bytes"] == 0
    md = tmp_path / "q.md"
    gq.main(["report", str(tmp_path), "--md", str(md)])
    text = md.read_text()
    assert "the same with gradient release" in text and "in backward" in text
