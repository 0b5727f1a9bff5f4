"""Reductions over any set of axes, with keepdims: sum, max, min, argmax, argmin (and mean)."""

from __future__ import annotations

from collections import namedtuple
from typing import Any

import numpy as np
from max.graph import ops
from max.graph.ops import reduction as _max_red

from ..core.common import dtypes as _dt
from ..core.tensor.dispatch import register
from ..core.tensor.impl import TensorImpl
from ..core.tensor.tensor import Tensor
from . import binary as _bin
from . import view as _view
from .base import AVal, Operation, public
from .cast import cast

__all__ = ["amax", "amin", "argmax", "argmin", "max", "mean", "min", "sum"]


def _axes_arg(axis: Any, rank: int, op: str) -> tuple[int, ...]:
    if axis is None:
        return tuple(range(rank))
    if isinstance(axis, float) or (isinstance(axis, tuple | list) and any(isinstance(a, float) for a in axis)):
        raise TypeError(f"{op}: dim must be an int or a tuple of ints, got {axis!r}")
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

    def adapt_kwargs(self, impls: list[TensorImpl], kwargs: dict, batch_dims: int) -> dict:
        return {"axes": tuple(a + batch_dims for a in kwargs["axes"]), "keepdims": kwargs["keepdims"]}

    def abstract_eval(self, x: AVal, *, axes: tuple, keepdims: bool) -> AVal:
        for a in axes:
            if x[0][a] == 0 and self.name != "sum":
                raise ValueError(f"{self.name}: cannot reduce over an empty dimension {a} of shape {x[0]}")
        return _reduced_shape(x[0], axes, keepdims), self.result_dtype or x[1]

    max_reducer: Any = None  # max.graph.ops reduction for one axis (keeps the axis)

    def kernel(self, x: Any, *, axes: tuple, keepdims: bool) -> Any:
        for a in axes:
            x = self.max_reducer(x, axis=a)
        if not keepdims and axes:
            x = ops.reshape(x, _reduced_shape(tuple(int(d) for d in x.shape), axes, False))
        return x


class SumOp(ReduceOperation):
    name = "sum"
    max_reducer = staticmethod(_max_red.sum)

    def numpy_kernel(self, x: np.ndarray, *, axes: tuple, keepdims: bool) -> np.ndarray:
        return np.sum(x, axis=axes, keepdims=keepdims)

    def vjp_rule(self, primals: list, cotangents: list, outputs: list, *, axes: tuple, keepdims: bool) -> list:
        x = primals[0]
        g = _view.reshape(cotangents[0], _reduced_shape(x.shape, axes, True))
        return [_view.broadcast_to(g, x.shape)]

    def jvp_rule(self, primals: list, tangents: list, outputs: list, *, axes: tuple, keepdims: bool) -> list:
        return [sum(tangents[0], axes, keepdims)]


class _ExtremumOp(ReduceOperation):
    def vjp_rule(self, primals: list, cotangents: list, outputs: list, *, axes: tuple, keepdims: bool) -> list:
        x = primals[0]
        # Ties share the gradient evenly, as torch.amax/amin do.
        out = _view.broadcast_to(_view.reshape(outputs[0], _reduced_shape(x.shape, axes, True)), x.shape)
        mask = cast(_bin.equal(x, out), x.dtype)
        count = sum(mask, axes, True)
        g = _view.reshape(cotangents[0], _reduced_shape(x.shape, axes, True))
        return [_bin.mul(_bin.div(mask, count), g)]

    def jvp_rule(self, primals: list, tangents: list, outputs: list, *, axes: tuple, keepdims: bool) -> list:
        x = primals[0]
        out = _view.broadcast_to(_view.reshape(outputs[0], _reduced_shape(x.shape, axes, True)), x.shape)
        mask = cast(_bin.equal(x, out), x.dtype)
        return [_bin.div(sum(_bin.mul(mask, tangents[0]), axes, keepdims), sum(mask, axes, keepdims))]


class MaxOp(_ExtremumOp):
    name = "max"
    max_reducer = staticmethod(_max_red.max)

    def numpy_kernel(self, x: np.ndarray, *, axes: tuple, keepdims: bool) -> np.ndarray:
        return np.max(x, axis=axes, keepdims=keepdims)


class MinOp(_ExtremumOp):
    name = "min"
    max_reducer = staticmethod(_max_red.min)

    def numpy_kernel(self, x: np.ndarray, *, axes: tuple, keepdims: bool) -> np.ndarray:
        return np.min(x, axis=axes, keepdims=keepdims)


class _ArgOp(ReduceOperation):
    """argmax/argmin over one axis; int64 indices, first occurrence on ties (as NumPy)."""

    result_dtype = _dt.int64
    differentiable = False

    def kernel(self, x: Any, *, axes: tuple, keepdims: bool) -> Any:
        (a,) = axes
        out = self.max_reducer(x, axis=a)
        out = ops.cast(out, _dt.int64)
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


def _check(x: Any, op: str) -> None:
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}: x must be a Tensor, got {type(x).__name__}")


@public()
def sum(x: Tensor, axis: Any = None, keepdims: bool = False) -> Tensor:  # noqa: A001
    """Sum over `axis` (int, tuple, or None for all). Bool and int sums are int64, as in PyTorch."""
    _check(x, "sum")
    if not _dt.is_float(x.dtype):
        x = cast(x, _dt.int64)
    return _sum(x, axes=_axes_arg(axis, x.ndim, "sum"), keepdims=bool(keepdims))


@public()
def mean(x: Tensor, axis: Any = None, keepdims: bool = False) -> Tensor:
    """Arithmetic mean over `axis`; integer inputs give float32."""
    _check(x, "mean")
    axes = _axes_arg(axis, x.ndim, "mean")
    if not _dt.is_float(x.dtype):
        x = cast(x, _dt.float32)
    count = int(np.prod([x.shape[a] for a in axes], dtype=np.int64))
    return _bin.div(sum(x, axes, keepdims), float(count) if count else float("nan"))


@public()
def max(x: Tensor, axis: Any = None, keepdims: bool = False) -> Tensor:  # noqa: A001
    """Maximum over `axis` (values only; see `Tensor.max(dim)` for values and indices)."""
    _check(x, "max")
    return _max(x, axes=_axes_arg(axis, x.ndim, "max"), keepdims=bool(keepdims))


@public()
def min(x: Tensor, axis: Any = None, keepdims: bool = False) -> Tensor:  # noqa: A001
    """Minimum over `axis` (values only)."""
    _check(x, "min")
    return _min(x, axes=_axes_arg(axis, x.ndim, "min"), keepdims=bool(keepdims))


amax, amin = max, min


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


ValuesIndices = namedtuple("ValuesIndices", ["values", "indices"])


@register()
def max_with_indices(x: Tensor, dim: int, keepdim: bool = False) -> ValuesIndices:
    """PyTorch's `x.max(dim)`: the maximum values and their indices."""
    return ValuesIndices(max(x, dim, keepdim), argmax(x, dim, keepdim))


@register()
def min_with_indices(x: Tensor, dim: int, keepdim: bool = False) -> ValuesIndices:
    """PyTorch's `x.min(dim)`: the minimum values and their indices."""
    return ValuesIndices(min(x, dim, keepdim), argmin(x, dim, keepdim))
