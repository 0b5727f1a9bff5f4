"""Statistics over tensors, as composites of sorting, reductions and scatters: quantile,
nanquantile, nanmedian, mode, histc, bincount, cov, corrcoef.

Sorted values carry the gradient (quantiles, medians and modes read them at computed positions,
so their gradient reaches the element picked, as PyTorch's). `bincount` reads its input on the
host (the result's length depends on its largest value); everything else stays lazy.
"""

from __future__ import annotations

import builtins
from collections import namedtuple
from typing import Any

import numpy as np

from ..core.common import dtypes as _dt
from ..core.graph.tracing import ConcretizationError
from ..core.tensor.dispatch import register
from ..core.tensor.tensor import Tensor
from . import binary as _bin
from . import reduction as _red
from . import unary as _un
from .base import public
from .cast import cast
from .creation import full, tensor, zeros
from .gather_scatter import scatter_add, take_along_axis
from .linalg import raw_matmul as matmul
from .rearrange import moveaxis
from .sorting import sort
from .triangular import diagonal
from .view import broadcast_to, detach, normalize_axis, reshape, squeeze, transpose, unsqueeze

__all__ = ["bincount", "corrcoef", "cov", "histc", "mode", "nanmedian", "nanquantile", "quantile"]

# What torch.nanmedian(x, dim) and torch.mode return.
NanmedianResult = namedtuple("nanmedian", ["values", "indices"])
ModeResult = namedtuple("mode", ["values", "indices"])
_INTERPOLATIONS = ("linear", "lower", "higher", "midpoint", "nearest")


def _check(x: Any, op: str, floating: bool = False) -> None:
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}: x must be a Tensor, got {type(x).__name__}")
    if floating and not _dt.is_float(x.dtype):
        raise TypeError(f"{op}: expected a floating-point tensor, got dtype {x.dtype.name}")


def _last(x: Tensor, axis: Any, op: str) -> tuple[Tensor, int | None]:
    """x with `axis` moved last (x flattened when axis is None), and the normalized axis."""
    if axis is None:
        return reshape(x, (-1,)), None
    if x.ndim == 0:
        normalize_axis(axis, 1, op, "dim")
        return reshape(x, (1,)), None
    a = normalize_axis(axis, x.ndim, op, "dim")
    return moveaxis(x, a, -1), a


def _restore(out: Tensor, x: Tensor, a: int | None, keepdims: bool, lead: int = 0) -> Tensor:
    """A reduction's result (`lead` leading dims, then x's other dims) with keepdims applied."""
    if not keepdims:
        return out
    if a is None:
        return reshape(out, out.shape[:lead] + (1,) * x.ndim)
    return unsqueeze(out, lead + a)


def _count_valid(x: Tensor) -> Tensor:
    """The number of non-nan entries along the last dim (kept as size 1), int64."""
    return _red.sum(_un.logical_not(_un.isnan(x)), -1, True)


# -- quantiles and medians ---------------------------------------------------------------------
def _quantile(x: Tensor, q: Any, axis: Any, keepdims: bool, interpolation: str, ignore_nan: bool) -> Tensor:
    op = "nanquantile" if ignore_nan else "quantile"
    _check(x, op, floating=True)
    if interpolation not in _INTERPOLATIONS:
        raise ValueError(f"{op}: interpolation must be one of {_INTERPOLATIONS}, got {interpolation!r}")
    qt = q if isinstance(q, Tensor) else tensor(np.asarray(q, np.float64), x.dtype)
    scalar_q = qt.ndim == 0
    if qt.ndim > 1:
        raise ValueError(f"{op}: q must be a scalar or a 1-D tensor, got shape {qt.shape}")
    known = None if isinstance(q, Tensor) else np.asarray(q, np.float64)
    if known is not None and known.size and (known.min() < 0 or known.max() > 1):
        raise ValueError(f"{op}: q values must be in [0, 1], got {q}")
    qt = reshape(cast(qt, x.dtype), (-1,))
    moved, a = _last(x, axis, op)
    n = moved.shape[-1]
    if n == 0:
        raise ValueError(f"{op}: cannot compute quantiles of an empty dimension (shape {x.shape})")
    values = sort(moved, -1).values  # nan last
    if ignore_nan:
        last = _bin.sub(cast(_count_valid(moved), x.dtype), 1.0)  # (..., 1); -1 for an all-nan slice
    else:
        last = full((), float(n - 1), x.dtype)
    pos = broadcast_to(_bin.mul(qt, _bin.maximum(last, 0.0)), values.shape[:-1] + qt.shape)  # (..., nq)
    lo = _un.floor(pos)
    hi = _un.ceil(pos)
    if interpolation == "nearest":
        lo = hi = _un.round(pos)
    below = take_along_axis(values, cast(lo, _dt.int64), -1)
    above = take_along_axis(values, cast(hi, _dt.int64), -1)
    if interpolation in ("lower", "nearest"):
        out = below
    elif interpolation == "higher":
        out = above
    else:
        weight = _bin.sub(pos, lo) if interpolation == "linear" else full((), 0.5, x.dtype)
        out = _bin.add(below, _bin.mul(_bin.sub(above, below), weight))
    bad = _bin.less(last, 0.0) if ignore_nan else _red.any(_un.isnan(moved), -1, True)
    out = _bin.where_(bad, float("nan"), out)
    out = moveaxis(out, -1, 0)  # (nq, ...)
    out = _restore(out, x, a, keepdims, lead=1)
    return reshape(out, out.shape[1:]) if scalar_q else out


