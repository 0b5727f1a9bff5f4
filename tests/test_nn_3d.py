"""3-D pooling, normalization and padding (PyTorch's NCDHW layers and their functional forms).

Against PyTorch (when installed): outputs, int64 indices (bit for bit) and input/parameter
gradients over kernel / stride / padding / dilation / ceil_mode combinations, batched and
unbatched; BatchNorm3d's running statistics in train and eval mode; reprs and state_dict keys.
Without torch: brute-force NumPy references written from PyTorch's CPU kernels (scan order,
first maximum, last NaN, divisors), and input checks.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from _oracle import TF, needs_torch, torch

import nabla as nb
import nabla_nn as nn
import nabla_nn.functional as F

RNG = np.random.default_rng(0)


def _randn(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


def _ties(*shape: int) -> np.ndarray:
    """Few distinct values: most windows hold their maximum more than once."""
    return RNG.integers(0, 3, shape).astype(np.float32)


def _close(a, b, atol: float = 1e-5) -> None:
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-4, atol=atol)


def _vs_torch(name: str, x: np.ndarray, *args, indices: bool = False, **kwargs) -> None:
    """F.<name> and torch's: the same values, indices (exactly) and input gradient."""
    t, n = torch.tensor(x, requires_grad=True), nb.tensor(x, requires_grad=True)
    t_out, n_out = getattr(TF, name)(t, *args, **kwargs), getattr(F, name)(n, *args, **kwargs)
    if indices:
        (t_out, t_idx), (n_out, n_idx) = t_out, n_out
        assert n_idx.dtype == nb.int64 and n_idx.shape == tuple(t_idx.shape)
        np.testing.assert_array_equal(n_idx.numpy(), t_idx.numpy())
    assert n_out.shape == tuple(t_out.shape)
    _close(n_out.numpy(), t_out.detach().numpy())
    cot = _randn(*n_out.shape)
    (t_out * torch.tensor(cot)).sum().backward()
    (n_out * nb.tensor(cot)).sum().backward()
    _close(n.grad.numpy(), t.grad.numpy())


INPUTS = {
    "batched": lambda: _randn(2, 3, 7, 6, 5),
    "unbatched_ties": lambda: _ties(3, 6, 7, 5),
}

MAX3D = [
    # kernel, stride, padding, dilation, ceil_mode
    (2, None, 0, 1, False),
    (3, 2, 1, 1, False),
    (3, 2, 1, 1, True),
    (3, 1, 1, 1, False),
    ((3, 2, 2), (2, 1, 2), (1, 0, 1), 1, True),
    ((2, 3, 2), None, 0, (2, 1, 2), True),
    (3, 1, 1, 2, False),
    (2, 3, 1, 1, True),
    ((1, 2, 3), (2, 2, 1), (0, 1, 1), (3, 1, 1), False),
]


# -- max_pool3d ---------------------------------------------------------------------------------------
@needs_torch
@pytest.mark.parametrize(("kernel", "stride", "padding", "dilation", "ceil_mode"), MAX3D)
@pytest.mark.parametrize("make", INPUTS.values(), ids=INPUTS.keys())
def test_max_pool3d_matches_torch(kernel, stride, padding, dilation, ceil_mode, make) -> None:
    x = make()
    _vs_torch("max_pool3d", x, kernel, stride, padding, dilation, ceil_mode, return_indices=True, indices=True)
    _vs_torch("max_pool3d", x, kernel, stride, padding, dilation, ceil_mode)


@needs_torch
def test_max_pool3d_nan_and_inf_indices_match_torch() -> None:
    x = _ties(2, 2, 5, 6, 4)
    x[0, 0, 1, 2, 1] = x[0, 0, 2, 1, 0] = np.nan
    x[1, 1, :2, :2, :2] = -np.inf
    for args in [(2,), (3, 2, 1), (2, 1, 0, 1, True)]:
        out, idx = F.max_pool3d(nb.tensor(x), *args, return_indices=True)
        t_out, t_idx = TF.max_pool3d(torch.tensor(x), *args, return_indices=True)
        np.testing.assert_array_equal(idx.numpy(), t_idx.numpy())
        np.testing.assert_array_equal(out.numpy(), t_out.numpy())
    out, idx = F.adaptive_max_pool3d(nb.tensor(x), (2, 4, 3), return_indices=True)
    t_out, t_idx = TF.adaptive_max_pool3d(torch.tensor(x), (2, 4, 3), return_indices=True)
    np.testing.assert_array_equal(idx.numpy(), t_idx.numpy())
    np.testing.assert_array_equal(out.numpy(), t_out.numpy())


