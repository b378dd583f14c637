# SPDX-FileCopyrightText: 2026 flashoptim authors
# SPDX-License-Identifier: Apache-2.0
"""torch.optim classes on the library's owning optimizer (docs/python.md).

Each optimizer holds one engine (flashoptim_kernels.Optimizer) per parameter
dtype: an engine is one compiled configuration, and its groups are this
optimizer's param_groups (a group with no parameter of that dtype is an empty
engine group), so every group steps in one call, with its own lr and weight
decay. Hyperparameters are read from param_groups before every step, so lr
schedulers work unchanged.

Parameters whose .grad is None are skipped and keep their own step count, as
torch does (the engine keeps a count per tensor; see binding.hpp).
"""
import math
import re
import weakref

import torch

from . import _core
from .config import config_name

_DTYPES = {torch.bfloat16: "bfloat16", torch.float32: "float32"}
# torch.compiler.disable (torch >= 2.1), torch._dynamo.disable before it
_compiler_disable = getattr(getattr(torch, "compiler", None), "disable", None) or torch._dynamo.disable

# What a bf16 + int8 configuration's "correction" bytes mean, recorded beside
# them in every state dict as "correction_format", a 0-d uint8 tensor (a
# tensor, so that code walking the state as tensors keeps working): 1, the
# fp32 value rounded to 24 bits split into the bf16 parameter and an int8
# remainder (codec::rounded_split, docs/contract.md). 0 or no tag (the state
# dicts of 0.2.0): the paper's ULP fractions (codec::ulp_correction),
# converted through fp32 when loaded.
_CORRECTION_FORMAT = 1
_LEGACY_CORRECTION_FORMAT = 0


def _split_master(config):
    """Whether a configuration ("rule/master/states") keeps a bf16 + int8 split."""
    return config.split("/")[1] == "bf16+int8"


# torch.optim's names for the decoded states (compress_state_dict=False, and
# what a torch.optim or paper-implementation state dict holds), per rule: the
# engine's "stateK" is _STATE_NAMES[rule][K]. The values are torch's (Adam's
# second moment is v, not sqrt(v)), so fp32 parameters' decoded state dicts
# load into torch.optim.AdamW / SGD and back.
_STATE_NAMES = {"adamw": ("exp_avg", "exp_avg_sq"), "adam": ("exp_avg", "exp_avg_sq"), "lion": ("exp_avg",),
                "sgd": ("momentum_buffer",), "sgdw": ("momentum_buffer",)}

# The paper implementation's (PyPI `flashoptim`) 8-bit state format, as its
# quantize/dequantize docstrings describe it: groups of 32 elements, one fp16
# absmax scale per group; codes int8 in [-127, 127] (signed) or uint8 in
# [0, 255]; "softsign" maps x in [-1, 1] to 2x / (1 + |x|) before coding,
# "sqrt" codes sqrt(v). Keys "<name>::quantized" and "<name>::scales".
_PAPER_GROUP = 32
_PAPER_SPECS = {"exp_avg": dict(signed=True, sqrt=False, softsign=True),
                "exp_avg_sq": dict(signed=False, sqrt=True, softsign=False),
                "momentum_buffer": dict(signed=True, sqrt=False, softsign=True)}


def _paper_dequantize(codes, scales, spec, n, what):
    """The paper implementation's grouped 8-bit codes -> fp32 values."""
    codes = codes.detach().to("cpu").reshape(-1)
    scales = scales.detach().to("cpu").reshape(-1)
    if scales.dtype == torch.bfloat16:  # its state_dict views fp16 scales as bf16 for bf16 params
        scales = scales.view(torch.float16)
    if codes.numel() != n:
        raise ValueError(f"{what}: {codes.numel()} codes for a parameter of {n} elements")
    groups = (n + _PAPER_GROUP - 1) // _PAPER_GROUP
    if scales.numel() != groups:
        raise ValueError(f"{what}: {scales.numel()} scales, {groups} expected (groups of {_PAPER_GROUP}); "
                         "another group size is not the paper implementation's format")
    if codes.is_floating_point():  # a torch cast to the parameter dtype keeps these small integers exactly
        codes = codes.round()
    y = codes.to(torch.float32) / (127.0 if spec["signed"] else 255.0)
    if spec["softsign"]:
        y = y / (2.0 - y.abs())
    pad = groups * _PAPER_GROUP - n
    y = torch.nn.functional.pad(y, (0, pad)).view(groups, _PAPER_GROUP) * scales.to(torch.float32)[:, None]
    y = y.reshape(-1)[:n]
    return y * y if spec["sqrt"] else y


