"""Reductions over any set of axes, with keepdims, and the moments and norms built on them.

Primitives (forward, MAX lowering, NumPy kernel, VJP and JVP side by side): sum, prod, max, min,
argmax, argmin. Composites (derivatives for free): mean, var, std, norm, any, all, nansum,
nanmean, aminmax, renorm. softmax, log_softmax and logsumexp are in reduction_softmax.py, the
scans (cumsum, cumprod) in cumulative.py: both are built on this module's base classes
(`ReduceOperation`, the one-axis `_AxisOperation`) and argument helpers.
"""

from __future__ import annotations

import builtins as _builtins
import math
import operator
from collections import namedtuple
from typing import Any

import numpy as np
from max.graph import ops
from max.graph.ops import reduction as _max_red

from ..core.common import dtypes as _dt
from ..core.common.context import is_grad_enabled
from ..core.sharding import OpShardingRule
from ..core.sharding import rules as _rules
from ..core.tensor.dispatch import register
from ..core.tensor.impl import TensorImpl
from ..core.tensor.tensor import Tensor, is_tensor_operand
from ..core.tensor.torch_methods import ValuesIndices
from . import binary as _bin
from . import unary as _un
from . import view as _view
from ._layout import NHWC, nhwc
from .base import AVal, Operation, public, shape_of, with_dtype
from .cast import cast
from .creation import full, tensor
from .spmd import windowable

__all__ = [
    "all",
    "amax",
    "amin",
    "aminmax",
    "any",
    "argmax",
    "argmin",
    "max",
    "mean",
    "min",
    "nanmean",
    "nansum",
    "norm",
    "prod",
    "renorm",
    "std",
    "sum",
    "var",
]


def _axes_arg(axis: Any, rank: int, op: str) -> tuple[int, ...]:
    if axis is None:
        return tuple(range(rank))
    if type(axis) is int and -rank <= axis < rank:  # the common case (`x.sum(1)`), in one step
        return (axis + rank if axis < 0 else axis,)
    if isinstance(axis, float) or (
        isinstance(axis, tuple | list) and _builtins.any(isinstance(a, float) for a in axis)
    ):
        raise TypeError(f"{op}: dim must be an int or a tuple of ints, got {axis!r}")
    if isinstance(axis, Tensor) and axis.ndim == 0:
        axis = operator.index(axis)  # (a Python int argument of nabla.compile: specialized per value)
    axes = (axis,) if isinstance(axis, int | np.integer) else tuple(axis)
    if rank == 0:  # PyTorch: a 0-d tensor accepts dim 0 or -1 and reduces nothing
        for a in axes:
            if a not in (0, -1):
                raise ValueError(f"{op}: dim={a} is out of range for a tensor of rank 0")
        return ()
    norm = tuple(sorted({_view.normalize_axis(a, rank, op, "dim") for a in axes}))
    if len(norm) != len(axes):
        raise ValueError(f"{op}: dim {axis} names an axis twice")
    return norm


def _reduced_shape(shape: tuple, axes: tuple, keepdims: bool) -> tuple:
    if keepdims:
        return tuple(1 if i in axes else s for i, s in enumerate(shape))
    return tuple(s for i, s in enumerate(shape) if i not in axes)


class ReduceOperation(Operation):
    """Reduces `axes` (physical, sorted) of one input; `keepdims` keeps them as size 1."""

    result_dtype: Any = None
    empty_ok = False  # True: reducing an empty dimension gives the identity (sum 0, prod 1)
    partial_reduce: str | None = None  # a sharded reduced axis leaves partial results ("sum", "max", "min")

    def sharding_rule_for(self, in_shapes: list, out_shapes: list, kwargs: dict) -> OpShardingRule:
        return _rules.reduction(
            in_shapes[0], kwargs["axes"], kwargs["keepdims"], reduce=self.partial_reduce, partial_ok=self.partial_ok
        )

    def adapt_kwargs(self, impls: list[TensorImpl], kwargs: dict, batch_dims: int) -> dict:
        if not batch_dims and len(kwargs) == 2:  # (axes and keepdims, as every caller passes them)
            return kwargs
        return {"axes": tuple(a + batch_dims for a in kwargs["axes"]), "keepdims": kwargs["keepdims"]}

    def abstract_eval(self, x: AVal, *, axes: tuple, keepdims: bool) -> AVal:
        for a in axes:
            if x[0][a] == 0 and not self.empty_ok:
                raise ValueError(f"{self.name}: cannot reduce over an empty dimension {a} of shape {x[0]}")
        return _reduced_shape(x[0], axes, keepdims), self.result_dtype or x[1]

    max_reducer: Any = None  # max.graph.ops reduction for one axis (keeps the axis)

    def kernel(self, x: Any, *, axes: tuple, keepdims: bool) -> Any:
        shape = shape_of(x)
        twin = nhwc(x) if x.rank == 4 and {0, 2, 3} <= set(axes) else None
        if twin is not None:  # per-channel statistics of a conv net (bias gradients): no permute back
            x = _mx_reduce(twin, tuple(sorted(NHWC.index(a) for a in axes)), self.max_reducer)
            return ops.reshape(x, _reduced_shape(shape, axes, keepdims))
        x = _mx_reduce(x, axes, self.max_reducer)
        return x if keepdims or not axes else ops.reshape(x, _reduced_shape(shape, axes, False))


