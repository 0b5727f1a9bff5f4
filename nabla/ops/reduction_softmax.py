"""softmax, log_softmax and logsumexp: the exp-normalisations along an axis (forward, MAX
lowering, NumPy kernel, VJP and JVP side by side), split out of reduction.py. Along an axis split
over devices all three run as reductions (`_over_pieces`): maxima and sums of exponentials are
all-reduced and the rows are never gathered. Their base classes (`ReduceOperation`,
`_AxisOperation`) and argument helpers are reduction.py's.
"""

from __future__ import annotations

import builtins as _builtins
import math
from typing import Any

import numpy as np
from max.graph import ops
from max.graph.ops import reduction as _max_red

from ..core.common import dtypes as _dt
from ..core.tensor.tensor import Tensor
from . import binary as _bin
from . import unary as _un
from . import view as _view
from .base import AVal, public, shape_of, with_dtype
from .cast import autocast_to_float32, cast
from .communication import reshard
from .reduction import (
    _HALF,
    ReduceOperation,
    _along_axis,
    _axes_arg,
    _AxisOperation,
    _check,
    _float_only,
    _in_float32,
    _mx_any,
    _mx_reduce,
    _reduced_shape,
    _sharded_axis,
    max,
    sum,
)

__all__ = ["log_softmax", "logsumexp", "softmax"]


class LogsumexpOp(ReduceOperation):
    """log(sum(exp(x))) over `axes`, shifted by the (finite) maximum. A primitive rather than a
    composite: its VJP is g * exp(x - out), and MAX 26.7's compiler crashes (segfault) on the
    composite's max/exp/sum/log graph together with its VJP."""

    name = "logsumexp"
    empty_ok = True  # an empty slice gives log(0) = -inf

    def abstract_eval(self, x: AVal, *, axes: tuple, keepdims: bool) -> AVal:
        if not _dt.is_float(x[1]):
            raise TypeError(f"logsumexp: expected a floating-point tensor, got dtype {x[1].name}")
        return super().abstract_eval(x, axes=axes, keepdims=keepdims)

    def kernel(self, x: Any, *, axes: tuple, keepdims: bool) -> Any:
        shape = shape_of(x)
        kept = _reduced_shape(shape, axes, True)
        if _builtins.any(shape[a] == 0 for a in axes):
            return ops.broadcast_to(ops.constant(-math.inf, x.dtype, x.device), _reduced_shape(shape, axes, keepdims))
        m = _mx_reduce(x, axes, _max_red.max)
        m = ops.where(ops.is_inf(m), ops.broadcast_to(ops.constant(0, x.dtype, x.device), kept), m)
        total = _mx_reduce(ops.exp(ops.sub(x, m)), axes, _max_red.sum)
        out = ops.add(ops.log(total), m)
        return out if keepdims else ops.reshape(out, _reduced_shape(shape, axes, False))

    def numpy_kernel(self, x: np.ndarray, *, axes: tuple, keepdims: bool) -> np.ndarray:
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            if _builtins.any(x.shape[a] == 0 for a in axes):
                return np.log(np.sum(np.exp(x), axis=axes, keepdims=keepdims))
            m = np.max(x, axis=axes, keepdims=True) if axes else x
            m = np.where(np.isinf(m), np.zeros((), x.dtype), m)
            out = np.log(np.sum(np.exp(x - m), axis=axes, keepdims=True)) + m
        return out if keepdims else out.reshape(_reduced_shape(x.shape, axes, False))

    def _weights(self, x: Tensor, out: Tensor, axes: tuple, keepdims: bool) -> Tensor:
        """softmax(x) over `axes`: d out / d x."""
        return _un.exp(_bin.sub(x, _view.reshape(out, _reduced_shape(x.shape, axes, True))))

    def vjp_rule(self, primals: list, cotangents: list, outputs: list, *, axes: tuple, keepdims: bool) -> list:
        x = primals[0]
        g = _view.reshape(cotangents[0], _reduced_shape(x.shape, axes, True))
        return [_bin.mul(g, self._weights(x, outputs[0], axes, keepdims))]

    def jvp_rule(self, primals: list, tangents: list, outputs: list, *, axes: tuple, keepdims: bool) -> list:
        x = primals[0]
        return [sum(_bin.mul(tangents[0], self._weights(x, outputs[0], axes, keepdims)), axes, keepdims)]


_logsumexp = LogsumexpOp()


# -- softmax -----------------------------------------------------------------------------------
def _np_shifted(x: np.ndarray, axis: int) -> np.ndarray:
    """`x` minus its maximum along `axis`: the numerically stable softmax input. As in PyTorch,
    a row holding +inf or nan has an +inf or nan maximum and so becomes all nan; an all -inf
    row is shifted by 0 (its softmax is nan too, 0 / 0)."""
    if x.shape[axis] == 0:
        return x
    m = np.max(x, axis=axis, keepdims=True)
    return x - np.where(m == -np.inf, np.zeros((), x.dtype), m)