@public()
def quantile(x: Tensor, q: Any, axis: Any = None, keepdims: bool = False, *, interpolation: str = "linear") -> Tensor:
    """The q-th quantiles of `x` along `axis` (all elements when None), as `torch.quantile`: a
    scalar q gives x's reduced shape, a 1-D q a leading dim of len(q). A slice holding nan gives
    nan.

    Args:
        x: a floating-point tensor.
        q: a number in [0, 1], or a 1-D list/tensor of them.
        axis: the dimension to reduce (`dim=`), or None for the flattened tensor.
        keepdims: keep the reduced dimension as size 1 (`keepdim=`).
        interpolation: between the two nearest values: "linear", "lower", "higher", "midpoint"
            or "nearest" (halves to even).
    """
    return _quantile(x, q, axis, keepdims, interpolation, ignore_nan=False)


@public()
def nanquantile(
    x: Tensor, q: Any, axis: Any = None, keepdims: bool = False, *, interpolation: str = "linear"
) -> Tensor:
    """`quantile` of the values that are not nan (nan where a slice has none)."""
    return _quantile(x, q, axis, keepdims, interpolation, ignore_nan=True)


@register("evenly_differentiated")
def evenly_differentiated(flat: Tensor, value: Tensor, ties: Tensor) -> Tensor:
    """`value` (0-d, an element of 1-d `flat`) with its derivative shared evenly by the elements
    where `ties` holds, as PyTorch's full-tensor median: value + (s - s), s the mean of those
    elements (exactly 0 for a finite s; an infinite or nan s is itself the value)."""
    count = detach(_red.sum(cast(ties, flat.dtype)))  # (no tangent: inf * 0 in div's JVP)
    share = _bin.div(_red.sum(_bin.where_(ties, flat, 0.0)), count)  # (where: no inf * 0)
    value = detach(value)
    exact = _bin.add(value, _bin.sub(share, detach(share)))
    return _bin.where_(_un.isfinite(value), exact, share)


