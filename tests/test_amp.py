"""nabla.autocast and nabla.amp.GradScaler (torch.amp's mixed precision), on the NumPy path;
against torch's autocast where torch is installed."""

from __future__ import annotations

import max.driver
import numpy as np
import pytest
from _oracle import needs_torch, torch

import nabla as nb
import nabla_nn as nn
import nabla_nn.functional as F
import nabla_optim as optim


def _model() -> nn.Module:
    nb.manual_seed(0)
    return nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3))


def test_autocast_runs_matmuls_and_convs_low_and_losses_in_float32():
    model, x, y = _model(), nb.randn(5, 4), nb.tensor([0, 1, 2, 0, 1])
    with nb.autocast("cpu", dtype=nb.bfloat16):
        hidden = model[0](x)
        logits = model(x)
        loss = F.cross_entropy(logits, y)
        probs = nb.softmax(logits, -1)
        conv = F.conv2d(nb.randn(1, 2, 5, 5), nb.randn(3, 2, 3, 3))
        product = nb.matmul(nb.randn(2, 3), nb.randn(3, 2))
        wide = nb.matmul(nb.randn(2, 3, dtype=nb.float64), nb.randn(3, 2, dtype=nb.float64))
        with nb.autocast("cpu", enabled=False):
            plain = model(x)
    assert hidden.dtype == logits.dtype == conv.dtype == product.dtype == probs.dtype == nb.bfloat16
    assert loss.dtype == nb.float32  # (losses in float32; softmax too, but only under "cuda")
    assert wide.dtype == nb.float64 and plain.dtype == nb.float32  # (float64 is left alone, as torch)
    assert model(x).dtype == nb.float32  # (outside the region)
    loss.backward()
    assert all(p.grad.dtype == nb.float32 for p in model.parameters())  # gradients of float32 parameters
    with pytest.raises(ValueError, match="dtype must be bfloat16 or float16"):
        nb.autocast("cpu", dtype=nb.float32)


def test_autocast_as_a_decorator_and_on_generators():
    @nb.autocast("cpu")
    def forward(a):
        return nb.matmul(a, a)

    @nb.autocast("cpu")
    def steps(a):
        yield nb.matmul(a, a)

    a = nb.ones(2, 2)
    assert forward(a).dtype == nb.bfloat16 and next(steps(a)).dtype == nb.bfloat16
    assert nb.matmul(a, a).dtype == nb.float32


@needs_torch
def test_autocast_loss_matches_torchs():
    model, x, y = _model(), nb.randn(5, 4), nb.tensor([0, 1, 2, 0, 1])
    ref = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 3))
    with torch.no_grad():
        for theirs, ours in zip(ref.parameters(), model.parameters(), strict=True):
            theirs.copy_(torch.tensor(ours.numpy()))
    with nb.autocast("cpu", dtype=nb.bfloat16):
        loss = F.cross_entropy(model(x), y)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        want = torch.nn.functional.cross_entropy(ref(torch.tensor(x.numpy())), torch.tensor(y.numpy()))
    assert want.dtype == torch.float32
    np.testing.assert_allclose(loss.item(), want.item(), rtol=1e-6)


def test_grad_scaler_scales_unscales_skips_and_adapts():
    model = _model()
    opt = optim.SGD(model.parameters(), lr=0.1)
    scaler = nb.amp.GradScaler("cpu", init_scale=1024.0, growth_interval=2)
    x, y = nb.randn(5, 4), nb.tensor([0, 1, 2, 0, 1])
    opt.zero_grad()
    scaled = scaler.scale(F.cross_entropy(model(x), y))
    scaled.backward()
    reference = [p.grad.numpy() / 1024.0 for p in model.parameters()]
    scaler.unscale_(opt)
    for p, want in zip(model.parameters(), reference, strict=True):
        np.testing.assert_allclose(p.grad.numpy(), want, rtol=1e-6)
    with pytest.raises(RuntimeError, match="unscale_\\(\\) has already been called"):
        scaler.unscale_(opt)
    before = model[0].weight.numpy().copy()
    scaler.step(opt)
    scaler.update()
    assert not np.array_equal(model[0].weight.numpy(), before) and scaler.get_scale() == 1024.0
    model[0].weight.grad = nb.full(model[0].weight.shape, float("inf"))
    before = model[0].weight.numpy().copy()
    assert scaler.step(opt) is None  # skipped: an inf gradient
    scaler.update()
    np.testing.assert_array_equal(model[0].weight.numpy(), before)
    assert scaler.get_scale() == 512.0
    for _ in range(2):  # growth_interval clean steps in a row: the scale grows
        opt.zero_grad()
        scaler.scale(F.cross_entropy(model(x), y)).backward()
        scaler.step(opt)
        scaler.update()
    assert scaler.get_scale() == 1024.0
    state = scaler.state_dict()
    other = nb.amp.GradScaler("cpu")
    other.load_state_dict(state)
    assert other.get_scale() == 1024.0 and other.state_dict() == state