def _paper_fp32_weights(p, error_bits, what):
    """The paper implementation's master weights: the bf16 parameter plus its
    error bits, a signed fraction (of 127 for int8, 32767 for int16) of half
    the parameter's bf16 ULP."""
    if p.dtype != torch.bfloat16:
        raise ValueError(f"{what}: error_bits for a {p.dtype} parameter (only bf16 parameters are supported)")
    e = error_bits.detach().to("cpu").reshape(-1)
    if e.numel() != p.numel():
        raise ValueError(f"{what}: error_bits has {e.numel()} elements, the parameter {p.numel()}")
    if e.dtype == torch.int8:
        full = 127.0
    elif e.dtype == torch.int16:
        full = 32767.0
    else:
        raise ValueError(f"{what}: error_bits of dtype {e.dtype} (int8 or int16 expected)")
    x = p.detach().to("cpu").reshape(-1)
    bits = x.view(torch.int16).to(torch.int32) & 0x7FFF
    biased = bits >> 7
    exponent = torch.where(biased == 0, torch.full_like(biased, -126), biased - 127)
    half_ulp = torch.exp2((exponent - 8).to(torch.float32))  # 2^(exponent - mantissa bits - 1)
    return x.to(torch.float32) + e.to(torch.float32) / full * half_ulp


def cast_model(model, dtype=torch.bfloat16):
    """Casts the model's floating-point parameters and buffers to `dtype`
    (bf16 by default: the parameters the bf16 configurations step). The
    correction starts from the bf16 values (the fp32 bits below them are
    lost; build the optimizer before casting to keep them is not supported
    yet)."""
    return model.to(dtype)