def _mx_reduce(x: Any, axes: tuple, reducer: Any) -> Any:
    """MAX: `reducer` over the sorted `axes`, kept as size 1. With static sizes, adjacent axes
    that are all reduced or all kept merge first (a free reshape) and the innermost reduction
    runs first: MAX reduces one long contiguous axis several times faster than a few short ones
    (a conv's bias gradient, a sum over (0, 2, 3) of (64, 32, 28, 28): 0.9 -> 0.12 ms)."""
    shape = shape_of(x)
    if len(axes) < 2 or not _builtins.all(isinstance(d, int) for d in shape):
        for a in axes:
            x = reducer(x, axis=a)
        return x
    groups: list[list[int]] = []  # runs of adjacent dims with the same reduced-ness
    for i in range(len(shape)):
        if groups and (groups[-1][-1] in axes) == (i in axes):
            groups[-1].append(i)
        else:
            groups.append([i])
    x = ops.reshape(x, [math.prod(shape[i] for i in g) for g in groups])
    for k in reversed(range(len(groups))):
        if groups[k][0] in axes:
            x = reducer(x, axis=k)
    return ops.reshape(x, _reduced_shape(shape, axes, True))


def _mx_any(mask: Any, axes: tuple, dtype: Any) -> Any:
    """MAX: 1 where any entry of a reduced row of the bool `mask` is set, else 0 (in `dtype`,
    the reduced axes kept)."""
    return _mx_reduce(ops.cast(mask, dtype), axes, _max_red.max)


class SumOp(ReduceOperation):
    saves_values = False  # (see Operation.saves_values)
    name = "sum"
    partial_reduce = "sum"
    partial_ok = "additive"
    empty_ok = True
    max_reducer = staticmethod(_max_red.sum)

    def numpy_kernel(self, x: np.ndarray, *, axes: tuple, keepdims: bool) -> np.ndarray:
        return np.sum(x, axis=axes, keepdims=keepdims)

    def vjp_rule(self, primals: list, cotangents: list, outputs: list, *, axes: tuple, keepdims: bool) -> list:
        x = primals[0]
        g = _view.reshape(cotangents[0], _reduced_shape(x.shape, axes, True))
        return [_view.broadcast_to(g, x.shape)]

    def jvp_rule(self, primals: list, tangents: list, outputs: list, *, axes: tuple, keepdims: bool) -> list:
        return [sum(tangents[0], axes, keepdims)]


def _extremum_mask(x: Tensor, out: Tensor) -> Tensor:
    """Where x holds the reduction's result (NaN where the result is NaN)."""
    hit = _bin.equal(x, out)
    if not _dt.is_float(x.dtype):
        return hit
    return _bin.logical_or(hit, _bin.logical_and(_un.isnan(x), _un.isnan(out)))


