# SPDX-FileCopyrightText: 2026 flashoptim authors
# SPDX-License-Identifier: Apache-2.0
"""The torch.optim classes (skipped without torch). Tolerances: fp32 params
with fp32 states against torch.optim within 1e-5 relative / 1e-6 absolute
after five steps (the same fp32 formula in another operation order); the
default bf16 + int8 correction + 8-bit states, forward in bf16, against
torch's fp32 AdamW on the same start after 10 steps of lr 1e-2: mean
|difference| <= 5e-3 and max <= 5e-2 on weights of |w| <= 0.25 (8-bit states,
bf16 gradients, and the bf16 parameter's own rounding, ~1e-3 there)."""
import copy

import pytest

torch = pytest.importorskip("torch")

import flashoptim_kernels as fk  # noqa: E402
from flashoptim_kernels import FlashAdam, FlashAdamW, FlashLion, FlashSGD, FlashSGDW  # noqa: E402

pytestmark = pytest.mark.torch


def model(dtype=torch.float32, seed=0, device="cpu"):
    torch.manual_seed(seed)
    m = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.GELU(), torch.nn.Linear(32, 4))
    return m.to(device=device, dtype=dtype)


def batch(seed, dtype=torch.float32, device="cpu"):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(8, 16, generator=g).to(device=device, dtype=dtype)
    y = torch.randn(8, 4, generator=g).to(device=device, dtype=dtype)
    return x, y


def train(m, opt, steps, start=0, scaler=None):
    for s in range(start, start + steps):
        x, y = batch(s, next(m.parameters()).dtype, next(m.parameters()).device)
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(m(x), y)
        if scaler is None:
            loss.backward()
            opt.step()
        else:
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()


PAIRS = [
    (FlashAdamW, torch.optim.AdamW, dict(lr=1e-2, weight_decay=0.1)),
    (FlashAdam, torch.optim.Adam, dict(lr=1e-2, weight_decay=0.01)),
    (FlashSGD, torch.optim.SGD, dict(lr=1e-2, momentum=0.9, weight_decay=0.01)),
    (FlashSGD, torch.optim.SGD, dict(lr=1e-2, momentum=0.9, nesterov=True)),
    (FlashSGDW, None, dict(lr=1e-2, momentum=0.9, weight_decay=0.01)),
]


@pytest.mark.parametrize("ours,theirs,kw", [p for p in PAIRS if p[1] is not None])
def test_fp32_matches_torch_optim(ours, theirs, kw):
    a, b = model(), model()
    oa, ob = ours(a.parameters(), **kw), theirs(b.parameters(), **kw)
    train(a, oa, 5)
    train(b, ob, 5)
    for pa, pb in zip(a.parameters(), b.parameters()):
        torch.testing.assert_close(pa, pb, rtol=1e-5, atol=1e-6)


def test_bf16_default_is_close_to_fp32_adamw():
    a, b = model(), model()
    ref = torch.optim.AdamW(b.parameters(), lr=1e-2, weight_decay=0.1)
    a = a.to(torch.bfloat16)
    opt = FlashAdamW(a.parameters(), lr=1e-2, weight_decay=0.1)
    assert opt._engines[0][0].config == "adamw/bf16+int8/8bit"
    for s in range(10):
        x, y = batch(s)
        for m, o, dt in ((a, opt, torch.bfloat16), (b, ref, torch.float32)):
            o.zero_grad()
            torch.nn.functional.mse_loss(m(x.to(dt)).float(), y).backward()
            o.step()
    for pa, pb in zip(a.parameters(), b.parameters()):
        d = (pa.float() - pb).abs()
        assert d.mean() <= 5e-3 and d.max() <= 5e-2, (d.mean(), d.max())


@pytest.mark.parametrize("cls,kw", [(FlashAdamW, {}), (FlashLion, {"lr": 1e-3}), (FlashSGDW, {"momentum": 0.9}),
                                    (FlashAdamW, {"master_weight_bits": 32})])
def test_state_dict_round_trip_is_bit_exact(cls, kw):
    a = model(torch.bfloat16)
    oa = cls(a.parameters(), **kw)
    train(a, oa, 3)
    sd = copy.deepcopy(oa.state_dict())
    assert set(sd["state"][0]) >= {"step", "correction", "state0"}
    b = copy.deepcopy(a)
    ob = cls(b.parameters(), **kw)
    ob.load_state_dict(sd)
    train(a, oa, 3, start=3)
    train(b, ob, 3, start=3)
    for pa, pb in zip(a.parameters(), b.parameters()):
        assert torch.equal(pa.view(torch.int16), pb.view(torch.int16))
    sa, sb = oa.state_dict()["state"], ob.state_dict()["state"]
    for k in sa:
        for key in sa[k]:
            assert torch.equal(sa[k][key], sb[k][key]), key