class _FlashOptimizer(torch.optim.Optimizer):
    _rule = None  # "adamw", "adam", "sgd", "sgdw", "lion"

    def __init__(self, params, defaults, master_weight_bits=24, quantize=True, compress_state_dict=True,
                 check_numerics=False, seed=0, lr_check="report"):
        if master_weight_bits not in (None, 24, 32):
            raise ValueError(f"master_weight_bits must be None, 24 or 32, not {master_weight_bits!r}")
        self._master_weight_bits = master_weight_bits
        self._quantize = quantize
        self._compress_state_dict = compress_state_dict
        self._check_numerics = check_numerics
        self._seed = seed
        self._lr_check = lr_check
        self._engines = []  # (engine, [param, ...] in engine tensor order)
        self._device = torch.device("cpu")
        self._bound = {}
        self._seen_grads = {}  # id(engine) -> the gradient tensors of its last CUDA step
        self._release_hooks, self._released = [], {}
        self._built = False
        super().__init__(params, defaults)
        self._build()
        self._built = True

    # ---- configuration -------------------------------------------------
    def _hyper(self, group):
        """The engine's hyperparameter dict for a torch param group."""
        raise NotImplementedError

    def _momentum(self):
        return None

    def _build(self, keep=None):
        params = [p for g in self.param_groups for p in g["params"]]
        devices = {p.device for p in params}
        if len(devices) > 1:
            raise ValueError(f"flashoptim_kernels: parameters on several devices ({sorted(map(str, devices))}); "
                             "one optimizer steps parameters of one device")
        device = next(iter(devices)) if devices else torch.device("cpu")
        if device.type not in ("cpu", "cuda"):
            raise ValueError(f"flashoptim_kernels: parameters on {device}; CPU and CUDA tensors only")
        by_dtype = {}
        for p in params:
            if p.dtype not in _DTYPES:
                raise TypeError(f"flashoptim_kernels: parameter dtype {p.dtype} is not supported "
                                "(torch.bfloat16 or torch.float32)")
            if not p.is_contiguous():
                raise ValueError("flashoptim_kernels: a parameter is not contiguous; the step updates contiguous "
                                 "tensors in place")
            by_dtype.setdefault(p.dtype, None)
        for dtype in by_dtype:  # an unsupported combination fails here, not at the first step
            name = config_name(self._rule, _DTYPES[dtype], self._master_weight_bits, self._quantize,
                               self._momentum())
            if device.type == "cuda" and name not in _core.configurations("cuda"):
                raise ValueError(f"flashoptim_kernels: configuration {name!r} is not compiled for CUDA in this build "
                                 f"(compiled: {_core.configurations('cuda')})")
        self._device = device
        self._pushed = [self._hyper(g) for g in self.param_groups]
        engines = []
        for dtype in by_dtype:
            name = config_name(self._rule, _DTYPES[dtype], self._master_weight_bits, self._quantize,
                               self._momentum())
            groups, order = [], []
            for g in self.param_groups:
                tensors = []
                for p in g["params"]:
                    if p.dtype != dtype:
                        continue
                    grad = None if p.grad is None else p.grad.detach()
                    tensors.append((p.detach(), grad, f"param.{len(order)}"))
                    order.append(p)
                groups.append((tensors, self._hyper(g)))
            if device.type == "cuda":
                with torch.cuda.device(device):
                    engine = _core.make(name, groups, seed=self._seed, lr_check=self._lr_check, device="cuda",
                                        stream=torch.cuda.current_stream(device).cuda_stream)
            else:
                engine = _core.make(name, groups, seed=self._seed, lr_check=self._lr_check)
            engines.append((engine, order))
        self._engines = engines
        self._bound = {}  # id(engine) -> {tensor: the bound gradient's data_ptr}
        self._seen_grads = {}
        self._pushed = [self._hyper(g) for g in self.param_groups]
        if keep:
            self._push_state(keep)

    def add_param_group(self, param_group):
        if getattr(self, "_release_hooks", None):
            raise RuntimeError("flashoptim_kernels: add_param_group after enable_gradient_release")
        super().add_param_group(param_group)
        if self._built:
            # a new engine over every group; the existing tensors keep their state
            try:
                self._build(keep=self._pull_state())
            except Exception:
                # refused (a parameter's dtype, device, layout): _build checks
                # before it replaces anything, so dropping the group restores
                # the optimizer as it was
                self.param_groups.pop()
                self._pushed = [self._hyper(g) for g in self.param_groups]
                raise

    # ---- state ---------------------------------------------------------
    def _pull_state(self, decoded=False):
        """{param: state} from the engines: the stored bytes (uint8 tensors
        "correction", "stateK", "stateK_scales") and "step"; with `decoded`,
        the states as fp32 tensors of the parameter's shape under torch's
        names (exp_avg, ...), the correction still as bytes (it is the master
        weights' low bits, not a state). CPU tensors either way."""
        out = {}
        names = _STATE_NAMES[self._rule]
        for engine, order in self._engines:
            for i, p in enumerate(order):
                s = engine.state(i)
                tag = ({"correction_format": torch.tensor(_CORRECTION_FORMAT, dtype=torch.uint8)}
                       if _split_master(engine.config) else {})
                if not decoded:
                    out[p] = {k: (torch.tensor(float(v)) if k == "step" else torch.from_numpy(v))
                              for k, v in s.items()}
                    out[p].update(tag)
                    continue
                values = _core.decode_states(engine.config, s, p.numel())
                d = {"step": torch.tensor(float(s["step"]))}
                for k, v in sorted(values.items()):
                    d[names[int(k[len("state"):])]] = torch.from_numpy(v).view(p.shape)
                if s["correction"].size:
                    d["correction"] = torch.from_numpy(s["correction"])
                    d.update(tag)
                out[p] = d
        return out

    def _to_engine_state(self, engine, i, p, s, group):
        """One parameter's state in any accepted form -> the engine's
        set_state dict. Forms: this package's bytes (a round trip, bit-exact);
        decoded fp32 states under torch's names (compress_state_dict=False,
        torch.optim's own state dicts); the paper implementation's keys
        ("<name>::quantized" / "<name>::scales", "error_bits"). What does not
        map is refused with the key named; nothing is written then."""
        what = f"flashoptim_kernels: load_state_dict: parameter {i} of the {engine.config} engine"
        names = _STATE_NAMES[self._rule]
        s = dict(s)
        fmt = s.pop("correction_format", None)
        if fmt is not None:
            fmt = int(fmt.item() if torch.is_tensor(fmt) else fmt)
            if fmt not in (_CORRECTION_FORMAT, _LEGACY_CORRECTION_FORMAT):
                raise ValueError(f"{what}: correction_format {fmt} is not {_CORRECTION_FORMAT} (rounded split) or "
                                 f"{_LEGACY_CORRECTION_FORMAT} (ULP correction)")
        else:
            fmt = _LEGACY_CORRECTION_FORMAT
        fp32 = None
        if "correction" in s and _split_master(engine.config) and fmt != _CORRECTION_FORMAT:
            # 0.2.0's bytes (no tag): the paper's ULP fractions of the bf16
            # parameter, which must hold the saved weights already; the
            # master is rebuilt in fp32 and split again when loaded
            c = s["correction"]
            c = c.detach().to("cpu") if torch.is_tensor(c) else torch.as_tensor(c)
            # (bytes of another size: another configuration's, which the
            # size checks below refuse)
            if c.numel() * c.element_size() == p.numel():
                fp32 = _paper_fp32_weights(p, c.contiguous().view(-1).to(torch.uint8).view(torch.int8), what)
        paper = any("::" in k for k in s) or "error_bits" in s
        # this package's bytes: "step", "correction", "stateK", "stateK_scales" only
        own = all(k in ("step", "correction") or re.fullmatch(r"state\d+(_scales)?", k) for k in s)
        if own and not paper:
            arrays = {}
            for k, v in s.items():
                if k == "step":
                    arrays[k] = int(v.item() if torch.is_tensor(v) else v)
                else:
                    arrays[k] = v.detach().to("cpu", torch.uint8).contiguous().numpy()
            return "bytes", fp32, arrays
        if paper:
            if "error_bits" in s:
                e = s.pop("error_bits")
                width = int(group.get("master_bytewidth", 3)) - 2  # bytes of the errors beside a bf16 param
                if width == 1 and e.dtype != torch.int8:
                    e = e.round().to(torch.int8) if e.is_floating_point() else e.to(torch.int8)
                elif width == 2 and e.dtype != torch.int16:
                    e = e.view(torch.int16)  # saved as the int16 bits viewed as the param dtype
                fp32 = _paper_fp32_weights(p, e, what)
            for k in [k for k in s if k.endswith("::quantized")]:
                name = k[: -len("::quantized")]
                if name not in _PAPER_SPECS or name + "::scales" not in s:
                    raise ValueError(f"{what}: state key {k!r} without its '{name}::scales' or of an unknown state")
                s[name] = _paper_dequantize(s.pop(k), s.pop(name + "::scales"), _PAPER_SPECS[name], p.numel(),
                                            f"{what}: {name}")
        if "step" not in s and any(n in s for n in names):
            # torch's SGD and the paper's Lion and SGD keep no step; a saved
            # momentum means a step was taken (SGD's first step would
            # overwrite the buffer with the gradient)
            s = dict(s, step=1)
        unknown = sorted(k for k in s if k not in names and k not in ("step", "correction"))
        if unknown:
            raise ValueError(f"{what}: state keys {unknown} do not map to {self._rule}'s states {list(names)} "
                             "(another optimizer's state dict?)")
        return "decoded", fp32, s

    def _push_state(self, states):
        group_of = {id(p): g for g in self.param_groups for p in g["params"]}
        # every conversion and check first, then the writes: a refused load writes nothing
        plans = []
        for engine, order in self._engines:
            for i, p in enumerate(order):
                # torch's SGD keeps momentum_buffer=None without momentum: nothing to load
                s = {k: v for k, v in (states.get(p) or {}).items() if v is not None}
                if not s:
                    continue
                plans.append((engine, i, p, *self._to_engine_state(engine, i, p, s, group_of.get(id(p), {}))))
        encoded = []
        for engine, i, p, kind, fp32, arrays in plans:
            if kind == "bytes":
                if engine.device == "cpu":
                    # set_state checks one tensor at a time; checked here for
                    # all first (a CUDA engine's state() copies the whole
                    # optimizer to the host, too dear per tensor: there
                    # set_state's own check stops at the first bad tensor)
                    cur = engine.state(i)
                    sizes = {k: v.nbytes for k, v in arrays.items() if k != "step"}
                    want = {k: v.nbytes for k, v in cur.items() if k != "step"}
                    if sizes != want:
                        raise ValueError(f"flashoptim_kernels: load_state_dict: parameter {i} of the "
                                         f"{engine.config} engine: state bytes {sizes} do not match the "
                                         f"configuration's {want}")
                encoded.append((engine, i, fp32, arrays))
                continue
            cur = engine.state(i)
            stored = _core.decode_states(engine.config, cur, p.numel())  # which slots this configuration stores
            values = {}
            for k in stored:
                name = _STATE_NAMES[self._rule][int(k[len("state"):])]
                if name not in arrays:
                    raise ValueError(f"flashoptim_kernels: load_state_dict: parameter {i} of the {engine.config} "
                                     f"engine: state {name!r} is missing")
                v = arrays[name]
                v = v.detach() if torch.is_tensor(v) else torch.as_tensor(v)
                if v.numel() != p.numel():
                    raise ValueError(f"flashoptim_kernels: load_state_dict: parameter {i}: {name!r} has {v.numel()} "
                                     f"elements, the parameter {p.numel()}")
                values[k] = v.to("cpu", torch.float32).contiguous().view(-1).numpy()
            new = {k: v for k, v in cur.items()}
            new.update(_core.encode_states(engine.config, values, p.numel()))
            if "correction" in arrays:
                c = arrays["correction"].detach().to("cpu", torch.uint8).contiguous().numpy()
                if c.nbytes != cur["correction"].nbytes:
                    raise ValueError(f"flashoptim_kernels: load_state_dict: parameter {i} of the {engine.config} "
                                     f"engine: 'correction' has {c.nbytes} bytes, the configuration's "
                                     f"{cur['correction'].nbytes} (saved with another master_weight_bits?)")
                new["correction"] = c
            step = arrays.get("step", 0)
            new["step"] = int(step.item() if torch.is_tensor(step) else step)
            encoded.append((engine, i, fp32, new))
        for engine, i, fp32, arrays in encoded:
            if fp32 is not None:
                engine.set_fp32_param(i, fp32.contiguous().numpy())
                arrays.pop("correction", None)
                arrays["correction"] = engine.state(i)["correction"]  # the split's, not the stale one
            engine.set_state(i, arrays)

    def state_dict(self):
        """torch's state dict. compress_state_dict=True (the default): each
        parameter's stored bytes (uint8 tensors "correction", "stateK",
        "stateK_scales") and "step": a bit-exact round trip. False: the
        states decoded to fp32 tensors of the parameter's shape under
        torch.optim's names (exp_avg, exp_avg_sq, momentum_buffer) and
        "step"; bf16 parameters keep "correction" as bytes. Loading that
        re-encodes the states (8-bit states: the same bytes when nothing
        changed them, since decode -> encode is exact on decoded values).
        Every state tensor is a CPU tensor."""
        self.state.clear()
        self.state.update(self._pull_state(decoded=not self._compress_state_dict))
        try:
            return super().state_dict()
        finally:
            self.state.clear()  # the engines hold the state; do not keep a second copy alive

    def load_state_dict(self, state_dict):
        """Loads a state dict of this package (either compress_state_dict
        form), of torch.optim's matching optimizer (fp32 states under its
        names: AdamW/Adam exp_avg, exp_avg_sq; SGD momentum_buffer), or of
        the paper's implementation (PyPI `flashoptim`: "<name>::quantized",
        "<name>::scales", "error_bits"; its master weights are rebuilt from
        the model's current bf16 parameters and its error bits, so load the
        model's weights first). Keys that map to no state of this rule are
        refused (ValueError naming them) and nothing is written."""
        # torch casts every state tensor of a floating-point parameter to the
        # parameter's dtype; the state tensors are taken from the dict as given
        # (matched by position, as torch matches them) instead
        raw = state_dict["state"]
        ids = [i for g in state_dict["param_groups"] for i in g["params"]]
        params = [p for g in self.param_groups for p in g["params"]]
        # converted and checked against the saved groups before anything changes
        old_groups = [dict(g) for g in self.param_groups]
        try:
            super().load_state_dict(state_dict)
            for g in self.param_groups:
                # a group saved by another implementation lacks some of this
                # class's keys: this optimizer's defaults fill them
                for k, v in self.defaults.items():
                    g.setdefault(k, v)
            self._push_state({p: raw[i] for p, i in zip(params, ids) if i in raw})
        except Exception:
            for g, old in zip(self.param_groups, old_groups):
                g.clear()
                g.update(old)
            raise
        finally:
            self.state.clear()  # the engines hold the state; state_dict() fills this again
        self._sync_hypers(force=True)

    # ---- the step ------------------------------------------------------
    def zero_grad(self, set_to_none=None):
        """torch's zero_grad. On CUDA the default keeps the gradient buffers
        (zeroes them): the device step's tables point at them, and a new
        buffer costs a table rebuild (and breaks a captured graph)."""
        if set_to_none is None:
            set_to_none = self._device.type != "cuda"
        super().zero_grad(set_to_none=set_to_none)
        if set_to_none and self._device.type == "cuda":
            # the engines (their DLPack views) and the steady-state cache
            # still hold the old gradients: drop them, or the memory stays
            # allocated through the next backward (twice the gradients).
            # Unbinding writes nothing to the device; the next step binds
            # the new buffers.
            for engine, order in self._engines:
                for i in range(len(order)):
                    engine.set_grad(i, None)
            self._bound = {}
            self._seen_grads = {}

    def _sync_hypers(self, force=False):
        if self._device.type == "cuda":
            # set_hyper writes the device lr on the engine's stream: the
            # current one, which the next step runs on (load_state_dict's
            # forced push included), not the last step's
            stream = torch.cuda.current_stream(self._device).cuda_stream
            for engine, _ in self._engines:
                engine.set_stream(stream)
        for g, group in enumerate(self.param_groups):
            h = self._hyper(group)
            if force or h != self._pushed[g]:
                for engine, _ in self._engines:
                    engine.set_hyper(g, h)
                self._pushed[g] = h

    # torch.compile: a documented graph break. The step hands raw pointers to
    # a compiled extension, which dynamo cannot trace; disabled, a compiled
    # training step runs forward/backward compiled and this step eagerly
    # (docs/python.md, "torch.compile").
    @_compiler_disable
    @torch.no_grad()
    def step(self, closure=None):
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        if self._release_hooks:
            for engine, _ in self._engines:
                if engine.in_release_step:
                    raise RuntimeError(f"flashoptim_kernels: gradient release: {self._released[id(engine)]} of "
                                       f"{engine.tensor_count} parameters got a gradient in this backward; "
                                       "every parameter needs one")
            return loss
        cuda = self._device.type == "cuda"
        if cuda:
            # every parameter of every engine checked before any engine steps
            # (one engine per dtype: a refusal after the first stepped would
            # leave a half-written step)
            for engine, order in self._engines:
                for p in order:
                    if p.grad is None:
                        raise RuntimeError(f"flashoptim_kernels: a CUDA parameter ({tuple(p.shape)}, {p.dtype}) "
                                           "has no gradient: on CUDA every parameter needs one at every step() "
                                           "(the device optimizer keeps one step count, so it cannot skip a "
                                           "parameter as torch does; CPU parameters are skipped)")
        # every engine's stream is set to the current one here: the step runs
        # there (and is captured there by torch.cuda.graph), after the lr writes
        self._sync_hypers()
        for engine, order in self._engines:
            bound = self._bound.setdefault(id(engine), {})
            try:
                grads = [p.grad for p in order]
                seen = self._seen_grads.get(id(engine)) if cuda else None
                if seen is not None and all(g is h and g.data_ptr() == a for g, (h, a) in zip(grads, seen)):
                    # the steady state: every parameter holds the gradient
                    # tensor of the last step at the same address (zero_grad
                    # kept the buffers), so nothing is rebound. The address
                    # is compared too: p.grad.set_(...) or p.grad.data = ...
                    # moves the same tensor object to other memory
                    pass
                else:
                    self._seen_grads.pop(id(engine), None)
                    self._rebind(engine, order, bound)
                    if cuda:
                        self._seen_grads[id(engine)] = [(g, g.data_ptr()) for g in grads]
                if self._check_numerics:
                    out = engine.step_grad_pass(math.inf, {"enabled": False}, {})
                    if out["skip"]:
                        raise FloatingPointError("flashoptim_kernels: a gradient is not finite; the step wrote "
                                                 "nothing")
                else:
                    engine.step()
            finally:
                if not cuda:
                    # let zero_grad(set_to_none=True) free the gradients: the CPU
                    # engine would otherwise keep the last ones alive (also
                    # after a refused gradient)
                    for i in range(len(order)):
                        engine.set_grad(i, None)
                    bound.clear()
        return loss

    @staticmethod
    def _rebind(engine, order, bound):
        """Binds each parameter's current gradient to the engine."""
        for i, p in enumerate(order):
            # rebind only a gradient that moved: no DLPack export in the
            # steady state (torch's CUDA export makes the default stream
            # wait on the current one, which a graph capture refuses).
            # The engine holds the bound gradient, so an equal address is
            # the same, still allocated, buffer.
            key = None if p.grad is None else p.grad.data_ptr()
            if bound.get(i, -1) != key:
                bound.pop(i, None)  # unknown until set_grad has accepted it
                engine.set_grad(i, None if p.grad is None else p.grad.detach())
                bound[i] = key

    # ---- gradient release -----------------------------------------------
    def enable_gradient_release(self):
        """Steps each parameter as soon as backward has accumulated its
        gradient (a post-accumulate-grad hook), then frees the gradient, so
        the whole model's gradients never exist at once. step() then only
        checks that every parameter was stepped; zero_grad has nothing left
        to clear. Every parameter needs a gradient in every backward (one
        step count per release step), one backward per step (no gradient
        accumulation), and the global clip, GradScaler's skip and
        check_numerics need every gradient at once, so they are not
        available. On CUDA each parameter is stepped on the stream current
        in its hook (the one backward produced its gradient on), and the new
        gradient's address reaches the device tables by a stream-ordered
        write: no table rebuild, no host synchronization."""
        if self._release_hooks:
            return
        where = {id(p): (k, i) for k, (_, order) in enumerate(self._engines) for i, p in enumerate(order)}
        # the hook holds the optimizer weakly: a strong reference would close
        # a cycle parameter -> hook -> engine -> (its DLPack view of) the
        # parameter that runs through C++, where the garbage collector cannot
        # see it, and keep both alive for good
        me = weakref.ref(self)
        for p in (p for g in self.param_groups for p in g["params"]):
            k, i = where[id(p)]
            self._release_hooks.append(p.register_post_accumulate_grad_hook(
                lambda param, k=k, i=i: me()._release_step(me()._engines[k][0], i, param)))

    def _release_step(self, engine, i, p):
        cuda = self._device.type == "cuda"
        if cuda:
            # this tensor steps on its hook's stream (_sync_hypers below sets
            # every engine's to it too, so the lr writes come first there)
            stream = torch.cuda.current_stream(self._device)
            engine.set_stream(stream.cuda_stream)
        if not engine.in_release_step:
            self._sync_hypers()
            engine.begin_step()
            self._released[id(engine)] = 0
        with torch.no_grad():
            engine.set_grad(i, p.grad.detach())
            engine.step_tensor(i)
            engine.set_grad(i, None)
            if cuda:
                # the step kernel queued on `stream` still reads the
                # gradient freed below: the caching allocator must not hand
                # its memory out before that kernel is done when the
                # gradient was allocated on another stream
                p.grad.record_stream(stream)
        self._bound.get(id(engine), {}).pop(i, None)
        self._seen_grads.pop(id(engine), None)
        p.grad = None
        self._released[id(engine)] += 1
        if self._released[id(engine)] == engine.tensor_count:
            engine.end_step()

    # ---- fp32 weights ---------------------------------------------------
    def _locate(self):
        return {id(p): (engine, i) for engine, order in self._engines for i, p in enumerate(order)}

    def get_fp32_model_state_dict(self, model):
        """model.state_dict() with every parameter this optimizer steps given
        as its fp32 weights (the parameter decoded with its correction or
        master copy)."""
        where = self._locate()
        sd = model.state_dict()
        for name, p in model.named_parameters():
            if id(p) in where and name in sd:
                engine, i = where[id(p)]
                sd[name] = torch.from_numpy(engine.fp32_param(i)).view(p.shape).to(p.device)
        return sd

    @torch.no_grad()
    def set_fp32_model_state_dict(self, model, state_dict):
        """Loads fp32 weights: parameters this optimizer steps get param and
        correction split from them (states and step counts unchanged); every
        other entry is loaded by model.load_state_dict."""
        where = self._locate()
        rest = dict(state_dict)
        for name, p in model.named_parameters():
            if id(p) in where and name in rest:
                engine, i = where[id(p)]
                x = rest.pop(name).detach().to("cpu", torch.float32).contiguous().view(-1)
                engine.set_fp32_param(i, x.numpy())
        model.load_state_dict(rest, strict=False)

    # ---- reports -------------------------------------------------------
    def memory_report(self):
        """The engines' memory reports (bytes by kind, from their allocations), one dict per parameter dtype."""
        return [engine.memory() for engine, _ in self._engines]

    def lr_report(self):
        return [engine.lr_report() for engine, _ in self._engines]


