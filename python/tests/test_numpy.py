# SPDX-FileCopyrightText: 2026 flashoptim authors
# SPDX-License-Identifier: Apache-2.0
"""The numpy-facing layer (flashoptim_kernels.make / Optimizer), no torch:
bytes equal to the library's serial step, torch-style per-tensor step counts,
gradient release, state round trips, the gradient pass, reports, bad inputs."""
import math
import subprocess
import sys

import numpy as np
import pytest

import flashoptim_kernels as fk

CONFIGS = sorted(f"{r}/{m}/{s}"
                 for m, s in (("bf16+int8", "8bit"), ("bf16+fp32", "8bit"), ("fp32", "fp32"))
                 for r in ("adamw", "adam", "sgd", "sgdw", "lion")) + sorted(
    f"{r}/{m}/none" for r in ("sgd", "sgdw") for m in ("bf16+int8", "bf16+fp32", "fp32"))
SIZES = [(37,), (0,), (33, 40), (5,)]  # a partial 32-group, an empty tensor, a 2-D tensor


def bf16_bits(x):
    """float32 -> bf16 bits (round to nearest even), as uint16."""
    u = np.asarray(x, np.float32).view(np.uint32).astype(np.uint64)
    u = (u + 0x7FFF + ((u >> 16) & 1)) >> 16
    return u.astype(np.uint16)


def bf16_value(b):
    return (b.astype(np.uint32) << 16).view(np.float32)


def hyper(config, **kw):
    rule = config.split("/")[0]
    h = {"lr": 1e-2}
    if rule in ("adamw", "lion", "sgdw"):
        h["weight_decay"] = 0.1
    if rule in ("sgd", "sgdw") and not config.endswith("/none"):
        h["momentum"] = 0.9
    h.update(kw)
    return h


class Model:
    """Params and grads of SIZES in two groups, for one configuration."""

    def __init__(self, config, seed=1):
        self.config = config
        self.bf16 = "/bf16" in config
        self.rng = np.random.default_rng(seed)
        self.params = [self.make(s, 0.5) for s in SIZES]
        self.grads = [self.make(s, 1.0) for s in SIZES]

    def make(self, shape, sigma):
        x = (self.rng.standard_normal(shape) * sigma).astype(np.float32)
        return bf16_bits(x) if self.bf16 else x

    def new_grads(self):
        for g in self.grads:
            g[...] = self.make(g.shape, 1.0)

    def groups(self, wd_group1=0.0):
        t = [(p, g, f"w{i}") for i, (p, g) in enumerate(zip(self.params, self.grads))]
        return [(t[:2], hyper(self.config)), (t[2:], hyper(self.config, weight_decay=wd_group1))]

    def optimizer(self, **kw):
        return fk.make(self.config, self.groups(), seed=3, **kw)


def snapshot(opt, model):
    return [p.copy() for p in model.params], [opt.state(i) for i in range(opt.tensor_count)]


def same(a, b):
    pa, sa = a
    pb, sb = b
    assert all(np.array_equal(x, y) for x, y in zip(pa, pb))
    for x, y in zip(sa, sb):
        assert x.keys() == y.keys()
        for k in x:
            assert np.array_equal(np.asarray(x[k]), np.asarray(y[k])), k


def test_configurations_are_the_documented_list():
    assert sorted(fk.configurations()) == sorted(CONFIGS)
    assert fk.has_cuda is False or fk.has_cuda is True


@pytest.mark.parametrize("config", CONFIGS)
def test_steps_equal_the_serial_step(config):
    m = Model(config)
    opt = m.optimizer()
    assert opt.names == ["w0", "w1", "w2", "w3"]
    assert opt.tensor_group == [0, 0, 1, 1]
    for _ in range(3):
        m.new_grads()
        assert opt.step_and_compare_serial() == ""
    assert opt.step_counts() == [3, 3, 3, 3]
    # a tensor without a gradient is skipped and keeps its count (torch's per-parameter "step")
    before = m.params[2].copy()
    opt.set_grad(2, None)
    m.new_grads()
    assert opt.step_and_compare_serial() == ""
    assert opt.step_counts() == [4, 4, 3, 4]
    assert np.array_equal(m.params[2], before)
    opt.set_grad(2, m.grads[2])
    assert opt.step_and_compare_serial() == ""  # each tensor with its own count
    assert opt.step_counts() == [5, 5, 4, 5]


