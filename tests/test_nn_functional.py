"""nabla_nn.functional (activations, linear, conv, pooling, normalization, embedding, dropout):
values and gradients against torch.nn.functional where torch is installed, and against NumPy
formulas everywhere; argument errors; batch_norm's lazy running-statistics update."""

from __future__ import annotations

import math

import numpy as np
import pytest
from _oracle import TF, needs_torch, torch

import nabla as nb
import nabla_nn as nn
import nabla_nn.functional as F

RNG = np.random.default_rng(0)


def _randn(*shape: int, scale: float = 1.0) -> np.ndarray:
    return (RNG.standard_normal(shape) * scale).astype(np.float32)


def _close(a, b, tol: float = 1e-5) -> None:
    a = a.numpy() if isinstance(a, nb.Tensor) else np.asarray(a)
    b = b.detach().numpy() if torch is not None and isinstance(b, torch.Tensor) else np.asarray(b)
    assert a.shape == b.shape, (a.shape, b.shape)
    np.testing.assert_allclose(a, b, rtol=tol, atol=tol)


def _grads_vs_torch(nf, tf, arrays: list, argnums: tuple, tol: float = 1e-4) -> None:
    """nb.grad of nf against torch autograd of tf, for the arguments in argnums."""
    got = nb.grad(nf, argnums=argnums)(*[nb.tensor(a) for a in arrays])
    got = got if isinstance(got, tuple) else (got,)
    ts = [torch.tensor(a, requires_grad=i in argnums) for i, a in enumerate(arrays)]
    tf(*ts).backward()
    for g, i in zip(got, argnums, strict=True):
        _close(g, ts[i].grad, tol)


# -- activations: torch ----------------------------------------------------------------------------
ACTIVATIONS = [
    ("relu", {}),
    ("relu6", {}),
    ("leaky_relu", {"negative_slope": 0.2}),
    ("elu", {"alpha": 0.7}),
    ("selu", {}),
    ("celu", {"alpha": 0.5}),
    ("gelu", {}),
    ("gelu", {"approximate": "tanh"}),
    ("silu", {}),
    ("mish", {}),
    ("sigmoid", {}),
    ("tanh", {}),
    ("hardtanh", {"min_val": -2.0, "max_val": 1.5}),
    ("hardsigmoid", {}),
    ("hardswish", {}),
    ("softplus", {"beta": 2.0, "threshold": 5.0}),
    ("softsign", {}),
    ("tanhshrink", {}),
    ("hardshrink", {"lambd": 0.7}),
    ("softshrink", {"lambd": 0.3}),
    ("logsigmoid", {}),
    ("threshold", {"threshold": 0.3, "value": -2.0}),
    ("rrelu", {}),
]


@needs_torch
@pytest.mark.parametrize(("name", "kwargs"), ACTIVATIONS)
@pytest.mark.parametrize("shape", [(7,), (3, 5)])
def test_activation_matches_torch(name: str, kwargs: dict, shape: tuple) -> None:
    x = _randn(*shape, scale=3.0)
    _close(getattr(F, name)(nb.tensor(x), **kwargs), getattr(TF, name)(torch.tensor(x), **kwargs))
    w = _randn(*shape)
    _grads_vs_torch(
        lambda a: (getattr(F, name)(a, **kwargs) * nb.tensor(w)).sum(),
        lambda a: (getattr(TF, name)(a, **kwargs) * torch.tensor(w)).sum(),
        [x],
        (0,),
    )


def test_relu6_and_hardtanh_clamp_integer_tensors_like_torch() -> None:
    x = nb.tensor([-3, 0, 3, 8])
    assert F.relu6(x).tolist() == [0, 0, 3, 6] and F.relu6(x).dtype == nb.int64  # torch's values
    assert F.hardtanh(x, -2.7, 2.7).tolist() == [-2, 0, 2, 2]  # bounds truncated, as torch's
    assert F.relu6(x.int(), inplace=True).dtype == nb.int32
    with pytest.raises(TypeError, match="relu6: expected an integer or floating-point tensor, got dtype bool"):
        F.relu6(nb.tensor([True]))


@needs_torch
@pytest.mark.parametrize("name", ["softmax", "log_softmax", "softmin"])
@pytest.mark.parametrize(("shape", "dim"), [((5,), 0), ((3, 4), 1), ((2, 3, 4), 0), ((2, 3, 4), -1)])
def test_softmax_family_matches_torch(name: str, shape: tuple, dim: int) -> None:
    x, w = _randn(*shape, scale=2.0), _randn(*shape)
    _close(getattr(F, name)(nb.tensor(x), dim=dim), getattr(TF, name)(torch.tensor(x), dim=dim))
    _grads_vs_torch(
        lambda a: (getattr(F, name)(a, dim=dim) * nb.tensor(w)).sum(),
        lambda a: (getattr(TF, name)(a, dim=dim) * torch.tensor(w)).sum(),
        [x],
        (0,),
    )


@needs_torch
def test_softmax_implicit_dim_warns_and_matches_torch() -> None:
    x = _randn(2, 3)
    with pytest.warns(UserWarning, match="implicit dimension"):
        out = F.softmax(nb.tensor(x))
    with pytest.warns(UserWarning):
        expected = TF.softmax(torch.tensor(x))
    _close(out, expected)
    _close(
        F.log_softmax(nb.tensor(x), dim=1, dtype=nb.float64), TF.log_softmax(torch.tensor(x), 1, dtype=torch.float64)
    )


@needs_torch
@pytest.mark.parametrize(("shape", "n"), [((4, 3), 3), ((4, 3, 5), 3), ((2, 3, 4, 4), 1), ((6,), 1), ((), 1)])
def test_prelu_matches_torch(shape: tuple, n: int) -> None:
    x, w, c = _randn(*shape, scale=2.0), np.linspace(0.1, 0.5, n, dtype=np.float32), _randn(*shape)
    _close(F.prelu(nb.tensor(x), nb.tensor(w)), TF.prelu(torch.tensor(x), torch.tensor(w)))
    _grads_vs_torch(
        lambda a, b: (F.prelu(a, b) * nb.tensor(c)).sum(),
        lambda a, b: (TF.prelu(a, b) * torch.tensor(c)).sum(),
        [x, w],
        (0, 1),
    )


