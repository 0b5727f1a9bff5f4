"""Max pooling with `return_indices=True`, max unpooling, and `embedding(max_norm=...)`, against
PyTorch: indices exactly equal (ties, NaN, -inf, padding, dilation, ceil_mode), values and
gradients unchanged, and Embedding's in-place renormalization of its table."""

from __future__ import annotations

import numpy as np
import pytest
from _oracle import TF, needs_torch, torch

import nabla as nb
import nabla_nn as nn
import nabla_nn.functional as F
import nabla_optim as optim

RNG = np.random.default_rng(0)


def _randn(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


def _ties(*shape: int) -> np.ndarray:
    """Few distinct values: most windows hold their maximum more than once."""
    return RNG.integers(0, 3, shape).astype(np.float32)


def _same_pool(name: str, x: np.ndarray, *args, **kwargs) -> None:
    """Values and int64 indices equal to torch's, bit for bit."""
    out, idx = getattr(F, name)(nb.tensor(x), *args, return_indices=True, **kwargs)
    t_out, t_idx = getattr(TF, name)(torch.tensor(x), *args, return_indices=True, **kwargs)
    assert idx.dtype == nb.int64 and idx.shape == tuple(t_idx.shape) == out.shape
    np.testing.assert_array_equal(out.numpy(), t_out.numpy())
    np.testing.assert_array_equal(idx.numpy(), t_idx.numpy())
    np.testing.assert_array_equal(out.numpy(), getattr(F, name)(nb.tensor(x), *args, **kwargs).numpy())


# -- max_pool1d / max_pool2d -----------------------------------------------------------------------
POOL2D = [
    # kernel, stride, padding, dilation, ceil_mode
    (2, None, 0, 1, False),
    (3, 2, 1, 1, False),
    (3, 2, 1, 1, True),
    (3, 1, 1, 1, False),
    ((2, 3), (2, 1), (1, 1), 1, False),
    ((2, 3), None, 0, (1, 2), True),
    (3, 2, 1, 2, False),
    (4, 2, 2, 2, True),
    (2, 3, 1, 1, True),
    (1, 2, 0, 1, False),
    ((3, 1), (1, 2), (1, 0), (2, 1), True),
]


@needs_torch
@pytest.mark.parametrize(("kernel", "stride", "padding", "dilation", "ceil_mode"), POOL2D)
@pytest.mark.parametrize(
    "make", [lambda: _randn(2, 3, 7, 6), lambda: _ties(3, 8, 7)], ids=["batched", "unbatched_ties"]
)
def test_max_pool2d_indices_match_torch(kernel, stride, padding, dilation, ceil_mode, make) -> None:
    _same_pool("max_pool2d", make(), kernel, stride, padding, dilation, ceil_mode)


@needs_torch
@pytest.mark.parametrize(
    ("kernel", "stride", "padding", "dilation", "ceil_mode"),
    [
        (2, None, 0, 1, False),
        (3, 2, 1, 1, True),
        (3, 1, 1, 2, False),
        (4, 3, 2, 1, True),
        ((3,), (2,), (1,), (3,), True),
    ],
)
@pytest.mark.parametrize("make", [lambda: _randn(2, 3, 11), lambda: _ties(4, 10)], ids=["batched", "unbatched_ties"])
def test_max_pool1d_indices_match_torch(kernel, stride, padding, dilation, ceil_mode, make) -> None:
    _same_pool("max_pool1d", make(), kernel, stride, padding, dilation, ceil_mode)


@needs_torch
@pytest.mark.parametrize("size", [(3, 4), 1, 2, (7, 3), (5, None), (4, 5), (7, 6)])
@pytest.mark.parametrize(
    "make", [lambda: _randn(2, 3, 7, 6), lambda: _ties(3, 7, 6)], ids=["batched", "unbatched_ties"]
)
def test_adaptive_max_pool2d_indices_match_torch(size, make) -> None:
    _same_pool("adaptive_max_pool2d", make(), size)


@needs_torch
@pytest.mark.parametrize("size", [1, 3, 4, 5, 9])
@pytest.mark.parametrize("make", [lambda: _randn(2, 3, 9), lambda: _ties(3, 9)], ids=["batched", "unbatched_ties"])
def test_adaptive_max_pool1d_indices_match_torch(size, make) -> None:
    _same_pool("adaptive_max_pool1d", make(), size)


@needs_torch
def test_pool_indices_nan_and_inf_match_torch() -> None:
    """A window with NaNs points at its last NaN; an all -inf window at its first real element
    (padding is never chosen)."""
    x = _randn(2, 2, 6, 7)
    x[0, 0, 1, 1] = x[0, 0, 0, 1] = x[1, 1, 4, 5] = np.nan
    x[0, 1, :4, :4] = -np.inf
    _same_pool("max_pool2d", x, 3, 2, 1)
    _same_pool("max_pool2d", x, 2, 1, 1, 2, True)
    _same_pool("max_pool2d", x, 2)
    _same_pool("adaptive_max_pool2d", x, (4, 3))
    _same_pool("max_pool1d", x[:, :, 0], 3, 2, 1)
    _same_pool("adaptive_max_pool1d", x[:, :, 0], 3)


@needs_torch
@pytest.mark.parametrize(("kernel", "stride", "padding", "dilation", "ceil_mode"), POOL2D)
def test_all_inf_window_gradient_follows_the_indices(kernel, stride, padding, dilation, ceil_mode) -> None:
    # An all -inf window's gradient goes to its first input element, as its index says (it went to
    # the padding, and was lost); the JVP reads the tangent there too.
    x = np.full((2, 2, 7, 9), -np.inf, np.float32)
    x[0, 0] = _ties(7, 9)
    x[1, 1, 3:, 4:] = np.nan
    args = (kernel, stride, padding, dilation, ceil_mode)
    t = torch.tensor(x, requires_grad=True)
    t_out, t_idx = TF.max_pool2d(t, *args, return_indices=True)
    c = _randn(*t_out.shape)
    (t_out * torch.tensor(c)).sum().backward()
    a = nb.tensor(x, requires_grad=True)
    (F.max_pool2d(a, *args) * nb.tensor(c)).sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), t.grad.numpy(), rtol=1e-6, atol=1e-6)  # overlaps: sums in any order
    tangent = _randn(*x.shape)
    _, jvp = nb.jvp(lambda v: F.max_pool2d(v, *args), (nb.tensor(x),), (nb.tensor(tangent),))
    expected = np.take_along_axis(tangent.reshape(2, 2, -1), t_idx.numpy().reshape(2, 2, -1), -1)
    np.testing.assert_array_equal(jvp.numpy(), expected.reshape(t_out.shape))
    if not isinstance(kernel, tuple):  # max_pool1d runs the same op on a height-1 image
        t1 = torch.tensor(x[:, :, 0], requires_grad=True)
        TF.max_pool1d(t1, *args).sum().backward()
        a1 = nb.tensor(x[:, :, 0], requires_grad=True)
        F.max_pool1d(a1, *args).sum().backward()
        np.testing.assert_array_equal(a1.grad.numpy(), t1.grad.numpy())


