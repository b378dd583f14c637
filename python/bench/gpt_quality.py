# SPDX-FileCopyrightText: 2026 flashoptim authors
# SPDX-License-Identifier: Apache-2.0
"""The quality run: a byte-level GPT trained with torch AdamW (fp32 and pure
bf16 parameters), with flashoptim_kernels.FlashAdamW (bf16 parameters + int8
correction + 8-bit states, with and without gradient release) and, when it is
installed, with the paper's package (`flashoptim` on PyPI) — same data order
and same initial weights per seed, so the configurations differ only in the
optimizer (docs/quality.md).

  python3 python/bench/gpt_quality.py run --seeds 0,1,2,3 --out runs/   # all configurations, seeds in parallel
  python3 python/bench/gpt_quality.py time --out runs/                  # step() timing, one process, nothing beside it
  python3 python/bench/gpt_quality.py report runs/ --md docs/quality-results.md --png docs/images/gpt-quality.png

The model: 6 layers x 384 wide, 6 heads, context 256, learned positions,
tied embeddings (10.8M parameters); batch 64; cosine lr from 1e-3 to 1e-4
after a 100-step linear warm-up; betas (0.9, 0.95); weight decay 0.1 on
matrices (every parameter of 2 or more dimensions, embeddings included), 0 on
biases and norms; bf16 autocast. Data: the Python standard library's .py
sources of the machine that runs it, in sorted path order, the last 5% held
out for validation (the file count, byte count and sha256 are recorded).
"""
import argparse
import glob
import hashlib
import json
import math
import os
import statistics
import subprocess
import sys
import sysconfig
import time

CONFIGS = ["torch_fp32", "flash", "flash_release", "torch_bf16", "paper"]
LABELS = {
    "torch_fp32": "torch AdamW, fp32 params (reference)",
    "flash": "flashoptim_kernels FlashAdamW, bf16 + int8 correction, 8-bit states",
    "flash_release": "the same with gradient release",
    "torch_bf16": "torch AdamW, pure bf16 params (naive)",
    "paper": "paper's package (flashoptim 0.1.4) FlashAdamW, defaults",
}


# ---------------------------------------------------------------- data
def corpus(root=None):
    """The standard library's .py files (sorted), concatenated; site- and
    dist-packages left out, so the corpus is the interpreter's own sources."""
    root = root or sysconfig.get_paths()["stdlib"]
    files = sorted(f for f in glob.glob(os.path.join(root, "**", "*.py"), recursive=True)
                   if "site-packages" not in f and "dist-packages" not in f)
    h = hashlib.sha256()
    parts = []
    for f in files:
        with open(f, "rb") as fh:
            b = fh.read()
        parts.append(b)
        h.update(os.path.relpath(f, root).encode() + b"\0" + b)
    data = b"".join(parts)
    return data, {"root": root, "files": len(files), "bytes": len(data), "sha256": h.hexdigest()}