@needs_torch
@pytest.mark.parametrize(("p", "dim"), [(2.0, 1), (1.0, 0), (3.0, -1), (math.inf, 1)])
def test_glu_and_normalize_match_torch(p: float, dim: int) -> None:
    x, c = _randn(4, 6), _randn(4, 6)
    _close(F.normalize(nb.tensor(x), p, dim), TF.normalize(torch.tensor(x), p, dim))
    _grads_vs_torch(
        lambda a: (F.normalize(a, p, dim) * nb.tensor(c)).sum(),
        lambda a: (TF.normalize(a, p, dim) * torch.tensor(c)).sum(),
        [x],
        (0,),
    )
    _close(F.glu(nb.tensor(x), dim), TF.glu(torch.tensor(x), dim))


# -- activations: NumPy ----------------------------------------------------------------------------
def test_activations_match_numpy_formulas() -> None:
    x = _randn(4, 6, scale=3.0)
    t = nb.tensor(x)
    _close(F.relu(t), np.maximum(x, 0))
    _close(F.leaky_relu(t, 0.1), np.where(x > 0, x, 0.1 * x))
    alpha, scale = 1.6732632423543772, 1.0507009873554805
    _close(F.selu(t), scale * np.where(x > 0, x, alpha * np.expm1(x)))
    _close(F.celu(t, 2.0), np.maximum(x, 0) + np.minimum(0, 2.0 * np.expm1(x / 2.0)))
    _close(F.softsign(t), x / (1 + np.abs(x)))
    _close(F.hardshrink(t, 1.0), np.where(np.abs(x) > 1.0, x, 0))
    _close(F.softshrink(t, 1.0), np.sign(x) * np.maximum(np.abs(x) - 1.0, 0))
    _close(F.threshold(t, 0.5, 9.0), np.where(x > 0.5, x, 9.0))
    e = np.exp(x - x.max(1, keepdims=True))
    _close(F.softmax(t, dim=1), e / e.sum(1, keepdims=True))
    _close(F.log_softmax(t, dim=1), np.log(e / e.sum(1, keepdims=True)), 1e-5)
    a, b = x[:, :3], x[:, 3:]
    _close(F.glu(t, -1), a / (1 + np.exp(-b)))
    _close(F.normalize(t), x / np.linalg.norm(x, axis=1, keepdims=True))
    _close(F.rrelu(t, 0.1, 0.3), np.where(x >= 0, x, 0.2 * x))


def test_prelu_and_rrelu_training_numpy() -> None:
    x = _randn(3, 2, 4, scale=2.0)
    w = np.array([0.25, -0.5], np.float32)
    _close(F.prelu(nb.tensor(x), nb.tensor(w)), np.where(x > 0, x, x * w[None, :, None]))
    y = F.rrelu(nb.tensor(x), 0.1, 0.3, training=True).numpy()
    slope = y[x < 0] / x[x < 0]
    assert np.all(slope >= 0.1 - 1e-6) and np.all(slope <= 0.3 + 1e-6) and np.ptp(slope) > 0
    np.testing.assert_array_equal(y[x >= 0], x[x >= 0])


def test_inplace_flag_writes_the_result_into_the_input_as_in_pytorch() -> None:
    t = nb.tensor([-1.0, 2.0])
    out = F.relu(t, inplace=True)
    assert out is t and t.tolist() == [0.0, 2.0]
    assert F.relu(t).tolist() == [0.0, 2.0] and F.relu(t) is not t
    x = nb.tensor([[-1.0, 3.0], [-2.0, 8.0]])
    nn.ReLU6(inplace=True)(x[1])  # a view: written through to x
    F.leaky_relu(x[0], 0.5, inplace=True)
    assert x.tolist() == [[-0.5, 3.0], [0.0, 6.0]]
    d = nb.ones(4)
    assert F.dropout(d, 0.5, training=False, inplace=True) is d and d.tolist() == [1.0] * 4
    w = nb.tensor([-1.0, 1.0], requires_grad=True)
    h = w * 2
    F.relu(h, inplace=True)  # a non-leaf: differentiated through the update, as in PyTorch
    h.sum().backward()
    assert w.grad.tolist() == [0.0, 2.0]
    with pytest.raises(RuntimeError, match="leaf tensor that requires grad"):
        F.relu(w, inplace=True)
    # PyTorch's trailing-underscore spellings are the same functions with inplace=True
    for fn, args, want in [
        (F.relu_, (), [0.0, 2.0]),
        (F.elu_, (1.0,), [np.expm1(-1.0), 2.0]),
        (F.leaky_relu_, (0.5,), [-0.5, 2.0]),
        (F.hardtanh_, (-0.5, 0.5), [-0.5, 0.5]),
        (F.threshold_, (0.0, 7.0), [7.0, 2.0]),
    ]:
        v = nb.tensor([-1.0, 2.0])
        assert fn(v, *args) is v
        np.testing.assert_allclose(v.numpy(), want, rtol=1e-6, err_msg=fn.__name__)


def test_activation_errors() -> None:
    with pytest.raises(TypeError, match="floating-point"):
        F.selu(nb.tensor([1, 2]))
    with pytest.raises(ValueError, match="halving dimension must be even"):
        F.glu(nb.ones(2, 3))
    with pytest.raises(ValueError, match="weight has 3 elements, input has 2 channels"):
        F.prelu(nb.ones(4, 2), nb.ones(3))
    with pytest.raises(ValueError, match="lambd must be greater or equal to 0"):
        F.softshrink(nb.ones(2), -1.0)
    with pytest.raises(ValueError, match="alpha must be nonzero"):
        F.celu(nb.ones(2), 0.0)
    with pytest.raises(NotImplementedError, match="out="):
        F.normalize(nb.ones(2, 2), out=nb.ones(2, 2))


