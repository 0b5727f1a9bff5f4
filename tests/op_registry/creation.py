"""Registry entries for nabla.ops.creation: fills, ranges, masks and random numbers.

Fills, ranges and masks are compared with NumPy (and PyTorch); they are not differentiable.
Random ops use statistical `check`s (support, mean, spread) instead of values, and their MAX
draws are compared by shape and dtype only (`max_compare=False`). `dropout` reseeds inside
its sample function, so every call draws the same mask: that makes its VJP/JVP checkable
against finite differences, and checks that the gradient uses the forward pass's mask.
"""

from __future__ import annotations

import numpy as np

import nabla as nb

from .spec import OpSpec, Sample, uniform

FAMILY = "creation"


def _np_dtype(dtype, default) -> np.dtype:
    return np.dtype(default) if dtype is None else nb.core.common.dtypes.to_numpy_dtype(dtype)


def _torch_dtype(torch, dtype, default=None):
    if dtype is None:
        return default
    return getattr(torch, dtype.name)


def _shape(shape: tuple) -> tuple:
    return tuple(shape[0]) if len(shape) == 1 and isinstance(shape[0], tuple | list) else tuple(shape)


def _fill_dtype(value, dtype) -> np.dtype:
    if dtype is not None:
        return _np_dtype(dtype, None)
    return np.dtype(np.bool_ if isinstance(value, bool) else np.int64 if isinstance(value, int) else np.float32)


def _fill(name: str, np_fill: float, torch_name: str | None = None) -> OpSpec:
    """zeros / ones / empty: `fn(*shape, dtype=...)`."""
    return OpSpec(
        name=name,
        fn=getattr(nb, name),
        ref=lambda *shape, dtype=None: np.full(_shape(shape), np_fill, _np_dtype(dtype, np.float32)),
        samples=[
            Sample((2, 3), label="2x3"),
            Sample(((2, 3),), label="tuple"),
            Sample((), label="0-d"),
            Sample((0, 3), label="empty"),
            Sample((4,), {"dtype": nb.int32}, label="int32"),
            Sample((2, 2), {"dtype": nb.float64}, label="float64"),
        ],
        family=FAMILY,
        differentiable=False,
        torch_ref=None
        if torch_name is None
        else lambda torch, *shape, dtype=None, _n=torch_name: getattr(torch, _n)(
            _shape(shape), dtype=_torch_dtype(torch, dtype)
        ),
    )


def _like(name: str, np_fill: float | None, torch_name: str | None) -> OpSpec:
    """zeros_like / ones_like / empty_like: `fn(x, dtype=None)`."""
    return OpSpec(
        name=name,
        fn=getattr(nb, name),
        ref=lambda x, dtype=None: np.full(x.shape, np_fill, _np_dtype(dtype, x.dtype)),
        samples=[
            Sample((uniform((2, 3), seed=name),), label="float"),
            Sample((uniform((), seed=name),), label="0-d"),
            Sample((np.arange(4, dtype=np.int32),), label="int32"),
            Sample((np.array([True, False]),), label="bool"),
            Sample((uniform((3,), seed=name),), {"dtype": nb.int64}, label="dtype"),
        ],
        family=FAMILY,
        differentiable=False,
        torch_ref=None
        if torch_name is None
        else lambda torch, x, dtype=None, _n=torch_name: getattr(torch, _n)(x, dtype=_torch_dtype(torch, dtype)),
    )


# -- statistical checks for random draws ----------------------------------------------------------
def _check_shape_dtype(out: np.ndarray, shape: tuple, dtype: np.dtype) -> None:
    assert out.shape == shape, f"shape {out.shape}, expected {shape}"
    assert out.dtype == dtype, f"dtype {out.dtype}, expected {dtype}"


def _check_moments(out: np.ndarray, mean: float, std: float) -> None:
    """For large draws: sample mean within 5 standard errors, spread within 10%."""
    if out.size < 500:
        return
    v = out.astype(np.float64)
    assert abs(v.mean() - mean) < 5 * std / np.sqrt(v.size), f"sample mean {v.mean()}, expected {mean}"
    assert abs(v.std() - std) < 0.1 * std, f"sample std {v.std()}, expected {std}"


def _check_rand(outputs, args, kwargs) -> None:
    (out,) = outputs
    _check_shape_dtype(out, _shape(args), _np_dtype(kwargs.get("dtype"), np.float32))
    assert np.all((out >= 0) & (out < 1)), "rand: values outside [0, 1)"
    _check_moments(out, 0.5, np.sqrt(1 / 12))