def test_fp32_model_state_dict_round_trip():
    ref = model()
    a = model(torch.bfloat16)
    opt = FlashAdamW(a.parameters(), lr=1e-2)
    opt.set_fp32_model_state_dict(a, ref.state_dict())
    sd = opt.get_fp32_model_state_dict(a)
    for name, p in ref.state_dict().items():
        assert sd[name].dtype == torch.float32
        torch.testing.assert_close(sd[name], p, rtol=2.0 ** -14, atol=0)
        torch.testing.assert_close(dict(a.named_parameters())[name].float(), p, rtol=2.0 ** -8, atol=0)


def test_a_parameter_without_grad_is_skipped_with_its_own_step_count():
    a, b = model(), model()
    oa = FlashAdamW(a.parameters(), lr=1e-2)
    ob = torch.optim.AdamW(b.parameters(), lr=1e-2)
    for m, o in ((a, oa), (b, ob)):
        for s in range(4):
            x, y = batch(s)
            o.zero_grad()
            torch.nn.functional.mse_loss(m(x), y).backward()
            if s == 1:
                m[0].weight.grad = None  # skipped in step 2
            o.step()
    for pa, pb in zip(a.parameters(), b.parameters()):
        torch.testing.assert_close(pa, pb, rtol=1e-5, atol=1e-6)
    steps = [int(s["step"]) for s in oa.state_dict()["state"].values()]
    assert steps == [3, 4, 4, 4]


def test_gradient_release_equals_the_step():
    a = model(torch.bfloat16)
    b = copy.deepcopy(a)
    oa, ob = FlashAdamW(a.parameters(), lr=1e-2), FlashAdamW(b.parameters(), lr=1e-2)
    ob.enable_gradient_release()
    train(a, oa, 3)
    train(b, ob, 3)  # backward steps every parameter; step() checks
    assert all(p.grad is None for p in b.parameters())
    for pa, pb in zip(a.parameters(), b.parameters()):
        assert torch.equal(pa.view(torch.int16), pb.view(torch.int16))
    sa, sb = oa.state_dict()["state"], ob.state_dict()["state"]
    for k in sa:
        for key in sa[k]:
            assert torch.equal(sa[k][key], sb[k][key]), key


def test_param_groups_and_lr_scheduler():
    m = model()
    opt = FlashAdamW([{"params": m[0].parameters(), "weight_decay": 0.1},
                      {"params": m[2].parameters(), "weight_decay": 0.0, "lr": 1e-3}], lr=1e-2)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.5)
    train(m, opt, 1)
    sched.step()
    train(m, opt, 1, start=1)
    engine = opt._engines[0][0]
    assert engine.hyper(0)["lr"] == pytest.approx(5e-3)
    assert engine.hyper(1)["lr"] == pytest.approx(5e-4)
    assert engine.hyper(1)["weight_decay"] == 0.0


def test_add_param_group_keeps_existing_state():
    m = model()
    opt = FlashAdamW(m[0].parameters(), lr=1e-2)
    train(m, opt, 2)
    before = {k: {kk: vv.clone() for kk, vv in v.items()} for k, v in opt.state_dict()["state"].items()}
    opt.add_param_group({"params": m[2].parameters(), "lr": 1e-3})
    after = opt.state_dict()["state"]
    for k in before:
        for key in before[k]:
            assert torch.equal(before[k][key], after[k][key])
    assert int(after[2]["step"]) == 0
    train(m, opt, 1, start=2)


def test_mixed_parameter_dtypes_in_one_optimizer():
    m = model()
    m[0].to(torch.bfloat16)
    opt = FlashAdamW(m.parameters(), lr=1e-2)
    assert sorted(e.config for e, _ in opt._engines) == ["adamw/bf16+int8/8bit", "adamw/fp32/fp32"]
    x, y = batch(0)
    opt.zero_grad()
    h = m[0](x.to(torch.bfloat16)).float()
    torch.nn.functional.mse_loss(m[2](m[1](h)), y).backward()
    before = [p.detach().clone() for p in m.parameters()]
    opt.step()
    assert all(not torch.equal(b, p) for b, p in zip(before, m.parameters()))


def test_grad_scaler_interplay():
    a, b = model(), model()
    oa = FlashAdamW(a.parameters(), lr=1e-2)
    ob = torch.optim.AdamW(b.parameters(), lr=1e-2)
    sa = torch.amp.GradScaler("cpu", init_scale=1024.0)
    sb = torch.amp.GradScaler("cpu", init_scale=1024.0)
    train(a, oa, 3, scaler=sa)
    train(b, ob, 3, scaler=sb)
    for pa, pb in zip(a.parameters(), b.parameters()):
        torch.testing.assert_close(pa, pb, rtol=1e-5, atol=1e-6)