class _ExtremumOp(ReduceOperation):
    def vjp_rule(self, primals: list, cotangents: list, outputs: list, *, axes: tuple, keepdims: bool) -> list:
        x = primals[0]
        # Ties share the gradient evenly, as torch.amax/amin do; a NaN result's gradient goes
        # to the NaNs (torch's evenly_distribute_backward for max()/min()).
        out = _view.broadcast_to(_view.reshape(outputs[0], _reduced_shape(x.shape, axes, True)), x.shape)
        mask = cast(_extremum_mask(x, out), x.dtype)
        count = sum(mask, axes, True)
        g = _view.reshape(cotangents[0], _reduced_shape(x.shape, axes, True))
        return [_bin.mul(_bin.div(mask, count), g)]

    def jvp_rule(self, primals: list, tangents: list, outputs: list, *, axes: tuple, keepdims: bool) -> list:
        x = primals[0]
        out = _view.broadcast_to(_view.reshape(outputs[0], _reduced_shape(x.shape, axes, True)), x.shape)
        mask = cast(_extremum_mask(x, out), x.dtype)
        return [_bin.div(sum(_bin.mul(mask, tangents[0]), axes, keepdims), sum(mask, axes, keepdims))]

    extreme = math.inf  # the infinity a row of which this op returns unchanged (-inf for max)

    def kernel(self, x: Any, *, axes: tuple, keepdims: bool) -> Any:
        # MAX's max/min skip NaN and start from the extreme finite float, so a row of NaN, or
        # of -inf (for max), would not give NaN, or -inf, as NumPy and torch do: fix both up.
        if not _dt.is_float(x.dtype) or not axes:
            return super().kernel(x, axes=axes, keepdims=keepdims)
        shape = shape_of(x)
        zero = ops.constant(0.0, x.dtype, x.device)
        inf = ops.constant(self.extreme, x.dtype, x.device)
        out = _mx_reduce(x, axes, self.max_reducer)
        out = ops.where(ops.equal(_mx_any(ops.not_equal(x, inf), axes, x.dtype), zero), inf, out)
        nan = ops.constant(math.nan, x.dtype, x.device)
        out = ops.where(ops.greater(_mx_any(ops.is_nan(x), axes, x.dtype), zero), nan, out)
        return out if keepdims else ops.reshape(out, _reduced_shape(shape, axes, False))


class MaxOp(_ExtremumOp):
    name = "max"
    partial_reduce = "max"
    max_reducer = staticmethod(_max_red.max)
    extreme = -math.inf

    def numpy_kernel(self, x: np.ndarray, *, axes: tuple, keepdims: bool) -> np.ndarray:
        return np.max(x, axis=axes, keepdims=keepdims)


class MinOp(_ExtremumOp):
    name = "min"
    partial_reduce = "min"
    max_reducer = staticmethod(_max_red.min)

    def numpy_kernel(self, x: np.ndarray, *, axes: tuple, keepdims: bool) -> np.ndarray:
        return np.min(x, axis=axes, keepdims=keepdims)


class ProdOp(ReduceOperation):
    """Product over `axes` (1 over an empty dimension). The derivative is exact with zeros in the
    input: it never divides by an element (see `_prod_partials`)."""

    name = "prod"
    empty_ok = True
    max_reducer = staticmethod(_max_red.prod)

    def numpy_kernel(self, x: np.ndarray, *, axes: tuple, keepdims: bool) -> np.ndarray:
        return np.prod(x, axis=axes, keepdims=keepdims)

    def vjp_rule(self, primals: list, cotangents: list, outputs: list, *, axes: tuple, keepdims: bool) -> list:
        x = primals[0]
        g = _view.reshape(cotangents[0], _reduced_shape(x.shape, axes, True))
        return [_bin.mul(g, _prod_partials(x, axes))]

    def jvp_rule(self, primals: list, tangents: list, outputs: list, *, axes: tuple, keepdims: bool) -> list:
        return [sum(_bin.mul(tangents[0], _prod_partials(primals[0], axes)), axes, keepdims)]


def _prod_partials(x: Tensor, axes: tuple) -> Tensor:
    """d prod(x, axes) / d x_i, the product of the *other* elements, never dividing by a zero.
    From N, the product of the nonzero elements, c, the zero count, and Z, the sum of the zero
    elements (the value 0, but it carries the zeros' derivatives, as torch's exclusive-cumprod
    formula does, so second derivatives are exact): no zero: N / x_i; one zero: N at it and
    Z N / x_i elsewhere; two: (Z - x_i) N at each zero (the other zero times N) and 0 elsewhere;
    more: 0."""
    is_zero = _bin.equal(x, 0)
    safe = _bin.where_(is_zero, 1.0, x)
    nonzero_prod = _prod(safe, axes=axes, keepdims=True)
    zeros = sum(cast(is_zero, x.dtype), axes, True)
    zero_sum = sum(_bin.where_(is_zero, x, 0.0), axes, True)
    one, two = _bin.equal(zeros, 1), _bin.equal(zeros, 2)
    at_zero = _bin.where_(one, nonzero_prod, _bin.where_(two, _bin.mul(_bin.sub(zero_sum, x), nonzero_prod), 0.0))
    scale = _bin.where_(_bin.equal(zeros, 0), 1.0, _bin.where_(one, zero_sum, 0.0))
    return _bin.where_(is_zero, at_zero, _bin.div(_bin.mul(nonzero_prod, scale), safe))