# -- avg_pool3d ---------------------------------------------------------------------------------------
AVG3D = [
    # kernel, stride, padding, ceil_mode, count_include_pad, divisor_override
    (2, None, 0, False, True, None),
    (3, 2, 1, False, True, None),
    (3, 2, 1, True, False, None),
    ((3, 2, 2), (2, 1, 2), (1, 0, 1), True, True, None),
    ((3, 2, 2), (2, 1, 2), (1, 0, 1), True, False, None),
    (2, 3, 1, True, True, None),
    (3, 2, 1, True, False, 5),
    ((2, 1, 3), 1, (1, 0, 1), False, True, 2),
]


@needs_torch
@pytest.mark.parametrize(("kernel", "stride", "padding", "ceil_mode", "count_include_pad", "divisor"), AVG3D)
@pytest.mark.parametrize("make", INPUTS.values(), ids=INPUTS.keys())
def test_avg_pool3d_matches_torch(kernel, stride, padding, ceil_mode, count_include_pad, divisor, make) -> None:
    _vs_torch("avg_pool3d", make(), kernel, stride, padding, ceil_mode, count_include_pad, divisor)


# -- adaptive pooling, lp pooling, unpooling -------------------------------------------------------------
@needs_torch
@pytest.mark.parametrize("size", [2, (3, None, 2), (4, 5, 3), 1, (7, 6, 5), (5, 4, 4)])
@pytest.mark.parametrize("make", INPUTS.values(), ids=INPUTS.keys())
def test_adaptive_pool3d_matches_torch(size, make) -> None:
    x = make()
    _vs_torch("adaptive_avg_pool3d", x, size)
    _vs_torch("adaptive_max_pool3d", x, size, return_indices=True, indices=True)
    _vs_torch("adaptive_max_pool3d", x, size)


@needs_torch
@pytest.mark.parametrize(
    ("norm_type", "kernel", "stride", "ceil_mode"),
    [
        (2, 2, None, False),
        (3, (2, 3, 2), 1, True),
        (1.5, 3, 2, True),
        (math.inf, 2, None, False),
        (-math.inf, 2, 1, False),
    ],
)
@pytest.mark.parametrize("make", INPUTS.values(), ids=INPUTS.keys())
def test_lp_pool3d_matches_torch(norm_type, kernel, stride, ceil_mode, make) -> None:
    x = make()
    x = np.abs(x) + 0.1 if math.isfinite(norm_type) else x  # torch's pow of a negative base is NaN
    _vs_torch("lp_pool3d", x, norm_type, kernel, stride, ceil_mode)


@needs_torch
@pytest.mark.parametrize(
    ("pool_args", "output_size"),
    [
        ((2,), (7, 6, 5)),
        ((3, 2, 1), (7, 6, 5)),
        ((2, 1, 0), None),
        (((2, 3, 2), (2, 2, 3), (1, 1, 0)), (2, 3, 7, 6, 5)),
    ],
)
def test_max_unpool3d_matches_torch(pool_args, output_size) -> None:
    x = _randn(2, 3, 7, 6, 5)
    out, idx = F.max_pool3d(nb.tensor(x), *pool_args, return_indices=True)
    t_out, t_idx = TF.max_pool3d(torch.tensor(x), *pool_args, return_indices=True)
    v = _randn(*out.shape)
    t_v, n_v = torch.tensor(v, requires_grad=True), nb.tensor(v, requires_grad=True)
    t_u = TF.max_unpool3d(t_v, t_idx, *pool_args, output_size=output_size)
    n_u = F.max_unpool3d(n_v, idx, *pool_args, output_size=output_size)
    np.testing.assert_array_equal(n_u.numpy(), t_u.detach().numpy())
    cot = _randn(*n_u.shape)
    (t_u * torch.tensor(cot)).sum().backward()
    (n_u * nb.tensor(cot)).sum().backward()
    _close(n_v.grad.numpy(), t_v.grad.numpy())