def _check_betas(betas):
    if len(betas) != 2:
        raise ValueError(f"betas must be a pair, not {betas!r}")
    return float(betas[0]), float(betas[1])


def _initial_lr(group):
    return float(group.get("initial_lr", group["lr"])) if group.get("decouple_lr") else 0.0


class FlashAdamW(_FlashOptimizer):
    _rule = "adamw"

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2, decouple_lr=False,
                 master_weight_bits=24, quantize=True, compress_state_dict=True, check_numerics=False, **kw):
        defaults = dict(lr=lr, betas=_check_betas(betas), eps=eps, weight_decay=weight_decay, decouple_lr=decouple_lr)
        super().__init__(params, defaults, master_weight_bits, quantize, compress_state_dict, check_numerics, **kw)

    def _hyper(self, g):
        b1, b2 = g["betas"]
        return dict(lr=float(g["lr"]), beta1=float(b1), beta2=float(b2), eps=float(g["eps"]),
                    weight_decay=float(g["weight_decay"]), decouple_lr=bool(g["decouple_lr"]),
                    initial_lr=_initial_lr(g))


class FlashAdam(FlashAdamW):
    _rule = "adam"

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0, decouple_lr=False,
                 master_weight_bits=24, quantize=True, compress_state_dict=True, check_numerics=False, **kw):
        super().__init__(params, lr, betas, eps, weight_decay, decouple_lr, master_weight_bits, quantize,
                         compress_state_dict, check_numerics, **kw)