class _ArgOp(ReduceOperation):
    """argmax/argmin over one axis; int64 indices, first occurrence on ties (as NumPy)."""

    result_dtype = _dt.int64
    differentiable = False

    def kernel(self, x: Any, *, axes: tuple, keepdims: bool) -> Any:
        (a,) = axes
        if int(x.shape[a]) == 1:  # MAX's arg reductions reject an axis that does not shrink
            shape = _reduced_shape(shape_of(x), axes, keepdims)
            return ops.broadcast_to(ops.constant(0, _dt.int64, x.device), shape)
        out = ops.cast(self.max_reducer(x, axis=a), _dt.int64)
        if _dt.is_float(x.dtype):  # MAX's skip NaN; NumPy and torch give the first NaN's index
            nan = ops.cast(ops.is_nan(x), x.dtype)
            first_nan = ops.cast(_max_red.argmax(nan, axis=a), _dt.int64)
            out = ops.where(
                ops.greater(_max_red.max(nan, axis=a), ops.constant(0.0, x.dtype, x.device)), first_nan, out
            )
        if not keepdims:
            out = ops.squeeze(out, a)
        return out

    def vjp_rule(self, primals: list, cotangents: list, outputs: list, **kw: Any) -> list:
        return [None]

    def jvp_rule(self, primals: list, tangents: list, outputs: list, **kw: Any) -> list:
        return [None]


class ArgmaxOp(_ArgOp):
    name = "argmax"
    max_reducer = staticmethod(_max_red.argmax)

    def numpy_kernel(self, x: np.ndarray, *, axes: tuple, keepdims: bool) -> np.ndarray:
        out = np.argmax(x, axis=axes[0])
        return np.expand_dims(out, axes[0]) if keepdims else out


class ArgminOp(_ArgOp):
    name = "argmin"
    max_reducer = staticmethod(_max_red.argmin)

    def numpy_kernel(self, x: np.ndarray, *, axes: tuple, keepdims: bool) -> np.ndarray:
        out = np.argmin(x, axis=axes[0])
        return np.expand_dims(out, axes[0]) if keepdims else out


_sum, _max, _min, _argmax, _argmin = SumOp(), MaxOp(), MinOp(), ArgmaxOp(), ArgminOp()
_prod = ProdOp()


# -- one-axis ops (softmax in reduction_softmax.py; cumsum and cumprod in cumulative.py) -------
class _AxisOperation(Operation):
    """One input, one `axis` (physical after adapt_kwargs), output of the input's shape."""

    def adapt_kwargs(self, impls: list[TensorImpl], kwargs: dict, batch_dims: int) -> dict:
        return {**kwargs, "axis": kwargs["axis"] + batch_dims}

    def abstract_eval(self, x: AVal, **kwargs: Any) -> AVal:
        return x

    def sharding_rule_for(self, in_shapes: list, out_shapes: list, kwargs: dict) -> OpShardingRule:
        return _rules.elementwise(in_shapes, out_shapes, whole=(kwargs["axis"],))


def _check(x: Any, op: str) -> None:
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}: x must be a Tensor, got {type(x).__name__}")


_HALF = (_dt.float16, _dt.bfloat16)


def _in_float32(fn: Any, x: Tensor, *args: Any, **kwargs: Any) -> Tensor:
    """fn(x, *args, **kwargs) computed in float32 and cast back to x's half dtype: PyTorch's
    accumulate type. In float16 a sum of 5000 ones is 2048, a sum of squares of values near 100
    overflows, and an element count above 65504 (mean's, var's divisor) is inf."""
    return cast(fn(cast(x, _dt.float32), *args, **kwargs), x.dtype)


@public()
def sum(x: Tensor, axis: Any = None, keepdims: bool = False, *, dtype: Any = None) -> Tensor:  # noqa: A001
    """Sum over `axis` (int, tuple, or None for all). Bool and int sums are int64, as in PyTorch."""
    x = with_dtype(x, dtype)  # (torch's dtype=: cast before the op)
    _check(x, "sum")
    if x.dtype in _HALF:
        return _in_float32(sum, x, axis, keepdims)
    if not _dt.is_float(x.dtype):
        x = cast(x, _dt.int64)
    return _sum(x, axes=_axes_arg(axis, x.ndim, "sum"), keepdims=bool(keepdims))


@public()
def mean(x: Tensor, axis: Any = None, keepdims: bool = False, *, dtype: Any = None) -> Tensor:
    """Arithmetic mean over `axis`. As in PyTorch, an integer or bool input needs `dtype=`."""
    x = with_dtype(x, dtype)  # (torch's dtype=: cast before the op)
    _check(x, "mean")
    _float_only(x, "mean")
    if x.dtype in _HALF:
        return _in_float32(mean, x, axis, keepdims)
    axes = _axes_arg(axis, x.ndim, "mean")
    count = int(math.prod([x.shape[a] for a in axes]))
    return _bin.div(sum(x, axes, keepdims), float(count) if count else float("nan"))