@needs_torch
@pytest.mark.parametrize(
    ("name", "args"),
    [
        ("max_pool2d", (3, 2, 1, 1, True)),
        ("max_pool2d", (2, 1)),
        ("max_pool1d", (3, 2, 1)),
        ("adaptive_max_pool2d", ((3, 4),)),
        ("adaptive_max_pool1d", (4,)),
    ],
)
def test_pool_values_keep_their_gradient_with_indices(name: str, args: tuple) -> None:
    # Ties: the gradient goes to each window's first maximum, as torch's.
    x = _ties(2, 3, 7, 9) if name.endswith("2d") else _ties(2, 3, 9)
    t_out, _ = getattr(TF, name)(torch.tensor(x), *args, return_indices=True)
    c = _randn(*t_out.shape)
    a = nb.tensor(x, requires_grad=True)
    (getattr(F, name)(a, *args, return_indices=True)[0] * nb.tensor(c)).sum().backward()
    t = torch.tensor(x, requires_grad=True)
    (getattr(TF, name)(t, *args, return_indices=True)[0] * torch.tensor(c)).sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), t.grad.numpy(), rtol=1e-6, atol=1e-6)


@needs_torch
@pytest.mark.parametrize("return_indices", [False, True])
@pytest.mark.parametrize(
    ("name", "shape", "size"),
    [
        ("adaptive_max_pool2d", (2, 3, 7, 9), (3, 4)),  # overlapping windows in both dims
        ("adaptive_max_pool2d", (3, 7, 6), (7, 4)),  # unbatched, tiling rows, overlapping columns
        ("adaptive_max_pool2d", (2, 2, 5, 8), (2, None)),
        ("adaptive_max_pool2d", (2, 2, 6, 6), (3, 2)),  # tiling: max_pool2d
        ("adaptive_max_pool1d", (2, 3, 9), 4),
        ("adaptive_max_pool1d", (3, 10), 7),
    ],
)
def test_adaptive_max_pool_gradient_goes_to_the_first_maximum_as_torch(name, shape, size, return_indices) -> None:
    x = _ties(*shape)
    x.reshape(-1)[::11] = np.nan  # a window holding NaNs: its value and gradient are its last NaN's
    t = torch.tensor(x, requires_grad=True)
    t_out = getattr(TF, name)(t, size)
    c = _randn(*t_out.shape)
    (t_out * torch.tensor(c)).sum().backward()
    a = nb.tensor(x, requires_grad=True)
    out = getattr(F, name)(a, size, return_indices=return_indices)
    out = out[0] if return_indices else out
    (out * nb.tensor(c)).sum().backward()
    np.testing.assert_array_equal(out.numpy(), t_out.detach().numpy())
    np.testing.assert_allclose(a.grad.numpy(), t.grad.numpy(), rtol=1e-6, atol=1e-6)