# -- linear / conv ---------------------------------------------------------------------------------
def test_linear_and_bilinear_numpy() -> None:
    x, w, b = _randn(2, 3, 4), _randn(5, 4), _randn(5)
    _close(F.linear(nb.tensor(x), nb.tensor(w), nb.tensor(b)), x @ w.T + b, 1e-5)
    _close(F.linear(nb.tensor(x[0, 0]), nb.tensor(w)), x[0, 0] @ w.T, 1e-5)
    x2, a = _randn(2, 3, 6), _randn(5, 4, 6)
    _close(
        F.bilinear(nb.tensor(x), nb.tensor(x2), nb.tensor(a), nb.tensor(b)),
        np.einsum("...i,oij,...j->...o", x, a, x2) + b,
        1e-4,
    )
    with pytest.raises(ValueError, match="does not match in_features=4"):
        F.linear(nb.ones(2, 3), nb.ones(5, 4))
    with pytest.raises(ValueError, match="weight must be 3-D"):
        F.bilinear(nb.ones(2, 3), nb.ones(2, 3), nb.ones(3, 3))


@needs_torch
def test_linear_bilinear_grads_match_torch() -> None:
    x, w, b = _randn(3, 4), _randn(5, 4), _randn(5)
    _grads_vs_torch(lambda *a: (F.linear(*a) ** 2).sum(), lambda *a: (TF.linear(*a) ** 2).sum(), [x, w, b], (0, 1, 2))
    x2, a = _randn(3, 2), _randn(5, 4, 2)
    _grads_vs_torch(
        lambda *t: (F.bilinear(*t) ** 2).sum(), lambda *t: (TF.bilinear(*t) ** 2).sum(), [x, x2, a, b], (0, 1, 2, 3)
    )