@public()
def max(x: Tensor, axis: Any = None, keepdims: bool = False) -> Tensor:  # noqa: A001
    """Maximum over `axis` (values only; see `Tensor.max(dim)` for values and indices). With a
    tensor second argument, PyTorch's `max(input, other)`: the elementwise `maximum`."""
    if is_tensor_operand(axis):
        _check(x, "max")
        return _bin.maximum(x, axis)
    return _extremum(_max, "max", x, axis, keepdims)


@public()
def min(x: Tensor, axis: Any = None, keepdims: bool = False) -> Tensor:  # noqa: A001
    """Minimum over `axis` (values only). With a tensor second argument, PyTorch's
    `min(input, other)`: the elementwise `minimum`."""
    if is_tensor_operand(axis):
        _check(x, "min")
        return _bin.minimum(x, axis)
    return _extremum(_min, "min", x, axis, keepdims)


@public()
def amax(x: Tensor, axis: Any = None, keepdims: bool = False) -> Tensor:
    """Maximum over `axis` (PyTorch's name: values only, and no elementwise form)."""
    return _extremum(_max, "amax", x, axis, keepdims)


@public()
def amin(x: Tensor, axis: Any = None, keepdims: bool = False) -> Tensor:
    """Minimum over `axis` (PyTorch's name: values only)."""
    return _extremum(_min, "amin", x, axis, keepdims)


def _extremum(op: _ExtremumOp, name: str, x: Tensor, axis: Any, keepdims: bool) -> Tensor:
    _check(x, name)
    return op(x, axes=_axes_arg(axis, x.ndim, name), keepdims=bool(keepdims))


def _arg(op: _ArgOp, x: Tensor, axis: Any, keepdims: bool) -> Tensor:
    _check(x, op.name)
    if x.ndim == 0:
        _axes_arg(axis, 0, op.name)
        return _view.reshape(_arg(op, _view.reshape(x, (1,)), 0, False), ())
    if axis is None:
        from_flat = _view.reshape(x, (-1,))
        out = op(from_flat, axes=(0,), keepdims=False)
        return _view.reshape(out, (1,) * x.ndim) if keepdims else out
    if not isinstance(axis, int | np.integer):
        raise TypeError(f"{op.name}: dim must be an int or None, got {axis!r}")
    return op(x, axes=_axes_arg(axis, x.ndim, op.name), keepdims=bool(keepdims))


@public()
def argmax(x: Tensor, axis: Any = None, keepdims: bool = False) -> Tensor:
    """Index of the maximum along `axis` (over the flattened tensor when None)."""
    return _arg(_argmax, x, axis, keepdims)


@public()
def argmin(x: Tensor, axis: Any = None, keepdims: bool = False) -> Tensor:
    """Index of the minimum along `axis` (over the flattened tensor when None)."""
    return _arg(_argmin, x, axis, keepdims)


def _with_indices(name: str, reduce: Any, arg: Any, x: Tensor, dim: Any, keepdim: bool) -> ValuesIndices:
    """The values of `x` at its arg-reduction's indices along `dim`, and those indices. The values
    are read at the indices, so their gradient goes to the returned index only, as in PyTorch (a
    max/min reduction would split it among tied extremes): a sum along `dim` of x where the
    position is the index and -0.0 elsewhere, which is x there exactly (inf and nan included; a
    -0.0 extreme may read as 0.0). Elementwise ops and a sum: a dim split over devices sums
    without a gather."""
    _check(x, name)
    a = _single_axis(dim, x.ndim, name)
    if x.ndim == 0 or x.numel() == 0 or not _dt.is_float(x.dtype):  # nothing to split, or no gradient
        return ValuesIndices(reduce(x, dim, keepdim), arg(x, dim, keepdim))
    index = arg(x, a, True)
    positions = tensor(np.arange(x.shape[a], dtype=np.int64).reshape((-1,) + (1,) * (x.ndim - a - 1)))
    picked = _bin.where_(_bin.equal(index, positions), x, full((), -0.0, x.dtype))
    values = _sum(picked, axes=(a,), keepdims=keepdim)
    return ValuesIndices(values, index if keepdim else _view.squeeze(index, a))


@register()
def max_with_indices(x: Tensor, dim: int, keepdim: bool = False) -> ValuesIndices:
    """PyTorch's `x.max(dim)`: the maximum values and their indices (the first maximum on ties).
    The values' gradient goes to those indices only, as PyTorch's; `max(x, dim)` (amax) splits
    it evenly among tied maxima."""
    return _with_indices("max", max, argmax, x, dim, bool(keepdim))