@needs_torch
@pytest.mark.parametrize(
    "make",
    [
        lambda m: m.MaxPool2d(3, stride=2, padding=1, return_indices=True),
        lambda m: m.MaxPool2d((2, 3), dilation=(1, 2), ceil_mode=True, return_indices=True),
        lambda m: m.AdaptiveMaxPool2d((3, None), return_indices=True),
    ],
)
def test_pool2d_modules_return_indices(make) -> None:
    x = _ties(2, 3, 7, 5)
    (out, idx), (t_out, t_idx) = make(nn)(nb.tensor(x)), make(torch.nn)(torch.tensor(x))
    np.testing.assert_array_equal(out.numpy(), t_out.numpy())
    np.testing.assert_array_equal(idx.numpy(), t_idx.numpy())


@needs_torch
@pytest.mark.parametrize(
    "make", [lambda m: m.MaxPool1d(3, stride=2, padding=1, return_indices=True), lambda m: m.AdaptiveMaxPool1d(4, True)]
)
def test_pool1d_modules_return_indices(make) -> None:
    x = _ties(2, 3, 9)
    (out, idx), (t_out, t_idx) = make(nn)(nb.tensor(x)), make(torch.nn)(torch.tensor(x))
    np.testing.assert_array_equal(out.numpy(), t_out.numpy())
    np.testing.assert_array_equal(idx.numpy(), t_idx.numpy())