@public()
def nanmedian(x: Tensor, axis: Any = None, keepdims: bool = False) -> Any:
    """The lower median of the values that are not nan (nan where there are none): of every
    element (a 0-d tensor), or `(values, indices)` along `axis`, as `torch.nanmedian`."""
    _check(x, "nanmedian")
    if x.numel() == 0 and axis is None:
        raise ValueError("nanmedian: cannot compute the median of an empty tensor")
    moved, a = _last(x, axis, "nanmedian")
    values, indices = sort(moved, -1)
    if _dt.is_float(x.dtype):
        count = _count_valid(moved)
        pos = _bin.floor_divide(_bin.maximum(_bin.sub(count, 1), 0), 2)
    else:
        pos = full(moved.shape[:-1] + (1,), (moved.shape[-1] - 1) // 2, _dt.int64)
    value = squeeze(take_along_axis(values, pos, -1), -1)
    if axis is None:
        flat = reshape(x, (-1,))
        value = evenly_differentiated(flat, reshape(value, ()), _bin.equal(flat, detach(value)))
        return _restore(value, x, None, keepdims)
    index = squeeze(take_along_axis(indices, pos, -1), -1)
    if x.ndim == 0:
        return NanmedianResult(reshape(value, ()), reshape(index, ()))
    return NanmedianResult(_restore(value, x, a, keepdims), _restore(index, x, a, keepdims))


@public()
def mode(x: Tensor, axis: int = -1, keepdims: bool = False) -> ModeResult:
    """The most frequent value along `axis` (the smallest of equally frequent ones) and the index
    of its last occurrence, as `torch.mode`. Counts compare every pair: O(n^2) along `axis`."""
    _check(x, "mode")
    moved, a = _last(x, axis, "mode")
    n = moved.shape[-1]
    if n == 0:
        raise ValueError(f"mode: cannot compute the mode of an empty dimension (shape {x.shape})")
    values = sort(moved, -1).values
    same = _bin.equal(unsqueeze(values, -1), unsqueeze(values, -2))  # (..., n, n)
    counts = _red.sum(same, -1)
    first = _red.argmax(_bin.equal(counts, _red.max(counts, -1, True)), -1, True)  # the smallest value
    value = take_along_axis(values, first, -1)
    positions = tensor(np.arange(n, dtype=np.int64))
    index = _red.max(_bin.where_(_bin.equal(moved, value), positions, -1), -1, True)  # its last occurrence
    value = take_along_axis(moved, index, -1)  # read at the index: the gradient goes there
    value, index = squeeze(value, -1), squeeze(index, -1)
    if a is None:  # a 0-d x
        return ModeResult(reshape(value, ()), reshape(index, ()))
    return ModeResult(_restore(value, x, a, keepdims), _restore(index, x, a, keepdims))


# -- counting ----------------------------------------------------------------------------------
def _number(value: Any, op: str, arg: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float | np.integer | np.floating):
        raise TypeError(f"{op}: {arg} must be a number, got {value!r}")
    return float(value)


@public()
def histc(x: Tensor, bins: int = 100, min: float = 0.0, max: float = 0.0) -> Tensor:  # noqa: A002
    """A histogram of `bins` equal-width bins over [min, max] (`torch.histc`): values outside are
    ignored, `max` itself falls in the last bin. min == max uses the data's range (widened by 1
    both ways when that is one value). The result has x's dtype; no gradient."""
    _check(x, "histc", floating=True)
    if isinstance(bins, bool) or not isinstance(bins, int | np.integer) or bins <= 0:
        raise ValueError(f"histc: bins must be a positive int, got {bins!r}")
    lo, hi = _number(min, "histc", "min"), _number(max, "histc", "max")
    if lo > hi:
        raise ValueError(f"histc: max must be larger than min, got min={lo}, max={hi}")
    flat = reshape(x, (-1,))
    if lo == hi and flat.numel():
        lo_t, hi_t = _red.min(flat), _red.max(flat)
        one = _bin.equal(lo_t, hi_t)
        lo_t, hi_t = _bin.where_(one, _bin.sub(lo_t, 1.0), lo_t), _bin.where_(one, _bin.add(hi_t, 1.0), hi_t)
    else:
        lo_t, hi_t = (full((), v, x.dtype) for v in ((lo - 1.0, hi + 1.0) if lo == hi else (lo, hi)))
    inside = _bin.logical_and(_bin.greater_equal(flat, lo_t), _bin.less_equal(flat, hi_t))
    pos = _un.floor(_bin.div(_bin.mul(_bin.sub(flat, lo_t), float(bins)), _bin.sub(hi_t, lo_t)))
    pos = _un.clamp(_bin.where_(inside, pos, 0.0), 0.0, float(bins - 1))  # max itself: the last bin
    counts = scatter_add(zeros(int(bins), dtype=x.dtype), 0, cast(pos, _dt.int64), cast(inside, x.dtype))
    return counts.detach()


@public()
def bincount(x: Tensor, weights: Tensor | None = None, minlength: int = 0) -> Tensor:
    """Occurrences of each value 0..max(x) of a 1-D non-negative integer tensor (`torch.bincount`),
    at least `minlength` of them; with `weights`, their sums instead (in the weights' dtype).
    Reads x on the host: the result's length depends on its values."""
    _check(x, "bincount")
    if not _dt.is_integer(x.dtype):
        raise TypeError(f"bincount: x must be an integer tensor, got dtype {x.dtype.name}")
    if x.ndim != 1:
        raise ValueError(f"bincount: x must be 1-D, got shape {x.shape}")
    if isinstance(minlength, bool) or not isinstance(minlength, int | np.integer) or minlength < 0:
        raise ValueError(f"bincount: minlength must be a non-negative int, got {minlength!r}")
    if x._impl.batch_dims:
        raise ValueError(
            "bincount: the result's length depends on x's values, which x batched by vmap cannot provide "
            "(each batch element may need a different length)"
        )
    try:
        data = x.numpy()
    except ConcretizationError:
        raise ConcretizationError(
            "bincount: its result's length depends on x's values, which nabla.compile does not have while it "
            "traces. With a known number of bins n, count with nabla.zeros(n, dtype=nabla.int64).index_add_(0, x, "
            "nabla.ones_like(x)), or call bincount outside the compiled function."
        ) from None
    if data.size and data.min() < 0:
        raise ValueError(f"bincount: x must be non-negative, got {int(data.min())}")
    length = builtins.max(int(data.max()) + 1 if data.size else 0, int(minlength))
    if weights is None:
        src, dtype = full(x.shape, 1, _dt.int64), _dt.int64
    else:
        _check(weights, "bincount")
        if tuple(weights.shape) != tuple(x.shape):
            raise ValueError(f"bincount: weights must have x's shape {x.shape}, got {weights.shape}")
        dtype = weights.dtype if _dt.is_float(weights.dtype) else _dt.float64
        src = cast(weights, dtype)
    return scatter_add(zeros(length, dtype=dtype), 0, x, src)


# -- covariance ----------------------------------------------------------------------------------
@public()
def cov(x: Tensor, *, correction: int = 1, fweights: Tensor | None = None, aweights: Tensor | None = None) -> Tensor:
    """The covariance matrix of the variables in the rows of `x` (observations in the columns; a
    1-D x is one variable), as `torch.cov`: 0-d for one variable.

    Args:
        x: a 1-D or 2-D tensor (integers give float32).
        correction: subtracted from the number of observations (1: the unbiased estimate).
        fweights: 1-D integer frequency weights per observation.
        aweights: 1-D float importance weights per observation.
    """
    _check(x, "cov")
    if x.ndim > 2:
        raise ValueError(f"cov: expected a tensor with at most 2 dimensions, got shape {x.shape}")
    if not _dt.is_float(x.dtype):
        x = cast(x, _dt.DEFAULT_FLOAT)
    rows = reshape(x, (1, -1)) if x.ndim < 2 else x
    n = rows.shape[1]
    w = None
    for name, wt, integer in (("fweights", fweights, True), ("aweights", aweights, False)):
        if wt is None:
            continue
        _check(wt, "cov")
        if wt.ndim > 1 or (wt.ndim == 1 and wt.shape[0] != n):
            raise ValueError(f"cov: {name} must be 1-D with {n} entries (the observations), got shape {wt.shape}")
        if integer and not _dt.is_integer(wt.dtype):
            raise TypeError(f"cov: fweights must be integers, got dtype {wt.dtype.name}")
        wt = cast(wt, x.dtype)
        w = wt if w is None else _bin.mul(w, wt)
    if w is None:
        mean = _red.mean(rows, 1, True)
        factor = full((), builtins.max(float(n - correction), 0.0), x.dtype)
    else:
        total = _red.sum(w)
        mean = _bin.div(_red.sum(_bin.mul(rows, w), 1, True), total)
        if aweights is None:
            factor = _bin.sub(total, float(correction))
        else:
            factor = _bin.sub(
                total, _bin.div(_bin.mul(_red.sum(_bin.mul(w, cast(aweights, x.dtype))), correction), total)
            )
        factor = _bin.maximum(factor, 0.0)
    centered = _bin.sub(rows, mean)
    weighted = centered if w is None else _bin.mul(centered, w)
    out = _bin.div(matmul(weighted, transpose(centered, 0, 1)), factor)
    return reshape(out, ()) if out.shape == (1, 1) else out


@public()
def corrcoef(x: Tensor) -> Tensor:
    """Pearson correlation coefficients of the variables in the rows of `x` (`torch.corrcoef`),
    clipped to [-1, 1]; 0-d for one variable."""
    c = cov(x)
    if c.ndim == 0:
        return _bin.div(c, c)
    std = _un.sqrt(diagonal(c))
    return _un.clamp(_bin.div(_bin.div(c, unsqueeze(std, 1)), unsqueeze(std, 0)), -1.0, 1.0)
