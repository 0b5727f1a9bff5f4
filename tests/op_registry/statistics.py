"""Registry entries for nabla.ops.statistics: quantile, nanquantile, nanmedian, mode, histc, bincount,
cov, corrcoef (composites of sorting, reductions and scatters: no MAX samples of their own)."""

from __future__ import annotations

import math

import numpy as np

import nabla as nb

from .spec import OpSpec, Sample, uniform

FAMILY = "statistics"
NAN = math.nan
X = uniform((3, 5), seed="stats")
X3 = uniform((2, 3, 4), seed="stats3")
WITH_NANS = np.array([[1.5, NAN, 2.0, -3.0, 0.5], [NAN, 0.25, NAN, 1.0, -1.0], [0.5, -2.0, NAN, 3.0, 1.25]])
INTS = np.array([[3, 1, 1, 3, 2, 3], [5, 5, 4, 4, 4, 0], [7, 7, 7, 7, 7, 7]], np.int64)
SORTED_OPS = ("sort", "sort_scatter", "sort_gather", "take", "take_transpose")


def _s(*args, grad: bool = True, vmap: bool = True, label: str = "", **kwargs) -> Sample:
    return Sample(args, kwargs, label=label, grad=grad, max=False, vmap=vmap)


def _np_quantile(fn):
    def ref(x, q, axis=None, keepdims=False, interpolation="linear"):
        with np.errstate(invalid="ignore"):
            out = fn(x, np.asarray(q, np.float64), axis=axis, keepdims=keepdims, method=interpolation)
        return np.asarray(out).astype(x.dtype)

    return ref


def _torch_quantile(name: str):
    def ref(torch, x, q, axis=None, keepdims=False, interpolation="linear"):
        q = q if isinstance(q, float) else torch.tensor(q, dtype=x.dtype)
        return getattr(torch, name)(x, q, dim=axis, keepdim=keepdims, interpolation=interpolation)

    return ref


def _quantile_samples(name: str, nans: bool) -> list[Sample]:
    out = [
        _s(X, 0.3, label="scalar-all"),
        _s(X, [0.1, 0.5, 0.9], axis=1, label="list-axis1"),
        _s(X, 0.75, axis=0, keepdims=True, label="keepdims"),
        _s(X3, [0.2, 0.6], axis=-1, keepdims=True, label="list-keepdims"),
        _s(X3, [0.5, 0.25], keepdims=True, label="all-keepdims"),
        _s(uniform((), seed=name), 0.4, label="0d"),
    ]
    out += [_s(X, [0.3, 0.7], axis=1, interpolation=m, label=m) for m in ("lower", "higher", "midpoint", "nearest")]
    out.append(
        _s(np.array([1.0, 2.0, 3.0, 4.0]), [0.5, 1 / 6], interpolation="nearest", label="nearest-halves", grad=False)
    )
    out.append(_s(WITH_NANS, [0.25, 0.5], axis=1, label="nans", grad=False))
    out.append(_s(WITH_NANS, 0.5, label="nans-all", grad=False))
    if nans:
        out.append(_s(np.array([[NAN, NAN], [1.0, NAN]]), 0.5, axis=1, label="all-nan-row", grad=False))
    return out


