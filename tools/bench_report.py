#!/usr/bin/env python3
# SPDX-FileCopyrightText: 2026 flashoptim authors
# SPDX-License-Identifier: Apache-2.0
"""Runs the GPU step benchmark, times torch's fused AdamW on the same
tensor lists (where torch is installed), and writes BENCHMARKS.md.

    python3 tools/bench_report.py --bench build/gpu/bench/gpu/bench_gpu_step \
        --out BENCHMARKS.md [--json bench_gpu.json] [--filter REGEX] [--no-torch]

Every number in the report comes from this one run: the copy bandwidth is
measured by the benchmark binary (a 4 GiB cudaMemcpy device to device,
read + write), torch is timed with CUDA events (median of 20 steps after 3
warm-up steps), and the library's steps with CUDA events per step
(the median of a row's launches, each timed alone; a run saved before
the median existed falls back to Google Benchmark's mean). The mean of the
same launches and a time per step over 20 launches back to back are
printed beside it where the run has them.
"""
import argparse
import json
import os
import platform
import re
import shlex
import subprocess
import sys
import time


def llama_sizes():
    d, kv, ff, vocab = 2048, 512, 8192, 128256
    sizes = [vocab * d]
    for _ in range(16):
        sizes += [d * d, kv * d, kv * d, d * d, ff * d, ff * d, d * ff, d, d]
    sizes += [d, vocab * d]
    return sizes


SHAPES = {
    "flat268M": [1 << 28],
    "llama1B": llama_sizes(),
    "10k_x_4096": [4096] * 10000,
}


def run_bench(specs, json_path):
    """Runs every benchmark of every binary in its own process (a failing
    one costs only itself) and merges the JSON. spec = path[:regex]."""
    import re
    merged = {"context": None, "benchmarks": []}
    for spec in specs:
        binary, _, flt = spec.partition(":")
        listing = subprocess.run([binary, "--benchmark_list_tests"] + (["--benchmark_filter=" + flt] if flt else []),
                                 check=True, capture_output=True, text=True).stdout.split()
        for name in listing:
            out = json_path + ".part"
            cmd = [binary, "--benchmark_filter=^" + re.escape(name) + "$", "--benchmark_format=json",
                   "--benchmark_out=" + out, "--benchmark_out_format=json"]
            print("+", " ".join(shlex.quote(c) for c in cmd), file=sys.stderr, flush=True)
            r = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
            try:
                with open(out) as f:
                    part = json.load(f)
            except Exception:
                part = {"context": None, "benchmarks": []}
            if r.returncode != 0 or not part["benchmarks"]:
                print(f"benchmark {name} failed (rc {r.returncode}): {r.stderr.strip()[-400:]}", file=sys.stderr)
                merged["benchmarks"].append({"name": name, "error_occurred": True,
                                             "error_message": r.stderr.strip()[-400:]})
                continue
            if merged["context"] is None:
                merged["context"] = part["context"]
            merged["benchmarks"] += part["benchmarks"]
    with open(json_path, "w") as f:
        json.dump(merged, f, indent=1)
    return merged