@needs_torch
def test_with_indices_aliases_match_torch() -> None:
    x3, x2, x1 = _ties(2, 3, 5, 6, 4), _ties(3, 6, 5), _ties(2, 3, 7)
    cases = [
        ("max_pool1d_with_indices", x1, (3, 2, 1)),
        ("max_pool2d_with_indices", x2, (3, 2, 1, 1, True)),
        ("max_pool3d_with_indices", x3, ((2, 3, 2), 1, (1, 1, 0))),
        ("adaptive_max_pool1d_with_indices", x1, (3,)),
        ("adaptive_max_pool2d_with_indices", x2, ((4, None),)),
        ("adaptive_max_pool3d_with_indices", x3, ((2, 4, 3),)),
    ]
    for name, x, args in cases:
        for kwargs in ({}, {"return_indices": False}):  # always a pair, as torch's aliases
            out, idx = getattr(F, name)(nb.tensor(x), *args, **kwargs)
            t_out, t_idx = getattr(TF, name)(torch.tensor(x), *args, **kwargs)
            np.testing.assert_array_equal(out.numpy(), t_out.numpy())
            np.testing.assert_array_equal(idx.numpy(), t_idx.numpy())


# -- modules against torch ----------------------------------------------------------------------------
def _load_from_torch(layer: nn.Module, ref) -> None:
    layer.load_state_dict({k: v.detach().numpy().copy() for k, v in ref.state_dict().items()})


def _module_vs_torch(layer: nn.Module, ref, x: np.ndarray, atol: float = 1e-5) -> None:
    """The same output (and indices), input and parameter gradients, and buffers as torch's layer."""
    t, n = torch.tensor(x, requires_grad=True), nb.tensor(x, requires_grad=True)
    t_out, n_out = ref(t), layer(n)
    if isinstance(t_out, tuple):
        np.testing.assert_array_equal(n_out[1].numpy(), t_out[1].numpy())
        t_out, n_out = t_out[0], n_out[0]
    assert n_out.shape == tuple(t_out.shape)
    _close(n_out.numpy(), t_out.detach().numpy(), atol)
    cot = _randn(*n_out.shape)
    (t_out * torch.tensor(cot)).sum().backward()
    (n_out * nb.tensor(cot)).sum().backward()
    _close(n.grad.numpy(), t.grad.numpy(), atol * 10)
    for name, p in layer.named_parameters():
        _close(p.grad.numpy(), ref.get_parameter(name).grad.numpy(), atol * 10)
    for name, b in layer.named_buffers():
        _close(b.numpy(), ref.get_buffer(name).numpy(), 1e-6)


POOL_MODULES = [
    ("MaxPool3d", (3,), {"stride": 2, "padding": 1}),
    ("MaxPool3d", ((2, 3, 2),), {"dilation": (1, 2, 1), "ceil_mode": True, "return_indices": True}),
    ("AvgPool3d", (3,), {"stride": 2, "padding": 1, "count_include_pad": False}),
    ("AvgPool3d", (2,), {"ceil_mode": True, "divisor_override": 3}),
    ("AdaptiveAvgPool3d", ((3, None, 2),), {}),
    ("AdaptiveMaxPool3d", ((3, 4, 2),), {"return_indices": True}),
    ("LPPool3d", (2, 2), {}),
]


@needs_torch
@pytest.mark.parametrize(("name", "args", "kwargs"), POOL_MODULES, ids=[c[0] for c in POOL_MODULES])
@pytest.mark.parametrize("shape", [(2, 3, 7, 6, 5), (3, 5, 6, 7)], ids=["batched", "unbatched"])
def test_pool3d_modules_match_torch(name, args, kwargs, shape) -> None:
    layer, ref = getattr(nn, name)(*args, **kwargs), getattr(torch.nn, name)(*args, **kwargs)
    assert repr(layer) == repr(ref)
    x = _randn(*shape)
    _module_vs_torch(layer, ref, np.abs(x) + 0.1 if name == "LPPool3d" else x)


@needs_torch
def test_max_unpool3d_module_matches_torch() -> None:
    pool, unpool = nn.MaxPool3d(2, return_indices=True), nn.MaxUnpool3d(2)
    t_pool, t_unpool = torch.nn.MaxPool3d(2, return_indices=True), torch.nn.MaxUnpool3d(2)
    assert repr(unpool) == repr(t_unpool) == "MaxUnpool3d(kernel_size=(2, 2, 2), stride=(2, 2, 2), padding=(0, 0, 0))"
    x = _randn(1, 2, 5, 4, 4)
    got = unpool(*pool(nb.tensor(x)), output_size=(5, 4, 4))
    np.testing.assert_array_equal(got.numpy(), t_unpool(*t_pool(torch.tensor(x)), output_size=(5, 4, 4)).numpy())


