#!/usr/bin/env python3
# SPDX-FileCopyrightText: 2026 flashoptim authors
# SPDX-License-Identifier: Apache-2.0
"""Convert flashoptim checkpoints to and from the reference implementation's
state-dict layout (FlashOptim, torch), with the standard library alone.

A flashoptim checkpoint (include/flashoptim/io/checkpoint.hpp) names its
tensors "N" (the parameter) and "N::<key>" where <key> is a key of the
reference optimizer's per-parameter state: exp_avg, exp_avg_sq,
momentum_buffer, each either plain or as "<key>::quantized" (int8/uint8) plus
"<key>::scales" (fp16), and "error_bits" (the int8/int16 correction).

The reference side is written as a safetensors file too, flattened:
    model.<name>           the model's parameter (16-bit, or fp32 weights)
    state.<i>.<key>        optimizer.state_dict()["state"][i][key]
    state.<i>.step         Adam's int64 step counter
with metadata "param_groups" (torch's list of group dicts: each group's
hyperparameters and the indices of its parameters) and "param_names" (JSON).
A checkpoint of format version 3 (io::save_optimizer) has one such group per
parameter group it records; versions 1 and 2 have one. `to_torch()` turns
such a file into (model_state_dict, optimizer_state_dict) when torch is
installed, applying the dtype views the reference expects; nothing else here
needs torch or numpy.

  flashoptim_convert.py to-reference   CKPT OUT        flashoptim -> reference layout
  flashoptim_convert.py from-reference REF OUT [--rule R] [--step S]
  flashoptim_convert.py info CKPT                       verify and print metadata

What converts: the compressed form when its codecs are the reference layout
(grouped<int8,softsign,fp16_reference,half_up,32> and its uint8/sqrt twin) or
plain, with ulp_correction or native masters; the state16 form; the fp32 form
(fp32 weights for the reference's set_fp32_model_state_dict, fp32 states).
Everything converts back bit for bit. Other layouts: save the fp32 form first.
"""

import argparse
import json
import os
import stat
import struct
import sys
import tempfile
import zlib

FORMAT = "flashoptim.checkpoint"
REFERENCE_FORMAT = "flashoptim.reference_state_dict"
DTYPE_SIZE = {"F64": 8, "I64": 8, "U64": 8, "F32": 4, "I32": 4, "U32": 4, "F16": 2, "BF16": 2, "I16": 2,
              "U16": 2, "I8": 1, "U8": 1, "F8_E4M3": 1, "F8_E5M2": 1, "BOOL": 1}
LIBRARY_DTYPE = {"fp32": "F32", "bf16": "BF16", "fp16": "F16", "int8": "I8", "uint8": "U8", "int16": "I16",
                 "uint16": "U16"}
REFERENCE_CODECS = {
    "grouped<int8,softsign,fp16_reference,half_up,32>",   # exp_avg, momentum_buffer
    "grouped<uint8,sqrt,fp16_reference,half_up,32>",      # exp_avg_sq
}
HYPER_FIELDS = {
    "sgd": ["lr", "momentum", "dampening", "weight_decay", "nesterov", "decouple_lr", "initial_lr"],
    "adam": ["lr", "beta1", "beta2", "eps", "weight_decay", "decouple_lr", "initial_lr"],
    "lion": ["lr", "beta1", "beta2", "weight_decay", "decouple_lr", "initial_lr"],
}
HYPER_FIELDS["sgdw"] = HYPER_FIELDS["sgd"]
HYPER_FIELDS["adamw"] = HYPER_FIELDS["adam"]
STATE_KEYS = {"sgd": ["momentum_buffer"], "sgdw": ["momentum_buffer"], "adam": ["exp_avg", "exp_avg_sq"],
              "adamw": ["exp_avg", "exp_avg_sq"], "lion": ["exp_avg"]}