@pytest.mark.parametrize("config", ["adamw/bf16+int8/8bit", "lion/bf16+fp32/8bit", "sgd/fp32/fp32"])
def test_release_steps_equal_the_fused_step(config):
    a, b = Model(config), Model(config)
    oa, ob = a.optimizer(), b.optimizer()
    for _ in range(2):
        a.new_grads()
        for ga, gb in zip(a.grads, b.grads):
            gb[...] = ga
        oa.step()
        ob.begin_step()
        assert ob.in_release_step
        for i in reversed(range(ob.tensor_count)):
            ob.step_tensor(i)
        ob.end_step()
    same(snapshot(oa, a), snapshot(ob, b))
    assert ob.step_counts() == [2] * 4


def test_release_refuses_a_missing_tensor_and_a_second_step():
    m = Model("adamw/bf16+int8/8bit")
    opt = m.optimizer()
    opt.begin_step()
    opt.step_tensor(0)
    with pytest.raises(fk.FlashoptimError, match="already stepped"):
        opt.step_tensor(0)
    with pytest.raises(fk.FlashoptimError, match="was not stepped"):
        opt.end_step()
    with pytest.raises(ValueError, match="release step is open"):
        opt.step()


def test_adamw_fp32_matches_a_numpy_reference():
    rng = np.random.default_rng(0)
    p = rng.standard_normal(1000).astype(np.float32)
    ref = p.astype(np.float64)
    m = np.zeros_like(ref)
    v = np.zeros_like(ref)
    g = np.zeros(1000, np.float32)
    lr, b1, b2, eps, wd = 1e-2, 0.9, 0.999, 1e-8, 0.1
    opt = fk.make("adamw/fp32/fp32", [([(p, g)], dict(lr=lr, beta1=b1, beta2=b2, eps=eps, weight_decay=wd))])
    for t in range(1, 11):
        g[...] = rng.standard_normal(1000).astype(np.float32)
        opt.step()
        ref *= 1 - lr * wd
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g.astype(np.float64) ** 2
        ref -= lr / (1 - b1 ** t) * m / (np.sqrt(v / (1 - b2 ** t)) + eps)
    # fp32 arithmetic against float64: a few fp32 ULPs of the update per step
    np.testing.assert_allclose(p, ref, rtol=0, atol=1e-5)


def test_state_round_trip_continues_bit_identically():
    config = "adamw/bf16+int8/8bit"
    a, b = Model(config), Model(config, seed=9)
    oa = a.optimizer()
    for _ in range(3):
        a.new_grads()
        oa.step()
    ob = b.optimizer()
    for i in range(oa.tensor_count):
        b.params[i][...] = a.params[i]
        ob.set_state(i, oa.state(i))
    assert ob.step_counts() == [3] * 4
    for _ in range(2):
        a.new_grads()
        for ga, gb in zip(a.grads, b.grads):
            gb[...] = ga
        oa.step()
        ob.step()
    same(snapshot(oa, a), snapshot(ob, b))


def test_set_state_refuses_wrong_sizes_and_keys_and_writes_nothing():
    m = Model("adamw/bf16+int8/8bit")
    opt = m.optimizer()
    m.new_grads()
    opt.step()
    good = opt.state(0)
    before = snapshot(opt, m)
    bad = dict(good, state0=np.zeros(good["state0"].size + 1, np.uint8))
    with pytest.raises(ValueError, match="bytes"):
        opt.set_state(0, bad)
    with pytest.raises(ValueError, match="missing"):
        opt.set_state(0, {k: v for k, v in good.items() if k != "correction"})
    with pytest.raises(ValueError, match="unknown keys"):
        opt.set_state(0, dict(good, extra=np.zeros(1, np.uint8)))
    same(before, snapshot(opt, m))