@needs_torch
@pytest.mark.parametrize(
    "kwargs", [{}, {"momentum": None}, {"affine": False}, {"track_running_stats": False}, {"momentum": 0.3}]
)
def test_batchnorm3d_matches_torch_train_and_eval(kwargs) -> None:
    layer, ref = nn.BatchNorm3d(3, **kwargs), torch.nn.BatchNorm3d(3, **kwargs)
    _load_from_torch(layer, ref)
    assert list(layer.state_dict()) == list(ref.state_dict())
    for _ in range(2):  # the running stats accumulate over steps
        _module_vs_torch(layer, ref, _randn(4, 3, 3, 2, 3) * 3 + 1, atol=1e-4)
    layer.eval()
    ref.eval()
    _module_vs_torch(layer, ref, _randn(2, 3, 2, 4, 3), atol=1e-4)


@needs_torch
@pytest.mark.parametrize(
    "kwargs", [{}, {"affine": True}, {"track_running_stats": True}, {"affine": True, "track_running_stats": True}]
)
@pytest.mark.parametrize("shape", [(2, 3, 3, 4, 2), (3, 3, 4, 2)], ids=["batched", "unbatched"])
def test_instancenorm3d_matches_torch(kwargs, shape) -> None:
    layer, ref = nn.InstanceNorm3d(3, **kwargs), torch.nn.InstanceNorm3d(3, **kwargs)
    _load_from_torch(layer, ref)
    assert list(layer.state_dict()) == list(ref.state_dict())
    _module_vs_torch(layer, ref, _randn(*shape) * 2 + 1, atol=1e-4)
    if kwargs.get("track_running_stats"):
        layer.eval()
        ref.eval()
        _module_vs_torch(layer, ref, _randn(*shape), atol=1e-4)


PAD_MODULES = [
    ("ZeroPad3d", (1,)),
    ("ZeroPad3d", ((1, 2, 0, 1, 2, -1),)),
    ("ConstantPad3d", ((3, 0, 2, 1, 1, 2), -1.5)),
    ("ConstantPad3d", (2, 2.0)),
    ("ReflectionPad3d", ((1, 2, 3, 0, 2, 1),)),
    ("ReflectionPad3d", (1,)),
    ("ReplicationPad3d", ((1, 2, 3, 0, 2, 1),)),
    ("ReplicationPad3d", (2,)),
    ("CircularPad3d", ((1, 2, 2, 0, 3, 1),)),
    ("CircularPad3d", (1,)),
]


@needs_torch
@pytest.mark.parametrize(("name", "args"), PAD_MODULES, ids=[f"{n}{a}" for n, a in PAD_MODULES])
@pytest.mark.parametrize("shape", [(2, 3, 4, 5, 4), (3, 4, 5, 4)], ids=["batched", "unbatched"])
def test_pad3d_modules_match_torch(name, args, shape) -> None:
    layer, ref = getattr(nn, name)(*args), getattr(torch.nn, name)(*args)
    assert repr(layer) == repr(ref) and layer.padding == ref.padding
    _module_vs_torch(layer, ref, _randn(*shape))


@needs_torch
@pytest.mark.parametrize("mode", ["constant", "reflect", "replicate", "circular"])
def test_functional_pad_six_tuple_matches_torch(mode) -> None:
    x = _randn(2, 3, 4, 5, 6)
    for pad in [(1, 2, 0, 1, 2, 1), (2, 2, 2, 2, 2, 2), (-1, 2, 1, -1, 0, 2)]:
        _vs_torch("pad", x, pad, mode)


# -- NumPy references (no torch) ---------------------------------------------------------------------
def _out_size(n: int, k: int, s: int, p: int, d: int, ceil: bool) -> int:
    """PyTorch's pooling_output_shape."""
    o = (n + 2 * p - d * (k - 1) - 1 + (s - 1 if ceil else 0)) // s + 1
    return o - 1 if ceil and (o - 1) * s >= n + p else o


def _triple(v) -> tuple:
    return tuple(v) if isinstance(v, tuple) else (v,) * 3