@needs_torch
@pytest.mark.parametrize(
    "kwargs",
    [
        {},
        {"stride": 2, "padding": 1, "output_padding": 1},
        {"dilation": 2, "groups": 2},
        {"stride": (3,), "padding": (2,)},
    ],
)
def test_conv_transpose1d_matches_torch(kwargs: dict) -> None:
    g = kwargs.get("groups", 1)
    x, w, b = _randn(2, 4, 7), _randn(4, 6 // g, 3), _randn(6)
    _close(
        F.conv_transpose1d(nb.tensor(x), nb.tensor(w), nb.tensor(b), **kwargs),
        TF.conv_transpose1d(torch.tensor(x), torch.tensor(w), torch.tensor(b), **kwargs),
        1e-4,
    )
    _close(
        F.conv_transpose1d(nb.tensor(x[0]), nb.tensor(w), **kwargs),
        TF.conv_transpose1d(torch.tensor(x[0]), torch.tensor(w), **kwargs),
        1e-4,
    )
    _grads_vs_torch(
        lambda a, k: (F.conv_transpose1d(a, k, **kwargs) ** 2).sum(),
        lambda a, k: (TF.conv_transpose1d(a, k, **kwargs) ** 2).sum(),
        [x, w],
        (0, 1),
        1e-3,
    )


@needs_torch
def test_conv_wrappers_and_pad_match_torch() -> None:
    x, w = _randn(2, 3, 6, 6), _randn(4, 3, 3, 3)
    _close(
        F.conv2d(nb.tensor(x), nb.tensor(w), padding="same"),
        TF.conv2d(torch.tensor(x), torch.tensor(w), padding="same"),
        1e-4,
    )
    _close(
        F.conv1d(nb.tensor(x[:, :, 0]), nb.tensor(w[:, :, 0]), stride=2),
        TF.conv1d(torch.tensor(x[:, :, 0]), torch.tensor(w[:, :, 0]), stride=2),
        1e-4,
    )
    wt = _randn(3, 2, 3, 3)
    _close(
        F.conv_transpose2d(nb.tensor(x), nb.tensor(wt), stride=2),
        TF.conv_transpose2d(torch.tensor(x), torch.tensor(wt), stride=2),
        1e-4,
    )
    for mode in ("constant", "reflect", "replicate", "circular"):
        _close(F.pad(nb.tensor(x), (1, 2, 2, 1), mode=mode), TF.pad(torch.tensor(x), (1, 2, 2, 1), mode=mode))
    _close(F.pad(nb.tensor(x), (1, 1), value=3.0), TF.pad(torch.tensor(x), (1, 1), value=3.0))


def test_conv_transpose1d_numpy_and_errors() -> None:
    x, w = _randn(1, 1, 3), _randn(1, 1, 2)
    expected = np.zeros(4, np.float32)  # each input element scatters w to [i, i + 1]
    for i in range(3):
        expected[i : i + 2] += x[0, 0, i] * w[0, 0]
    _close(F.conv_transpose1d(nb.tensor(x), nb.tensor(w))[0, 0], expected)
    with pytest.raises(ValueError, match="weight must have rank 3"):
        F.conv_transpose1d(nb.ones(1, 2, 5), nb.ones(2, 2, 3, 3))
    with pytest.raises(TypeError, match="stride must be an int or a tuple of 1 int"):
        F.conv_transpose1d(nb.ones(1, 2, 5), nb.ones(2, 2, 3), stride=(1, 2))


# -- pooling ----------------------------------------------------------------------------------------
def _np_adaptive_max(x: np.ndarray, oh: int, ow: int) -> np.ndarray:
    h, w = x.shape[-2:]
    out = np.empty(x.shape[:-2] + (oh, ow), x.dtype)
    for i in range(oh):
        for j in range(ow):
            hs, he = i * h // oh, -(-(i + 1) * h // oh)
            ws, we = j * w // ow, -(-(j + 1) * w // ow)
            out[..., i, j] = x[..., hs:he, ws:we].max(axis=(-2, -1))
    return out


@pytest.mark.parametrize("size", [(3, 4), (1, 1), (7, 3), 2, (5, None)])
def test_adaptive_max_pool2d_numpy(size) -> None:
    x = _randn(2, 3, 7, 9)
    oh, ow = size if isinstance(size, tuple) else (size, size)
    ow = 9 if ow is None else ow
    _close(F.adaptive_max_pool2d(nb.tensor(x), size), _np_adaptive_max(x, oh, ow))
    _close(F.adaptive_max_pool1d(nb.tensor(x[0]), ow), _np_adaptive_max(x[0][:, :, None, :], 1, ow)[:, :, 0])


def test_pooling_numpy_and_errors() -> None:
    x = _randn(2, 3, 8)
    _close(F.max_pool1d(nb.tensor(x), 2), x.reshape(2, 3, 4, 2).max(-1))
    _close(F.avg_pool1d(nb.tensor(x), 4), x.reshape(2, 3, 2, 4).mean(-1))
    _close(F.adaptive_avg_pool1d(nb.tensor(x), 2), x.reshape(2, 3, 2, 4).mean(-1))
    x4 = np.abs(_randn(1, 2, 4, 4))
    _close(F.lp_pool2d(nb.tensor(x4), 2, 2), np.sqrt((x4.reshape(1, 2, 2, 2, 2, 2) ** 2).sum((3, 5))), 1e-5)
    _close(F.max_pool2d(nb.tensor(x4), 2), x4.reshape(1, 2, 2, 2, 2, 2).max((3, 5)))
    _close(F.avg_pool2d(nb.tensor(x4), 2, divisor_override=1), x4.reshape(1, 2, 2, 2, 2, 2).sum((3, 5)), 1e-5)
    out, idx = F.max_pool2d(nb.tensor(x4), 2, return_indices=True)
    _close(out, x4.reshape(1, 2, 2, 2, 2, 2).max((3, 5)))
    windows = x4.reshape(1, 2, 2, 2, 2, 2).transpose(0, 1, 2, 4, 3, 5).reshape(1, 2, 2, 2, 4).argmax(-1)
    rows, cols = np.arange(2)[:, None] * 2 + windows // 2, np.arange(2)[None, :] * 2 + windows % 2
    np.testing.assert_array_equal(idx.numpy(), rows * 4 + cols)  # flat h * W + w of each maximum
    with pytest.raises(ValueError, match="output_size must be a positive int"):
        F.adaptive_avg_pool1d(nb.tensor(x), 0)
    with pytest.raises(ValueError, match="expected a 3-D"):
        F.adaptive_max_pool2d(nb.tensor(x[0, 0]), 2)


@needs_torch
@pytest.mark.parametrize(
    ("name", "args", "kwargs"),
    [
        ("max_pool2d", (3,), {"stride": 2, "padding": 1, "ceil_mode": True}),
        ("avg_pool2d", (3,), {"stride": 2, "padding": 1, "count_include_pad": False}),
        ("adaptive_avg_pool2d", ((3, 4),), {}),
        ("adaptive_max_pool2d", ((3, 4),), {}),
        ("adaptive_max_pool2d", (3,), {}),
        ("lp_pool2d", (2.0, 2), {}),
        ("lp_pool2d", (3.0, (2, 3)), {"stride": 1}),
    ],
)
def test_pool2d_matches_torch(name: str, args: tuple, kwargs: dict) -> None:
    x = _randn(2, 3, 7, 9) + (3.0 if name == "lp_pool2d" else 0.0)  # lp pooling: positive windows
    c = _randn(*tuple(getattr(TF, name)(torch.tensor(x), *args, **kwargs).shape))
    _close(getattr(F, name)(nb.tensor(x), *args, **kwargs), getattr(TF, name)(torch.tensor(x), *args, **kwargs), 1e-4)
    _grads_vs_torch(
        lambda a: (getattr(F, name)(a, *args, **kwargs) * nb.tensor(c)).sum(),
        lambda a: (getattr(TF, name)(a, *args, **kwargs) * torch.tensor(c)).sum(),
        [x],
        (0,),
    )


@needs_torch
@pytest.mark.parametrize(
    "name", ["max_pool1d", "avg_pool1d", "adaptive_avg_pool1d", "adaptive_max_pool1d", "lp_pool1d"]
)
def test_pool1d_matches_torch(name: str) -> None:
    x = _randn(2, 3, 11) + (3.0 if name == "lp_pool1d" else 0.0)
    args = {"lp_pool1d": (2.0, 3), "adaptive_avg_pool1d": (4,), "adaptive_max_pool1d": (4,)}.get(name, (3,))
    _close(getattr(F, name)(nb.tensor(x), *args), getattr(TF, name)(torch.tensor(x), *args), 1e-4)
    _grads_vs_torch(
        lambda a: (getattr(F, name)(a, *args) ** 2).sum(),
        lambda a: (getattr(TF, name)(a, *args) ** 2).sum(),
        [x],
        (0,),
    )


def test_lp_pool_infinite_norm_numpy() -> None:
    # p = inf pools max |x|, p = -inf min |x| (PyTorch); the gradient goes to each window's first
    # extreme, times sign(x) (it was (sum x**inf) ** 0 = 1 with nan gradients)
    x = np.array([[[[0, 0, 1, 1], [0, 0, 1, 1], [2, 2, 0, 0], [-3, 2, 0, 0.5]]]], np.float32)
    out, g = nb.value_and_grad(lambda a: F.lp_pool2d(a, math.inf, 2).sum())(nb.tensor(x))
    np.testing.assert_array_equal(F.lp_pool2d(nb.tensor(x), math.inf, 2).numpy().ravel(), [0, 1, 3, 0.5])
    want = np.zeros((4, 4), np.float32)
    want[0, 2], want[3, 0], want[3, 3] = 1, -1, 1  # the window of zeros: sign(0) = 0
    np.testing.assert_array_equal(g.numpy()[0, 0], want)
    np.testing.assert_array_equal(F.lp_pool2d(nb.tensor(x), -math.inf, 2).numpy().ravel(), [0, 1, 2, 0])
    row = nb.tensor(np.array([[-2.0, 1.0, 3.0, -0.5, 0.0, 4.0]], np.float32))
    np.testing.assert_array_equal(F.lp_pool1d(row, math.inf, 3).numpy(), [[3.0, 4.0]])
    np.testing.assert_array_equal(F.lp_pool1d(row, -math.inf, 2).numpy(), [[1.0, 0.5, 0.0]])
    g = nb.grad(lambda a: F.lp_pool1d(a, -math.inf, 2).sum())(row)
    np.testing.assert_array_equal(g.numpy(), [[0.0, 1.0, 0.0, -1.0, 0.0, 0.0]])


@needs_torch
@pytest.mark.parametrize("p", [math.inf, -math.inf])
@pytest.mark.parametrize(("stride", "ceil_mode"), [(None, False), (1, False), (2, True)])
def test_lp_pool_infinite_norm_matches_torch(p: float, stride, ceil_mode: bool) -> None:
    x2 = RNG.integers(-2, 3, (2, 3, 7, 6)).astype(np.float32)  # tied extremes and zeros
    x1 = x2[:, :, 0]
    pairs = [
        (
            lambda a: F.lp_pool2d(a, p, (3, 2), stride, ceil_mode),
            lambda a: TF.lp_pool2d(a, p, (3, 2), stride, ceil_mode),
            x2,
        ),
        (nn.LPPool2d(p, 2, stride, ceil_mode), torch.nn.LPPool2d(p, 2, stride, ceil_mode), x2[0]),
        (lambda a: F.lp_pool1d(a, p, 3, stride, ceil_mode), lambda a: TF.lp_pool1d(a, p, 3, stride, ceil_mode), x1),
        (nn.LPPool1d(p, 3, stride, ceil_mode), torch.nn.LPPool1d(p, 3, stride, ceil_mode), x1[0]),
    ]
    for nf, tf, x in pairs:
        want = tf(torch.tensor(x))
        np.testing.assert_array_equal(nf(nb.tensor(x)).numpy(), want.numpy())
        c = RNG.standard_normal(tuple(want.shape)).astype(np.float32)
        _grads_vs_torch(
            lambda a, nf=nf, c=c: (nf(a) * nb.tensor(c)).sum(),
            lambda a, tf=tf, c=c: (tf(a) * torch.tensor(c)).sum(),
            [x],
            (0,),
            tol=1e-6,  # overlapping windows sum in another order
        )


# -- normalization ---------------------------------------------------------------------------------
def _np_bn(x: np.ndarray, eps: float = 1e-5) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    axes = (0, *range(2, x.ndim))
    mean, var = x.mean(axes), x.var(axes)
    view = (1, -1) + (1,) * (x.ndim - 2)
    return (x - mean.reshape(view)) / np.sqrt(var.reshape(view) + eps), mean, var


@pytest.mark.parametrize("shape", [(8, 3), (4, 3, 5), (2, 3, 4, 4)])
def test_batch_norm_training_updates_running_stats_lazily(shape: tuple) -> None:
    x = _randn(*shape, scale=2.0) + 1.0
    rm, rv = nb.zeros(3), nb.ones(3)
    w, b = np.array([1.0, 2.0, 0.5], np.float32), np.array([0.0, -1.0, 3.0], np.float32)
    out = F.batch_norm(nb.tensor(x), rm, rv, nb.tensor(w), nb.tensor(b), training=True, momentum=0.3)
    assert not rm.is_realized and not rv.is_realized  # the update is a pending part of the graph
    y, mean, var = _np_bn(x)
    view = (1, -1) + (1,) * (x.ndim - 2)
    _close(out, y * w.reshape(view) + b.reshape(view), 1e-4)
    n = x.size // 3
    _close(rm, 0.3 * mean, 1e-5)
    _close(rv, 0.7 + 0.3 * var * n / (n - 1), 1e-5)
    # evaluation uses the running statistics
    view_rm, view_rv = rm.numpy().reshape(view), rv.numpy().reshape(view)
    _close(F.batch_norm(nb.tensor(x), rm, rv), (x - view_rm) / np.sqrt(view_rv + 1e-5), 1e-4)


def test_batch_norm_running_stats_with_grad_and_errors() -> None:
    x = nb.tensor(_randn(6, 3))
    w = nb.tensor(np.ones(3, np.float32), requires_grad=True)
    rm, rv = nb.zeros(3), nb.ones(3)
    (F.batch_norm(x, rm, rv, w, None, training=True) ** 3).sum().backward()
    assert w.grad is not None and not rm.requires_grad and not rv.requires_grad
    _close(rm, 0.1 * x.numpy().mean(0), 1e-5)
    with pytest.raises(ValueError, match="more than 1 value per channel"):
        F.batch_norm(nb.ones(1, 3), None, None, training=True)
    with pytest.raises(ValueError, match=r"running_mean must have shape \(3,\), got \(4,\)"):
        F.batch_norm(nb.ones(2, 3), nb.zeros(4), nb.ones(3))
    with pytest.raises(ValueError, match="must be given when training=False"):
        F.batch_norm(nb.ones(2, 3), None, None)
    with pytest.raises(RuntimeError, match="inside vmap"):
        nb.vmap(lambda a: F.batch_norm(a, rm, rv, training=True))(nb.ones(2, 4, 3))
    # without running statistics batch_norm is a pure function and vmaps
    assert nb.vmap(lambda a: F.batch_norm(a, None, None, training=True))(nb.tensor(_randn(2, 4, 3))).shape == (2, 4, 3)


def test_layer_group_rms_instance_norm_numpy() -> None:
    x = _randn(2, 6, 5, scale=3.0)
    m, v = x.mean(-1, keepdims=True), x.var(-1, keepdims=True)
    _close(F.layer_norm(nb.tensor(x), 5), (x - m) / np.sqrt(v + 1e-5), 1e-4)
    m2, v2 = x.mean((1, 2), keepdims=True), x.var((1, 2), keepdims=True)
    _close(F.layer_norm(nb.tensor(x), (6, 5), eps=1e-3), (x - m2) / np.sqrt(v2 + 1e-3), 1e-4)
    g = x.reshape(2, 3, 10)
    gn = (g - g.mean(-1, keepdims=True)) / np.sqrt(g.var(-1, keepdims=True) + 1e-5)
    _close(F.group_norm(nb.tensor(x), 3), gn.reshape(x.shape), 1e-4)
    eps32 = float(np.finfo(np.float32).eps)
    _close(F.rms_norm(nb.tensor(x), (5,)), x / np.sqrt((x**2).mean(-1, keepdims=True) + eps32), 1e-5)
    _close(F.instance_norm(nb.tensor(x)), (x - m) / np.sqrt(v + 1e-5), 1e-4)
    rm, rv = nb.zeros(6), nb.ones(6)
    F.instance_norm(nb.tensor(x), rm, rv, momentum=0.5)
    _close(rm, 0.5 * m[..., 0].mean(0), 1e-5)
    _close(rv, 0.5 + 0.5 * (v[..., 0] * 5 / 4).mean(0), 1e-5)


def test_normalization_errors() -> None:
    with pytest.raises(ValueError, match=r"does not end with normalized_shape \(4,\)"):
        F.layer_norm(nb.ones(2, 5), (4,))
    with pytest.raises(ValueError, match=r"weight must have shape \(5,\)"):
        F.layer_norm(nb.ones(2, 5), 5, weight=nb.ones(4))
    with pytest.raises(ValueError, match="divisible by num_groups=4"):
        F.group_norm(nb.ones(2, 6, 3), 4)
    with pytest.raises(TypeError, match="floating-point"):
        F.rms_norm(nb.tensor([[1, 2]]), 2)


@needs_torch
@pytest.mark.parametrize("shape", [(8, 3), (4, 3, 5), (2, 3, 4, 4)])
def test_batch_norm_matches_torch(shape: tuple) -> None:
    x, w, b, c = _randn(*shape), _randn(3), _randn(3), _randn(*shape)
    rm, rv, trm, trv = nb.zeros(3), nb.ones(3), torch.zeros(3), torch.ones(3)
    for _ in range(2):
        out = F.batch_norm(nb.tensor(x), rm, rv, nb.tensor(w), nb.tensor(b), True, 0.2, 1e-3)
        ref = TF.batch_norm(torch.tensor(x), trm, trv, torch.tensor(w), torch.tensor(b), True, 0.2, 1e-3)
        _close(out, ref, 1e-4)
    _close(rm, trm)
    _close(rv, trv)
    _close(
        F.batch_norm(nb.tensor(x), rm, rv, nb.tensor(w)),
        TF.batch_norm(torch.tensor(x), trm, trv, torch.tensor(w)),
        1e-4,
    )
    _grads_vs_torch(
        lambda a, g, h: (F.batch_norm(a, None, None, g, h, training=True) * nb.tensor(c)).sum() ** 2,
        lambda a, g, h: (TF.batch_norm(a, None, None, g, h, training=True) * torch.tensor(c)).sum() ** 2,
        [x, w, b],
        (0, 1, 2),
        1e-3,
    )


@needs_torch
@pytest.mark.parametrize(
    ("name", "args"),
    [
        ("layer_norm", ((5,),)),
        ("layer_norm", ((4, 5),)),
        ("rms_norm", ((5,),)),
        ("rms_norm", ((4, 5), 1e-3)),
        ("group_norm", (3,)),
        ("group_norm", (1,)),
        ("instance_norm", ()),
        ("local_response_norm", (3,)),
    ],
)
def test_norms_match_torch(name: str, args: tuple) -> None:
    x, c = _randn(2, 6, 4, 5, scale=2.0), _randn(2, 6, 4, 5)
    shape = args[0] if name in ("layer_norm", "rms_norm") else (6,)
    w = _randn(*shape)
    with_w = name != "local_response_norm"
    if name in ("layer_norm", "rms_norm", "group_norm"):
        nf = lambda a, g: (getattr(F, name)(a, args[0], g, *args[1:]) * nb.tensor(c)).sum() ** 2  # noqa: E731
        tf = lambda a, g: (getattr(TF, name)(a, args[0], g, *args[1:]) * torch.tensor(c)).sum() ** 2  # noqa: E731
    elif name == "instance_norm":
        nf = lambda a, g: (F.instance_norm(a, weight=g) * nb.tensor(c)).sum() ** 2  # noqa: E731
        tf = lambda a, g: (TF.instance_norm(a, weight=g) * torch.tensor(c)).sum() ** 2  # noqa: E731
    else:
        nf = lambda a: (F.local_response_norm(a, *args) * nb.tensor(c)).sum() ** 2  # noqa: E731
        tf = lambda a: (TF.local_response_norm(a, *args) * torch.tensor(c)).sum() ** 2  # noqa: E731
    arrays = [x, w] if with_w else [x]
    _close(nf(*[nb.tensor(a) for a in arrays]), tf(*[torch.tensor(a) for a in arrays]), 1e-3)
    _grads_vs_torch(nf, tf, arrays, tuple(range(len(arrays))), 1e-3)


# -- embedding / one_hot ---------------------------------------------------------------------------
def test_embedding_padding_idx_gets_no_gradient() -> None:
    weight = _randn(6, 3)
    idx = nb.tensor(np.array([[0, 2, 5], [2, 2, 1]]))
    out = F.embedding(idx, nb.tensor(weight), padding_idx=2)
    _close(out, weight[idx.numpy()])  # the forward still reads the padding row
    g = nb.grad(lambda w: (F.embedding(idx, w, padding_idx=-4) * 2.0).sum())(nb.tensor(weight)).numpy()
    counts = np.bincount(idx.numpy().ravel(), minlength=6).astype(np.float32)
    counts[2] = 0.0
    _close(g, np.repeat(counts[:, None] * 2.0, 3, axis=1))
    w = nb.tensor(weight, requires_grad=True)
    F.embedding(idx, w).sum().backward()
    assert w.grad.numpy()[2].tolist() == [3.0, 3.0, 3.0]


def test_embedding_and_one_hot_errors_and_vmap() -> None:
    w = nb.ones(5, 2)
    with pytest.raises(TypeError, match="integer tensor of indices"):
        F.embedding(nb.tensor([0.0]), w)
    with pytest.raises(TypeError, match="max_norm must be a number"):
        F.embedding(nb.tensor([0]), w, max_norm="1.0")
    with pytest.raises(ValueError, match="padding_idx=5 must be within num_embeddings=5"):
        F.embedding(nb.tensor([0]), w, padding_idx=5)
    weight = _randn(5, 2)
    idx = np.array([[1, 4], [0, 0]])
    per = nb.vmap(lambda i: F.embedding(i, nb.tensor(weight), padding_idx=0))(nb.tensor(idx))
    _close(per, weight[idx])
    assert F.one_hot(nb.tensor([0, 2]), 4).tolist() == [[1, 0, 0, 0], [0, 0, 1, 0]]


@needs_torch
def test_embedding_matches_torch() -> None:
    weight, idx = _randn(7, 4), np.array([[0, 3, 6, 3], [1, 1, 0, 2]])
    c = _randn(2, 4, 4)
    _grads_vs_torch(
        lambda w: (F.embedding(nb.tensor(idx), w, padding_idx=3) * nb.tensor(c)).sum(),
        lambda w: (TF.embedding(torch.tensor(idx), w, padding_idx=3) * torch.tensor(c)).sum(),
        [weight],
        (0,),
    )


@needs_torch
@pytest.mark.parametrize("padding_idx", [None, 3])
def test_embedding_scale_grad_by_freq_matches_torch(padding_idx) -> None:
    weight, idx = _randn(7, 4), np.array([[0, 3, 6, 3], [1, 1, 0, 3]])
    c = _randn(2, 4, 4)
    _grads_vs_torch(
        lambda w: (F.embedding(nb.tensor(idx), w, padding_idx, scale_grad_by_freq=True) * nb.tensor(c)).sum(),
        lambda w: (TF.embedding(torch.tensor(idx), w, padding_idx, scale_grad_by_freq=True) * torch.tensor(c)).sum(),
        [weight],
        (0,),
    )


# -- dropout ---------------------------------------------------------------------------------------
def test_dropout_values_and_scaling() -> None:
    x = nb.ones(4000)
    y = F.dropout(x, 0.25).numpy()
    assert np.all(np.isclose(y, 0.0) | np.isclose(y, 4 / 3))
    assert abs((y == 0).mean() - 0.25) < 0.04
    assert F.dropout(x, 0.25, training=False) is x
    assert F.dropout(x, 0.0).numpy().min() == 1.0
    assert F.dropout(x, 1.0).numpy().max() == 0.0
    g = nb.grad(lambda a: F.dropout(a, 0.5).sum())(nb.ones(1000)).numpy()
    assert set(np.unique(g)) <= {0.0, 2.0}


@pytest.mark.parametrize(
    ("fn", "shape"), [(F.dropout1d, (8, 50, 6)), (F.dropout2d, (8, 50, 3, 3)), (F.dropout3d, (50, 2, 2, 2))]
)
def test_channel_dropout_drops_whole_channels(fn, shape: tuple) -> None:
    y = fn(nb.ones(*shape), 0.5).numpy()
    spatial = {F.dropout1d: 1, F.dropout2d: 2, F.dropout3d: 3}[fn]
    flat = y.reshape(*shape[: len(shape) - spatial], -1)
    assert np.all(flat.min(-1) == flat.max(-1))  # each channel is all kept or all zeroed
    assert set(np.unique(flat).tolist()) == {0.0, 2.0}
    assert fn(nb.ones(*shape), 0.5, training=False).numpy().min() == 1.0


def test_alpha_dropout_keeps_mean_and_variance() -> None:
    x = nb.tensor(_randn(20000))
    y = F.alpha_dropout(x, 0.2, training=True).numpy()
    assert abs(y.mean()) < 0.05 and abs(y.std() - 1.0) < 0.05
    alpha = 1.7580993408473766
    a = 1.0 / np.sqrt((alpha**2 * 0.2 + 1) * 0.8)
    dropped = np.isclose(y, -alpha * a * 0.8)  # dropped entries all become one constant
    assert abs(dropped.mean() - 0.2) < 0.02
    assert F.alpha_dropout(x, 0.2) is x  # training defaults to False
    f = F.feature_alpha_dropout(nb.ones(10, 40, 5), 0.5, training=True).numpy()
    assert np.all(f.min(-1) == f.max(-1))


def test_dropout_errors() -> None:
    for fn in (F.dropout, F.dropout2d, F.alpha_dropout):
        with pytest.raises(ValueError, match="dropout probability has to be between 0 and 1, but got 1.5"):
            fn(nb.ones(2, 3, 4, 4), 1.5)
    with pytest.raises(TypeError, match="floating-point"):
        F.dropout(nb.tensor([1, 2]), 0.5)
    with pytest.raises(ValueError, match="expected 2-D .* or 3-D"):
        F.dropout1d(nb.ones(2, 3, 4, 5), 0.5)
    with pytest.warns(UserWarning, match="3-D input"):
        y = F.dropout2d(nb.ones(4, 50, 6), 0.5).numpy()
    assert np.all(y.min(-1) == y.max(-1))


@pytest.mark.parametrize("index", [7, -1])
def test_embedding_rejects_known_indices_out_of_range_at_the_call(index):
    # Flattened, the indices would reach the lookup unchecked (MAX does not check them).
    with pytest.raises(IndexError, match=f"embedding: index {index} is out of range for a table of 5 rows"):
        F.embedding(nb.tensor([[0, index]]), nb.ones(5, 3))
    with pytest.raises(IndexError, match=f"embedding_bag: index {index} is out of range"):
        F.embedding_bag(nb.tensor([[0, index]]), nb.ones(5, 3))
    assert F.embedding(nb.tensor([[0, 4]]), nb.ones(5, 3)).shape == (1, 2, 3)


@needs_torch
@pytest.mark.parametrize("pad", [0, 2])
def test_conv_tbc_matches_torch_with_gradients(pad):
    rng = np.random.default_rng(4)
    arrays = [rng.standard_normal(s).astype(np.float32) for s in ((9, 2, 4), (3, 4, 5), (5,))]
    ours = [nb.tensor(a, requires_grad=True) for a in arrays]
    theirs = [torch.tensor(a, requires_grad=True) for a in arrays]
    y, t = F.conv_tbc(*ours, pad), torch.conv_tbc(*theirs, pad)
    np.testing.assert_allclose(y.numpy(), t.detach().numpy(), rtol=1e-5, atol=1e-5)
    (y**2).sum().backward()
    (t**2).sum().backward()
    for a, b in zip(ours, theirs, strict=True):
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-4, atol=1e-4)
    with pytest.raises(RuntimeError, match=r"conv_tbc: input has 4 channels, weight \(3, 2, 5\) expects 2"):
        F.conv_tbc(ours[0], nb.ones(3, 2, 5), ours[2])