# ---------------------------------------------------------------- model
def build_model(torch, layers=6, width=384, heads=6, context=256):
    nn, F = torch.nn, torch.nn.functional

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln1, self.ln2 = nn.LayerNorm(width), nn.LayerNorm(width)
            self.qkv, self.proj = nn.Linear(width, 3 * width), nn.Linear(width, width)
            self.fc, self.fc2 = nn.Linear(width, 4 * width), nn.Linear(4 * width, width)

        def forward(self, x):
            b, t, c = x.shape
            q, k, v = self.qkv(self.ln1(x)).split(c, dim=2)
            q, k, v = (z.view(b, t, heads, c // heads).transpose(1, 2) for z in (q, k, v))
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + self.proj(y.transpose(1, 2).reshape(b, t, c))
            return x + self.fc2(F.gelu(self.fc(self.ln2(x))))

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.tok, self.pos = nn.Embedding(256, width), nn.Embedding(context, width)
            self.blocks = nn.ModuleList(Block() for _ in range(layers))
            self.ln = nn.LayerNorm(width)
            for name, p in self.named_parameters():
                if p.dim() >= 2:
                    std = 0.02 / math.sqrt(2 * layers) if name.endswith(("proj.weight", "fc2.weight")) else 0.02
                    nn.init.normal_(p, 0.0, std)
                elif name.endswith("bias"):
                    nn.init.zeros_(p)

        def forward(self, idx, targets):
            x = self.tok(idx) + self.pos(torch.arange(idx.shape[1], device=idx.device))
            for blk in self.blocks:
                x = blk(x)
            logits = self.ln(x) @ self.tok.weight.t()  # tied embeddings
            return F.cross_entropy(logits.float().view(-1, 256), targets.reshape(-1))

    return GPT()


# ---------------------------------------------------------------- one run
def state_bytes(torch, opt, model, config):
    """Parameter + optimizer-state bytes: ours from the optimizer's own
    allocation report; torch's and the paper's from the tensors they hold."""
    params = sum(p.numel() * p.element_size() for p in model.parameters())
    if config.startswith("flash"):
        owned = sum(r["correction_bytes"] + r["state_code_bytes"] + r["state_scale_bytes"] + r["padding_bytes"]
                    for r in opt.memory_report())
        return params, owned
    def tensors(v):  # the paper's package keeps quantized states in small wrapper objects
        if torch.is_tensor(v):
            return [v]
        return [t for t in vars(v).values() if torch.is_tensor(t)] if hasattr(v, "__dict__") else []

    seen, owned = set(), 0
    for st in opt.state.values():
        for v in st.values():
            for t in tensors(v):
                if t.data_ptr() not in seen and t.numel() > 1:
                    seen.add(t.data_ptr())
                    owned += t.numel() * t.element_size()
    return params, owned


def make_optimizer(torch, config, model, lr):
    decay = [p for p in model.parameters() if p.dim() >= 2]
    rest = [p for p in model.parameters() if p.dim() < 2]
    groups = [{"params": decay, "weight_decay": 0.1}, {"params": rest, "weight_decay": 0.0}]
    betas = (0.9, 0.95)
    if config == "torch_fp32":
        return torch.optim.AdamW(groups, lr=lr, betas=betas, fused=model.tok.weight.is_cuda)
    if config == "torch_bf16":
        return torch.optim.AdamW(groups, lr=lr, betas=betas, fused=model.tok.weight.is_cuda)
    if config in ("flash", "flash_release"):
        import flashoptim_kernels as fk
        opt = fk.FlashAdamW(groups, lr=lr, betas=betas, master_weight_bits=24, quantize=True)
        if config == "flash_release":
            opt.enable_gradient_release()
        return opt
    if config == "paper":
        import flashoptim as paper
        return paper.FlashAdamW(groups, lr=lr, betas=betas, master_weight_bits=24, quantize=True)
    raise ValueError(config)


def train_one(torch, config, seed, steps, data, device, batch, context, eval_every, log=print):
    torch.manual_seed(seed)
    model = build_model(torch, context=context)
    n_params = sum(p.numel() for p in model.parameters())
    if config != "torch_fp32":
        model = model.to(torch.bfloat16)  # the paper's cast_model does the same for this model (no BatchNorm)
    model = model.to(device)
    base_lr, warmup, floor = 1e-3, min(100, steps // 10), 0.1
    opt = make_optimizer(torch, config, model, base_lr)

    def lr_at(s):
        if s < warmup:
            return (s + 1) / warmup
        q = (s - warmup) / max(1, steps - warmup)
        return floor + (1 - floor) * 0.5 * (1 + math.cos(math.pi * q))

    sched = torch.optim.lr_scheduler.LambdaLR(opt, lr_at)
    split = int(len(data) * 0.95)
    train = torch.frombuffer(bytearray(data[:split]), dtype=torch.uint8).to(device)
    val = torch.frombuffer(bytearray(data[split:]), dtype=torch.uint8).to(device)
    gen = torch.Generator(device="cpu").manual_seed(1000 + seed)  # the data order: the seed's, for every config
    amp = torch.autocast(device_type=device.type, dtype=torch.bfloat16)

    def batch_at(src, starts):
        idx = starts[:, None] + torch.arange(context + 1, device=device)[None, :]
        chunk = src[idx].long()
        return chunk[:, :-1], chunk[:, 1:]

    @torch.no_grad()
    def evaluate(full):
        model.eval()
        n_seq = (len(val) - 1) // context
        starts_all = torch.arange(n_seq, device=device) * context
        if not full:
            starts_all = starts_all[torch.linspace(0, n_seq - 1, 16 * batch).long().to(device)]
        tot, cnt = 0.0, 0
        for i in range(0, len(starts_all), batch):
            x, y = batch_at(val, starts_all[i:i + batch])
            with amp:
                tot += model(x, y).float().item() * len(x)
            cnt += len(x)
        model.train()
        return tot / cnt

    cuda = device.type == "cuda"
    if cuda:
        torch.cuda.reset_peak_memory_stats(device)
        torch.cuda.synchronize(device)
    train_losses, val_curve, events, iter_ms = [], [(0, evaluate(False))], [], []
    t_start = time.time()
    for s in range(steps):
        t0 = time.perf_counter()
        starts = torch.randint(0, len(train) - context - 1, (batch,), generator=gen).to(device)
        x, y = batch_at(train, starts)
        with amp:
            loss = model(x, y)
        loss.backward()
        if cuda:
            e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            e0.record()
        opt.step()
        if cuda:
            e1.record()
            events.append((e0, e1))
        opt.zero_grad()  # each optimizer's default (ours keeps CUDA gradient buffers: docs/python.md)
        sched.step()
        train_losses.append(loss.detach())
        if cuda and s >= 10:
            torch.cuda.synchronize(device)
        iter_ms.append((time.perf_counter() - t0) * 1e3)
        if (s + 1) % eval_every == 0 or s + 1 == steps:
            val_curve.append((s + 1, evaluate(False)))
            log(f"  {config} seed {seed} step {s + 1}/{steps} train {train_losses[-1].item():.4f} "
                f"val {val_curve[-1][1]:.4f} ({time.time() - t_start:.0f} s)")
    final_val = evaluate(True)
    train_losses = [float(v) for v in torch.stack(train_losses).float().cpu()]
    # with gradient release step() is a no-op: the steps run inside backward
    step_ms = [a.elapsed_time(b) for a, b in events[10:]] if cuda and config != "flash_release" else []
    params_b, owned_b = state_bytes(torch, opt, model, config)
    out = {
        "config": config, "label": LABELS[config], "seed": seed, "steps": steps, "params": n_params,
        "train_loss": train_losses, "val_curve": val_curve, "final_val": final_val,
        "train_last100": statistics.fmean(train_losses[-100:]),
        "param_bytes": params_b, "optimizer_bytes": owned_b,
        # gradients as resident between steps: none with release (each is freed once stepped)
        "grad_bytes": 0 if config == "flash_release" else params_b,
        "bytes_per_param": (params_b + owned_b) / n_params,
        "peak_bytes": torch.cuda.max_memory_allocated(device) if cuda else None,
        "step_ms_median": statistics.median(step_ms) if step_ms else None,
        "iter_ms_median": statistics.median(iter_ms[10:]) if len(iter_ms) > 10 else None,
        "wall_s": time.time() - t_start,
    }
    if config.startswith("flash"):
        out["memory_report"] = opt.memory_report()
    return out


def environment(torch, device, info):
    env = {"torch": torch.__version__, "python": sys.version.split()[0], "corpus": info}
    if device.type == "cuda":
        env["gpu"] = torch.cuda.get_device_name(device)
    for mod in ("flashoptim_kernels", "flashoptim"):
        try:
            env[mod] = __import__(mod).__version__
        except Exception as e:  # noqa: BLE001 - recorded, not fatal: the config is skipped
            env[mod] = f"not importable: {e}"
    return env


def cmd_worker(a):
    import torch
    device = torch.device(a.device if a.device != "auto" else ("cuda" if torch.cuda.is_available() else "cpu"))
    data, info = corpus(a.corpus)
    if a.max_bytes:
        data = data[:a.max_bytes]
    os.makedirs(a.out, exist_ok=True)
    env = environment(torch, device, info)
    for seed in [int(s) for s in a.seeds.split(",")]:
        for config in a.configs.split(","):
            path = os.path.join(a.out, f"{config}-seed{seed}.json")
            try:
                r = train_one(torch, config, seed, a.steps, data, device, a.batch, a.context, a.eval_every,
                              log=lambda m: print(m, flush=True))
            except (ImportError, NotImplementedError) as e:
                print(f"{config} seed {seed}: skipped ({type(e).__name__}: {e})", flush=True)
                r = {"config": config, "seed": seed, "skipped": f"{type(e).__name__}: {e}"}
            r["env"] = env
            with open(path, "w") as fh:
                json.dump(r, fh)
            if "final_val" in r:
                print(f"{config} seed {seed}: val {r['final_val']:.4f} train(last100) {r['train_last100']:.4f} "
                      f"bytes/param {r['bytes_per_param']:.2f} step {r['step_ms_median']} ms", flush=True)


def cmd_run(a):
    """One worker process per seed, side by side on one GPU (the model is far
    too small to fill it); each runs every configuration in turn."""
    procs = []
    for seed in a.seeds.split(","):
        argv = [sys.executable, os.path.abspath(__file__), "worker", "--seeds", seed, "--configs", a.configs,
                "--steps", str(a.steps), "--out", a.out, "--device", a.device, "--batch", str(a.batch),
                "--context", str(a.context), "--eval-every", str(a.eval_every), "--max-bytes", str(a.max_bytes)]
        if a.corpus:
            argv += ["--corpus", a.corpus]
        procs.append(subprocess.Popen(argv))
    rc = [p.wait() for p in procs]
    sys.exit(max(rc))


def cmd_time(a):
    """step() time, each configuration alone on the GPU: a fixed number of
    steps per configuration, one process, nothing else running."""
    a.seeds, a.eval_every = "0", 10 ** 9
    a.out = os.path.join(a.out, "timing")
    cmd_worker(a)


def cmd_report(a):
    runs = {}
    for d in a.dirs:
        for f in sorted(glob.glob(os.path.join(d, "*-seed*.json"))):
            r = json.load(open(f))
            if "final_val" in r:
                runs.setdefault(r["config"], []).append(r)
    timing = {}
    for d in a.dirs:
        for f in sorted(glob.glob(os.path.join(d, "timing", "*.json"))):
            r = json.load(open(f))
            if r.get("step_ms_median") is not None:
                timing[r["config"]] = r

    def mean_se(xs):
        m = statistics.fmean(xs)
        se = statistics.stdev(xs) / math.sqrt(len(xs)) if len(xs) > 1 else float("nan")
        return m, se

    ref = statistics.fmean(r["final_val"] for r in runs["torch_fp32"]) if "torch_fp32" in runs else None
    ref_tr = statistics.fmean(r["train_last100"] for r in runs["torch_fp32"]) if "torch_fp32" in runs else None
    lines = ["| configuration | seeds | val loss (mean ± 2 SE) | vs fp32 | train loss, last 100 (mean ± 2 SE) | vs fp32 "
             "| params + optimizer B/param | peak GiB | step() ms (alone) |",
             "|---|---|---|---|---|---|---|---|---|"]
    for c in CONFIGS:
        if c not in runs:
            continue
        rs = runs[c]
        v, vse = mean_se([r["final_val"] for r in rs])
        t, tse = mean_se([r["train_last100"] for r in rs])
        rel = f"{(v / ref - 1) * 100:+.2f}%" if ref else ""
        rel_t = f"{(t / ref_tr - 1) * 100:+.2f}%" if ref_tr else ""
        peak = statistics.fmean(r["peak_bytes"] for r in rs) / 2 ** 30 if rs[0].get("peak_bytes") else float("nan")
        tm = timing.get(c, {}).get("step_ms_median")
        tm_s = f"{tm:.3f}" if tm is not None else ("in backward" if c == "flash_release" else "n/a")
        lines.append(f"| {LABELS[c]} | {len(rs)} | {v:.4f} ± {2 * vse:.4f} | {rel} | {t:.4f} ± {2 * tse:.4f} | {rel_t} "
                     f"| {rs[0]['bytes_per_param']:.2f} | {peak:.2f} | {tm_s} |")
    any_run = next(iter(runs.values()))[0]
    env = any_run["env"]
    head = [f"GPT {any_run['params'] / 1e6:.1f}M params, {any_run['steps']} steps; {env.get('gpu', 'CPU')}, "
            f"torch {env['torch']}, Python {env['python']}; corpus: {env['corpus']['files']} files, "
            f"{env['corpus']['bytes']} bytes, sha256 {env['corpus']['sha256'][:16]}…; "
            f"flashoptim_kernels {env.get('flashoptim_kernels')}, paper's package {env.get('flashoptim')}.", ""]
    text = "\n".join(head + lines) + "\n"
    print(text)
    if a.md:
        with open(a.md, "w") as fh:
            fh.write(text)
    if a.png:
        try:
            import matplotlib
            matplotlib.use("Agg")
            import matplotlib.pyplot as plt
        except ImportError:
            print("matplotlib not found: no picture")
            return
        fig, (ax1, ax2, ax3) = plt.subplots(1, 3, figsize=(16, 4.5))
        w, smooth, lows = 50, {}, []
        for c in CONFIGS:
            if c not in runs:
                continue
            rs = runs[c]
            n = min(len(r["train_loss"]) for r in rs)
            tr = [statistics.fmean(r["train_loss"][i] for r in rs) for i in range(n)]
            smooth[c] = [statistics.fmean(tr[max(0, i - w + 1):i + 1]) for i in range(n)]
            lows.append(min(smooth[c]))
            ax1.plot(range(1, n + 1), smooth[c], label=LABELS[c], lw=1)
            steps = [s for s, _ in rs[0]["val_curve"]]
            vv = [statistics.fmean(r["val_curve"][i][1] for r in rs) for i in range(len(steps))]
            ax3.plot(steps, vv, marker="o", ms=3, label=LABELS[c], lw=1)
        if "torch_fp32" in smooth:
            ref_curve = smooth["torch_fp32"]
            for c, sm in smooth.items():
                first = min(200, len(sm) // 10)
                ax2.plot(range(first + 1, len(sm) + 1),
                         [(sm[i] / ref_curve[i] - 1) * 100 for i in range(first, len(sm))], lw=1, label=LABELS[c])
            ax2.axhline(0, color="k", lw=0.5)
        nseeds = min(len(rs) for rs in runs.values())
        ax1.set(title=f"train loss (mean of {nseeds} seeds, {w}-step average)", xlabel="step", ylabel="nats/byte")
        ax1.set_ylim(min(lows) * 0.97, min(lows) * 2.2)
        ax2.set(title="train loss vs the fp32 reference (same average)", xlabel="step", ylabel="%")
        ax3.set(title="validation loss (mean over seeds)", xlabel="step", ylabel="nats/byte")
        lo = min(statistics.fmean(r["final_val"] for r in rs) for rs in runs.values())
        ax3.set_ylim(lo * 0.97, lo * 1.5)
        for ax in (ax1, ax2, ax3):
            ax.grid(alpha=0.3)
        ax3.legend(fontsize=7)
        fig.tight_layout()
        fig.savefig(a.png, dpi=110)
        print(f"wrote {a.png}")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    for name in ("run", "worker", "time"):
        q = sub.add_parser(name)
        q.add_argument("--seeds", default="0,1,2,3")
        q.add_argument("--configs", default=",".join(CONFIGS))
        q.add_argument("--steps", type=int, default=2000 if name != "time" else 200)
        q.add_argument("--out", default="gpt_runs")
        q.add_argument("--device", default="auto")
        q.add_argument("--batch", type=int, default=64)
        q.add_argument("--context", type=int, default=256)
        q.add_argument("--eval-every", type=int, default=250)
        q.add_argument("--corpus", default=None, help="a directory of .py files instead of the standard library")
        q.add_argument("--max-bytes", type=int, default=0, help="use only the corpus's first N bytes (smoke runs)")
    r = sub.add_parser("report")
    r.add_argument("dirs", nargs="+")
    r.add_argument("--md")
    r.add_argument("--png")
    a = p.parse_args(argv)
    {"run": cmd_run, "worker": cmd_worker, "time": cmd_time, "report": cmd_report}[a.cmd](a)


if __name__ == "__main__":
    main()