def _np_max_pool3d(x: np.ndarray, kernel, stride, padding, dilation, ceil: bool) -> tuple[np.ndarray, np.ndarray]:
    """PyTorch's CPU max_pool3d: scan (d, h, w), `val > max || isnan(val)`, index of the first
    valid element to start."""
    k, p, d = _triple(kernel), _triple(padding), _triple(dilation)
    s = k if stride is None else _triple(stride)
    size = x.shape[-3:]
    out = tuple(_out_size(n, *a, ceil) for n, a in zip(size, zip(k, s, p, d, strict=True), strict=True))
    vals, idx = np.zeros(x.shape[:-3] + out, x.dtype), np.zeros(x.shape[:-3] + out, np.int64)
    for lead in np.ndindex(*x.shape[:-3]):
        for o in np.ndindex(*out):
            best, where = -np.inf, None
            for w in np.ndindex(*k):
                pos = tuple(oi * si - pi + wi * di for oi, si, pi, wi, di in zip(o, s, p, w, d, strict=True))
                if not all(0 <= q < n for q, n in zip(pos, size, strict=True)):
                    continue
                flat = (pos[0] * size[1] + pos[1]) * size[2] + pos[2]
                val = x[lead + pos]
                if where is None:
                    where = flat
                if val > best or np.isnan(val):
                    best, where = val, flat
            vals[lead + o], idx[lead + o] = best, where
    return vals, idx


def _np_avg_pool3d(x: np.ndarray, kernel, stride, padding, ceil: bool, include_pad: bool, divisor) -> np.ndarray:
    """PyTorch's CPU avg_pool3d (windows clipped to the padded input, then to the input)."""
    k, p = _triple(kernel), _triple(padding)
    s = k if stride is None else _triple(stride)
    size = x.shape[-3:]
    out = tuple(_out_size(n, ki, si, pi, 1, ceil) for n, ki, si, pi in zip(size, k, s, p, strict=True))
    res = np.zeros(x.shape[:-3] + out, np.float64)
    for o in np.ndindex(*out):
        start = [oi * si - pi for oi, si, pi in zip(o, s, p, strict=True)]
        end = [min(a + ki, n + pi) for a, ki, n, pi in zip(start, k, size, p, strict=True)]
        pool_size = math.prod(b - a for a, b in zip(start, end, strict=True))
        lo = [max(a, 0) for a in start]
        hi = [min(b, n) for b, n in zip(end, size, strict=True)]
        window = x[..., lo[0] : hi[0], lo[1] : hi[1], lo[2] : hi[2]]
        count = divisor or (pool_size if include_pad else math.prod(b - a for a, b in zip(lo, hi, strict=True)))
        res[(...,) + o] = window.sum(axis=(-3, -2, -1)) / count
    return res


@pytest.mark.parametrize(("kernel", "stride", "padding", "dilation", "ceil_mode"), MAX3D)
def test_max_pool3d_matches_numpy_reference(kernel, stride, padding, dilation, ceil_mode) -> None:
    x = _ties(2, 2, 6, 5, 5)
    ref, ref_idx = _np_max_pool3d(x, kernel, stride, padding, dilation, ceil_mode)
    t = nb.tensor(x, requires_grad=True)
    out, idx = F.max_pool3d(t, kernel, stride, padding, dilation, ceil_mode, return_indices=True)
    np.testing.assert_array_equal(out.numpy(), ref)
    np.testing.assert_array_equal(idx.numpy(), ref_idx)
    # The gradient goes to each window's first maximum: the index torch reports.
    cot = _randn(*out.shape)
    (out * nb.tensor(cot)).sum().backward()
    grad = np.zeros((4, 6 * 5 * 5), np.float32)
    np.add.at(grad, (np.arange(4)[:, None], ref_idx.reshape(4, -1)), cot.reshape(4, -1))
    _close(t.grad.numpy(), grad.reshape(x.shape))


def test_max_pool3d_nan_numpy_reference() -> None:
    x = _ties(1, 2, 4, 4, 4)
    x[0, 0, 0, 1, 1] = x[0, 0, 1, 0, 0] = x[0, 1, 3, 3, 3] = np.nan
    ref, ref_idx = _np_max_pool3d(x, 3, 1, 1, 1, False)
    out, idx = F.max_pool3d(nb.tensor(x), 3, 1, 1, return_indices=True)
    np.testing.assert_array_equal(out.numpy(), ref)
    np.testing.assert_array_equal(idx.numpy(), ref_idx)


@pytest.mark.parametrize(("kernel", "stride", "padding", "ceil_mode", "count_include_pad", "divisor"), AVG3D)
def test_avg_pool3d_matches_numpy_reference(kernel, stride, padding, ceil_mode, count_include_pad, divisor) -> None:
    x = _randn(2, 3, 7, 6, 5)
    ref = _np_avg_pool3d(x, kernel, stride, padding, ceil_mode, count_include_pad, divisor)
    _close(
        F.avg_pool3d(nb.tensor(x[0]), kernel, stride, padding, ceil_mode, count_include_pad, divisor).numpy(), ref[0]
    )
    _close(F.avg_pool3d(nb.tensor(x), kernel, stride, padding, ceil_mode, count_include_pad, divisor).numpy(), ref)