@register()
def min_with_indices(x: Tensor, dim: int, keepdim: bool = False) -> ValuesIndices:
    """PyTorch's `x.min(dim)`: the minimum values and their indices; the values' gradient goes
    to those indices only (see `max_with_indices`)."""
    return _with_indices("min", min, argmin, x, dim, bool(keepdim))


# -- products, moments, norms ------------------------------------------------------------------
def _float_only(x: Tensor, op: str) -> None:
    if not _dt.is_float(x.dtype):
        raise TypeError(f"{op}: expected a floating-point tensor, got dtype {x.dtype.name}")


def _count(x: Tensor, axes: tuple) -> int:
    return int(math.prod([x.shape[a] for a in axes]))


@public()
def prod(x: Tensor, axis: Any = None, keepdims: bool = False, *, dtype: Any = None) -> Tensor:
    """Product over `axis` (int, tuple, or None for all); 1 over an empty dimension.

    Bool and int products are int64, as in PyTorch. The gradient is exact with zeros in `x`.

    Example:
        >>> nabla.prod(nabla.tensor([[1.0, 2.0], [3.0, 4.0]]), axis=1).numpy()
        array([ 2., 12.], dtype=float32)
    """
    x = with_dtype(x, dtype)  # (torch's dtype=: cast before the op)
    _check(x, "prod")
    if not _dt.is_float(x.dtype):
        x = cast(x, _dt.int64)
    return _prod(x, axes=_axes_arg(axis, x.ndim, "prod"), keepdims=bool(keepdims))


def _correction_arg(correction: Any, op: str) -> float:
    if isinstance(correction, bool):  # PyTorch's positional `unbiased` (`torch.std(x, 0, False)`)
        return 1.0 if correction else 0.0
    if not isinstance(correction, int | float | np.integer | np.floating):
        raise TypeError(f"{op}: correction must be a number, got {correction!r}")
    return float(correction)


@public()
def var(x: Tensor, axis: Any = None, correction: Any = 1, keepdims: bool = False, *, unbiased: Any = None) -> Tensor:
    """Variance over `axis`: sum((x - mean)**2) / max(0, N - correction) (PyTorch's definition).

    Args:
        x: a floating-point tensor.
        axis: int, tuple of ints, or None for all dimensions.
        correction: 1 (default) for the unbiased estimate, 0 for the population variance.
        keepdims: keep the reduced dimensions as size 1.
        unbiased: torch's older spelling of correction (True: 1, False: 0).
    """
    return _var(x, axis, correction if unbiased is None else unbiased, keepdims, "var")


def _var(x: Tensor, axis: Any, correction: Any, keepdims: bool, op: str) -> Tensor:
    if isinstance(axis, bool):  # PyTorch's `var(input, unbiased)`
        axis, correction = None, axis
    _check(x, op)
    _float_only(x, op)
    if x.dtype in _HALF:
        return _in_float32(_var, x, axis, correction, keepdims, op)
    axes = _axes_arg(axis, x.ndim, op)
    denominator = _builtins.max(0.0, _count(x, axes) - _correction_arg(correction, op))
    centered = _bin.sub(x, mean(x, axes, True))
    return _bin.div(sum(_bin.mul(centered, centered), axes, bool(keepdims)), denominator)


@public()
def std(x: Tensor, axis: Any = None, correction: Any = 1, keepdims: bool = False, *, unbiased: Any = None) -> Tensor:
    """Standard deviation over `axis`: sqrt(var(x, axis, correction)) (`unbiased`: torch's older
    spelling of correction). Its gradient is 0 where the deviation is 0 (constant input), as in
    PyTorch."""
    correction = correction if unbiased is None else unbiased
    if isinstance(x, Tensor) and x.dtype in _HALF:
        return _in_float32(std, x, axis, correction, keepdims)
    return _safe_root(_var(x, axis, correction, keepdims, "std"), 2.0)


def keep_in_graph(result: Tensor, source: Tensor) -> Tensor:
    """`result`, with `source` kept in the autodiff graph at a zero gradient: for values that do
    not depend on `source` (`addmm(beta=0)`, `matrix_power(A, 0)`) where torch
    still gives `source` a zero gradient rather than None, so optimizers update it (weight
    decay, momentum). A `where` that never selects `source`, so its nan and inf stay out."""
    if not (source.requires_grad and is_grad_enabled()):
        return result
    unused = sum(_bin.where_(full((), False, dtype=_dt.bool_), source, 0.0))
    return _bin.add(result, cast(unused, result.dtype))