def _check_randn(outputs, args, kwargs) -> None:
    (out,) = outputs
    _check_shape_dtype(out, _shape(args), _np_dtype(kwargs.get("dtype"), np.float32))
    assert np.all(np.isfinite(out))
    _check_moments(out, 0.0, 1.0)


def _check_uniform(outputs, args, kwargs) -> None:
    (out,) = outputs
    shape, low, high = args
    _check_shape_dtype(out, tuple(shape), np.dtype(np.float32))
    assert np.all((out >= low) & (out < high)), f"uniform: values outside [{low}, {high})"
    _check_moments(out, (low + high) / 2, (high - low) / np.sqrt(12))


def _check_normal(outputs, args, kwargs) -> None:
    (out,) = outputs
    shape, mean, std = args
    _check_shape_dtype(out, tuple(shape), np.dtype(np.float32))
    _check_moments(out, mean, std)


def _check_rand_like(outputs, args, kwargs) -> None:
    (out,) = outputs
    _check_shape_dtype(out, args[0].shape, args[0].dtype)
    assert np.all((out >= 0) & (out < 1))
    _check_moments(out, 0.5, np.sqrt(1 / 12))


def _check_randn_like(outputs, args, kwargs) -> None:
    (out,) = outputs
    _check_shape_dtype(out, args[0].shape, args[0].dtype)
    _check_moments(out, 0.0, 1.0)


def _check_bernoulli(outputs, args, kwargs) -> None:
    (out,) = outputs
    p = args[0]
    if isinstance(p, np.ndarray):
        _check_shape_dtype(out, p.shape, p.dtype)
        assert np.all(out[p == 0] == 0) and np.all(out[p == 1] == 1), "bernoulli: p=0/1 entries must be 0/1"
        probs = p
    else:
        _check_shape_dtype(out, tuple(args[1]), np.dtype(np.float32))
        probs = np.full(out.shape, p)
    assert np.all((out == 0) | (out == 1)), "bernoulli: values other than 0 and 1"
    if out.size >= 500:
        expected, spread = probs.mean(), np.sqrt(np.mean(probs * (1 - probs)) / out.size)
        assert abs(out.mean() - expected) < 5 * spread + 1e-9, f"bernoulli: mean {out.mean()}, expected {expected}"


def _check_randint(outputs, args, kwargs) -> None:
    (out,) = outputs
    low, high, shape = (0, *args) if len(args) == 2 else args
    _check_shape_dtype(out, tuple(shape), _np_dtype(kwargs.get("dtype"), np.int64))
    assert np.all((out >= low) & (out < high)), f"randint: values outside [{low}, {high})"
    if out.size >= 500:
        assert set(np.unique(out).tolist()) == set(range(low, high)), "randint: some values never drawn"
        _check_moments(out, (low + high - 1) / 2, np.sqrt(((high - low) ** 2 - 1) / 12))


def _check_randperm(outputs, args, kwargs) -> None:
    (out,) = outputs
    (n,) = args
    _check_shape_dtype(out, (n,), _np_dtype(kwargs.get("dtype"), np.int64))
    np.testing.assert_array_equal(np.sort(out), np.arange(n), err_msg="randperm: not a permutation")


def _dropout(x, p, **kw):
    nb.manual_seed(1234)  # one mask per sample, whatever the call: see the module docstring
    return nb.dropout(x, p, **kw)


def _check_dropout(outputs, args, kwargs) -> None:
    (out,) = outputs
    x, p = args
    _check_shape_dtype(out, x.shape, x.dtype)
    if not kwargs.get("training", True) or p == 0:
        np.testing.assert_array_equal(out, x)
        return
    if p == 1:
        np.testing.assert_array_equal(out, np.zeros_like(x))
        return
    kept = out != 0
    np.testing.assert_allclose(out[kept], x[kept] / (1 - p), rtol=1e-6, err_msg="dropout: kept values not scaled")
    if x.size >= 500:
        spread = np.sqrt(p * (1 - p) / x.size)
        assert abs((~kept).mean() - p) < 5 * spread, f"dropout: dropped fraction {(~kept).mean()}, expected {p}"


def _random(name: str, check, samples: list[Sample], **kw) -> OpSpec:
    return OpSpec(
        name=name,
        fn=kw.pop("fn", None) or getattr(nb, name),
        ref=None,
        check=check,
        samples=samples,
        family=FAMILY,
        differentiable=kw.pop("differentiable", False),
        max_compare=False,
        covers=kw.pop("covers", ("random",)),
        **kw,
    )