def test_a_disabled_grad_scaler_passes_through():
    model = _model()
    opt = optim.SGD(model.parameters(), lr=0.1)
    scaler = nb.cuda.amp.GradScaler(enabled=False)  # (nanoGPT builds one even in float32)
    loss = F.cross_entropy(model(nb.randn(5, 4)), nb.tensor([0, 1, 2, 0, 1]))
    assert scaler.scale(loss) is loss and scaler.get_scale() == 1.0 and scaler.state_dict() == {}
    loss.backward()
    before = model[0].weight.numpy().copy()
    scaler.unscale_(opt)
    scaler.step(opt)
    scaler.update()
    assert not np.array_equal(model[0].weight.numpy(), before)


def test_compiled_functions_key_on_autocast():
    """A model traced outside autocast is not reused inside it (nor the reverse), as
    torch.compile guards on autocast's state; the reason names it."""
    layer = nn.Linear(3, 2)
    layer.compile()
    x = nb.ones(2, 3)
    with nb.no_grad():
        outside = layer(x)
        with nb.autocast("cpu"):
            inside = layer(x)
        again = layer(x)
    assert (outside.dtype, inside.dtype, again.dtype) == (nb.float32, nb.bfloat16, nb.float32)
    stats = layer.compile_stats
    assert stats.misses == 2 and stats.hits == 1 and stats.recompile_reasons == ["autocast off -> bfloat16"]


def test_a_compiled_step_sees_the_scalers_new_scale():
    """scale() inside a compiled forward/backward: the scale is guarded (it was baked in, so
    after update() grew it the gradients were off by old/new)."""
    nb.manual_seed(0)
    model = nn.Linear(3, 1)
    opt = optim.SGD(model.parameters(), lr=0.0)
    scaler = nb.amp.GradScaler("cpu", init_scale=8.0, growth_interval=1)
    x, y = nb.randn(4, 3), nb.randn(4, 1)

    @nb.compile
    def forward_backward(a, b):
        opt.zero_grad()
        loss = F.mse_loss(model(a), b)
        scaler.scale(loss).backward()
        return loss

    F.mse_loss(model(x), y).backward()
    want = model.weight.grad.numpy().copy()
    for _ in range(2):
        forward_backward(x, y)
        scaler.unscale_(opt)
        np.testing.assert_allclose(model.weight.grad.numpy(), want, rtol=1e-6)
        scaler.step(opt)
        scaler.update()
    assert scaler.get_scale() == 32.0 and forward_backward.stats.recompile_reasons == ["GradScaler's scale changed"]


def test_autocast_covers_torchs_lower_precision_list_and_keeps_cdist_float32():
    x, w, q = nb.randn(2, 3), nb.randn(3, 3), nb.randn(1, 2, 4, 8)
    with nb.autocast("cpu"):
        low = [nb.einsum("ij,jk->ik", x, w), nb.addmm(nb.zeros(3), x, w), nb.tensordot(x, w, 1)]
        low.append(F.scaled_dot_product_attention(q, q, q))
        points = nb.randn(30, 8)
        distances = nb.cdist(points, points)
    assert all(t.dtype == nb.bfloat16 for t in low)
    assert distances.dtype == nb.float32 and np.diag(distances.numpy()).max() < 0.01  # (not bf16's 0.3)
    with nb.autocast("cuda"):
        assert nb.softmax(nb.matmul(x, w), -1).dtype == nb.float32


def test_library_composites_keep_their_precision_inside_autocast():
    """matrix_exp, the linalg routines and adaptive pooling call matmul internally; only the
    user's matmuls are cast (matrix_exp's error was 2e-3 in bfloat16), and backward is not."""
    a = nb.randn(6, 6) * 0.3
    want = nb.matrix_exp(a.to(nb.float64)).numpy()
    with nb.autocast("cpu"):
        got = nb.matrix_exp(a)
        x, w = nb.randn(3, 4, requires_grad=True), nb.randn(4, 2, requires_grad=True)
        (x @ w).sum().backward()
    assert got.dtype == nb.float32 and np.abs(got.numpy() - want).max() < 1e-5
    assert x.grad.dtype == w.grad.dtype == nb.float32