def test_pool3d_tiles_and_adaptive_numpy() -> None:
    x = _randn(2, 3, 4, 6, 8)
    tiles = x.reshape(2, 3, 2, 2, 3, 2, 4, 2)
    _close(nn.MaxPool3d(2)(nb.tensor(x)).numpy(), tiles.max((3, 5, 7)))
    _close(nn.AvgPool3d(2)(nb.tensor(x)).numpy(), tiles.mean((3, 5, 7)))
    _close(nn.AdaptiveAvgPool3d((2, 3, 4))(nb.tensor(x)).numpy(), tiles.mean((3, 5, 7)))
    _close(nn.AdaptiveMaxPool3d((2, 3, 4))(nb.tensor(x)).numpy(), tiles.max((3, 5, 7)))
    _close(F.adaptive_avg_pool3d(nb.tensor(x), 1).numpy(), x.mean((2, 3, 4), keepdims=True))
    _close(F.adaptive_max_pool3d(nb.tensor(x[0]), 1).numpy(), x[0].max((1, 2, 3), keepdims=True))
    # Adaptive windows [floor(i n / m), ceil((i + 1) n / m)) along D (5 -> 3): [0, 2), [1, 4), [3, 5).
    y = _randn(1, 5, 2, 2)
    want = np.stack([y[:, a:b].mean(1) for a, b in ((0, 2), (1, 4), (3, 5))], 1)
    _close(F.adaptive_avg_pool3d(nb.tensor(y), (3, 2, 2)).numpy(), want)
    want = np.stack([y[:, a:b].max(1) for a, b in ((0, 2), (1, 4), (3, 5))], 1)
    _close(F.adaptive_max_pool3d(nb.tensor(y), (3, None, None)).numpy(), want)
    p2 = np.sqrt((x**2).reshape(2, 3, 2, 2, 3, 2, 4, 2).sum((3, 5, 7)))
    _close(nn.LPPool3d(2, 2)(nb.tensor(x)).numpy(), p2)


def test_max_unpool3d_numpy_roundtrip() -> None:
    x = _randn(2, 1, 4, 4, 6)
    out, idx = F.max_pool3d(nb.tensor(x), 2, return_indices=True)
    back = nn.MaxUnpool3d(2)(out, idx).numpy()
    tiles = x.reshape(2, 1, 2, 2, 2, 2, 3, 2)
    is_max = tiles == tiles.max((3, 5, 7), keepdims=True)
    np.testing.assert_array_equal(back, np.where(is_max, tiles, 0).reshape(x.shape))


def test_batchnorm3d_train_eval_numpy() -> None:
    bn = nn.BatchNorm3d(3)
    assert list(bn.state_dict()) == ["weight", "bias", "running_mean", "running_var", "num_batches_tracked"]
    assert repr(bn) == "BatchNorm3d(3, eps=1e-05, momentum=0.1, affine=True, bias=True, track_running_stats=True)"
    x = _randn(4, 3, 2, 2, 3) * 2 + 1
    mean, var, n = x.mean((0, 2, 3, 4)), x.var((0, 2, 3, 4)), 4 * 2 * 2 * 3
    c = (slice(None), None, None, None)
    _close(bn(nb.tensor(x)).numpy(), (x - mean[c]) / np.sqrt(var[c] + 1e-5), 1e-4)
    _close(bn.running_mean.numpy(), 0.1 * mean)
    _close(bn.running_var.numpy(), 0.9 + 0.1 * var * n / (n - 1))
    assert bn.num_batches_tracked.item() == 1
    bn.eval()
    rm, rv = bn.running_mean.numpy(), bn.running_var.numpy()
    _close(bn(nb.tensor(x)).numpy(), (x - rm[c]) / np.sqrt(rv[c] + 1e-5), 1e-4)
    assert bn.num_batches_tracked.item() == 1  # eval mode changes no buffer