def _safe_root(s: Tensor, p: float) -> Tensor:
    """s ** (1/p), with a zero (not nan/inf) derivative where s == 0: the root is taken of s + 1
    there and multiplied by 0. Arithmetic masks, not `where`: with `where` masks, the VJPs of a
    masked sqrt and a masked pow in one program crash MAX 26.7's compiler ("operation's operand
    is unlinked", or a segfault)."""
    zero = cast(_bin.equal(s, 0), s.dtype)
    safe = _bin.add(s, zero)
    root = _un.sqrt(safe) if p == 2.0 else _bin.pow(safe, 1.0 / p)
    return _bin.mul(root, _bin.sub(1.0, zero))


def _sign(x: Tensor) -> Tensor:
    return _bin.sub(cast(_bin.greater(x, 0), x.dtype), cast(_bin.less(x, 0), x.dtype))


def _abs(x: Tensor) -> Tensor:
    """|x| with PyTorch's derivative sign(x) (0 at 0)."""
    return _bin.mul(x, _sign(x))


@public()
def norm(x: Tensor, p: Any = "fro", axis: Any = None, keepdims: bool = False) -> Tensor:
    """Vector p-norm over `axis` (all elements when None), as torch.norm.

    Args:
        x: a floating-point tensor.
        p: "fro" (the 2-norm of the elements, over at most 2 dims), or a number: 2, 1, inf, -inf,
            0 (count of nonzeros) or any other float (sum(|x|**p)) ** (1/p).
        axis: int, tuple of ints, or None.
        keepdims: keep the reduced dimensions as size 1.

    The gradient at x == 0 is 0 (not nan) for the 2-norm, as in PyTorch.
    """
    _check(x, "norm")
    _float_only(x, "norm")
    if x.dtype in _HALF:
        return _in_float32(norm, x, p, axis, keepdims)
    axes = _axes_arg(axis, x.ndim, "norm")
    keepdims = bool(keepdims)
    if p is None:
        p = 2.0
    if isinstance(p, str):
        if p != "fro":
            raise ValueError(f"norm: p={p!r} is not supported; use 'fro' or a number")
        if axis is not None and not isinstance(axis, int | np.integer) and len(tuple(axis)) > 2:
            raise ValueError(f"norm: p='fro' takes at most 2 dims, got dim={axis}")
        p = 2.0
    if isinstance(p, bool) or not isinstance(p, int | float | np.integer | np.floating):
        raise TypeError(f"norm: p must be a number or 'fro', got {p!r}")
    p = float(p)
    if p == 2.0:
        return _safe_root(sum(_bin.mul(x, x), axes, keepdims), 2.0)
    if p == 1.0:
        return sum(_abs(x), axes, keepdims)
    if math.isinf(p):
        for a in axes:
            if x.shape[a] == 0:
                raise ValueError(f"norm: p={p} cannot reduce over an empty dimension {a} of shape {x.shape}")
        return (max if p > 0 else min)(_abs(x), axes, keepdims)
    if p == 0.0:
        return sum(cast(_bin.not_equal(x, 0), x.dtype), axes, keepdims)
    powers = _safe_power(_abs(x), p) if 0 < p < 1 else _bin.pow(_abs(x), p)
    return _safe_root(sum(powers, axes, keepdims), p)


def _safe_power(a: Tensor, p: float) -> Tensor:
    """a ** p for a >= 0 and 0 < p < 1, with a zero (not inf * 0 = nan) derivative at a == 0,
    as torch's: the power is taken of a + 1 there and multiplied by 0 (arithmetic masks, as in
    `_safe_root`)."""
    zero = cast(_bin.equal(a, 0), a.dtype)
    return _bin.mul(_bin.pow(_bin.add(a, zero), p), _bin.sub(1.0, zero))


@public()
def any(x: Tensor, axis: Any = None, keepdims: bool = False) -> Tensor:  # noqa: A001
    """Whether any element over `axis` is nonzero (True for nan). Any dtype in, bool out;
    False over an empty dimension."""
    _check(x, "any")
    axes = _axes_arg(axis, x.ndim, "any")
    # "fewer zeros than elements" rather than "some x != 0": MAX folds `nan != 0` to False.
    return _bin.less(sum(_bin.equal(x, 0), axes, bool(keepdims)), _count(x, axes))


@public()
def all(x: Tensor, axis: Any = None, keepdims: bool = False) -> Tensor:  # noqa: A001
    """Whether every element over `axis` is nonzero (True for nan). Any dtype in, bool out;
    True over an empty dimension."""
    _check(x, "all")
    axes = _axes_arg(axis, x.ndim, "all")
    return _bin.equal(sum(_bin.equal(x, 0), axes, bool(keepdims)), 0)