def test_gradient_pass_clips_like_a_scaled_step():
    config = "adamw/fp32/fp32"
    a, b = Model(config), Model(config)
    oa, ob = a.optimizer(), b.optimizer()
    a.new_grads()
    for ga, gb in zip(a.grads, b.grads):
        gb[...] = ga
    out = oa.step_grad_pass(0.5, {"enabled": False}, {})
    norm = math.sqrt(sum(float(np.sum(g.astype(np.float64) ** 2)) for g in a.grads))
    assert out["total_norm"] == pytest.approx(norm, rel=1e-6)
    assert out["clip_coef"] == pytest.approx(0.5 / (norm + 1e-6), rel=1e-6)
    assert not out["skip"]
    ob.step(out["multiplier"])
    same(snapshot(oa, a), snapshot(ob, b))


def test_gradient_pass_skips_a_non_finite_gradient_and_backs_off():
    m = Model("adamw/bf16+int8/8bit")
    opt = m.optimizer()
    m.grads[0][3] = 0x7FC0  # bf16 NaN
    before = snapshot(opt, m)
    out = opt.step_grad_pass(math.inf, {"init_scale": 1024.0}, {"loss_scale": 1024.0})
    assert out["skip"]
    assert out["loss_scale"] == 512.0
    assert opt.step_counts() == [0] * 4
    same(before, snapshot(opt, m))


def test_hyperparameters_and_lr():
    m = Model("adamw/bf16+int8/8bit")
    opt = m.optimizer()
    assert opt.hyper(1)["weight_decay"] == 0.0
    opt.set_lr(1, 3e-4)
    assert opt.hyper(1)["lr"] == 3e-4
    opt.set_hyper(0, {"beta2": 0.95})
    h = opt.hyper(0)
    assert h["beta2"] == 0.95 and h["lr"] == 1e-2 and h["weight_decay"] == 0.1
    with pytest.raises(fk.FlashoptimError):
        opt.set_lr(0, -1.0)
    with pytest.raises(ValueError, match="unknown hyperparameter 'momentum'"):
        opt.set_hyper(0, {"momentum": 0.9})
    with pytest.raises(IndexError):
        opt.set_lr(2, 1e-3)


def test_memory_report():
    p = np.zeros(1 << 16, np.uint16)
    g = np.zeros(1 << 16, np.uint16)
    opt = fk.make("adamw/bf16+int8/8bit", [([(p, g)], {})])
    r = opt.memory()
    assert r["elements"] == 1 << 16
    assert r["param_bytes"] == 2 << 16 and r["grad_bytes"] == 2 << 16
    assert r["correction_bytes"] == 1 << 16  # int8 correction
    assert r["state_code_bytes"] == 2 << 16  # two 8-bit states
    assert r["bytes_per_param_release"] == pytest.approx(5.25)  # + fp16 group scales
    assert "per parameter" in opt.memory_string()


def test_lr_report_names_a_tensor_the_lr_cannot_move():
    p = bf16_bits(np.full(64, 1.0, np.float32))
    g = bf16_bits(np.full(64, 1.0, np.float32))
    opt = fk.make("adamw/bf16+int8/8bit", [([(p, g, "big")], {"lr": 1e-9, "weight_decay": 0.0})], lr_check="off")
    r = opt.lr_report()
    assert [e["name"] for e in r["cannot_move"]] == ["big"]
    assert "cannot move" in r["summary"]
    opt.set_lr(0, 1e-2)
    assert opt.lr_report()["cannot_move"] == []


# ---------------------------------------------------------------- bad inputs