_GROUPED = {  # (mat_a shape, mat_b shape, offs): PyTorch's CPU kernel wants 16-byte strides
    "rows": ((16, 8), (3, 8, 16), [4, 9, 16]),
    "columns": ((3, 8, 16), (16, 32), [8, 16, 32]),
    "k-slices": ((8, 16), (16, 8), [4, 9, 16]),
    "batched": ((3, 8, 16), (3, 16, 8), None),
    "rows-past-the-end": ((16, 8), (3, 8, 16), [4, 9, 12]),
}


@needs_torch
@pytest.mark.parametrize("case", list(_GROUPED))
def test_grouped_mm_matches_torch_with_gradients(case):
    a_shape, b_shape, offs = _GROUPED[case]
    rng = np.random.default_rng(5)
    a, b = rng.standard_normal(a_shape).astype(np.float32), rng.standard_normal(b_shape).astype(np.float32)
    na, nb_ = nb.tensor(a, requires_grad=True), nb.tensor(b, requires_grad=True)
    ta, tb = torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)
    n_offs = None if offs is None else nb.tensor(np.array(offs, np.int32))
    t_offs = None if offs is None else torch.tensor(offs, dtype=torch.int32)
    y, t = F.grouped_mm(na, nb_, offs=n_offs), TF.grouped_mm(ta, tb, offs=t_offs)
    rows = slice(0, offs[-1]) if case == "rows-past-the-end" else slice(None)  # torch leaves the rest unspecified
    np.testing.assert_allclose(y.numpy()[rows], t.detach().numpy()[rows], rtol=1e-5, atol=1e-5)
    if case == "rows-past-the-end":
        assert not y.numpy()[offs[-1] :].any()  # ours are zeros
        return
    cot = rng.standard_normal(t.shape).astype(np.float32)
    (y * nb.tensor(cot)).sum().backward()
    (t * torch.tensor(cot)).sum().backward()
    np.testing.assert_allclose(na.grad.numpy(), ta.grad.numpy(), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(nb_.grad.numpy(), tb.grad.numpy(), rtol=1e-4, atol=1e-4)


def test_grouped_mm_errors_name_the_operands():
    with pytest.raises(RuntimeError, match="offs is required for a 2-D @ 3-D product"):
        F.grouped_mm(nb.ones(4, 2), nb.ones(3, 2, 5))
    with pytest.raises(RuntimeError, match="offs has 2 groups, the 3-D operand mat_b has 3"):
        F.grouped_mm(nb.ones(4, 2), nb.ones(3, 2, 5), offs=nb.tensor(np.array([2, 4], np.int32)))
    with pytest.raises(RuntimeError, match=r"contraction dims differ: mat_a \(4, 2\), mat_b \(3, 4, 5\)"):
        F.grouped_mm(nb.ones(4, 2), nb.ones(3, 4, 5), offs=nb.tensor(np.array([1, 2, 4], np.int32)))


def test_nan_passes_threshold_and_the_shrinks_as_torch():
    x = nb.tensor([float("nan"), 0.2, 2.0, -3.0], requires_grad=True)
    want = {"threshold": [9.0, 2.0, 9.0], "softshrink": [0.0, 1.5, -2.5], "hardshrink": [0.0, 2.0, -3.0]}
    for name, rest in want.items():
        f = (lambda t: F.threshold(t, 0.5, 9.0)) if name == "threshold" else getattr(F, name)
        out = f(x)
        assert np.isnan(out.numpy()[0]) and out.numpy()[1:].tolist() == rest, name
        (g,) = nb.autograd.grad(out.sum(), x)
        assert g.numpy()[0] == 1.0, name  # torch's gradient at the NaN


def test_cosine_similarity_and_embedding_loss_broadcast_as_torch():
    a, b = nb.tensor([[1.0], [2.0]]), nb.tensor([[1.0, -1.0, 2.0], [0.5, 0.5, 0.5]])
    np.testing.assert_allclose(F.cosine_similarity(a, b, dim=1).numpy(), [0.4714045, 1.0], rtol=1e-6)
    # torch broadcasts the product only; each magnitude is its own input's (values from torch 2.13)
    np.testing.assert_allclose(F.cosine_embedding_loss(a, b, nb.tensor([1, -1])).item(), 0.95777714, rtol=1e-6)


def test_nearest_interpolation_of_volumes_rounds_as_torch():
    x = nb.arange(3.0).reshape(1, 1, 1, 1, 3)
    assert F.interpolate(x, scale_factor=1.1).numpy().ravel().tolist() == [0.0, 0.0, 1.0]  # torch 2.13
    assert F.interpolate(x, scale_factor=2.1).numpy()[0, 0, 0, 0].tolist() == [0.0, 0.0, 0.0, 1.0, 1.0, 2.0]


def test_reflect_pad_with_a_crop_on_the_other_side_reflects_the_whole_input():
    x = nb.arange(5.0).reshape(1, 1, 5)
    assert F.pad(x, (-2, 3), mode="reflect").numpy().ravel().tolist() == [2, 3, 4, 3, 2, 1]  # torch 2.13
    assert F.pad(x, (3, -2), mode="reflect").numpy().ravel().tolist() == [3, 2, 1, 0, 1, 2]
    assert F.pad(x, (-1, 4), mode="replicate").numpy().ravel().tolist() == [1, 2, 3, 4, 4, 4, 4, 4]


def test_checkpoint_gives_the_plain_calls_values_and_gradients():
    from nabla_nn.utils.checkpoint import checkpoint, checkpoint_sequential  # noqa: PLC0415

    block = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 2))
    x = nb.tensor(np.arange(6.0, dtype=np.float32).reshape(2, 3))
    plain = block(x).sum()
    plain.backward()
    want = [p.grad.numpy().copy() for p in block.parameters()]
    block.zero_grad()
    out = checkpoint(block, x, use_reentrant=False)
    np.testing.assert_allclose(out.sum().numpy(), plain.numpy(), rtol=1e-6)
    out.sum().backward()
    for p, w in zip(block.parameters(), want, strict=True):
        np.testing.assert_allclose(p.grad.numpy(), w, rtol=1e-6)
    np.testing.assert_allclose(checkpoint_sequential(block, 2, x).numpy(), out.numpy(), rtol=1e-6)
    with pytest.raises(ValueError, match="segments must be >= 1"):
        checkpoint_sequential(block, 0, x)