class Tensor:
    """One tensor: safetensors dtype name, shape, raw little-endian bytes."""

    def __init__(self, dtype, shape, data):
        self.dtype, self.shape, self.data = dtype, list(shape), bytes(data)
        count = 1
        for d in self.shape:
            count *= d
        if count * DTYPE_SIZE[dtype] != len(self.data):
            raise ValueError(f"{len(self.data)} bytes for shape {self.shape} of {dtype}")

    def numpy(self):
        """A numpy view (needs numpy; bf16 and fp8 come back as raw integers)."""
        import numpy as np
        kinds = {"F64": "<f8", "I64": "<i8", "U64": "<u8", "F32": "<f4", "I32": "<i4", "U32": "<u4",
                 "F16": "<f2", "BF16": "<u2", "I16": "<i2", "U16": "<u2", "I8": "i1", "U8": "u1",
                 "F8_E4M3": "u1", "F8_E5M2": "u1", "BOOL": "?"}
        return np.frombuffer(self.data, dtype=np.dtype(kinds[self.dtype])).reshape(self.shape)


# ---------------------------------------------------------------- safetensors

def _file_type(mode):
    for test, name in ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"),
                       (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device")):
        if test(mode):
            return name
    return "a special file"


def read_file(path):
    """The bytes of a regular file. Anything else is refused at once: opening
    a FIFO without O_NONBLOCK would wait for a writer forever, and the type is
    checked on the opened descriptor (as io/file.hpp does)."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise ValueError(f"{path} is {_file_type(mode)}, not a regular file")
        chunks = []
        while True:
            chunk = os.read(fd, 1 << 24)
            if not chunk:
                break
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def read_safetensors(path):
    """(metadata, {name: Tensor}) with the same structural checks as the C++ reader."""
    blob = read_file(path)
    if len(blob) < 8:
        raise ValueError(f"{path}: too short for a header length")
    (n,) = struct.unpack("<Q", blob[:8])
    if n < 2 or n > 100_000_000 or n > len(blob) - 8:
        raise ValueError(f"{path}: header length {n} does not fit a {len(blob)}-byte file")
    text = blob[8:8 + n]
    if b"\0" in text:
        raise ValueError(f"{path}: header contains a NUL byte")

    def no_duplicates(pairs):
        keys = [k for k, _ in pairs]
        if len(keys) != len(set(keys)):
            raise ValueError(f"{path}: a key appears twice in one object")
        return dict(pairs)

    header = json.loads(text.decode("utf-8"), object_pairs_hook=no_duplicates)
    if not isinstance(header, dict):
        raise ValueError(f"{path}: header is not an object")
    data = blob[8 + n:]
    metadata = header.pop("__metadata__", {})
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in metadata.items()):
        raise ValueError(f"{path}: __metadata__ must map strings to strings")
    spans, tensors = [], {}
    for name, e in header.items():
        if not isinstance(e, dict) or set(e) != {"dtype", "shape", "data_offsets"}:
            raise ValueError(f"{path}: tensor {name!r}: needs exactly dtype, shape, data_offsets")
        if e["dtype"] not in DTYPE_SIZE:
            raise ValueError(f"{path}: tensor {name!r}: unknown dtype {e['dtype']!r}")
        if not isinstance(e["shape"], list) or \
                not all(isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in e["shape"]):
            raise ValueError(f"{path}: tensor {name!r}: bad shape")
        if not isinstance(e["data_offsets"], list) or len(e["data_offsets"]) != 2:
            raise ValueError(f"{path}: tensor {name!r}: data_offsets must be [begin, end]")
        b, end = e["data_offsets"]
        if not (isinstance(b, int) and isinstance(end, int) and not isinstance(b, bool) and
                not isinstance(end, bool) and 0 <= b <= end <= len(data)):
            raise ValueError(f"{path}: tensor {name!r}: data_offsets outside the data section")
        tensors[name] = Tensor(e["dtype"], e["shape"], data[b:end])
        spans.append((b, end, name))
    expected = 0
    for b, end, name in sorted(spans):
        if b != expected:
            raise ValueError(f"{path}: tensor {name!r} starts at {b}, expected {expected}")
        expected = end
    if expected != len(data):
        raise ValueError(f"{path}: {len(data) - expected} bytes after the last tensor")
    return metadata, tensors


def plan(tensors):
    """Data order of the safetensors writers: wider elements first, then by name."""
    order = sorted(tensors, key=lambda k: (-DTYPE_SIZE[tensors[k].dtype], k))
    entries, offset = {}, 0
    for name in order:
        t = tensors[name]
        entries[name] = (t.dtype, t.shape, offset, offset + len(t.data))
        offset += len(t.data)
    return order, entries


def header_checksum(metadata, entries):
    """Metadata "header_crc32" (see header_checksum in io/checkpoint.hpp)."""
    s = bytearray()
    for k in sorted(metadata, key=lambda x: x.encode("utf-8")):
        if k != "header_crc32":
            s += k.encode() + b"\0" + metadata[k].encode() + b"\0"
    for name in sorted(entries, key=lambda x: x.encode("utf-8")):
        dtype, shape, b, e = entries[name]
        s += name.encode() + b"\0" + dtype.encode() + b"\0" + ",".join(map(str, shape)).encode() + b"\0"
        s += str(b).encode() + b"\0" + str(e).encode() + b"\0"
    return zlib.crc32(bytes(s)) & 0xFFFFFFFF


def serialize(metadata, tensors):
    order, entries = plan(tensors)
    header = {"__metadata__": metadata} if metadata else {}
    for name in order:
        dtype, shape, b, e = entries[name]
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [b, e]}
    # Sorted keys and no spaces: the bytes the C++ writer produces.
    text = json.dumps(header, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    text += b" " * (-(8 + len(text)) % 8)
    return struct.pack("<Q", len(text)) + text + b"".join(tensors[k].data for k in order)


def write_atomic(path, blob):
    """Temporary file in the same directory, fsync, rename, fsync the directory."""
    directory = os.path.dirname(os.path.abspath(path))
    # What a rename would silently replace (a FIFO) or cannot replace (a
    # directory) is refused before anything is written.
    if os.path.lexists(path):
        mode = os.stat(path).st_mode if os.path.exists(path) else stat.S_IFREG
        if not stat.S_ISREG(mode):
            raise ValueError(f"cannot write {path}: it is {_file_type(mode)}, not a regular file")
    fd, tmp = tempfile.mkstemp(prefix=os.path.basename(path) + ".tmp.", dir=directory)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(blob)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise
    dfd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(dfd)
    finally:
        os.close(dfd)


# ---------------------------------------------------------------- flashoptim checkpoints

def read_checkpoint(path):
    """Reads and verifies a flashoptim checkpoint (header and tensor checksums)."""
    meta, tensors = read_safetensors(path)
    if meta.get("format") != FORMAT:
        raise ValueError(f"{path}: not a flashoptim checkpoint")
    if meta.get("format_version") not in ("1", "2", "3"):
        raise ValueError(f"{path}: format version {meta.get('format_version')!r}, this script reads '1', '2' and '3'")
    _, entries = plan(tensors)
    stored = meta.get("header_crc32", "")
    if f"{header_checksum(meta, entries):08x}" != stored:
        raise ValueError(f"{path}: header checksum does not match")
    for name, t in tensors.items():
        if f"{zlib.crc32(t.data) & 0xFFFFFFFF:08x}" != meta.get("crc32/" + name):
            raise ValueError(f"{path}: tensor {name!r}: checksum does not match")
    checkpoint_groups(meta, path)
    return meta, tensors


def checkpoint_groups(meta, path="checkpoint"):
    """(hyperparameter dicts, group index of each tensor) of a checkpoint's
    metadata: version 3 records them as "param_groups" and "tensor_groups"
    (in "tensors" order); versions 1 and 2 have one group, "hyper"."""
    names = json.loads(meta.get("tensors", "[]"))
    if meta.get("format_version") != "3":
        if "param_groups" in meta or "tensor_groups" in meta:
            raise ValueError(f"{path}: parameter groups in a version-{meta.get('format_version')} file")
        return [json.loads(meta["hyper"])], [0] * len(names)
    if "hyper" in meta:
        raise ValueError(f"{path}: 'hyper' in a version-3 file (it has 'param_groups')")
    if "param_groups" not in meta or "tensor_groups" not in meta:
        raise ValueError(f"{path}: a version-3 file needs 'param_groups' and 'tensor_groups'")
    groups = json.loads(meta["param_groups"])
    index = json.loads(meta["tensor_groups"])
    if not isinstance(groups, list) or not groups or not all(isinstance(g, dict) for g in groups):
        raise ValueError(f"{path}: 'param_groups' is not a non-empty list of hyperparameter objects")
    if not isinstance(index, list) or len(index) != len(names) or not all(
            isinstance(g, int) and not isinstance(g, bool) and 0 <= g < len(groups) for g in index):
        raise ValueError(f"{path}: 'tensor_groups' is not one group index below {len(groups)} per tensor")
    return groups, index


def write_checkpoint(path, meta, tensors):
    """Fills in the checksums and writes atomically."""
    meta = {k: v for k, v in meta.items() if not k.startswith("crc32/")}
    for name, t in tensors.items():
        meta["crc32/" + name] = f"{zlib.crc32(t.data) & 0xFFFFFFFF:08x}"
    _, entries = plan(tensors)
    meta["header_crc32"] = f"{header_checksum(meta, entries):08x}"
    write_atomic(path, serialize(meta, tensors))


def _master_bytewidth(meta):
    master = meta["master"]
    if master.startswith("native<"):
        return None
    if master.startswith("ulp_correction<"):
        param, corr = master[len("ulp_correction<"):-1].split(",")
        return 2 + (1 if corr == "int8" else 2)
    raise ValueError(f"master mode {master} has no counterpart in the reference; save the fp32 form instead")


def to_reference(src, dst):
    """flashoptim checkpoint -> flattened reference state dict (safetensors)."""
    meta, tensors = read_checkpoint(src)
    rule, form = meta["rule"], meta["form"]
    if rule not in STATE_KEYS:
        raise ValueError(f"{src}: rule {rule!r} has no counterpart in the reference format (it keeps no "
                         "max_exp_avg_sq: AMSGrad checkpoints stay in the flashoptim format)")
    hypers, tensor_groups = checkpoint_groups(meta, src)
    if any(h.get("maximize") for h in hypers):
        raise ValueError(f"{src}: maximize has no counterpart in the reference format")
    names = json.loads(meta["tensors"])
    slots = [meta[f"state{i}.key"] for i in (0, 1) if meta[f"state{i}.key"]]
    if form == "compressed":
        for i in (0, 1):
            codec = meta[f"state{i}"]
            if codec != "none" and not codec.startswith("plain<") and codec not in REFERENCE_CODECS:
                raise ValueError(f"state{i} codec {codec} is not the reference layout; "
                                 "save the fp32 (or state16) form and convert that")
    bytewidth = None if form == "fp32" else _master_bytewidth(meta)
    quantize = form == "compressed" and any(meta[f"state{i}"] in REFERENCE_CODECS for i in (0, 1))
    param_groups = []
    for g, hyper in enumerate(hypers):
        group = {k: v for k, v in hyper.items() if k not in ("beta1", "beta2")}
        if "beta1" in hyper:
            group["betas"] = [hyper["beta1"], hyper["beta2"]]
        group.update({"master_bytewidth": bytewidth, "quantize": quantize,
                      "params": [i for i in range(len(names)) if tensor_groups[i] == g]})
        param_groups.append(group)

    out = {}
    for i, name in enumerate(names):
        out[f"model.{name}"] = tensors.pop(name)
        prefix = name + "::"
        for key in [k for k in tensors if k.startswith(prefix)]:
            out[f"state.{i}.{key[len(prefix):]}"] = tensors.pop(key)
        if rule in ("adam", "adamw"):
            out[f"state.{i}.step"] = Tensor("I64", [], struct.pack("<q", int(meta["step"])))
    if tensors:
        raise ValueError(f"tensors not in the tensor list: {sorted(tensors)}")
    carried = {k: v for k, v in meta.items() if not k.startswith("crc32/") and k != "header_crc32"}
    ref_meta = {"format": REFERENCE_FORMAT, "param_groups": json.dumps(param_groups), "param_names": json.dumps(names),
                "state_keys": json.dumps(slots), "flashoptim": json.dumps(carried, sort_keys=True)}
    write_atomic(dst, serialize(ref_meta, out))


def from_reference(src, dst, rule=None, step=None):
    """Flattened reference state dict -> flashoptim checkpoint. Exact when `src`
    came from to_reference; otherwise the configuration is derived from the
    dtypes (pass the rule; Adam's step is read from the state)."""
    meta, tensors = read_safetensors(src)
    if meta.get("format") != REFERENCE_FORMAT:
        raise ValueError(f"{src}: not a flattened reference state dict")
    names = json.loads(meta["param_names"])
    groups = json.loads(meta["param_groups"])
    out = {}
    for i, name in enumerate(names):
        out[name] = tensors.pop(f"model.{name}")
        for key in [k for k in tensors if k.startswith(f"state.{i}.")]:
            if key == f"state.{i}.step":
                t = tensors.pop(key)
                if t.dtype != "I64" or len(t.data) != 8:
                    raise ValueError(f"{key}: a step is one I64 value, got {t.dtype} of shape {t.shape}")
                value = struct.unpack("<q", t.data)[0]
                if step is None:
                    step = value
                elif step != value:
                    raise ValueError(f"parameter {i} is at step {value}, another at {step}")
                continue
            out[f"{name}::{key[len(f'state.{i}.'):]}"] = tensors.pop(key)
    if tensors:
        raise ValueError(f"entries of no listed parameter: {sorted(tensors)[:5]}")
    # The C++ loader resumes at step + 1: it must be a count in [0, 2^63 - 2].
    if step is not None and not 0 <= step < 2**63 - 1:
        raise ValueError(f"step {step} is not a completed-step count in [0, 2^63 - 2]")
    if "flashoptim" in meta:
        fo = json.loads(meta["flashoptim"])
        if step is not None and str(step) != fo["step"]:
            raise ValueError(f"step {step} disagrees with the recorded {fo['step']}")
        write_checkpoint(dst, fo, out)
        return

    # A state dict the reference wrote: derive the configuration.
    if rule not in HYPER_FIELDS:
        raise ValueError("pass --rule (sgd, sgdw, adam, adamw, lion): the state dict does not record it")
    if not isinstance(groups, list) or not groups:
        raise ValueError("param_groups is not a non-empty list")

    def hyper_of(g):
        hyper = {}
        for field in HYPER_FIELDS[rule]:
            if field in ("beta1", "beta2"):
                hyper[field] = float(g["betas"][0 if field == "beta1" else 1])
            elif field in ("nesterov", "decouple_lr"):
                hyper[field] = bool(g.get(field, False))
            elif field == "initial_lr":
                hyper[field] = float(g.get("initial_lr", 0.0)) if g.get("decouple_lr") else 0.0
            else:
                hyper[field] = float(g[field])
        return hyper
    hypers = [hyper_of(g) for g in groups]
    # Groups that differ in hyperparameters: a version-3 checkpoint (one
    # parameter group each); groups that agree: one set, version 2, as before.
    grouped = any(h != hypers[0] for h in hypers)
    tensor_groups = [None] * len(names)
    if grouped:
        for gi, g in enumerate(groups):
            for i in g.get("params", []):
                if not isinstance(i, int) or isinstance(i, bool) or not 0 <= i < len(names):
                    raise ValueError(f"param_groups[{gi}]: parameter index {i!r} is not one of {len(names)}")
                if tensor_groups[i] is not None:
                    raise ValueError(f"parameter {i} is in param_groups {tensor_groups[i]} and {gi}")
                tensor_groups[i] = gi
        if None in tensor_groups:
            raise ValueError(f"parameter {tensor_groups.index(None)} is in no parameter group")
    hyper = hypers[0]
    first = names[0] if names else None
    param_dtype = out[first].dtype if first else "F32"
    inverse = {v: k for k, v in LIBRARY_DTYPE.items()}
    keys = STATE_KEYS[rule] if (rule not in ("sgd", "sgdw") or any(h["momentum"] != 0.0 for h in hypers)) else []
    errors = out.get(f"{first}::error_bits") if first else None
    fp32_form = param_dtype == "F32" and errors is None
    fo = {"format": FORMAT, "format_version": "2", "library_version": "0.2.0", "rule": rule,
          "form": "fp32" if fp32_form else "compressed", "grad_dtype": inverse.get(param_dtype, "fp32"),
          "param_dtype": inverse[param_dtype], "hyper": json.dumps(hyper, sort_keys=True, separators=(",", ":")),
          "step": str(step or 0), "tensors": json.dumps(names, separators=(",", ":"), ensure_ascii=False),
          "seeds": json.dumps(["0"] * len(names), separators=(",", ":")),
          "index_bases": json.dumps(["0"] * len(names), separators=(",", ":"))}
    if errors is not None:
        fo["master"] = f"ulp_correction<{inverse[param_dtype]},{inverse[errors.dtype]}>"
    else:
        fo["master"] = f"native<{inverse[param_dtype]}>"
    group_size = 1
    for i in (0, 1):
        key = keys[i] if i < len(keys) else ""
        codec, scale, size = "none", "none", 1
        if key and first and f"{first}::{key}::quantized" in out:
            signed = out[f"{first}::{key}::quantized"].dtype == "I8"
            codec = "grouped<int8,softsign,fp16_reference,half_up,32>" if signed else \
                    "grouped<uint8,sqrt,fp16_reference,half_up,32>"
            scale, size = "fp16_reference", 32
        elif key and first:
            plain = out[f"{first}::{key}"].dtype
            codec = f"plain<{inverse[plain]},nearest_even>"
            if fp32_form and plain != "F32":
                raise ValueError("fp32 weights with 16-bit states: convert the states to fp32 first")
        group_size = max(group_size, size)
        fo[f"state{i}"], fo[f"state{i}.key"], fo[f"state{i}.scale"] = codec, key, scale
        fo[f"state{i}.group_size"] = str(size)
    fo["group_size"] = str(group_size)
    if grouped:
        del fo["hyper"]
        fo["format_version"] = "3"
        fo["param_groups"] = json.dumps(hypers, sort_keys=True, separators=(",", ":"))
        fo["tensor_groups"] = json.dumps(tensor_groups, separators=(",", ":"))
    write_checkpoint(dst, fo, out)


def to_torch(path):
    """(model_state_dict, optimizer_state_dict) of a flattened reference file,
    as torch tensors, with the dtype views the reference's state_dict() makes
    for bf16 parameters (fp16 scales viewed as bf16, int8 corrections cast).
    Needs torch; not exercised by this project's CI, which has no torch."""
    import torch
    meta, tensors = read_safetensors(path)
    names = json.loads(meta["param_names"])
    torch_dtype = {"F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16, "I8": torch.int8,
                   "U8": torch.uint8, "I16": torch.int16, "I64": torch.int64}

    def tensor(t):
        return torch.frombuffer(bytearray(t.data), dtype=torch_dtype[t.dtype]).reshape(t.shape).clone()

    model = {n: tensor(tensors[f"model.{n}"]) for n in names}
    state = {}
    for key, t in tensors.items():
        if key.startswith("state."):
            _, i, k = key.split(".", 2)
            value = tensor(t)
            p = model[names[int(i)]]
            if p.dtype == torch.bfloat16 and k.endswith("::scales"):
                value = value.view(torch.bfloat16)
            if k == "error_bits" and value.dtype == torch.int8 and p.dtype in (torch.bfloat16, torch.float16):
                value = value.to(p.dtype)
            elif k == "error_bits" and value.dtype == torch.int16:
                value = value.view(p.dtype)
            state.setdefault(int(i), {})[k] = value
    return model, {"state": state, "param_groups": json.loads(meta["param_groups"])}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    a = sub.add_parser("to-reference")
    a.add_argument("src")
    a.add_argument("dst")
    b = sub.add_parser("from-reference")
    b.add_argument("src")
    b.add_argument("dst")
    b.add_argument("--rule")
    b.add_argument("--step", type=int)
    c = sub.add_parser("info")
    c.add_argument("src")
    args = ap.parse_args(argv)
    try:
        if args.cmd == "to-reference":
            to_reference(args.src, args.dst)
        elif args.cmd == "from-reference":
            from_reference(args.src, args.dst, args.rule, args.step)
        else:
            meta, tensors = read_checkpoint(args.src)
            for k in sorted(meta):
                if not k.startswith("crc32/"):
                    print(f"{k}: {meta[k]}")
            print(f"tensors: {len(tensors)}, checksums verified")
    except (ValueError, KeyError, OSError) as e:
        print(f"flashoptim_convert: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