def test_bad_inputs_get_clear_errors():
    p = np.zeros((4, 8), np.float32)
    g = np.zeros((4, 8), np.float32)
    with pytest.raises(ValueError, match="not C-contiguous"):
        fk.make("adamw/fp32/fp32", [([(p[:, ::2], g[:, ::2])], {})])
    with pytest.raises(TypeError, match="dtype float64"):
        fk.make("adamw/fp32/fp32", [([(p.astype(np.float64), g)], {})])
    with pytest.raises(TypeError, match="dtype float32 is not the configuration's bfloat16"):
        fk.make("adamw/bf16+int8/8bit", [([(p, g)], {})])
    with pytest.raises(ValueError, match="grad has 31 elements"):
        fk.make("adamw/fp32/fp32", [([(p, g.ravel()[:31])], {})])
    ro = p.copy()
    ro.flags.writeable = False
    with pytest.raises(TypeError, match="writable"):
        fk.make("adamw/fp32/fp32", [([(ro, g)], {})])
    with pytest.raises(ValueError, match="unknown hyperparameter"):
        fk.make("adamw/fp32/fp32", [([(p, g)], {"betas": (0.9, 0.99)})])
    with pytest.raises(fk.FlashoptimError, match="beta1"):
        fk.make("adamw/fp32/fp32", [([(p, g)], {"beta1": 1.5})])
    with pytest.raises(ValueError, match="not compiled in"):
        fk.make("adamw/fp16/fp32", [([(p, g)], {})])
    with pytest.raises(ValueError, match="CPU arrays only|a CUDA one"):
        fk.make("adamw/fp32/fp32", [([(p, g)], {})], device="cuda")
    with pytest.raises(fk.FlashoptimError, match="name"):
        fk.make("adamw/fp32/fp32", [([(p, g, "x"), (p.copy(), g, "x")], {})])
    with pytest.raises(fk.FlashoptimError):  # the same param twice: written buffers overlap
        fk.make("adamw/fp32/fp32", [([(p, g), (p, g)], {})])
    with pytest.raises(ValueError, match="lr_check"):
        fk.make("adamw/fp32/fp32", [([(p, g)], {})], lr_check="loud")


def test_a_refused_step_writes_nothing():
    m = Model("adamw/bf16+int8/8bit")
    opt = m.optimizer()
    m.new_grads()
    opt.step()
    before = snapshot(opt, m)
    opt.set_grad(0, None)  # the subset path (per-tensor counts)
    with pytest.raises(fk.FlashoptimError):
        opt.step(0.0)  # a gradient multiplier of 0 is refused
    same(before, snapshot(opt, m))
    assert opt.step_counts() == [1] * 4


def test_config_names_from_the_papers_arguments():
    assert fk.config_name("adamw", "bfloat16") == "adamw/bf16+int8/8bit"
    assert fk.config_name("adam", "bfloat16", 32) == "adam/bf16+fp32/8bit"
    assert fk.config_name("sgd", "bfloat16", 24, True, 0.0) == "sgd/bf16+int8/none"
    assert fk.config_name("sgdw", "float32", None, False, 0.9) == "sgdw/fp32/fp32"
    with pytest.raises(ValueError, match="master_weight_bits=None"):
        fk.config_name("adamw", "bfloat16", None)
    with pytest.raises(ValueError, match="master_weight_bits"):
        fk.config_name("adamw", "bfloat16", 16)