def _np_nanmedian(x, axis=None, keepdims=False):
    """torch's lower median of the non-nan values (nan for none); with axis, (values, indices)."""
    if axis is None:
        v = x.reshape(-1)
        v = np.sort(v[~np.isnan(v)]) if x.dtype.kind == "f" else np.sort(v)
        out = np.array(v[(len(v) - 1) // 2] if len(v) else np.nan, x.dtype)
        return out.reshape((1,) * x.ndim) if keepdims else out
    if x.ndim == 0:
        return x.copy(), np.array(0, np.int64)
    moved = np.moveaxis(x, axis, -1)
    order = np.argsort(np.where(np.isnan(moved), np.inf, moved) if x.dtype.kind == "f" else moved, -1, kind="stable")
    count = (~np.isnan(moved)).sum(-1, keepdims=True) if x.dtype.kind == "f" else moved.shape[-1]
    pos = np.maximum(np.asarray(count) - 1, 0) // 2 * np.ones(moved.shape[:-1] + (1,), np.int64)
    idx = np.take_along_axis(order, pos, -1)
    values = np.take_along_axis(moved, idx, -1)
    values, idx = np.moveaxis(values, -1, axis), np.moveaxis(idx, -1, axis)
    return (values, idx) if keepdims else (np.squeeze(values, axis), np.squeeze(idx, axis))


def _np_mode(x, axis=-1, keepdims=False):
    moved = np.moveaxis(x, axis, -1) if x.ndim else x.reshape(1)
    values = np.empty(moved.shape[:-1], x.dtype)
    indices = np.empty(moved.shape[:-1], np.int64)
    for row in np.ndindex(moved.shape[:-1]):
        vals, counts = np.unique(moved[row], return_counts=True)
        best = vals[np.argmax(counts)]  # the smallest of the most frequent
        values[row], indices[row] = best, np.flatnonzero(moved[row] == best)[-1]
    if x.ndim == 0:
        return values.reshape(()), indices.reshape(())
    if keepdims:
        return np.expand_dims(values, axis), np.expand_dims(indices, axis)
    return values, indices


def _np_histc(x, bins=100, min=0.0, max=0.0):  # noqa: A002
    lo, hi = (min, max) if min != max else (x.min(), x.max()) if x.size else (0.0, 0.0)
    if lo == hi:
        lo, hi = lo - 1, hi + 1
    return np.histogram(x, bins, (lo, hi))[0].astype(x.dtype)


def _np_cov(x, fweights=None, aweights=None, correction=1):
    out = np.cov(x, ddof=correction, fweights=fweights, aweights=aweights)
    return np.asarray(out, x.dtype if x.dtype.kind == "f" else np.float32)


def _nb_cov(x, fweights=None, aweights=None, **kw):
    return nb.cov(x, fweights=fweights, aweights=aweights, **kw)


def _torch_cov(torch, x, fweights=None, aweights=None, **kw):
    return torch.cov(x, fweights=fweights, aweights=aweights, **kw)


FW = np.array([1, 3, 2, 1, 2], np.int64)
AW = uniform((5,), 0.2, 1.0, seed="aw")

SPECS: list[OpSpec] = [
    OpSpec(
        name="quantile",
        fn=nb.quantile,
        ref=_np_quantile(np.quantile),
        samples=_quantile_samples("quantile", False),
        family=FAMILY,
        covers=SORTED_OPS,
        torch_ref=_torch_quantile("quantile"),
    ),
    OpSpec(
        name="nanquantile",
        fn=nb.nanquantile,
        ref=_np_quantile(np.nanquantile),
        samples=_quantile_samples("nanquantile", True),
        family=FAMILY,
        covers=SORTED_OPS,
        torch_ref=_torch_quantile("nanquantile"),
    ),
    OpSpec(
        name="nanmedian",
        fn=nb.nanmedian,
        ref=_np_nanmedian,
        samples=[
            _s(X, label="all"),
            _s(X, axis=1, label="axis1"),
            _s(X3, axis=0, keepdims=True, label="axis0-keepdims"),
            _s(uniform((), seed="nm0"), axis=0, label="0d-axis"),
            _s(WITH_NANS, axis=1, label="nans", grad=False),
            _s(WITH_NANS, label="nans-all", grad=False),
            _s(INTS, axis=1, label="int64"),
        ],
        family=FAMILY,
        covers=SORTED_OPS,
        torch_ref=lambda torch, x, axis=None, keepdims=False: (
            torch.nanmedian(x) if axis is None else tuple(torch.nanmedian(x, axis, keepdims))
        ),
    ),
    OpSpec(
        name="mode",
        fn=nb.mode,
        ref=_np_mode,
        samples=[
            _s(INTS, label="int64"),
            _s(INTS, axis=0, keepdims=True, label="int64-axis0"),
            _s(X, axis=1, label="distinct"),
            _s(np.array([[1.5, -2.0, 1.5, 0.5], [0.5, 0.5, -1.0, -1.0]]), axis=1, label="ties", grad=False),
            _s(uniform((), seed="mode0"), label="0d"),
        ],
        family=FAMILY,
        covers=SORTED_OPS + ("equal", "sum", "argmax", "max", "where"),
        torch_ref=lambda torch, x, axis=-1, keepdims=False: tuple(torch.mode(x, axis, keepdims)),
    ),
    OpSpec(
        name="histc",
        fn=nb.histc,
        ref=_np_histc,
        samples=[
            _s(X, bins=5, min=-2.0, max=2.0, label="range"),
            _s(X3, bins=7, label="data-range"),
            _s(np.array([1.0, 1.0, 1.0]), bins=4, label="one-value"),
            _s(np.array([-1.0, 0.0, 0.5, 1.0, 2.0, NAN]), bins=4, min=0.0, max=1.0, label="edges"),
        ],
        family=FAMILY,
        covers=("take_scatter", "floor", "clamp", "min", "max"),
        differentiable=False,
        torch_ref=lambda torch, x, **kw: torch.histc(x, **kw),
    ),
    OpSpec(
        name="bincount",
        fn=nb.bincount,
        ref=lambda x, weights=None, minlength=0: np.bincount(x, weights, minlength).astype(
            np.int64 if weights is None else weights.dtype
        ),
        samples=[
            _s(np.array([1, 3, 1, 0, 3, 3], np.int64), vmap=False, label="counts"),
            _s(np.array([2, 0], np.int64), minlength=5, vmap=False, label="minlength"),
            _s(np.array([1, 3, 1], np.int64), uniform((3,), seed="bcw"), vmap=False, label="weights"),
            _s(np.zeros((0,), np.int64), minlength=2, vmap=False, label="empty"),
        ],
        family=FAMILY,
        covers=("take_scatter",),
        torch_ref=lambda torch, x, weights=None, minlength=0: torch.bincount(x, weights, minlength),
    ),
    OpSpec(
        name="cov",
        fn=_nb_cov,
        ref=_np_cov,
        samples=[
            _s(X, label="rows"),
            _s(X[0].copy(), label="1-d"),
            _s(X, correction=0, label="correction0"),
            _s(X, FW, label="fweights"),
            _s(X, None, AW, label="aweights"),
            _s(X, FW, AW, correction=2, label="both-weights"),
            _s(np.array([[1, 4, 2], [0, -3, 5]], np.int64), label="int64"),
        ],
        family=FAMILY,
        covers=("matmul", "mean", "sum", "sub", "mul", "div"),
        torch_ref=_torch_cov,
    ),
    OpSpec(
        name="corrcoef",
        fn=nb.corrcoef,
        ref=lambda x: np.asarray(np.clip(np.corrcoef(x), -1, 1), x.dtype),
        samples=[_s(X, label="rows"), _s(X3[0].copy(), label="(3,4)"), _s(X[0].copy(), label="1-d")],
        family=FAMILY,
        covers=("matmul", "mean", "sqrt", "diagonal", "clamp", "div"),
        torch_ref=lambda torch, x: torch.corrcoef(x),
        rtol=1e-5,
        atol=1e-5,
    ),
]