class FlashSGDW(_FlashOptimizer):
    _rule = "sgdw"

    def __init__(self, params, lr=1e-3, momentum=0.0, dampening=0.0, weight_decay=0.0, nesterov=False,
                 decouple_lr=False, master_weight_bits=24, quantize=True, compress_state_dict=True,
                 check_numerics=False, **kw):
        defaults = dict(lr=lr, momentum=momentum, dampening=dampening, weight_decay=weight_decay, nesterov=nesterov,
                        decouple_lr=decouple_lr)
        super().__init__(params, defaults, master_weight_bits, quantize, compress_state_dict, check_numerics, **kw)

    def _momentum(self):
        # one engine configuration for every group: a momentum state if any group uses momentum
        return any(float(g["momentum"]) != 0.0 for g in self.param_groups)

    def _hyper(self, g):
        return dict(lr=float(g["lr"]), momentum=float(g["momentum"]), dampening=float(g["dampening"]),
                    weight_decay=float(g["weight_decay"]), nesterov=bool(g["nesterov"]),
                    decouple_lr=bool(g["decouple_lr"]), initial_lr=_initial_lr(g))


class FlashSGD(FlashSGDW):
    _rule = "sgd"


class FlashLion(_FlashOptimizer):
    _rule = "lion"

    def __init__(self, params, lr=1e-4, betas=(0.9, 0.99), weight_decay=0.0, decouple_lr=False,
                 master_weight_bits=24, quantize=True, compress_state_dict=True, check_numerics=False, **kw):
        defaults = dict(lr=lr, betas=_check_betas(betas), weight_decay=weight_decay, decouple_lr=decouple_lr)
        super().__init__(params, defaults, master_weight_bits, quantize, compress_state_dict, check_numerics, **kw)

    def _hyper(self, g):
        b1, b2 = g["betas"]
        return dict(lr=float(g["lr"]), beta1=float(b1), beta2=float(b2), weight_decay=float(g["weight_decay"]),
                    decouple_lr=bool(g["decouple_lr"]), initial_lr=_initial_lr(g))