# -- one-axis helpers (reduction_softmax.py and cumulative.py use them) ------------------------
def _single_axis(axis: Any, rank: int, op: str) -> int:
    """One axis, PyTorch-style: a 0-d tensor accepts dim 0 or -1."""
    if rank == 0:
        if isinstance(axis, int | np.integer) and not isinstance(axis, bool) and axis in (0, -1):
            return 0
        if not isinstance(axis, int | np.integer) or isinstance(axis, bool):
            raise TypeError(f"{op}: dim must be an int, got {axis!r}")
        raise ValueError(f"{op}: dim={axis} is out of range for a tensor of rank 0")
    return _view.normalize_axis(axis, rank, op, "dim")


def _along_axis(op: Operation, x: Tensor, axis: Any, name: str, **kwargs: Any) -> Tensor:
    """Apply a one-axis op; a 0-d tensor goes through as a 1-element vector."""
    a = _single_axis(axis, x.ndim, name)
    if x.ndim == 0:
        return _view.reshape(op(_view.reshape(x, (1,)), axis=0, **kwargs), ())
    return op(x, axis=a, **kwargs)


def _sharded_axis(x: Tensor, axis: Any, name: str) -> int | None:
    """The axis when it is split over devices (global layout): the reductions' composite then."""
    if x.ndim == 0 or not isinstance(axis, int | np.integer):
        return None
    a = _single_axis(axis, x.ndim, name)
    return a if x.shape[a] and windowable(x, a) else None


# -- composites: nan-ignoring reductions, min and max together, renorm -------------------------
# What torch.aminmax returns.
MinMax = namedtuple("aminmax", ["min", "max"])


@public()
def nansum(x: Tensor, axis: Any = None, keepdims: bool = False) -> Tensor:
    """Sum over `axis` counting nan as 0 (the gradient at a nan is 0); integers as `sum`."""
    _check(x, "nansum")
    if _dt.is_float(x.dtype):
        x = _bin.where_(_un.isnan(x), 0.0, x)
    return sum(x, axis, keepdims)


@public()
def nanmean(x: Tensor, axis: Any = None, keepdims: bool = False) -> Tensor:
    """Mean over `axis` of the values that are not nan (nan where all are); floating point only."""
    _check(x, "nanmean")
    _float_only(x, "nanmean")
    if x.dtype in _HALF:
        return _in_float32(nanmean, x, axis, keepdims)
    count = sum(_un.logical_not(_un.isnan(x)), axis, keepdims)
    return _bin.div(nansum(x, axis, keepdims), cast(count, x.dtype))


@public()
def aminmax(x: Tensor, axis: Any = None, keepdims: bool = False) -> MinMax:
    """(min, max) over `axis` (an int, or None for every element), as `torch.aminmax`; the
    gradient of each is split evenly among tied extremes, as `amin`/`amax`."""
    _check(x, "aminmax")
    if x.numel() == 0:
        raise ValueError(f"aminmax: cannot compute over an empty tensor of shape {x.shape}")
    if axis is not None and not isinstance(axis, int | np.integer):
        raise TypeError(f"aminmax: dim must be an int or None, got {axis!r}")
    return MinMax(min(x, axis, keepdims), max(x, axis, keepdims))


@public()
def renorm(x: Tensor, p: float, axis: int, maxnorm: float) -> Tensor:
    """Each slice of `x` along `axis` (`x.select(axis, i)`) whose p-norm exceeds `maxnorm`, scaled
    to norm `maxnorm` (by maxnorm / (norm + 1e-7), as `torch.renorm`); the others unchanged."""
    _check(x, "renorm")
    _float_only(x, "renorm")
    if isinstance(p, bool) or not isinstance(p, int | float | np.integer | np.floating) or p <= 0:
        raise ValueError(f"renorm: p must be a positive number, got {p!r}")
    if isinstance(maxnorm, bool) or not isinstance(maxnorm, int | float | np.integer | np.floating) or maxnorm < 0:
        raise ValueError(f"renorm: maxnorm must be a non-negative number, got {maxnorm!r}")
    if x.ndim < 2:
        raise ValueError(f"renorm: x needs at least 2 dimensions, got shape {x.shape}")
    a = _view.normalize_axis(axis, x.ndim, "renorm", "dim")
    norms = norm(x, float(p), tuple(d for d in range(x.ndim) if d != a), True)
    scale = _bin.where_(_bin.greater(norms, maxnorm), _bin.div(float(maxnorm), _bin.add(norms, 1e-7)), 1.0)
    return _bin.mul(x, scale)