_X = uniform((40, 50), 0.5, 2.0, seed="dropout")

SPECS: list[OpSpec] = [
    OpSpec(
        name="full",
        fn=nb.full,
        ref=lambda shape, v, dtype=None: np.full(shape, v, _fill_dtype(v, dtype)),
        samples=[
            Sample(((2, 3), 1.5), label="float"),
            Sample(((), 7), label="int-0d"),
            Sample(((4,), True), label="bool"),
            Sample(((0, 3), 2.0), label="empty"),
            Sample(((2, 2), 3), {"dtype": nb.float64}, label="dtype"),
            Sample((3, -1.25), label="int-shape"),
        ],
        family=FAMILY,
        differentiable=False,
        torch_ref=lambda torch, shape, v, dtype=None: torch.full(
            (shape,) if isinstance(shape, int) else shape, v, dtype=_torch_dtype(torch, dtype)
        ),
    ),
    _fill("zeros", 0.0, "zeros"),
    _fill("ones", 1.0, "ones"),
    _fill("empty", 0.0),
    _like("zeros_like", 0, "zeros_like"),
    _like("ones_like", 1, "ones_like"),
    _like("empty_like", 0, None),
    OpSpec(
        name="full_like",
        fn=nb.full_like,
        ref=lambda x, v, dtype=None: np.full(x.shape, v, _np_dtype(dtype, x.dtype)),
        samples=[
            Sample((uniform((2, 3), seed="full_like"), 2.5), label="float"),
            Sample((np.arange(6, dtype=np.int32).reshape(2, 3), 2.5), label="int-truncates"),
            Sample((uniform((), seed="full_like"), -1.0), label="0-d"),
            Sample((uniform((3,), seed="full_like"), 4), {"dtype": nb.int64}, label="dtype"),
        ],
        family=FAMILY,
        differentiable=False,
        torch_ref=lambda torch, x, v, dtype=None: torch.full_like(x, v, dtype=_torch_dtype(torch, dtype)),
    ),
    OpSpec(
        name="arange",
        fn=nb.arange,
        ref=lambda *a, dtype=None: np.arange(*a).astype(
            _np_dtype(dtype, np.int64 if all(isinstance(v, int) for v in a) else np.float32)
        ),
        samples=[
            Sample((5,), label="end"),
            Sample((1, 8, 2), label="start-end-step"),
            Sample((0.0, 1.0, 0.25), label="float"),
            Sample((5, 0, -1), label="negative-step"),
            Sample((3, 3), label="empty"),
            Sample((4,), {"dtype": nb.float64}, label="dtype"),
        ],
        family=FAMILY,
        differentiable=False,
        torch_ref=lambda torch, *a, dtype=None: torch.arange(*a, dtype=_torch_dtype(torch, dtype)),
    ),
    OpSpec(
        name="linspace",
        fn=nb.linspace,
        ref=lambda start, end, steps, dtype=None: np.linspace(start, end, steps).astype(_np_dtype(dtype, np.float32)),
        samples=[
            Sample((0, 1, 5), label="unit"),
            Sample((-2.5, 3.0, 7), label="float"),
            Sample((3.0, -3.0, 4), label="decreasing"),
            Sample((2.0, 5.0, 1), label="one-step"),
            Sample((0.0, 1.0, 0), label="zero-steps"),
            Sample((0, 10, 5), {"dtype": nb.int64}, label="int-truncates"),
            Sample((0, 1, 3), {"dtype": nb.float64}, label="float64"),
        ],
        family=FAMILY,
        differentiable=False,
        torch_ref=lambda torch, start, end, steps, dtype=None: torch.linspace(
            start, end, steps, dtype=_torch_dtype(torch, dtype)
        ),
    ),
    OpSpec(
        name="logspace",
        fn=nb.logspace,
        ref=lambda start, end, steps, base=10.0, dtype=None: np.logspace(start, end, steps, base=base).astype(
            _np_dtype(dtype, np.float32)
        ),
        samples=[
            Sample((0, 2, 3), label="decades"),
            Sample((-1.0, 1.0, 5), label="negative"),
            Sample((0, 4, 5, 2.0), label="base2"),
            Sample((1.0, 1.0, 1), label="one-step"),
            Sample((0, 3, 4), {"dtype": nb.float64}, label="float64"),
        ],
        family=FAMILY,
        differentiable=False,
        rtol=1e-5,
        torch_ref=lambda torch, start, end, steps, base=10.0, dtype=None: torch.logspace(
            start, end, steps, base, dtype=_torch_dtype(torch, dtype)
        ),
    ),
    OpSpec(
        name="eye",
        fn=nb.eye,
        ref=lambda n, m=None, dtype=None: np.eye(n, m, dtype=_np_dtype(dtype, np.float32)),
        samples=[
            Sample((3,), label="square"),
            Sample((2, 4), label="wide"),
            Sample((4, 2), label="tall"),
            Sample((1,), label="1x1"),
            Sample((0,), label="empty"),
            Sample((3, 3), {"dtype": nb.int64}, label="int64"),
            Sample((2,), {"dtype": nb.bool_}, label="bool"),
        ],
        family=FAMILY,
        differentiable=False,
        torch_ref=lambda torch, n, m=None, dtype=None: torch.eye(
            n, n if m is None else m, dtype=_torch_dtype(torch, dtype)
        ),
    ),
    OpSpec(
        name="tri",
        fn=nb.tri,
        ref=lambda n, m=None, k=0, dtype=None: np.tri(n, m, k).astype(_np_dtype(dtype, np.float32)),
        samples=[
            Sample((3,), label="square"),
            Sample((3, 4, 1), label="k=1"),
            Sample((4, 3, -1), label="k=-1"),
            Sample((2, 5, -3), label="below-everything"),
            Sample((0,), label="empty"),
            Sample((3, 3, 0), {"dtype": nb.bool_}, label="bool"),
        ],
        family=FAMILY,
        differentiable=False,
        torch_ref=lambda torch, n, m=None, k=0, dtype=None: (
            torch.ones(n, n if m is None else m).tril(k).to(_torch_dtype(torch, dtype, torch.float32))
        ),
    ),
    _random(
        "rand",
        _check_rand,
        [
            Sample((2000,), label="large"),
            Sample((20, 50), label="2-d"),
            Sample((), label="0-d"),
            Sample(((0, 2),), label="empty"),
            Sample((3,), {"dtype": nb.float64}, label="float64"),
        ],
    ),
    _random(
        "randn",
        _check_randn,
        [Sample((2000,), label="large"), Sample((4, 5), label="2-d"), Sample((), label="0-d")],
    ),
    _random(
        "uniform",
        _check_uniform,
        [Sample(((2000,), -2.0, 3.0), label="large"), Sample(((2, 3), 0.5, 0.75), label="narrow")],
    ),
    _random(
        "normal",
        _check_normal,
        [Sample(((2000,), 1.0, 2.0), label="large"), Sample(((3, 1), -1.0, 0.5), label="2-d")],
    ),
    _random(
        "rand_like",
        _check_rand_like,
        [Sample((uniform((40, 50), seed="rl"),), label="large"), Sample((uniform((), seed="rl"),), label="0-d")],
    ),
    _random(
        "randn_like",
        _check_randn_like,
        [Sample((uniform((40, 50), seed="rnl"),), label="large"), Sample((uniform((3,), seed="rnl"),), label="1-d")],
    ),
    _random(
        "bernoulli",
        _check_bernoulli,
        [
            Sample((0.3, (2000,)), label="float-p"),
            Sample((0.0, (2, 3)), label="p=0"),
            Sample((np.linspace(0.0, 1.0, 2000).reshape(40, 50),), label="tensor-p"),
            Sample((np.array([0.0, 1.0, 1.0, 0.0]),), label="tensor-p-01"),
        ],
        covers=("random", "less", "cast"),
    ),
    _random(
        "randint",
        _check_randint,
        [
            Sample((0, 5, (2000,)), label="large"),
            Sample((-3, 3, (4, 5)), label="negative"),
            Sample((10, (7,)), label="high-shape"),
            Sample((0, 3, (6,)), {"dtype": nb.int32}, label="int32"),
        ],
    ),
    _random(
        "randperm",
        _check_randperm,
        [Sample((10,), label="10"), Sample((1,), label="1"), Sample((0,), label="0")],
        aliases=("permutation",),
    ),
    _random(
        "dropout",
        _check_dropout,
        [
            Sample((_X, 0.3), label="p=0.3"),
            Sample((uniform((7,), seed="dropout"), 0.5), label="small"),
            Sample((uniform((2, 3), seed="dropout"), 0.0), label="p=0"),
            Sample((uniform((2, 3), seed="dropout"), 1.0), label="p=1"),
            Sample((uniform((2, 3), seed="dropout"), 0.5), {"training": False}, label="eval"),
        ],
        fn=_dropout,
        differentiable=True,
        diff_args=(0,),
        covers=("random", "mul", "div"),
    ),
]