def test_instancenorm3d_numpy() -> None:
    x = _randn(2, 3, 2, 3, 4) * 3
    want = (x - x.mean((2, 3, 4), keepdims=True)) / np.sqrt(x.var((2, 3, 4), keepdims=True) + 1e-5)
    _close(nn.InstanceNorm3d(3)(nb.tensor(x)).numpy(), want, 1e-4)
    _close(nn.InstanceNorm3d(3)(nb.tensor(x[1])).numpy(), want[1], 1e-4)
    assert (
        repr(nn.InstanceNorm3d(3))
        == "InstanceNorm3d(3, eps=1e-05, momentum=0.1, affine=False, bias=False, track_running_stats=False)"
    )


@pytest.mark.parametrize(
    ("cls", "args", "mode"),
    [
        (nn.ZeroPad3d, ((1, 2, 0, 1, 2, 1),), "constant"),
        (nn.ConstantPad3d, (1, 2.5), "constant"),
        (nn.ReflectionPad3d, ((1, 2, 3, 0, 2, 1),), "reflect"),
        (nn.ReplicationPad3d, ((1, 2, 3, 0, 2, 1),), "edge"),
        (nn.CircularPad3d, ((1, 2, 2, 0, 3, 1),), "wrap"),
    ],
)
def test_pad3d_modules_numpy(cls, args, mode) -> None:
    m = cls(*args)
    assert len(m.padding) == 6
    widths = [(m.padding[4], m.padding[5]), (m.padding[2], m.padding[3]), (m.padding[0], m.padding[1])]
    for x in (_randn(2, 3, 4, 5, 4), _randn(3, 4, 5, 4)):
        lead = [(0, 0)] * (x.ndim - 3)
        value = args[1] if len(args) == 2 else 0.0
        kw = {"constant_values": value} if mode == "constant" else {}
        np.testing.assert_array_equal(m(nb.tensor(x)).numpy(), np.pad(x, lead + widths, mode, **kw))


# -- input checks -----------------------------------------------------------------------------------------
def test_functional_3d_input_checks() -> None:
    x = nb.ones(1, 2, 4, 4, 4)
    with pytest.raises(ValueError, match=r"max_pool3d: expected a 4-D \(unbatched\) or 5-D \(batched\) input"):
        F.max_pool3d(nb.ones(2, 4, 4), 2)
    with pytest.raises(TypeError, match="max_pool3d: input must be a floating-point tensor"):
        F.max_pool3d(nb.ones(1, 2, 4, 4, 4, dtype=nb.int32), 2)
    with pytest.raises(TypeError, match=r"max_pool3d: kernel_size must be an int or a tuple of 3 ints"):
        F.max_pool3d(x, (2, 2))
    with pytest.raises(ValueError, match="max_pool3d: kernel_size must be positive"):
        F.max_pool3d(x, (2, 0, 2))
    with pytest.raises(ValueError, match="max_pool3d: padding .* should be at most half"):
        F.max_pool3d(x, 2, padding=2)
    with pytest.raises(ValueError, match="max_pool3d: input size .* gives an output size smaller than 1"):
        F.max_pool3d(x, 5)
    with pytest.raises(ValueError, match="avg_pool3d: padding .* should be at most half"):
        F.avg_pool3d(x, 3, padding=2)
    with pytest.raises(ValueError, match="avg_pool3d: divisor_override must be a positive int"):
        F.avg_pool3d(x, 2, divisor_override=0)
    with pytest.raises(ValueError, match=r"adaptive_avg_pool3d: output_size must be an int or a tuple of 3 ints"):
        F.adaptive_avg_pool3d(x, (2, 2))
    with pytest.raises(ValueError, match="adaptive_max_pool3d: output_size must be positive ints"):
        F.adaptive_max_pool3d(x, (2, 0, 2))
    with pytest.raises(ValueError, match="adaptive_max_pool3d: expected a 4-D"):
        F.adaptive_max_pool3d(nb.ones(4, 4, 4), 2)
    with pytest.raises(ValueError, match="adaptive_avg_pool3d: input spatial size .* must be non-empty"):
        F.adaptive_avg_pool3d(nb.ones(1, 0, 4, 4), 2)
    with pytest.raises(ValueError, match="lp_pool3d: norm_type must be nonzero"):
        F.lp_pool3d(x, 0, 2)
    out, idx = F.max_pool3d(x, 2, return_indices=True)
    with pytest.raises(ValueError, match="max_unpool3d: output_size should be a sequence containing 3 or 5 elements"):
        F.max_unpool3d(out, idx, 2, output_size=(4, 4))
    with pytest.raises(ValueError, match=r"max_unpool3d: invalid output_size"):
        F.max_unpool3d(out, idx, 2, output_size=(6, 4, 4))
    with pytest.raises(TypeError, match="max_unpool3d: indices must be an integer Tensor"):
        F.max_unpool3d(out, out, 2)