def test_check_numerics_refuses_a_non_finite_gradient():
    m = model()
    opt = FlashAdamW(m.parameters(), lr=1e-2, check_numerics=True)
    x, y = batch(0)
    torch.nn.functional.mse_loss(m(x), y).backward()
    m[0].weight.grad[0, 0] = float("nan")
    before = [p.detach().clone() for p in m.parameters()]
    with pytest.raises(FloatingPointError):
        opt.step()
    assert all(torch.equal(b, p) for b, p in zip(before, m.parameters()))


def test_closure_and_memory_report():
    m = model(torch.bfloat16)
    opt = FlashAdamW(m.parameters())
    x, y = batch(0, torch.bfloat16)

    def closure():
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(m(x), y)
        loss.backward()
        return loss

    assert opt.step(closure) is not None
    r = opt.memory_report()[0]
    assert r["elements"] == sum(p.numel() for p in m.parameters())
    assert r["correction_bytes"] == r["elements"]


def test_bad_parameters_get_clear_errors():
    w = torch.nn.Parameter(torch.zeros(8, 8))
    with pytest.raises(ValueError, match="contiguous"):
        FlashAdamW([torch.nn.Parameter(torch.zeros(8, 8).t())])
    with pytest.raises(TypeError, match="float64"):
        FlashAdamW([torch.nn.Parameter(torch.zeros(4, dtype=torch.float64))])
    with pytest.raises(ValueError, match="master_weight_bits"):
        FlashAdamW([w], master_weight_bits=16)
    with pytest.raises(ValueError, match="master_weight_bits=None"):
        FlashAdamW([torch.nn.Parameter(torch.zeros(4, dtype=torch.bfloat16))], master_weight_bits=None)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_mixed_devices_are_refused():
    with pytest.raises(ValueError, match="several devices"):
        FlashAdamW([torch.nn.Parameter(torch.zeros(4)), torch.nn.Parameter(torch.zeros(4, device="cuda"))])


needs_cuda_build = pytest.mark.skipif(not torch.cuda.is_available() or not fk.has_cuda,
                                      reason="needs a CUDA device and the package built with CUDA")


def set_grads(models, step):
    """The same bf16 gradients on every model (the CPU and GPU backward passes differ)."""
    g = torch.Generator().manual_seed(100 + step)
    for ps in zip(*(m.parameters() for m in models)):
        x = torch.randn(ps[0].shape, generator=g).to(torch.bfloat16)
        for p in ps:
            if p.grad is None:
                p.grad = x.to(p.device).clone()
            else:
                p.grad.copy_(x)


@needs_cuda_build
@pytest.mark.parametrize("cls,kw", [(FlashAdamW, {"weight_decay": 0.1}), (FlashLion, {}),
                                    (FlashSGDW, {"momentum": 0.9})])
def test_cuda_step_equals_the_cpu_step_bit_for_bit(cls, kw):
    a = model(torch.bfloat16)
    b = copy.deepcopy(a).cuda()
    oa, ob = cls(a.parameters(), lr=1e-2, **kw), cls(b.parameters(), lr=1e-2, **kw)
    for s in range(3):
        set_grads([a, b], s)
        oa.step()
        ob.step()
    for pa, pb in zip(a.parameters(), b.parameters()):
        assert torch.equal(pa.view(torch.int16), pb.cpu().view(torch.int16))
    sa, sb = oa.state_dict()["state"], ob.state_dict()["state"]
    for k in sa:
        for key in sa[k]:
            assert torch.equal(sa[k][key].cpu(), sb[k][key].cpu()), key


@needs_cuda_build
def test_cuda_state_dict_round_trip_and_graph_capture():
    a = model(torch.bfloat16, device="cuda")
    oa = FlashAdamW(a.parameters(), lr=1e-2)
    for s in range(2):
        set_grads([a], s)
        oa.step()
    b = copy.deepcopy(a)
    ob = FlashAdamW(b.parameters(), lr=1e-2)
    set_grads([b], 99)  # gradient buffers exist before load (the CUDA engine is built at the first step)
    ob.load_state_dict(copy.deepcopy(oa.state_dict()))
    set_grads([a, b], 2)
    oa.step()
    ob.step()
    for pa, pb in zip(a.parameters(), b.parameters()):
        assert torch.equal(pa.view(torch.int16), pb.view(torch.int16))
    # capture on a side stream with static gradient buffers, replay == eager
    c = copy.deepcopy(b)
    oc = FlashAdamW(c.parameters(), lr=1e-2)
    oc.load_state_dict(copy.deepcopy(ob.state_dict()))
    set_grads([b, c], 3)
    oc.step()  # builds the engine (eager warm-up)
    ob.step()
    set_grads([b, c], 4)
    graph = torch.cuda.CUDAGraph()
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        with torch.cuda.graph(graph):
            oc.step()
    torch.cuda.current_stream().wait_stream(side)
    graph.replay()
    ob.step()
    torch.cuda.synchronize()
    for pb, pc in zip(b.parameters(), c.parameters()):
        assert torch.equal(pb.view(torch.int16), pc.view(torch.int16))