# -- max_unpool ------------------------------------------------------------------------------------
@needs_torch
@pytest.mark.parametrize(
    ("shape", "kernel", "stride", "padding", "output_size"),
    [
        ((2, 3, 6, 8), 2, None, 0, None),
        ((2, 3, 7, 6), 2, None, 0, (7, 6)),
        ((2, 3, 7, 6), 3, 2, 1, (7, 6)),
        ((3, 7, 6), 2, 1, 0, None),  # overlapping windows: repeated indices carry equal values
        ((2, 3, 7, 6), (3, 2), (2, 1), (1, 0), (2, 3, 7, 6)),
    ],
)
def test_max_unpool2d_round_trip_matches_torch(shape, kernel, stride, padding, output_size) -> None:
    x = _ties(*shape)
    out, idx = F.max_pool2d(nb.tensor(x), kernel, stride, padding, return_indices=True)
    t_out, t_idx = TF.max_pool2d(torch.tensor(x), kernel, stride, padding, return_indices=True)
    got = F.max_unpool2d(out, idx, kernel, stride, padding, output_size)
    want = TF.max_unpool2d(t_out, t_idx, kernel, stride, padding, output_size)
    np.testing.assert_array_equal(got.numpy(), want.numpy())
    # gradient: each pooled value reads the cotangent at its index
    c = _randn(*want.shape)
    v = nb.tensor(out.numpy(), requires_grad=True)
    (F.max_unpool2d(v, idx, kernel, stride, padding, output_size) * nb.tensor(c)).sum().backward()
    tv = t_out.detach().requires_grad_(True)
    (TF.max_unpool2d(tv, t_idx, kernel, stride, padding, output_size) * torch.tensor(c)).sum().backward()
    np.testing.assert_array_equal(v.grad.numpy(), tv.grad.numpy())


@needs_torch
@pytest.mark.parametrize(("shape", "output_size"), [((2, 3, 10), None), ((3, 9), (9,)), ((2, 3, 9), (2, 3, 9))])
def test_max_unpool1d_modules_round_trip_match_torch(shape, output_size) -> None:
    x = _ties(*shape)
    kernel, stride = (2, None) if output_size is None else (3, 2)
    pads = 0 if output_size is None else 1
    pool = nn.MaxPool1d(kernel, stride, pads, return_indices=True)
    t_pool = torch.nn.MaxPool1d(kernel, stride, pads, return_indices=True)
    unpool, t_unpool = nn.MaxUnpool1d(kernel, stride, pads), torch.nn.MaxUnpool1d(kernel, stride, pads)
    got = unpool(*pool(nb.tensor(x)), output_size=output_size)
    want = t_unpool(*t_pool(torch.tensor(x)), output_size=output_size)
    np.testing.assert_array_equal(got.numpy(), want.numpy())
    assert repr(unpool) == repr(t_unpool)


@needs_torch
def test_max_unpool2d_module_matches_torch() -> None:
    x = _randn(2, 3, 5, 5)
    pool, t_pool = nn.MaxPool2d(2, return_indices=True), torch.nn.MaxPool2d(2, return_indices=True)
    unpool, t_unpool = nn.MaxUnpool2d(2), torch.nn.MaxUnpool2d(2)
    got = unpool(*pool(nb.tensor(x)), output_size=(5, 5))
    want = t_unpool(*t_pool(torch.tensor(x)), output_size=(5, 5))
    np.testing.assert_array_equal(got.numpy(), want.numpy())
    assert repr(unpool) == repr(t_unpool) == "MaxUnpool2d(kernel_size=(2, 2), stride=(2, 2), padding=(0, 0))"