def test_module_3d_input_checks() -> None:
    with pytest.raises(ValueError, match=r"MaxPool3d kernel_size=2 .* got input \(4, 4\), expected \(N, C, D, H, W\)"):
        nn.MaxPool3d(2)(nb.ones(4, 4))
    with pytest.raises(ValueError, match=r"AvgPool3d .*expected \(N, C, D, H, W\) or \(C, D, H, W\)"):
        nn.AvgPool3d(2)(nb.ones(2, 2, 4, 4, 4, 4))
    with pytest.raises(ValueError, match=r"AdaptiveMaxPool3d .*expected \(N, C, D, H, W\)"):
        nn.AdaptiveMaxPool3d(2)(nb.ones(4, 4, 4))
    with pytest.raises(ValueError, match=r"BatchNorm3d 3 .*got input \(2, 3, 4, 4\), expected \(N, 3, D, H, W\)"):
        nn.BatchNorm3d(3)(nb.ones(2, 3, 4, 4))
    with pytest.raises(ValueError, match=r"expected \(N, 3, D, H, W\)"):
        nn.BatchNorm3d(3)(nb.ones(2, 4, 2, 2, 2))
    with pytest.raises(ValueError, match=r"InstanceNorm3d .*got input \(3, 4, 4\), expected \(N, 3, D, H, W\)"):
        nn.InstanceNorm3d(3)(nb.ones(3, 4, 4))
    with pytest.raises(ValueError, match=r"expected \(N, 3, D, H, W\) or \(3, D, H, W\)"):
        nn.InstanceNorm3d(3, affine=True)(nb.ones(2, 4, 2, 2, 2))
    with pytest.raises(ValueError, match=r"ZeroPad3d: padding must be an int or a tuple of 6 ints"):
        nn.ZeroPad3d((1, 2))
    with pytest.raises(ValueError, match=r"ReflectionPad3d .*expected \(N, C, D, H, W\) or \(C, D, H, W\)"):
        nn.ReflectionPad3d(1)(nb.ones(3, 3, 3))
    with pytest.raises(ValueError, match=r"ConstantPad3d .*expected \(\*, D, H, W\)"):
        nn.ConstantPad3d(1, 0.0)(nb.ones(3, 3))
    with pytest.raises(ValueError, match="reflect padding .* must be less than its size"):
        nn.ReflectionPad3d((1, 1, 1, 1, 3, 0))(nb.ones(1, 1, 3, 3, 3))
    with pytest.raises(ValueError, match="num_features must be a positive int"):
        nn.BatchNorm3d(0)
    # ConstantPad3d, as torch, takes any rank with the three padded dims.
    assert nn.ConstantPad3d(1, 0.0)(nb.ones(3, 3, 3)).shape == (5, 5, 5)
    assert nn.ConstantPad3d(1, 0.0)(nb.ones(2, 2, 3, 3, 3, 3)).shape == (2, 2, 3, 5, 5, 5)


def test_max_pool3d_second_order_gradient() -> None:
    """The max_pool3d gradient is itself differentiable (its transpose gathers at the maxima)."""
    x = nb.tensor(_randn(1, 1, 4, 4, 4))

    def loss(t):
        return (F.max_pool3d(t, 2, 1) ** 2).sum()

    hvp = nb.grad(lambda t: (nb.grad(loss)(t) * nb.ones_like(t)).sum())(x)
    # d/dx sum(2 * pooled * route) = 2 * (number of windows each element is the first max of)
    _, idx = F.max_pool3d(x, 2, 1, return_indices=True)
    counts = np.bincount(idx.numpy().reshape(-1), minlength=64).reshape(1, 1, 4, 4, 4)
    _close(hvp.numpy(), 2.0 * counts)


@pytest.mark.parametrize("combo", list(itertools.product([1, 2], [False, True])))
def test_pool3d_unbatched_equals_batched(combo) -> None:
    stride, ceil_mode = combo
    x = _randn(3, 5, 4, 6)
    for fn, args in ((F.max_pool3d, (3, stride, 1, 1, ceil_mode)), (F.avg_pool3d, (3, stride, 1, ceil_mode, False))):
        _close(fn(nb.tensor(x), *args).numpy(), fn(nb.tensor(x[None]), *args).numpy()[0])