def test_imports_without_torch():
    code = ("import sys; sys.modules['torch'] = None\n"
            "import flashoptim_kernels as fk\n"
            "assert fk.configurations()\n"
            "try:\n    fk.FlashAdamW\nexcept ImportError:\n    print('lazy')\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "lazy"


@pytest.mark.parametrize("config,rel", [("adamw/bf16+int8/8bit", 2.0 ** -14), ("adamw/bf16+fp32/8bit", 0.0),
                                        ("adamw/fp32/fp32", 0.0)])
def test_fp32_weights_split_and_decode(config, rel):
    m = Model(config)
    opt = m.optimizer()
    x = np.random.default_rng(5).standard_normal(m.params[2].size).astype(np.float32)
    before = [opt.state(i) for i in range(opt.tensor_count)]
    opt.set_fp32_param(2, x)
    y = opt.fp32_param(2)
    assert y.dtype == np.float32 and y.shape == (x.size,)
    np.testing.assert_allclose(y, x, rtol=rel, atol=0)
    if m.bf16:  # the param is bf16 of the weight
        np.testing.assert_allclose(bf16_value(m.params[2].ravel()), x, rtol=2.0 ** -8)
    else:
        assert np.array_equal(m.params[2].ravel(), x)
    # states are untouched, other tensors too
    after = [opt.state(i) for i in range(opt.tensor_count)]
    for i, (a, b) in enumerate(zip(before, after)):
        for k in a:
            if i != 2 or k != "correction":
                assert np.array_equal(np.asarray(a[k]), np.asarray(b[k])), (i, k)
    with pytest.raises(ValueError, match="elements"):
        opt.set_fp32_param(2, x[:-1])
    with pytest.raises(TypeError):
        opt.set_fp32_param(2, x.astype(np.float64))


def test_strict_lr_check_refuses_every_step_path():
    p = bf16_bits(np.full(64, 1.0, np.float32))
    q = p.copy()
    g = bf16_bits(np.full(64, 1.0, np.float32))
    opt = fk.make("adamw/bf16+int8/8bit", [([(p, g, "a"), (q, g, "b")], {"lr": 1e-9, "weight_decay": 0.0})],
                  lr_check="strict")
    before = (p.copy(), q.copy(), [opt.state(i) for i in range(2)])
    with pytest.raises(fk.FlashoptimError, match="strict"):
        opt.step()
    opt.set_grad(1, None)  # the per-tensor path refuses too
    with pytest.raises(fk.FlashoptimError, match="strict"):
        opt.step()
    assert np.array_equal(p, before[0]) and np.array_equal(q, before[1])
    assert opt.step_counts() == [0, 0]


def test_empty_arrays_with_any_strides_are_accepted():
    # numpy 2 gives an empty array stride 0; an empty tensor is contiguous whatever its strides
    m = Model(CONFIGS[0])
    i = SIZES.index((0,))
    m.params[i] = np.lib.stride_tricks.as_strided(m.params[i], shape=(0,), strides=(0,))
    m.grads[i] = np.lib.stride_tricks.as_strided(m.grads[i], shape=(0,), strides=(0,))
    opt = m.optimizer()
    m.new_grads()
    assert opt.step_and_compare_serial() == ""


@pytest.mark.parametrize("config", CONFIGS)
def test_states_decode_and_encode_back_to_the_same_bytes(config):
    # compress_state_dict=False writes decode_states' values; loading them
    # encodes them again: after real steps the bytes come back unchanged
    m = Model(config)
    opt = m.optimizer()
    for _ in range(3):
        m.new_grads()
        opt.step()
    for i in range(opt.tensor_count):
        s = opt.state(i)
        n = m.params[i].size
        values = fk.decode_states(config, s, n)
        slots = 0 if config.endswith("/none") else (2 if config.split("/")[0] in ("adamw", "adam") else 1)
        assert sorted(values) == [f"state{k}" for k in range(slots)]
        for v in values.values():
            assert v.dtype == np.float32 and v.shape == (n,)
        enc = fk.encode_states(config, values, n)
        for k, v in enc.items():
            assert np.array_equal(v, s[k]), (i, k)
        if config.startswith("adam") and n:
            assert (values["state1"] >= 0).all()  # the second moment is v itself, not sqrt(v)


def test_decode_and_encode_states_refuse_bad_input():
    m = Model("adamw/bf16+int8/8bit")
    opt = m.optimizer()
    m.new_grads()
    opt.step()
    s = opt.state(0)
    n = m.params[0].size
    with pytest.raises(ValueError, match="not compiled"):
        fk.decode_states("adamw/nope/8bit", s, n)
    with pytest.raises(ValueError, match="bytes"):
        fk.decode_states("adamw/bf16+int8/8bit", s, n + 1)
    with pytest.raises(ValueError, match="missing"):
        fk.decode_states("adamw/bf16+int8/8bit", {k: v for k, v in s.items() if k != "state1"}, n)
    values = fk.decode_states("adamw/bf16+int8/8bit", s, n)
    with pytest.raises(ValueError, match="elements"):
        fk.encode_states("adamw/bf16+int8/8bit", dict(values, state0=np.zeros(n + 1, np.float32)), n)
    with pytest.raises(TypeError, match="float32"):
        fk.encode_states("adamw/bf16+int8/8bit", dict(values, state0=np.zeros(n, np.float64)), n)
    with pytest.raises(ValueError, match="missing"):
        fk.encode_states("adamw/bf16+int8/8bit", {"state0": values["state0"]}, n)