def median_step_ms(opt, reps):
    """Median of `reps` opt.step() timed with CUDA events, after 3 warm-ups."""
    import torch

    for _ in range(3):
        opt.step()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        a = torch.cuda.Event(enable_timing=True)
        b = torch.cuda.Event(enable_timing=True)
        a.record()
        opt.step()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b))
    times.sort()
    return times[len(times) // 2]


def time_torch(shape_name, dtype_name, reps=20):
    import torch

    dtype = {"fp32": torch.float32, "bf16": torch.bfloat16}[dtype_name]
    sizes = SHAPES[shape_name]
    gen = torch.Generator(device="cuda").manual_seed(0)
    params = []
    for n in sizes:
        p = torch.nn.Parameter(torch.randn(n, device="cuda", dtype=dtype, generator=gen) * 0.1)
        p.grad = torch.randn(n, device="cuda", dtype=dtype, generator=gen) * 1e-3
        params.append(p)
    opt = torch.optim.AdamW(params, lr=1e-3, weight_decay=0.01, fused=True)
    ms = median_step_ms(opt, reps)
    n = sum(sizes)
    bytes_per_param = 28 if dtype_name == "fp32" else 14  # read p, g, m, v; write p, m, v
    del opt, params
    torch.cuda.empty_cache()
    return {"ms": ms, "params": n, "tensors": len(sizes), "bytes": n * bytes_per_param,
            "bytes_per_param": bytes_per_param}


# The paper's package (PyPI `flashoptim` 0.1.4) on the same shapes: bf16
# parameters, its 24-bit master (int8 correction) and 8-bit states, the
# layout our `*_default` configurations store. Its step is timed like torch's.
PAPER_RULES = {"adamw_default": ("FlashAdamW", dict(lr=1e-3, weight_decay=0.01)),
               "lion_default": ("FlashLion", dict(lr=1e-4, weight_decay=0.01)),
               "sgd_momentum": ("FlashSGD", dict(lr=1e-2, momentum=0.9))}


def time_paper(rule, shape_name, reps=20):
    import torch
    import flashoptim as paper

    sizes = SHAPES[shape_name]
    gen = torch.Generator(device="cuda").manual_seed(0)
    params = []
    for n in sizes:
        p = torch.nn.Parameter((torch.randn(n, device="cuda", generator=gen) * 0.1).to(torch.bfloat16))
        p.grad = (torch.randn(n, device="cuda", generator=gen) * 1e-3).to(torch.bfloat16)
        params.append(p)
    cls, kw = PAPER_RULES[rule]
    opt = getattr(paper, cls)(params, master_weight_bits=24, quantize=True, **kw)
    ms = median_step_ms(opt, reps)
    del opt, params
    torch.cuda.empty_cache()
    return {"ms": ms, "params": sum(sizes), "tensors": len(sizes),
            "version": getattr(paper, "__version__", "?")}


def fmt_row(cells):
    return "| " + " | ".join(cells) + " |"


def write_readme_table(path, when, device, copy, get, torch_rows, paper_rows):
    """README.md's performance table: the default AdamW step beside its peers, from this run's rows."""
    def ms(r, bold=False):
        if not r:
            return "-"
        return f"**{r['ms']:.3f} ms**" if bold else f"{r['ms']:.3f} ms"
    flat = get("step/adamw_default/flat268M/default")
    llama = get("step/adamw_default/llama1B/default")
    ours_flat = ms(flat, True) + (f" ({flat['pct_copy']:.1f}% of copy bandwidth)" if flat else "")
    table = [
        f"One run of {str(when)[:10]} on one {device}, every row measured in it (copy bandwidth {copy:.0f} GB/s):",
        "",
        fmt_row(["AdamW step", "B/param moved", "268M params, 1 tensor", "Llama-3.2-1B list (147 tensors)"]),
        fmt_row(["---"] * 4),
        fmt_row(["**flashoptim**, bf16 + int8 correction, 8-bit states", "12.5", ours_flat, ms(llama, True)]),
        fmt_row(["the paper's package (PyPI `flashoptim` 0.1.4, `FlashAdamW`, same layout)", "12.25",
                 ms(paper_rows.get(("adamw_default", "flat268M"))), ms(paper_rows.get(("adamw_default", "llama1B")))]),
        fmt_row(["torch fused AdamW, fp32", "28", ms(torch_rows.get(("flat268M", "fp32"))),
                 ms(torch_rows.get(("llama1B", "fp32")))]),
        fmt_row(["torch fused AdamW, bf16 params and states, no master", "14", ms(torch_rows.get(("flat268M", "bf16"))),
                 ms(torch_rows.get(("llama1B", "bf16")))]),
    ]
    with open(path) as f:
        text = f.read()
    begin, end = "<!-- perf-table:begin -->\n", "<!-- perf-table:end -->"
    i, j = text.index(begin) + len(begin), text.index(end)
    emit(path, text[:i] + "\n".join(table) + "\n" + text[j:])


# --check: the files whose committed text differs from what this run would write.
STALE = None


def emit(path, text):
    """Writes `text` to `path`, or under --check compares it with the file and records a difference."""
    if STALE is None:
        with open(path, "w") as f:
            f.write(text)
        return
    try:
        with open(path) as f:
            current = f.read()
    except OSError:
        current = None
    if current != text:
        STALE.append(path)


def documented_command(notes):
    """The arguments of the regeneration command that `notes` documents: its first `python3
    tools/bench_report.py --from-json ...` span in backticks (line breaks inside it are spaces)."""
    with open(notes) as f:
        text = f.read()
    m = re.search(r"`python3\s+tools/bench_report\.py\s+(--from-json[^`]*)`", text)
    if not m:
        sys.exit(f"{notes}: no `python3 tools/bench_report.py --from-json ...` command found")
    return shlex.split(" ".join(m.group(1).split()))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bench", action="append", default=[],
                    help="path to bench_gpu_step, optionally :REGEX to select benchmarks (repeatable)")
    ap.add_argument("--out", default="BENCHMARKS.md")
    ap.add_argument("--json", default="bench_gpu.json")
    ap.add_argument("--torch-json", default=None, help="also write torch timings here")
    ap.add_argument("--no-torch", action="store_true")
    ap.add_argument("--paper", action="store_true",
                    help="also time the paper's package (import flashoptim; PyPI flashoptim 0.1.4) on the same shapes")
    ap.add_argument("--paper-json", default=None, help="write (or, with --from-json, read) the paper's timings here")
    ap.add_argument("--append", action="append", default=[],
                    help="a markdown file from the same run to append (off-load, sharding); repeatable")
    ap.add_argument("--notes", default=None, help="a markdown file of analysis to put after the header")
    ap.add_argument("--readme", default=None,
                    help="also rewrite this README's performance table (between <!-- perf-table:begin --> and "
                         "<!-- perf-table:end -->) from the same run")
    ap.add_argument("--from-json", nargs=2, metavar=("BENCH_JSON", "TORCH_JSON"), default=None,
                    help="rebuild the report from a previous run's --json and --torch-json instead of running")
    ap.add_argument("--check", action="store_true",
                    help="write nothing; exit 1 if --out or --readme differ from what this report would write")
    ap.add_argument("--check-documented", metavar="NOTES", default=None,
                    help="run the --from-json command NOTES documents (docs/benchmark-notes.md) with --check: "
                         "the committed BENCHMARKS.md and README table are the ones its saved run gives")
    args = ap.parse_args()
    if args.check_documented:
        args = ap.parse_args(documented_command(args.check_documented) + ["--check"])
    global STALE
    if args.check:
        if not args.from_json:
            sys.exit("--check rebuilds from saved results: give --from-json")
        STALE = []

    if args.from_json:
        with open(args.from_json[0]) as f:
            data = json.load(f)
    else:
        data = run_bench(args.bench, args.json)
    ctx = data.get("context") or {}
    copy = float(ctx.get("copy_GBps", "nan"))
    rows = {}
    for b in data["benchmarks"]:
        if b.get("error_occurred"):
            print("benchmark failed:", b["name"], b.get("error_message"), file=sys.stderr)
            continue
        rows[b["name"].split("/min_time")[0]] = b

    torch_rows = {}
    torch_note = ""
    if args.from_json:
        with open(args.from_json[1]) as f:
            saved = json.load(f)
        torch_rows = {tuple(k.split("/")[::-1]): v for k, v in saved.get("rows", saved).items() if k != "note"}
        torch_note = saved.get("note", "torch (from the saved run)")
    elif not args.no_torch:
        try:
            import torch  # noqa: F401

            for shape in ("flat268M", "llama1B", "10k_x_4096"):
                for dt in ("fp32", "bf16"):
                    r = time_torch(shape, dt)
                    r["GBps"] = r["bytes"] / (r["ms"] * 1e-3) / 1e9
                    r["pct_copy"] = 100.0 * r["GBps"] / copy
                    torch_rows[(shape, dt)] = r
                    print(f"torch fused AdamW {dt} {shape}: {r['ms']:.3f} ms", file=sys.stderr, flush=True)
            torch_note = f"torch {torch.__version__}"
        except Exception as e:  # torch missing or failing: say so in the report
            torch_note = f"torch not timed ({type(e).__name__}: {e})"
    paper_rows = {}
    paper_note = ""
    if args.from_json and args.paper_json and os.path.exists(args.paper_json):
        with open(args.paper_json) as f:
            saved = json.load(f)
        paper_rows = {tuple(k.split("/")): v for k, v in saved["rows"].items()}
        paper_note = saved.get("note", "")
    elif args.paper and not args.from_json:
        try:
            for rule in PAPER_RULES:
                for shape in ("flat268M", "llama1B", "10k_x_4096"):
                    if rule != "adamw_default" and shape != "flat268M":
                        continue
                    r = time_paper(rule, shape)
                    paper_rows[(rule, shape)] = r
                    print(f"paper {rule} {shape}: {r['ms']:.3f} ms", file=sys.stderr, flush=True)
            paper_note = f"the paper's package flashoptim {r['version']}"
        except Exception as e:
            paper_note = f"the paper's package not timed ({type(e).__name__}: {e})"
            print(paper_note, file=sys.stderr)
        if args.paper_json:
            with open(args.paper_json, "w") as f:
                json.dump({"rows": {f"{k[0]}/{k[1]}": v for k, v in paper_rows.items()}, "note": paper_note}, f,
                          indent=1)
    if args.torch_json and not args.from_json:
        with open(args.torch_json, "w") as f:
            json.dump({"rows": {f"{k[1]}/{k[0]}": v for k, v in torch_rows.items()}, "note": torch_note}, f, indent=1)

    def get(name):
        return rows.get(name)

    lines = []
    cmd = ("tools/stage_device_bin.sh build/release   # then, on the GPU machine:\n"
           "BIN=.device/bin OUT=out tools/device_round.sh tests shard bench   # runs this script:\n"
           "PYTHONPATH=<the paper's package> python3 tools/bench_report.py --bench '.device/bin/bench_gpu_step:/default/|^ceiling/' "
           "--paper --out BENCHMARKS.md --append offload.md --append shard.md --notes docs/benchmark-notes.md")
    lines.append("# Benchmarks")
    lines.append("")
    lines.append("Generated by `tools/bench_report.py` from one run on the device machine (single-GPU numbers on GPU 0;")
    lines.append("a sharding section, where appended, on two GPUs); every number below comes from that run. Reproduce, after building")
    lines.append("the `release` preset where nvcc is found:")
    lines.append("")
    lines.append("```")
    lines.append(cmd)
    lines.append("```")
    lines.append("")
    when = ctx.get("date") if args.from_json else time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    device = ctx.get("device", "?")
    lines.append(f"- device: {device}; run: {when}")
    failed = [b["name"] for b in data["benchmarks"] if b.get("error_occurred")]
    if failed:
        lines.append(f"- **failed benchmarks** (see the run's log): {', '.join(failed)}")
    lines.append(f"- copy bandwidth (4 GiB cudaMemcpy device to device, read + write, median of 20): **{copy:.0f} GB/s**")
    # Runs since the twenty-second session record each launch's time: the
    # row's time is their median (as torch's and the paper's steps are
    # taken), the mean beside it in the JSON; older runs' time is the mean.
    per_launch_median = any("mean_ms" in b for b in rows.values())
    lines.append("- time: CUDA events around each step, "
                 + ("median of its launches over Google Benchmark's iterations (>= 0.3 s; the stream synchronized after each)"
                    if per_launch_median else "mean over Google Benchmark's iterations (>= 0.3 s)")
                 + "; torch: median of 20 `opt.step()` after 3 warm-ups")
    lines.append("- bytes: the minimal traffic of a step from `layout::bytes<Config>::moved_for_size` (each input read once, each output written once, scales included); floor = bytes / copy bandwidth")
    lines.append(f"- peers: {torch_note or 'torch not timed'} (`torch.optim.AdamW(fused=True)`, 28 B/param in fp32, 14 B/param in bf16)"
                 + (f"; {paper_note} (`FlashAdamW`/`FlashLion`/`FlashSGD`, bf16 params, `master_weight_bits=24`, "
                    "8-bit states: the layout of our `*_default` rows; median of 20 steps after 3 warm-ups)"
                    if paper_note else ""))
    lines.append("")
    if args.notes and os.path.exists(args.notes):
        with open(args.notes) as f:
            lines.append(f.read().rstrip())
            lines.append("")
    lines.append("## Fused step, flashoptim")
    lines.append("")
    # Runs with NVML telemetry (bench_telemetry.hpp) add the timed loop's mean
    # SM clock and the share of its samples under a power or thermal clock
    # limit. (Its power reading is kept in the JSON, not printed: the
    # driver's figure lags, and read 340-530 W while the 700 W limit held
    # the clock down.)
    telemetry = any("sm_mhz" in b for b in rows.values())
    # burst_ms: the same step launched 20 times back to back (7 bursts, the
    # median of their means), and the mean of the timed launches, beside the
    # row's time (their median).
    burst = any("burst_ms" in b for b in rows.values())

    def tele(b):
        if "sm_mhz" not in b:
            return ["-", "-"]
        return [f"{b['sm_mhz']:.0f}", f"{100.0 * b['capped']:.0f}%"]

    head = ["configuration", "tensors", "params", "B/param", "time ms", "floor ms", "GB/s", "% of copy"]
    tele_head = ["SM MHz", "clock limited"] if telemetry else []
    burst_head = ["mean ms", "20 back to back, ms per step"] if burst else []
    lines.append(fmt_row(head + tele_head + burst_head))
    lines.append(fmt_row(["---"] * (len(head) + len(tele_head) + len(burst_head))))
    for name, b in rows.items():
        if not name.startswith("step/") or not name.endswith("/default"):
            continue
        parts = name.split("/")
        lines.append(fmt_row([f"{parts[1]} / {parts[2]}", f"{int(b['tensors'])}", f"{b['params'] / 1e6:.1f} M",
                              f"{b['bytes_per_param']:.3f}", f"{b['ms']:.3f}", f"{b['floor_ms']:.3f}",
                              f"{b['GBps']:.0f}", f"{b['pct_copy']:.1f}"] + (tele(b) if telemetry else [])
                             + ([f"{b['mean_ms']:.3f}" if "mean_ms" in b else "-",
                                  f"{b['burst_ms']:.3f}" if "burst_ms" in b else "-"] if burst else [])))
    lines.append("")
    ceilings = [(n, b) for n, b in rows.items() if n.startswith("ceiling/")]
    if ceilings:
        lines.append("## Memory-pattern ceilings: each layout's bytes, in the step's pattern, without arithmetic")
        lines.append("")
        lines.append("(`bench/gpu/bench_ceiling.cuh`: the step's grid, tiles, staging ring and in-place writes, "
                     "no arithmetic; the warp tiles of the layouts whose step takes them (the default, Lion, "
                     "SGD momentum and fp8 states rows: each warp's scales of 4 tiles in one request, "
                     "docs/gpu.md). The other "
                     "layouts' per-tile scale copies carry no L2 prefetch hint, which the step's have since "
                     "2026-12-02: for those 8-bit layouts it shows what their scales' 32-byte reads cost, and it "
                     "is not a bound on the step.)")
        lines.append("")
        lines.append(fmt_row(["layout", "ceiling ms", "ceiling % of copy", "step ms", "step % of copy",
                              "ceiling time / step time"] + (["ceiling SM MHz", "step SM MHz"] if telemetry else [])))
        lines.append(fmt_row(["---"] * (6 + (2 if telemetry else 0))))
        for n, c in ceilings:
            parts = n.split("/")
            st = rows.get(f"step/{parts[1]}/{parts[2]}/default")
            cells = [f"{parts[1]} / {parts[2]}", f"{c['ms']:.3f}", f"{c['pct_copy']:.1f}",
                     f"{st['ms']:.3f}" if st else "-", f"{st['pct_copy']:.1f}" if st else "-",
                     f"{100.0 * c['ms'] / st['ms']:.1f}%" if st else "-"]
            if telemetry:
                cells += [f"{c['sm_mhz']:.0f}" if "sm_mhz" in c else "-",
                          f"{st['sm_mhz']:.0f}" if st and "sm_mhz" in st else "-"]
            lines.append(fmt_row(cells))
        lines.append("")
    if torch_rows:
        lines.append("## Peer: torch fused AdamW, same tensor lists, same run")
        lines.append("")
        lines.append(fmt_row(["layout", "shape", "tensors", "B/param", "time ms", "GB/s", "% of copy"]))
        lines.append(fmt_row(["---"] * 7))
        for (shape, dt), r in torch_rows.items():
            lines.append(fmt_row([f"{dt} params + states", shape, str(r["tensors"]), str(r["bytes_per_param"]),
                                  f"{r['ms']:.3f}", f"{r['GBps']:.0f}", f"{r['pct_copy']:.1f}"]))
        lines.append("")

    if paper_rows:
        lines.append("## Peer: the paper's package, same tensor lists, same run")
        lines.append("")
        lines.append(fmt_row(["rule", "shape", "tensors", "time ms", "ours ms", "ours faster by"]))
        lines.append(fmt_row(["---"] * 6))
        for (rule, shape), r in paper_rows.items():
            ours = rows.get(f"step/{rule}/{shape}/default")
            lines.append(fmt_row([rule, shape, str(r["tensors"]), f"{r['ms']:.3f}",
                                  f"{ours['ms']:.3f}" if ours else "-",
                                  f"{r['ms'] / ours['ms']:.2f}x" if ours else "-"]))
        lines.append("")

    lines.append("## Targets")
    lines.append("")
    verdicts = []

    def verdict(ok, text):
        verdicts.append(ok)
        lines.append(f"- {'met' if ok else '**missed**'}: {text}")

    flat = get("step/adamw_default/flat268M/default")
    llama = get("step/adamw_default/llama1B/default")
    many = get("step/adamw_default/10k_x_4096/default")
    if flat:
        verdict(flat["pct_copy"] >= 88.0,
                f"AdamW default, 268M params, one tensor: {flat['pct_copy']:.1f}% of copy bandwidth "
                f"({flat['ms']:.3f} ms; target >= 88%)")
    if flat and llama:
        ratio = (llama["ms"] / llama["bytes"]) / (flat["ms"] / flat["bytes"])
        verdict(ratio <= 1.05, f"AdamW default, Llama-3.2-1B list ({int(llama['tensors'])} tensors): {llama['ms']:.3f} ms, "
                               f"{ratio:.3f}x the flat time per byte (target <= 1.05x; floor {llama['floor_ms']:.2f} ms)")
    if many:
        limit = 2 * many["floor_ms"] + 0.020
        verdict(many["ms"] <= limit, f"10,000 tensors of 4,096: {many['ms']:.3f} ms in one launch "
                                     f"(target <= 2 x {many['floor_ms']:.3f} + 0.020 = {limit:.3f} ms)")
    for name, b in rows.items():
        parts = name.split("/")
        if (not name.startswith("step/") or parts[-1] != "default" or parts[2] != "flat268M"
                or parts[1] in ("adamw_default",) or "torch_layout" in parts[1]):
            continue
        # Lion and SGD momentum in the default layout as AdamW, and the default
        # states with the other bf16 + int8 split (the same bytes) too; the reference
        # (paper) layout, fp8 and stochastic-rounding states and every other
        # 8-bit or correction layout >= 80%; plain 16/32-bit layouts >= 88%.
        target = 88.0 if parts[1] in ("lion_default", "sgd_momentum", "adamw_bf16_ulp8", "lion_bf16_ulp8",
                                      "sgd_momentum_bf16_ulp8") else 80.0
        verdict(b["pct_copy"] >= target, f"{parts[1]}: {b['pct_copy']:.1f}% of copy bandwidth (target >= {target:.0f}%)")
    for (rule, shape), r in paper_rows.items():
        ours = rows.get(f"step/{rule}/{shape}/default")
        if ours:
            verdict(ours["ms"] < r["ms"], f"{rule} {shape}: ours {ours['ms']:.3f} ms vs the paper's package "
                                          f"{r['ms']:.3f} ms ({r['ms'] / ours['ms']:.2f}x)")
    lines.append("")

    if args.readme:
        write_readme_table(args.readme, when, device, copy, get, torch_rows, paper_rows)

    tuning = [(n, b) for n, b in rows.items() if n.startswith("step/adamw_default/flat268M/")]
    if len(tuning) > 1:
        lines.append("## Tuning candidates (AdamW default, 268M params)")
        lines.append("")
        lines.append(fmt_row(["policy", "grid", "time ms", "% of copy"]))
        lines.append(fmt_row(["---"] * 4))
        for n, b in tuning:
            lines.append(fmt_row([n.split("/")[-1], str(int(b.get("grid", 0))), f"{b['ms']:.3f}", f"{b['pct_copy']:.1f}"]))
        lines.append("")
    stats = [(n, b) for n, b in rows.items() if n.startswith("grad_stats/")]
    if stats:
        lines.append("## Gradient statistics (non-finite flag + sum of squares; reads bf16 gradients once)")
        lines.append("")
        lines.append(fmt_row(["shape", "time ms", "GB/s", "% of copy"]))
        lines.append(fmt_row(["---"] * 4))
        for n, b in stats:
            lines.append(fmt_row([n.split("/")[-1], f"{b['ms']:.3f}", f"{b['GBps']:.0f}", f"{b['pct_copy']:.1f}"]))
        lines.append("")

    for extra in args.append:
        if os.path.exists(extra):
            with open(extra) as f:
                lines.append(f.read().rstrip())
                lines.append("")
        else:
            lines.append(f"({extra}: not produced in this run)")
            lines.append("")
    emit(args.out, "\n".join(lines) + "\n")
    if STALE is not None:
        if STALE:
            print("stale (regenerate with the command in the notes): " + ", ".join(STALE), file=sys.stderr)
            sys.exit(1)
        print(f"current: {args.out}" + (f", {args.readme}" if args.readme else ""))
        return
    # A short table on stdout.
    print(f"copy {copy:.0f} GB/s")
    for name, b in rows.items():
        print(f"{name:60s} {b['ms']:8.3f} ms {b['pct_copy']:6.1f}%")
    for (shape, dt), r in torch_rows.items():
        print(f"torch/{dt}/{shape:46s} {r['ms']:8.3f} ms {r['pct_copy']:6.1f}%")
    for (rule, shape), r in paper_rows.items():
        print(f"paper/{rule}/{shape:38s} {r['ms']:8.3f} ms")
    print("targets met:", sum(verdicts), "of", len(verdicts))


if __name__ == "__main__":
    main()