def test_max_unpool_errors() -> None:
    out, idx = F.max_pool2d(nb.ones(1, 1, 4, 4), 2, return_indices=True)
    with pytest.raises(ValueError, match=r"invalid output_size \"\(7, 4\)\" \(dim 0 must be between 2 and 6\)"):
        F.max_unpool2d(out, idx, 2, output_size=(7, 4))
    with pytest.raises(ValueError, match="output_size should be a sequence containing 2 or 4 elements.*'1'"):
        F.max_unpool2d(out, idx, 2, output_size=(4,))
    with pytest.raises(TypeError, match="indices must be an integer Tensor.*float32"):
        F.max_unpool2d(out, nb.cast(idx, nb.float32), 2)
    with pytest.raises(ValueError, match=r"indices must have the input's shape \(1, 1, 2, 2\), got \(1, 1, 2\)"):
        F.max_unpool2d(out, idx[..., 0], 2)
    with pytest.raises(ValueError, match="kernel_size must be a positive int or a tuple of 2"):
        F.max_unpool2d(out, idx, (2, 0))
    with pytest.raises(ValueError, match=r"MaxUnpool1d .* got input \(4,\)"):
        nn.MaxUnpool1d(2)(nb.ones(4), idx)
    bad = nb.tensor(np.array([[[[0, 1], [2, 99]]]]))
    with pytest.raises(IndexError, match="max_unpool2d: found an invalid max index 99 .*of size 4x4"):
        F.max_unpool2d(out, bad, 2)


