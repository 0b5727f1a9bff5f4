"""Cumulative ops along one axis: cumsum and cumprod, running sums and products whose output has
the input's shape (forward, MAX lowering, NumPy kernel, VJP and JVP side by side). Along an axis
split over devices they run blocked (`_scan_over_pieces`): each device scans its own piece, and
only one total per piece is exchanged, never the data. Their one-axis base class
(`_AxisOperation`) and argument helpers are reduction.py's, which softmax (reduction_softmax.py)
shares.

cummax and cummin (one primitive each, values and int64 indices from one call) keep a split axis
whole; their values' gradient goes to the returned indices only, as PyTorch's.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from max.graph import ops

from ..core.common import dtypes as _dt
from ..core.tensor.tensor import Tensor
from ..core.tensor.torch_methods import ValuesIndices
from . import binary as _bin
from . import reduction as _red
from . import view as _view
from .base import AVal, public, shape_of, with_dtype
from .cast import cast
from .creation import full, tensor
from .gather_scatter import _elementwise_index
from .indexing_primitives import _take, _take_transpose
from .shape import _slice, concatenate
from .spmd import evened, split_parts, window

__all__ = ["cummax", "cummin", "cumprod", "cumsum", "logcumsumexp"]


def _np_shift_in(x: np.ndarray, axis: int, fill: Any) -> np.ndarray:
    """`x` moved one step along `axis`, `fill` entering at the front (an exclusive scan's input)."""
    if x.shape[axis] == 0:
        return x
    head = np.full_like(np.take(x, [0], axis=axis), fill)
    return np.concatenate([head, np.take(x, np.arange(x.shape[axis] - 1), axis=axis)], axis=axis)


class CumsumOp(_red._AxisOperation):
    """Inclusive (or `exclusive`) running sum along `axis`, front to back (or `reverse`)."""

    name = "cumsum"

    def kernel(self, x: Any, *, axis: int, exclusive: bool, reverse: bool) -> Any:
        return ops.cumsum(x, axis=axis, exclusive=exclusive, reverse=reverse)

    def numpy_kernel(self, x: np.ndarray, *, axis: int, exclusive: bool, reverse: bool) -> np.ndarray:
        if reverse:
            x = np.flip(x, axis)
        if exclusive:
            x = _np_shift_in(x, axis, 0)
        out = np.cumsum(x, axis=axis, dtype=x.dtype)
        return np.flip(out, axis) if reverse else out

    def vjp_rule(self, primals: list, cotangents: list, outputs: list, *, axis: int, exclusive: bool, reverse: bool):
        # y_j = sum_{i<=j} x_i, so dx_i = sum_{j>=i} g_j: the same scan run the other way.
        return [_cumsum(cotangents[0], axis=axis, exclusive=exclusive, reverse=not reverse)]

    def jvp_rule(self, primals: list, tangents: list, outputs: list, *, axis: int, exclusive: bool, reverse: bool):
        return [_cumsum(tangents[0], axis=axis, exclusive=exclusive, reverse=reverse)]


def _max_shift_in(x: Any, axis: int, shift: int, fill: Any) -> Any:
    """MAX: `x` moved `shift` steps along `axis`, `fill` entering at the front."""
    n = int(x.shape[axis])
    head_shape = list(shape_of(x))
    head_shape[axis] = shift
    head = ops.broadcast_to(ops.constant(fill, x.dtype, x.device), head_shape)
    index = [slice(None)] * x.rank
    index[axis] = slice(0, n - shift)
    return ops.concat([head, ops.slice_tensor(x, index)], axis=axis)


class CumprodOp(_red._AxisOperation):
    """Running product along `axis`. MAX has no cumprod: the kernel is a log-depth
    (Hillis-Steele) scan, ceil(log2 n) multiplies of the tensor by a shifted copy of itself.
    The derivative is exact with zeros in the input (see `vjp_rule`); second derivatives are
    exact with at most one zero per row (the mixed term of two zeros is dropped)."""

    name = "cumprod"

    def kernel(self, x: Any, *, axis: int) -> Any:
        shift, n = 1, int(x.shape[axis])
        while shift < n:
            x = ops.mul(x, _max_shift_in(x, axis, shift, 1))
            shift *= 2
        return x

    def numpy_kernel(self, x: np.ndarray, *, axis: int) -> np.ndarray:
        return np.cumprod(x, axis=axis, dtype=x.dtype)

    @staticmethod
    def _zero_masks(x: Tensor, axis: int) -> tuple[Tensor, Tensor, Tensor]:
        """(no zero at or before i, i is the first zero, cumprod with the first zero set to 1)."""
        is_zero = _bin.equal(x, 0)
        zeros_so_far = _cumsum(cast(is_zero, x.dtype), axis=axis, exclusive=False, reverse=False)
        before = _bin.equal(zeros_so_far, 0)
        first = _bin.logical_and(is_zero, _bin.equal(zeros_so_far, 1))
        return before, first, _cumprod(_bin.where_(first, 1.0, x), axis=axis)

    def vjp_rule(self, primals: list, cotangents: list, outputs: list, *, axis: int) -> list:
        # dx_i = sum_{j>=i} g_j prod_{k<=j, k!=i} x_k. Before the first zero z that is
        # rcumsum(g*y)_i / x_i (terms j >= z vanish on both sides); at z it is rcumsum(g*y')_z with
        # y' the cumprod with x_z set to 1; after z (x_i nonzero) it is x_z rcumsum(g*y')_i / x_i,
        # the value 0 with x_z kept as a factor, so second derivatives see it.
        (x,), g, y = primals, cotangents[0], outputs[0]
        before, first, y_first = self._zero_masks(x, axis)
        safe = _bin.where_(before, x, 1.0)
        rsum = _cumsum(_bin.mul(g, y), axis=axis, exclusive=False, reverse=True)
        at_first = _cumsum(_bin.mul(g, y_first), axis=axis, exclusive=False, reverse=True)
        x_first = _red.sum(_bin.where_(first, x, 0.0), (axis,), True)
        nonzero = _bin.not_equal(x, 0)
        after = _bin.where_(nonzero, _bin.div(_bin.mul(at_first, x_first), _bin.where_(nonzero, x, 1.0)), 0.0)
        return [_bin.where_(before, _bin.div(rsum, safe), _bin.where_(first, at_first, after))]

    def jvp_rule(self, primals: list, tangents: list, outputs: list, *, axis: int) -> list:
        # dy_j = y_j sum_{i<=j} t_i / x_i before the first zero z; from z on, t_z y'_j plus
        # x_z y'_j sum_{i<=j, x_i != 0} t_i / x_i (the value 0, kept for second derivatives).
        (x,), t, y = primals, tangents[0], outputs[0]
        before, first, y_first = self._zero_masks(x, axis)
        safe = _bin.where_(before, x, 1.0)
        t_first = _red.sum(_bin.where_(first, t, 0.0), (axis,), True)
        x_first = _red.sum(_bin.where_(first, x, 0.0), (axis,), True)
        pre = _bin.mul(y, _cumsum(_bin.div(t, safe), axis=axis, exclusive=False, reverse=False))
        nonzero = _bin.not_equal(x, 0)
        rates = _bin.where_(nonzero, _bin.div(t, _bin.where_(nonzero, x, 1.0)), 0.0)
        rates = _cumsum(rates, axis=axis, exclusive=False, reverse=False)
        post = _bin.mul(y_first, _bin.add(t_first, _bin.mul(x_first, rates)))
        return [_bin.where_(before, pre, post)]


_cumsum, _cumprod = CumsumOp(), CumprodOp()


@public()
def cumsum(x: Tensor, axis: int, *, dtype: Any = None) -> Tensor:
    """Running sum along `axis`. Bool and int inputs give int64, as in PyTorch.

    Example:
        >>> nabla.cumsum(nabla.tensor([1.0, 2.0, 3.0]), 0).numpy()
        array([1., 3., 6.], dtype=float32)
    """
    x = with_dtype(x, dtype)  # (torch's dtype=: cast before the op)
    return _scan(x, axis, "cumsum", _cumsum_pieces, _cumsum, exclusive=False, reverse=False)


def _scan(x: Tensor, axis: int, name: str, pieces: Any, op: Any, **kwargs: Any) -> Tensor:
    """cumsum / cumprod: ints widened to int64, then `op` along `axis`, or blocked by `pieces`
    when the axis is split over devices. Half floats run in float32 (PyTorch's accumulate type:
    a float16 running sum of ones stalls at 2048)."""
    _red._check(x, name)
    if x.dtype in _red._HALF:
        return cast(_scan(cast(x, _dt.float32), axis, name, pieces, op, **kwargs), x.dtype)
    if not _dt.is_float(x.dtype):
        x = cast(x, _dt.int64)
    if (a := _red._sharded_axis(x, axis, name)) is not None:
        return _scan_over_pieces(pieces, x, a)
    return _red._along_axis(op, x, axis, name, **kwargs)


def _scan_over_pieces(scan: Any, x: Tensor, axis: int) -> Tensor:
    """A running sum or product along an axis split over devices, blocked: `scan(blocks, axis)`
    scans each device's piece (axis + 1 of `blocks`) and combines it with the pieces before
    it, of which only one total each is gathered, never the data. An uneven split is first
    zero-extended to an even one (windows: each device moves a few rows); the appended zeros
    come after every kept position, so they change none of them."""
    parts, n = split_parts(x, axis), x.shape[axis]
    padded = evened(x, axis)
    shape = padded.shape
    blocks = _view.reshape(padded, shape[:axis] + (parts, shape[axis] // parts) + shape[axis + 1 :])
    out = _view.reshape(scan(blocks, axis), shape)
    return out if shape[axis] == n else window(out, axis, 0, n)


def _cumsum_pieces(blocks: Tensor, axis: int) -> Tensor:
    """Each piece's running sums plus the totals of the pieces before it."""
    local = _cumsum(blocks, axis=axis + 1, exclusive=False, reverse=False)
    totals = _red.sum(blocks, axis + 1, keepdims=True)
    return _bin.add(local, _cumsum(totals, axis=axis, exclusive=True, reverse=False))


def _cumprod_pieces(blocks: Tensor, axis: int) -> Tensor:
    """Each piece's running products times the products of the pieces before it (no division,
    so zeros are exact): the pieces' last running products, shifted one piece on (a window
    brings the previous device's; the first gets 1), scanned."""
    local = _cumprod(blocks, axis=axis + 1)
    last = local[(slice(None),) * (axis + 1) + (slice(-1, None),)]
    parts = blocks.shape[axis]
    first = np.zeros((parts,) + (1,) * (blocks.ndim - axis - 1))
    first[0] = 1
    shifted = _bin.add(window(last, axis, -1, parts), tensor(first, blocks.dtype))  # the window gives piece 0 a 0
    return _bin.mul(local, _cumprod(shifted, axis=axis))


@public()
def cumprod(x: Tensor, axis: int, *, dtype: Any = None) -> Tensor:
    """Running product along `axis`. Bool and int inputs give int64. The gradient is exact with
    zeros in `x` (as PyTorch's).

    Example:
        >>> nabla.cumprod(nabla.tensor([1.0, 2.0, 3.0]), 0).numpy()
        array([1., 2., 6.], dtype=float32)
    """
    x = with_dtype(x, dtype)  # (torch's dtype=: cast before the op)
    return _scan(x, axis, "cumprod", _cumprod_pieces, _cumprod)


# -- running extrema with indices (cummax, cummin) ---------------------------------------------
class _CumExtremumOp(_red._AxisOperation):
    """Running maximum (or minimum) along `axis` and the int64 index it was taken from. As in
    PyTorch, an element equal to the running extremum replaces it (ties give the last index),
    and a nan is taken and stays (later nans move the index on)."""

    always_tuple = True
    largest = True

    def abstract_eval(self, x: AVal, *, axis: int) -> list[AVal]:
        return [x, (x[0], _dt.int64)]

    def _mx_wins(self, earlier: Any, later: Any) -> Any:
        """MAX: where the running value from the earlier positions beats the later one."""
        beats = ops.greater(earlier, later) if self.largest else ops.greater(later, earlier)
        if not _dt.is_float(later.dtype):
            return beats
        return ops.logical_and(ops.logical_not(ops.is_nan(later)), ops.logical_or(ops.is_nan(earlier), beats))

    def kernel(self, x: Any, *, axis: int) -> Any:
        # A log-depth (Hillis-Steele) scan of (value, index) pairs; the pairs' combination is
        # associative, so ceil(log2 n) rounds of a shifted copy give the sequential result.
        shape, n = shape_of(x), int(x.shape[axis])
        positions = ops.range(0, n, 1, out_dim=n, dtype=_dt.int64, device=x.device)
        index = ops.broadcast_to(ops.reshape(positions, [n] + [1] * (x.rank - axis - 1)), shape)
        if 0 in shape:
            return x, index
        shift = 1
        while shift < n:
            earlier = _max_shift_in(x, axis, shift, _identity(x.dtype, self.largest))
            wins = self._mx_wins(earlier, x)
            x = ops.where(wins, earlier, x)
            index = ops.where(wins, _max_shift_in(index, axis, shift, 0), index)
            shift *= 2
        return x, index

    def numpy_kernel(self, x: np.ndarray, *, axis: int) -> tuple[np.ndarray, np.ndarray]:
        running = (np.maximum if self.largest else np.minimum).accumulate(x, axis=axis)  # nan propagates
        taken = x == running
        if x.dtype.kind == "f":
            taken |= np.isnan(x)
        positions = np.arange(x.shape[axis], dtype=np.int64).reshape((-1,) + (1,) * (x.ndim - axis - 1))
        return running, np.maximum.accumulate(np.where(taken, positions, 0), axis=axis)

    def vjp_rule(self, primals: list, cotangents: list, outputs: list, *, axis: int) -> list:
        x, indices = primals[0], outputs[1]
        if indices is None:  # the caller dropped the indices: compute them again
            indices = self(x, axis=axis)[1]
        flat = _take_transpose(cotangents[0], _elementwise_index(x.shape, indices, axis), 0, (x.numel(),))
        return [_view.reshape(flat, x.shape)]

    def jvp_rule(self, primals: list, tangents: list, outputs: list, *, axis: int) -> list:
        t = tangents[0]
        return [_take(_view.reshape(t, (-1,)), _elementwise_index(t.shape, outputs[1], axis), 0), None]


def _identity(dtype: Any, largest: bool) -> Any:
    """The value no element loses to: -inf / +inf, or an integer dtype's extreme."""
    if _dt.is_float(dtype):
        return -math.inf if largest else math.inf
    info = np.iinfo(_dt.to_numpy_dtype(dtype))
    return int(info.min if largest else info.max)


class CummaxOp(_CumExtremumOp):
    name = "cummax"


class CumminOp(_CumExtremumOp):
    name = "cummin"
    largest = False


_cummax, _cummin = CummaxOp(), CumminOp()


def _cum_extremum(op: _CumExtremumOp, x: Tensor, axis: Any, name: str) -> ValuesIndices:
    """Validate; bools run as int32 (MAX compares numbers); a 0-d tensor is its own result."""
    _red._check(x, name)
    a = _red._single_axis(axis, x.ndim, name)
    if x.dtype == _dt.bool_:
        values, indices = _cum_extremum(op, cast(x, _dt.int32), axis, name)
        return ValuesIndices(cast(values, _dt.bool_), indices)
    if x.ndim == 0:
        values, indices = op(_view.reshape(x, (1,)), axis=0)
        return ValuesIndices(_view.reshape(values, ()), _view.reshape(indices, ()))
    return ValuesIndices(*op(x, axis=a))


@public()
def cummax(x: Tensor, axis: int) -> ValuesIndices:
    """Running maximum along `axis` and the int64 index of each (torch.cummax): ties give the
    last index, and a nan is taken and stays. The values' gradient goes to the indices.

    Args:
        x: a tensor of any dtype (the values keep it).
        axis: the dimension to scan (`dim=` also accepted); negative counts from the end.

    Example:
        >>> v, i = nabla.cummax(nabla.tensor([1.0, 3.0, 2.0, 3.0]), 0)
        >>> v.tolist(), i.tolist()
        ([1.0, 3.0, 3.0, 3.0], [0, 1, 1, 3])
    """
    return _cum_extremum(_cummax, x, axis, "cummax")


@public()
def cummin(x: Tensor, axis: int) -> ValuesIndices:
    """Running minimum along `axis` and the int64 index of each (torch.cummin): ties give the
    last index, and a nan is taken and stays. The values' gradient goes to the indices.

    Args:
        x: a tensor of any dtype (the values keep it).
        axis: the dimension to scan (`dim=` also accepted); negative counts from the end.

    Example:
        >>> v, i = nabla.cummin(nabla.tensor([3.0, 1.0, 2.0, 1.0]), 0)
        >>> v.tolist(), i.tolist()
        ([3.0, 1.0, 1.0, 1.0], [0, 1, 1, 3])
    """
    return _cum_extremum(_cummin, x, axis, "cummin")


@public()
def logcumsumexp(x: Tensor, axis: int) -> Tensor:
    """log(cumsum(exp(x))) along `axis`, computed stably: a log-depth scan of `logaddexp` over
    shifted copies (x_i combined with x_{i-1}, then x_{i-2..i-3}, ...), so no term underflows
    however far apart the values are. Floating point only.

    Example:
        >>> nabla.logcumsumexp(nabla.tensor([0.0, 0.0, 1000.0]), 0).tolist()  # [0.0, 0.693..., 1000.0]
    """
    _red._check(x, "logcumsumexp")
    _red._float_only(x, "logcumsumexp")
    if x.ndim == 0:
        _red._single_axis(axis, 0, "logcumsumexp")
        return _bin.add(x, 0.0)
    a = _red._single_axis(axis, x.ndim, "logcumsumexp")
    n, step = x.shape[a], 1
    while step < n:
        fill = full(tuple(step if d == a else s for d, s in enumerate(x.shape)), -math.inf, x.dtype)
        x = _bin.logaddexp(x, concatenate([fill, _slice(x, a, 0, n - step)], a))
        step *= 2
    return x