def _mx_poison_rows(x: Any, out: Any, axis: int) -> Any:
    """MAX's softmax kernels leave a row's nan and +inf entries out of the maximum they subtract
    (softmax([inf, 1]) is [nan, 0]); PyTorch's x - max(x) makes such a row all nan."""
    bad = ops.logical_or(ops.is_nan(x), ops.equal(x, ops.constant(math.inf, x.dtype, x.device)))
    poisoned = ops.greater(_mx_any(bad, (axis,), x.dtype), ops.constant(0.0, x.dtype, x.device))
    return ops.where(poisoned, ops.constant(math.nan, x.dtype, x.device), out)


class _SoftmaxBase(_AxisOperation):
    max_fn: Any = None

    def abstract_eval(self, x: AVal, *, axis: int) -> AVal:
        if not _dt.is_float(x[1]):
            raise TypeError(f"{self.name}: expected a floating-point tensor, got dtype {x[1].name}")
        return x

    def kernel(self, x: Any, *, axis: int) -> Any:
        last = x.rank - 1
        if axis == last:
            out = self.max_fn(x, axis=last)
        else:  # MAX's softmax kernels are written for the innermost axis: move it there and back.
            out = ops.transpose(self.max_fn(ops.transpose(x, axis, last), axis=last), axis, last)
        return self.poison_rows(x, out, axis)

    @staticmethod
    def poison_rows(x: Any, out: Any, axis: int) -> Any:
        return _mx_poison_rows(x, out, axis)


class SoftmaxOp(_SoftmaxBase):
    name = "softmax"
    max_fn = staticmethod(ops.softmax)

    @staticmethod
    def poison_rows(x: Any, out: Any, axis: int) -> Any:
        # MAX's softmax puts a NaN where a row has a NaN or +inf, and a row's sum is NaN exactly
        # then (it is 1 otherwise): one reduction of the output finds such rows, where testing x
        # costs a reduction and four passes over x (W3's model ran ~5% faster this way, averaged
        # over five noisy A/B pairs). Not `out + (sum - sum)`: MAX folds sum - sum to 0.
        poisoned = ops.is_nan(ops.sum(out, axis))
        return ops.where(poisoned, ops.constant(math.nan, out.dtype, out.device), out)

    def numpy_kernel(self, x: np.ndarray, *, axis: int) -> np.ndarray:
        with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
            e = np.exp(_np_shifted(x, axis))
            return e / np.sum(e, axis=axis, keepdims=True)

    def vjp_rule(self, primals: list, cotangents: list, outputs: list, *, axis: int) -> list:
        y, g = outputs[0], cotangents[0]
        return [_bin.mul(y, _bin.sub(g, sum(_bin.mul(g, y), (axis,), True)))]

    def jvp_rule(self, primals: list, tangents: list, outputs: list, *, axis: int) -> list:
        y, t = outputs[0], tangents[0]
        return [_bin.mul(y, _bin.sub(t, sum(_bin.mul(t, y), (axis,), True)))]


class SafeSoftmaxOp(SoftmaxOp):
    """softmax, but a row whose entries are all -inf gives zeros instead of NaN (torch's
    `_safe_softmax`, what its attention uses for fully masked rows). Same derivatives: the
    zero rows pass zero cotangents and tangents on."""

    name = "safe_softmax"

    def kernel(self, x: Any, *, axis: int) -> Any:
        # A row is dead when every entry equals -inf (as torch decides; a NaN keeps it alive).
        # Not `max(x) == -inf`: MAX's max of an all -inf row is the lowest finite float.
        zero = ops.constant(0.0, x.dtype, x.device)
        alive = ops.logical_not(ops.equal(x, ops.constant(-math.inf, x.dtype, x.device)))  # (not_equal: NaN dead)
        dead = ops.equal(_mx_any(alive, (axis,), x.dtype), zero)
        return ops.where(dead, zero, super().kernel(ops.where(dead, zero, x), axis=axis))

    def numpy_kernel(self, x: np.ndarray, *, axis: int) -> np.ndarray:
        if x.shape[axis] == 0:
            return x
        dead = np.all(x == -np.inf, axis=axis, keepdims=True)
        return np.where(dead, x.dtype.type(0), super().numpy_kernel(np.where(dead, 0, x), axis=axis))