# -- embedding max_norm ----------------------------------------------------------------------------
@needs_torch
@pytest.mark.parametrize("norm_type", [2.0, 1.0, 3.0, float("inf")])
@pytest.mark.parametrize("padding_idx", [None, 3])
def test_embedding_max_norm_matches_torch(norm_type: float, padding_idx) -> None:
    weight = _randn(10, 4) * 1.5
    idx = np.array([[0, 3, 6, 3], [1, 1, 0, 2]])  # repeated indices; rows 4, 5, 7, 8, 9 are not read
    c = _randn(2, 4, 4)
    w = nb.tensor(weight, requires_grad=True)
    out = F.embedding(nb.tensor(idx), w, padding_idx, max_norm=1.2, norm_type=norm_type)
    assert not w.is_realized and w.requires_grad  # the in-place update is lazy, w stays a trainable leaf
    (out * nb.tensor(c)).sum().backward()
    tw = torch.tensor(weight, requires_grad=True)
    t_out = TF.embedding(torch.tensor(idx), tw, padding_idx, max_norm=1.2, norm_type=norm_type)
    (t_out * torch.tensor(c)).sum().backward()
    np.testing.assert_allclose(out.numpy(), t_out.detach().numpy(), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(w.numpy(), tw.detach().numpy(), rtol=1e-6, atol=1e-6)  # the renormed table
    np.testing.assert_array_equal(w.numpy()[[4, 5, 7, 8, 9]], weight[[4, 5, 7, 8, 9]])
    np.testing.assert_allclose(w.grad.numpy(), tw.grad.numpy(), rtol=1e-6, atol=1e-6)


@needs_torch
def test_embedding_module_max_norm_training_steps_match_torch() -> None:
    emb = nn.Embedding(12, 5, padding_idx=2, max_norm=1.0, norm_type=1.0)
    ref = torch.nn.Embedding(12, 5, padding_idx=2, max_norm=1.0, norm_type=1.0)
    emb.load_state_dict({"weight": ref.weight.detach().numpy().copy()})
    opt, t_opt = optim.SGD(emb.parameters(), lr=0.5), torch.optim.SGD(ref.parameters(), lr=0.5)
    for step in range(3):
        idx = RNG.integers(0, 12, size=(3, 4))
        c = _randn(3, 4, 5)
        out, t_out = emb(nb.tensor(idx)), ref(torch.tensor(idx))
        np.testing.assert_allclose(out.numpy(), t_out.detach().numpy(), rtol=1e-5, atol=1e-6, err_msg=f"step {step}")
        (out * nb.tensor(c)).sum().backward()
        (t_out * torch.tensor(c)).sum().backward()
        np.testing.assert_allclose(emb.weight.grad.numpy(), ref.weight.grad.numpy(), rtol=1e-6, atol=1e-6)
        opt.step(), t_opt.step()
        opt.zero_grad(), t_opt.zero_grad()
        np.testing.assert_allclose(emb.weight.numpy(), ref.weight.detach().numpy(), rtol=1e-5, atol=1e-6)
    assert isinstance(emb.weight, nn.Parameter) and emb.weight.requires_grad
    assert repr(emb) == "Embedding(12, 5, padding_idx=2, max_norm=1.0, norm_type=1.0)"


@needs_torch
def test_embedding_from_pretrained_max_norm_matches_torch() -> None:
    table = _randn(6, 3) * 2.0
    emb = nn.Embedding.from_pretrained(nb.tensor(table), max_norm=1.5)
    ref = torch.nn.Embedding.from_pretrained(torch.tensor(table), max_norm=1.5)
    idx = np.array([5, 0, 0, 2])
    np.testing.assert_allclose(emb(nb.tensor(idx)).numpy(), ref(torch.tensor(idx)).numpy(), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(emb.weight.numpy(), ref.weight.numpy(), rtol=1e-6, atol=1e-6)
    assert not emb.weight.requires_grad


def test_embedding_max_norm_errors() -> None:
    w = nb.ones(5, 2)
    with pytest.raises(TypeError, match="embedding: max_norm must be a number, got 'a'"):
        F.embedding(nb.tensor([0]), w, max_norm="a")
    with pytest.raises(TypeError, match="embedding: norm_type must be a number, got None"):
        F.embedding(nb.tensor([0]), w, max_norm=1.0, norm_type=None)
    with pytest.raises(RuntimeError, match="inside vmap with batched indices"):
        nb.vmap(lambda i: F.embedding(i, w, max_norm=1.0))(nb.tensor(np.array([[0, 1], [2, 3]])))


@needs_torch
def test_embedding_max_norm_under_grad_and_on_a_computed_table_match_torch() -> None:
    weight, idx, c = _randn(6, 3) * 2.0, np.array([0, 2, 2, 5]), _randn(4, 3)
    got = nb.grad(lambda w: (F.embedding(nb.tensor(idx), w, max_norm=1.0) * nb.tensor(c)).sum())(nb.tensor(weight))
    want = torch.func.grad(lambda w: (TF.embedding(torch.tensor(idx), w, max_norm=1.0) * torch.tensor(c)).sum())(
        torch.tensor(weight)
    )
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6, atol=1e-6)
    # A table with autodiff history is renormed in place and still passes the gradient back.
    a, ta = nb.tensor(weight, requires_grad=True), torch.tensor(weight, requires_grad=True)
    w, tw = a * 2.0, ta * 2.0
    out, t_out = F.embedding(nb.tensor(idx), w, max_norm=1.0), TF.embedding(torch.tensor(idx), tw, max_norm=1.0)
    (out * nb.tensor(c)).sum().backward()
    (t_out * torch.tensor(c)).sum().backward()
    np.testing.assert_allclose(out.numpy(), t_out.detach().numpy(), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(w.numpy(), tw.detach().numpy(), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(a.grad.numpy(), ta.grad.numpy(), rtol=1e-6, atol=1e-6)


def test_embedding_max_norm_compiled_training_equals_op_by_op() -> None:
    idxs = [RNG.integers(0, 12, size=(3, 4)) for _ in range(3)]
    cs = [_randn(3, 4, 5) for _ in range(3)]

    def train(compiled: bool) -> tuple[list, np.ndarray]:
        nb.manual_seed(0)
        model = nn.Sequential(nn.Embedding(12, 5, max_norm=1.0), nn.Linear(5, 5))
        if compiled:
            model.compile()
        opt = optim.SGD(model.parameters(), lr=0.5)
        outs = []
        for idx, c in zip(idxs, cs, strict=True):
            opt.zero_grad()
            out = model(nb.tensor(idx))
            (out * nb.tensor(c)).sum().backward()
            opt.step()
            outs.append(out.numpy())
        return outs, model[0].weight.numpy()

    (outs, weight), (ref_outs, ref_weight) = train(True), train(False)
    for o, r in zip(outs, ref_outs, strict=True):
        np.testing.assert_allclose(o, r, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(weight, ref_weight, rtol=1e-6, atol=1e-6)