# Which products autocast lowers, as torch 2.13's CPU autocast does (checked against torch below):
# its list has mm, bmm, matmul, baddbmm, addbmm, addmm, prelu and linalg.vecdot, not mv, dot,
# vdot, addmv, addr or bilinear; tensordot and inner are cast unless they give one number.
_PRODUCTS = {
    "mm": (lambda m, a, v: m.mm(a, a), True),
    "bmm": (lambda m, a, v: m.bmm(a[None], a[None]), True),
    "matmul of a vector": (lambda m, a, v: m.matmul(v, a), True),
    "baddbmm": (lambda m, a, v: m.baddbmm(a[None], a[None], a[None]), True),
    "addbmm": (lambda m, a, v: m.addbmm(a, a[None], a[None]), True),
    "vecdot": (lambda m, a, v: m.linalg.vecdot(a, a), True),
    "mv": (lambda m, a, v: m.mv(a, v), False),
    "dot": (lambda m, a, v: m.dot(v, v), False),
    "vdot": (lambda m, a, v: m.vdot(v, v), False),
    "inner": (lambda m, a, v: m.inner(a, a), True),
    "inner of vectors": (lambda m, a, v: m.inner(v, v), False),
    "tensordot": (lambda m, a, v: m.tensordot(a, v, 1), True),
    "tensordot to a number": (lambda m, a, v: m.tensordot(a, a), False),
    "addmv": (lambda m, a, v: m.addmv(v, a, v), False),
    "addr": (lambda m, a, v: m.addr(a, v, v), False),
}


def test_autocast_lowers_the_products_on_torchs_cpu_list_only():
    a, v = nb.randn(3, 3), nb.randn(3)
    with nb.autocast("cpu"):
        got = {name: f(nb, a, v).dtype for name, (f, _) in _PRODUCTS.items()}
        prelu = F.prelu(nb.randn(2, 3), nb.ones(1)).dtype
        bilinear = F.bilinear(a, a, nb.randn(2, 3, 3)).dtype
    assert got == {name: nb.bfloat16 if low else nb.float32 for name, (_, low) in _PRODUCTS.items()}
    assert (prelu, bilinear) == (nb.bfloat16, nb.float32)
    with nb.autocast("cpu"):  # addmv's added input is not rounded through bfloat16 first
        inp = nb.tensor([1.0 + 2**-10] * 3)
        assert nb.addmv(inp, nb.zeros(3, 3), nb.zeros(3)).numpy()[0] == np.float32(1.0 + 2**-10)


@needs_torch
def test_the_autocast_product_table_is_torchs():
    a, v = torch.randn(3, 3), torch.randn(3)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        got = {name: f(torch, a, v).dtype == torch.bfloat16 for name, (f, _) in _PRODUCTS.items()}
        prelu = torch.nn.functional.prelu(torch.randn(2, 3), torch.ones(1)).dtype
        bilinear = torch.nn.functional.bilinear(a, a, torch.randn(2, 3, 3)).dtype
    assert got == {name: low for name, (_, low) in _PRODUCTS.items()}
    assert (prelu, bilinear) == (torch.bfloat16, torch.float32)


def test_autocast_queries_follow_the_region():
    assert not nb.is_autocast_enabled("cpu") and not nb.is_autocast_enabled()
    assert nb.get_autocast_dtype("cpu") == nb.bfloat16 and nb.get_autocast_dtype("cuda") == nb.float16
    with nb.autocast("cpu", dtype=nb.float16):
        assert nb.is_autocast_enabled("cpu") and not nb.is_autocast_enabled() and not nb.is_autocast_enabled("cuda")
        assert nb.get_autocast_dtype("cpu") == nb.float16 and nb.get_autocast_dtype("cuda") == nb.float16
        with nb.autocast("cpu", dtype=nb.bfloat16, enabled=False):  # a disabled region still sets the dtype
            assert not nb.is_autocast_enabled("cpu") and nb.get_autocast_dtype("cpu") == nb.bfloat16
        assert nb.is_autocast_enabled("cpu") and nb.get_autocast_dtype("cpu") == nb.float16
    with nb.autocast("cuda"):
        assert nb.is_autocast_enabled() and nb.is_autocast_enabled("cuda")
    assert nb.get_autocast_dtype("cpu") == nb.bfloat16 and not nb.is_autocast_enabled("cpu")
    with pytest.raises(RuntimeError, match="get_autocast_dtype: device_type must be 'cpu' or 'cuda', got 'xyz'"):
        nb.get_autocast_dtype("xyz")