class LogSoftmaxOp(_SoftmaxBase):
    name = "log_softmax"
    max_fn = staticmethod(ops.logsoftmax)

    def numpy_kernel(self, x: np.ndarray, *, axis: int) -> np.ndarray:
        with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
            z = _np_shifted(x, axis)
            return z - np.log(np.sum(np.exp(z), axis=axis, keepdims=True))

    def vjp_rule(self, primals: list, cotangents: list, outputs: list, *, axis: int) -> list:
        y, g = outputs[0], cotangents[0]
        return [_bin.sub(g, _bin.mul(_un.exp(y), sum(g, (axis,), True)))]

    def jvp_rule(self, primals: list, tangents: list, outputs: list, *, axis: int) -> list:
        y, t = outputs[0], tangents[0]
        return [_bin.sub(t, sum(_bin.mul(_un.exp(y), t), (axis,), True))]


_softmax, _log_softmax = SoftmaxOp(), LogSoftmaxOp()
_safe_softmax = SafeSoftmaxOp()


# -- public functions; `_over_pieces`: all three along an axis split over devices --------------
@public()
def logsumexp(x: Tensor, axis: Any = None, keepdims: bool = False) -> Tensor:
    """log(sum(exp(x))) over `axis`, computed stably (the maximum is subtracted first).

    -inf entries contribute nothing; an all -inf slice (or an empty one) gives -inf. Integer
    inputs give float32, as in PyTorch.
    """
    _check(x, "logsumexp")
    if not _dt.is_float(x.dtype):
        x = cast(x, _dt.float32)
    if (a := _sharded_axis(x, axis, "logsumexp")) is not None:
        return _over_pieces("logsumexp", x, a, keepdims=bool(keepdims))
    return _logsumexp(x, axes=_axes_arg(axis, x.ndim, "logsumexp"), keepdims=bool(keepdims))


def _over_pieces(kind: str, x: Tensor, axis: int, keepdims: bool = True, safe: bool = False) -> Tensor:
    """softmax, log_softmax or logsumexp along an axis split over devices, from reductions:
    each device's maxima and sums of exponentials are all-reduced (vectors of the rows), and
    the rows are never gathered, as their one-op forms would need (Megatron's vocabulary-
    parallel softmax). An all -inf row gives what the one-op forms give."""
    m = _view.detach(max(x, axis, keepdims=True))  # all-reduced here, once; lse's gradient in m is 0
    # an infinite maximum shifts by 0, except that (log_)softmax shifts a row holding +inf by it:
    # the row becomes nan, as PyTorch's does (logsumexp of that row is inf)
    m = _bin.where_(_un.isfinite(m) if kind == "logsumexp" else _bin.not_equal(m, -math.inf), m, 0.0)
    shifted = _bin.sub(x, m)
    e = _un.exp(shifted)
    total = sum(e, axis, keepdims=True)
    if kind == "softmax":  # all-reduce the sums, not their broadcast over the rows' pieces
        total = reshard(total, total.sharding.without_partial())
        if not safe:
            return _bin.div(e, total)
        empty = _bin.equal(total, 0.0)  # every key masked: zeros, and zero gradients (no 0/0)
        return _bin.where_(empty, 0.0, _bin.div(e, _bin.where_(empty, 1.0, total)))
    if kind == "log_softmax":  # (x - m) - log(total): x - m is exact where x is huge
        return _bin.sub(shifted, _un.log(total))
    lse = _bin.add(_un.log(total), m)
    return lse if keepdims else _view.squeeze(lse, axis)


@public()
def softmax(x: Tensor, axis: int = -1, *, safe: bool = False, dtype: Any = None) -> Tensor:
    """exp(x) / sum(exp(x)) along `axis`, computed stably (huge logits give no nan).

    Args:
        x: floating point.
        axis: the axis to normalize along.
        safe: a row whose entries are all -inf (attention with every key masked) gives zeros,
            and zero gradients, instead of NaN (torch's `_safe_softmax`).

    Example:
        >>> nabla.softmax(nabla.tensor([0.0, 1000.0]), 0).numpy()
        array([0., 1.], dtype=float32)
    """
    x = autocast_to_float32(with_dtype(x, dtype), cuda_only=True)  # (torch's dtype=: cast before the op)
    _check(x, "softmax")
    _float_only(x, "softmax")
    if x.dtype in _HALF:  # as torch, in float32: a sum over 65504 ones is inf
        return _in_float32(softmax, x, axis, safe=safe)
    if (a := _sharded_axis(x, axis, "softmax")) is not None:
        return _over_pieces("softmax", x, a, safe=safe)
    return _along_axis(_safe_softmax if safe else _softmax, x, axis, "softmax")


@public()
def log_softmax(x: Tensor, axis: int = -1, *, dtype: Any = None) -> Tensor:
    """x - logsumexp(x) along `axis`, computed stably."""
    x = autocast_to_float32(with_dtype(x, dtype), cuda_only=True)  # (torch's dtype=: cast before the op)
    _check(x, "log_softmax")
    _float_only(x, "log_softmax")
    if (a := _sharded_axis(x, axis, "log_softmax")) is not None:
        return _over_pieces("log_softmax", x, a)
    return _along_axis(_log_softmax, x, axis, "log_softmax")