def _autocast_queries(lib, low, other) -> list:
    """is_autocast_enabled / get_autocast_dtype (as names) around nested regions of `lib`."""
    name = lambda dtype: str(dtype).split(".")[-1]  # noqa: E731 ("DType.float16", "torch.float16")
    seen = [lib.is_autocast_enabled("cpu"), name(lib.get_autocast_dtype("cpu"))]
    with lib.autocast("cpu", dtype=low):
        seen += [lib.is_autocast_enabled("cpu"), lib.is_autocast_enabled(), name(lib.get_autocast_dtype("cpu"))]
        with lib.autocast("cpu", dtype=other, enabled=False):
            seen += [lib.is_autocast_enabled("cpu"), name(lib.get_autocast_dtype("cpu"))]
    return [*seen, lib.is_autocast_enabled("cpu"), name(lib.get_autocast_dtype("cuda"))]


@needs_torch
def test_autocast_queries_match_torchs():
    ours = _autocast_queries(nb, nb.float16, nb.bfloat16)
    assert ours == _autocast_queries(torch, torch.float16, torch.bfloat16)
    assert ours[2:5] == [True, False, "float16"]


def test_grad_scaler_settings_and_out_of_order_use_as_torch():
    scaler = nb.amp.GradScaler("cpu", growth_factor=3.0, backoff_factor=0.25, growth_interval=7)
    assert (scaler.get_growth_factor(), scaler.get_backoff_factor(), scaler.get_growth_interval()) == (3.0, 0.25, 7)
    scaler.set_growth_factor(4.0), scaler.set_backoff_factor(0.5), scaler.set_growth_interval(2)
    assert (scaler.get_growth_factor(), scaler.get_backoff_factor(), scaler.get_growth_interval()) == (4.0, 0.5, 2)
    w = nn.Parameter(nb.ones(2))
    opt = optim.SGD([w], lr=0.1)
    for call in (scaler.update, lambda: scaler.step(opt), lambda: scaler.unscale_(opt)):
        with pytest.raises(AssertionError, match="did not use scaler.scale"):
            call()  # (nothing was scaled yet: the loop is out of order)
    with pytest.raises(RuntimeError, match="Closure use is not currently supported"):
        scaler.step(opt, closure=lambda: None)
    scaler.scale(w.sum()).backward()
    scaler.step(opt)
    scaler.update()
    np.testing.assert_allclose(w.numpy(), [0.9, 0.9])


def test_cpu_and_cuda_amp_autocast_spellings():
    with nb.cpu.amp.autocast():
        assert nb.matmul(nb.ones(2, 2), nb.ones(2, 2)).dtype == nb.bfloat16
    with nb.cpu.amp.autocast(enabled=False):
        assert nb.matmul(nb.ones(2, 2), nb.ones(2, 2)).dtype == nb.float32
    with nb.cuda.amp.autocast():
        assert nb.is_autocast_enabled("cuda") and nb.get_autocast_dtype("cuda") == nb.float16
    assert nb.cuda.amp.GradScaler is nb.cpu.amp.GradScaler is nb.amp.GradScaler


def test_a_cuda_grad_scaler_without_an_accelerator_disables_itself_as_torchs():
    """torch.amp.GradScaler() defaults to "cuda"; where there is none it warns and passes
    everything through, so a ported CUDA script's step stays one graph on the CPU."""
    if max.driver.accelerator_count() > 0:  # (on a GPU machine the "cuda" scaler is enabled)
        assert nb.amp.GradScaler().is_enabled()
        return
    with pytest.warns(UserWarning, match="CUDA is not available.  Disabling."):
        scaler = nb.amp.GradScaler()
    loss = nb.ones(2).sum()
    assert not scaler.is_enabled() and scaler.scale(loss) is loss and scaler.get_scale() == 1.0
    assert nb.amp.GradScaler("cpu").is_enabled()
    if torch is not None:
        with pytest.warns(UserWarning):
            assert torch.amp.GradScaler().is_enabled() == torch.cuda.is_available()


def test_upsampling_inside_autocast_keeps_float32_as_torch():
    """interpolate's linear modes are matmuls inside, and not on autocast's list: float32 in,
    float32 out (they computed in bfloat16 and returned it)."""
    x = nb.tensor(np.random.default_rng(0).random((1, 1, 3, 3)).astype(np.float32))
    with nb.autocast("cpu"):
        outs = {m: F.interpolate(x, scale_factor=2, mode=m) for m in ("bilinear", "bicubic", "nearest")}
        up = nn.Upsample(scale_factor=2, mode="bilinear")(x)
    assert all(o.dtype == nb.float32 for o in [*outs.values(), up])
    np.testing.assert_allclose(outs["bilinear"].numpy(), F.interpolate(x, scale_factor=2, mode="bilinear").numpy())
