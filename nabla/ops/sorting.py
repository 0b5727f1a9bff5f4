"""Sorting and selection: sort, argsort, topk, unique.

One primitive (`_SelectOp`, as `sort` and `topk`) returns values and int64 indices from a single
op call. Ties keep their index order (a stable sort), in both directions, as torch.sort(stable=True).
Values are differentiable: the VJP writes the cotangent back to the selected positions and the
JVP gathers the tangent there, through two small private primitives (`sort_scatter`,
`sort_gather`) that rely on the indices along the axis being distinct, as sort/topk indices are.

NaN: the NumPy executor orders nan as the largest value (as PyTorch); MAX's top_k does not
order nan, so sorting tensors that hold nan is unspecified on MAX.

Along an axis split over devices, nothing gathers the axis: topk selects from each device's own
top k (`_topk_over_pieces`), and sort merges neighbouring pieces in rounds (`_sort_over_pieces`).

`unique`'s result size depends on the values, so it reads them (as `Tensor.nonzero` and
`masked_select` do): not inside `nabla.compile`, nor on a tensor batched by vmap. Its values are
taken from `x` at the first occurrences (lazily, in x's dtype) and are not differentiable.
"""

from __future__ import annotations

import math
from collections import namedtuple
from typing import Any

import numpy as np
from max.graph import ops

from ..core.common import dtypes as _dt
from ..core.sharding import OpShardingRule
from ..core.sharding import rules as _rules
from ..core.tensor.impl import TensorImpl
from ..core.tensor.tensor import Tensor
from . import binary as _bin
from . import reduction as _red
from . import view as _view
from .base import AVal, Operation, public
from .cast import cast
from .communication import reshard
from .creation import tensor
from .indexing_primitives import _take
from .shape import _slice, concatenate
from .spmd import evened, split_parts, window, windowable

__all__ = ["argsort", "msort", "sort", "topk", "unique"]

SortResult = namedtuple("SortResult", ["values", "indices"])
TopkResult = namedtuple("TopkResult", ["values", "indices"])


def _np_argsort(x: np.ndarray, axis: int, descending: bool) -> np.ndarray:
    """Stable argsort; descending keeps ties in index order (and puts nan first, as PyTorch)."""
    if not descending:
        return np.argsort(x, axis=axis, kind="stable")
    n = x.shape[axis]
    flipped = np.argsort(np.flip(x, axis), axis=axis, kind="stable")
    return (n - 1 - np.flip(flipped, axis)).astype(np.int64)


def _to_last(x: Any, axis: int) -> Any:
    """MAX: swap `axis` with the last axis (its own inverse)."""
    last = x.rank - 1
    return x if axis == last else ops.transpose(x, axis, last)


class _AxisOp(Operation):
    """Sharding: the sorted (gathered, scattered) axis stays whole; the other dims, of one size
    in every operand and result, pass through."""

    def adapt_kwargs(self, impls: list[TensorImpl], kwargs: dict, batch_dims: int) -> dict:
        return {**kwargs, "axis": kwargs["axis"] + batch_dims}

    def sharding_rule_for(self, in_shapes: list, out_shapes: list, kwargs: dict) -> OpShardingRule:
        return _rules.elementwise(in_shapes, out_shapes, whole=(kwargs["axis"],), partial_ok=self.partial_ok)


# -- the selection primitive -------------------------------------------------------------------
class _SelectOp(_AxisOp):
    """The `k` largest (`largest=True`) or smallest elements along `axis`, in order, and their
    int64 indices. MAX lowering: top_k / bottom_k on the innermost axis."""

    def abstract_eval(self, x: AVal, *, k: int, axis: int, largest: bool) -> list[AVal]:
        shape = list(x[0])
        shape[axis] = k
        return [(tuple(shape), x[1]), (tuple(shape), _dt.int64)]

    def kernel(self, x: Any, *, k: int, axis: int, largest: bool) -> Any:
        x = _to_last(x, axis)
        if not _dt.is_float(x.dtype):
            values, indices = (ops.top_k if largest else ops.bottom_k)(x, k, x.rank - 1)
            return _to_last(values, axis), _to_last(indices, axis)
        # NaN ranks above every number, as in NumPy and torch (MAX's selection puts it anywhere):
        # select on NaN read as +inf, then read the values at the chosen indices.
        key = ops.where(ops.is_nan(x), ops.constant(math.inf, x.dtype, x.device), x)
        _, indices = (ops.top_k if largest else ops.bottom_k)(key, k, x.rank - 1)
        values = ops.gather_nd(x, ops.unsqueeze(indices, -1), batch_dims=x.rank - 1)
        return _to_last(values, axis), _to_last(indices, axis)

    def numpy_kernel(self, x: np.ndarray, *, k: int, axis: int, largest: bool) -> tuple:
        idx = np.take(_np_argsort(x, axis, largest), np.arange(k), axis=axis)
        return np.take_along_axis(x, idx, axis), idx

    def vjp_rule(self, primals: list, cotangents: list, outputs: list, *, k: int, axis: int, largest: bool) -> list:
        indices = outputs[1]
        if indices is None:  # the caller dropped the indices (e.g. `sort(x).values`): select again
            indices = self(primals[0], k=k, axis=axis, largest=largest)[1]
        return [_scatter(cotangents[0], indices, axis=axis, size=primals[0].shape[axis])]

    def jvp_rule(self, primals: list, tangents: list, outputs: list, *, k: int, axis: int, largest: bool) -> list:
        return [_gather(tangents[0], outputs[1], axis=axis), None]


class SortOp(_SelectOp):
    name = "sort"
    always_tuple = True


class TopkOp(_SelectOp):
    name = "topk"
    always_tuple = True


# -- gather / scatter along an axis with distinct indices (the derivatives of selection) ---------
class SortGatherOp(_AxisOp):
    """out[..., i, ...] = x[..., indices[..., i, ...], ...] along `axis` (take_along_axis).

    Its VJP writes the cotangent back with `sort_scatter`, which is the adjoint only when the
    indices along `axis` are distinct: true for the sort/topk indices this op is used with."""

    name = "sort_gather"
    partial_ok = (0,)  # linear in x

    def abstract_eval(self, x: AVal, indices: AVal, *, axis: int) -> AVal:
        return indices[0], x[1]

    def kernel(self, x: Any, indices: Any, *, axis: int) -> Any:
        x, indices = _to_last(x, axis), _to_last(indices, axis)
        out = ops.gather_nd(x, ops.unsqueeze(indices, -1), batch_dims=x.rank - 1)
        return _to_last(out, axis)

    def numpy_kernel(self, x: np.ndarray, indices: np.ndarray, *, axis: int) -> np.ndarray:
        return np.take_along_axis(x, indices, axis)

    def vjp_rule(self, primals: list, cotangents: list, outputs: list, *, axis: int) -> list:
        x, indices = primals
        return [_scatter(cotangents[0], indices, axis=axis, size=x.shape[axis]), None]

    def jvp_rule(self, primals: list, tangents: list, outputs: list, *, axis: int) -> list:
        return [_gather(tangents[0], primals[1], axis=axis)]


class SortScatterOp(_AxisOp):
    """Zeros with `size` elements along `axis`, and `updates` written at `indices` along it
    (put_along_axis into zeros). Indices along `axis` must be distinct."""

    name = "sort_scatter"
    partial_ok = (0,)  # linear in the updates

    def abstract_eval(self, updates: AVal, indices: AVal, *, axis: int, size: int) -> AVal:
        shape = list(updates[0])
        shape[axis] = size
        return tuple(shape), updates[1]

    def kernel(self, updates: Any, indices: Any, *, axis: int, size: int) -> Any:
        shape = [int(d) for d in updates.shape]
        shape[axis] = size
        zeros = ops.broadcast_to(ops.constant(0, updates.dtype, updates.device), shape)
        return ops.scatter(zeros, updates, indices, axis=axis)

    def numpy_kernel(self, updates: np.ndarray, indices: np.ndarray, *, axis: int, size: int) -> np.ndarray:
        shape = list(updates.shape)
        shape[axis] = size
        out = np.zeros(shape, updates.dtype)
        np.put_along_axis(out, indices, updates, axis)
        return out

    def vjp_rule(self, primals: list, cotangents: list, outputs: list, *, axis: int, size: int) -> list:
        return [_gather(cotangents[0], primals[1], axis=axis), None]

    def jvp_rule(self, primals: list, tangents: list, outputs: list, *, axis: int, size: int) -> list:
        return [_scatter(tangents[0], primals[1], axis=axis, size=size)]


_sort, _topk, _gather, _scatter = SortOp(), TopkOp(), SortGatherOp(), SortScatterOp()


# -- public functions --------------------------------------------------------------------------
def _select(op: _SelectOp, x: Tensor, k: int | None, axis: Any, largest: bool, name: str) -> tuple[Tensor, Tensor]:
    """Validate, handle 0-d and bool inputs, and run the selection primitive."""
    if not isinstance(x, Tensor):
        raise TypeError(f"{name}: x must be a Tensor, got {type(x).__name__}")
    a = _red._single_axis(axis, x.ndim, name)
    n = x.shape[a] if x.ndim else 1
    if k is None:
        k = n
    elif isinstance(k, bool) or not isinstance(k, int | np.integer):
        raise TypeError(f"{name}: k must be an int, got {k!r}")
    elif not 0 <= k <= n:
        raise ValueError(f"{name}: k={k} is out of range for dim {axis} of size {n}")
    if x.dtype == _dt.bool_:  # MAX selects numbers: order bools as 0/1
        values, indices = _select(op, cast(x, _dt.int32), k, axis, largest, name)
        return cast(values, _dt.bool_), indices
    if x.ndim == 0:  # PyTorch: a 0-d tensor is its own sort/topk (k may be 0 or 1)
        values, indices = op(_view.reshape(x, (1,)), k=1, axis=0, largest=bool(largest))
        return _view.reshape(values, ()), _view.reshape(indices, ())
    if windowable(x, a) and k:
        parts = split_parts(x, a)
        if k < -(-n // parts):  # the candidates are each device's own top k
            return _topk_over_pieces(x, int(k), a, bool(largest), parts)
        values, indices = _sort_over_pieces(x, a, bool(largest), parts)
        if k < n:  # topk: the first k of the sorted axis, still split
            values, indices = window(values, a, 0, int(k)), window(indices, a, 0, int(k))
        return values, indices
    return op(x, k=int(k), axis=a, largest=bool(largest))


def _extended(x: Tensor, axis: int, largest: bool) -> Tensor:
    """`x` with its split axis extended to equal pieces (`evened`) by values that sort after
    every element of their row, ties resolving by index: -inf (the integer minimum) for a
    descending order; for an ascending one the row's maximum, which is nan for a row that
    holds nan (nan sorts last). Unchanged when the axis already splits evenly."""
    padded, n = evened(x, axis), x.shape[axis]
    if padded.shape[axis] == n:
        return x
    kept = np.arange(padded.shape[axis]).reshape((-1,) + (1,) * (x.ndim - axis - 1)) < n
    if not largest:
        worst = _red.max(x, axis, keepdims=True)  # an all-reduce of each device's row maxima
    else:
        np_dtype = _dt.to_numpy_dtype(x.dtype)
        lowest = -np.inf if _dt.is_float(x.dtype) else np.iinfo(np_dtype).min
        worst = tensor(np.asarray(lowest, np_dtype))
    return _bin.where_(tensor(kept), padded, worst)


def _blocks(x: Tensor, axis: int, parts: int) -> Tensor:
    """(.., parts * m, ..) -> (.., parts, m, ..): each device's piece becomes a row of its own."""
    return _view.reshape(x, x.shape[:axis] + (parts, x.shape[axis] // parts) + x.shape[axis + 1 :])


def _block_offsets(parts: int, m: int, rank: int, axis: int) -> Tensor:
    """The global position of each block's first element, shaped to broadcast over the blocks."""
    return tensor((np.arange(parts) * m).reshape((parts,) + (1,) * (rank - axis - 1)), _dt.int64)


def _topk_over_pieces(x: Tensor, k: int, axis: int, largest: bool, parts: int) -> tuple[Tensor, Tensor]:
    """topk along an axis split over devices: each device's own top k are the candidates, and
    only they are gathered for the final selection (the data never is). Candidates stay in
    index order among equal values, so ties resolve as in one topk. An uneven split is first
    extended to an even one (`_extended`)."""
    x = _extended(x, axis, largest)
    shape, m = x.shape, x.shape[axis] // parts
    values, indices = _topk(_blocks(x, axis, parts), k=k, axis=axis + 1, largest=largest)  # each piece's own
    indices = _bin.add(indices, _block_offsets(parts, m, x.ndim + 1, axis))  # global positions
    candidates = shape[:axis] + (parts * k,) + shape[axis + 1 :]
    values, indices = _view.reshape(values, candidates), _view.reshape(indices, candidates)
    dims = [() if d == axis else axes for d, axes in enumerate(values.sharding.dim_axes)]
    values, indices = (reshard(t, t.sharding.with_dims(dims)) for t in (values, indices))  # the gather
    top, pick = _topk(values, k=k, axis=axis, largest=largest)
    return top, _gather(indices, pick, axis=axis)


def _sort_over_pieces(x: Tensor, axis: int, descending: bool, parts: int) -> tuple[Tensor, Tensor]:
    """sort along an axis split over devices, the result split alike: no device ever holds
    more than two pieces. Each device sorts its piece; then, in `parts` rounds of odd-even
    transposition, neighbouring devices (pairs starting at even positions, then at odd ones)
    swap pieces (windows of one block), sort the two together and keep the lower or the upper
    half. Merging the lower piece first keeps equal values in index order, so the result is
    the stable sort's. An uneven split is extended by values that sort last, then cut."""
    n = x.shape[axis]
    x = _extended(x, axis, descending)
    m, rank = x.shape[axis] // parts, x.ndim + 1
    values, indices = _sort(_blocks(x, axis, parts), k=m, axis=axis + 1, largest=descending)
    indices = _bin.add(indices, _block_offsets(parts, m, rank, axis))
    position = np.arange(parts).reshape((parts,) + (1,) * (rank - axis - 1))
    for r in range(parts):
        lower_np = (position % 2 == r % 2) & (position + 1 < parts)
        if not lower_np.any():  # two devices: the second round pairs nobody
            continue
        lower = tensor(lower_np)
        active = tensor(lower_np | ((position % 2 != r % 2) & (position >= 1)))
        halves = []
        for t in (values, indices):
            partner = _bin.where_(lower, window(t, axis, 1, parts), window(t, axis, -1, parts))
            halves.append(concatenate([_bin.where_(lower, t, partner), _bin.where_(lower, partner, t)], axis + 1))
        merged, pick = _sort(halves[0], k=2 * m, axis=axis + 1, largest=descending)
        merged_indices = _gather(halves[1], pick, axis=axis + 1)
        values, indices = (
            _bin.where_(active, _bin.where_(lower, _slice(t, axis + 1, 0, m), _slice(t, axis + 1, m, 2 * m)), old)
            for t, old in ((merged, values), (merged_indices, indices))
        )
    flat = x.shape
    values, indices = _view.reshape(values, flat), _view.reshape(indices, flat)
    if flat[axis] != n:  # the extension sorted last: cut it off
        values, indices = window(values, axis, 0, n), window(indices, axis, 0, n)
    return values, indices


@public()
def sort(x: Tensor, axis: int = -1, descending: bool = False, *, stable: bool = False) -> SortResult:
    """Sort along `axis`: `(values, indices)` with `x` gathered at `indices` equal to `values`.

    Ties keep their index order in both directions (the sort is always stable; `stable` is
    accepted for PyTorch compatibility). Gradients flow to `x` through `values`.

    Example:
        >>> v, i = nabla.sort(nabla.tensor([3.0, 1.0, 2.0]))
        >>> v.numpy(), i.numpy()
        (array([1., 2., 3.], dtype=float32), array([1, 2, 0]))
    """
    return SortResult(*_select(_sort, x, None, axis, bool(descending), "sort"))


@public()
def argsort(x: Tensor, axis: int = -1, descending: bool = False, *, stable: bool = False) -> Tensor:
    """The int64 indices that sort `x` along `axis` (stable: ties keep their index order)."""
    return _select(_sort, x, None, axis, bool(descending), "argsort")[1]


@public()
def topk(x: Tensor, k: int, axis: int = -1, largest: bool = True, sorted: bool = True) -> TopkResult:  # noqa: A002
    """The `k` largest (or smallest, `largest=False`) elements along `axis` and their indices.

    Results are always sorted (largest first, or smallest first); ties keep index order.

    Example:
        >>> v, i = nabla.topk(nabla.tensor([1.0, 5.0, 3.0]), 2)
        >>> v.numpy(), i.numpy()
        (array([5., 3.], dtype=float32), array([1, 2]))
    """
    return TopkResult(*_select(_topk, x, k, axis, bool(largest), "topk"))


@public()
def msort(x: Tensor) -> Tensor:
    """The values of `x` sorted along its first dimension (`torch.msort`: sort(x, 0).values)."""
    return sort(x, 0).values


# -- unique ------------------------------------------------------------------------------------
def _np_unique_rows(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(first occurrence, inverse, count) of the distinct rows of a 2-D array, in ascending
    lexicographic order. As in PyTorch, nan equals nothing: each row holding one is distinct
    (sorted last, in position order)."""
    n = rows.shape[0]
    order = np.lexsort(rows.T[::-1]) if rows.shape[1] else np.arange(n)  # stable: first occurrences lead
    ordered = rows[order]
    starts = np.ones(n, bool)
    starts[1:] = np.any(ordered[1:] != ordered[:-1], axis=1)
    inverse = np.empty(n, np.int64)
    inverse[order] = np.cumsum(starts) - 1
    counts = np.diff(np.flatnonzero(np.append(starts, True))).astype(np.int64)
    return order[starts].astype(np.int64), inverse, counts


@public()
def unique(
    x: Tensor,
    sorted: bool = True,  # noqa: A002
    return_inverse: bool = False,
    return_counts: bool = False,
    axis: int | None = None,
) -> Tensor | tuple[Tensor, ...]:
    """The distinct elements of `x` (or its distinct slices along `axis`), in ascending order, as
    `torch.unique`. The result's size depends on the values, which are computed and read (so
    not inside `nabla.compile` or on a vmap-batched tensor); the result is not differentiable.

    Args:
        x: a tensor of any dtype.
        sorted: accepted for PyTorch compatibility; the result is always sorted (as PyTorch's on CPU).
        return_inverse: also return, for each element (slice), the int64 index of its value in
            the result: of x's shape, or of shape (x.shape[axis],).
        return_counts: also return how often each distinct value occurs (int64).
        axis: None (the flattened x) or the dimension whose slices are compared (`dim=`).

    Returns:
        The distinct values, or a tuple (values, inverse?, counts?) with the requested extras.

    Example:
        >>> values, counts = nabla.unique(nabla.tensor([3, 1, 3, 2]), return_counts=True)
        >>> values.tolist(), counts.tolist()
        ([1, 2, 3], [1, 1, 2])
    """
    if not isinstance(x, Tensor):
        raise TypeError(f"unique: x must be a Tensor, got {type(x).__name__}")
    if x._impl.batch_dims:
        raise ValueError("unique: the result's size depends on the values, which differ per vmap batch element")
    values, inverse, counts = _unique_along(x, axis)
    extras = ([tensor(inverse)] if return_inverse else []) + ([tensor(counts)] if return_counts else [])
    values = _view.detach(values)
    return (values, *extras) if extras else values


def _unique_along(x: Tensor, axis: int | None) -> tuple[Tensor, np.ndarray, np.ndarray]:
    """unique's values (taken from x at their first occurrences), inverse and counts: of the
    elements (axis None) or of the slices along `axis`. Reads x's values."""
    data = x.numpy()
    if axis is None:
        first, inverse, counts = _np_unique_rows(data.reshape(-1, 1))
        return _take(_view.reshape(x, (-1,)), tensor(first), 0), inverse.reshape(x.shape), counts
    if x.ndim == 0:
        raise IndexError(f"unique: dim={axis} given for a 0-d tensor")
    a = _view.normalize_axis(axis, x.ndim, "unique", "dim")
    n = x.shape[a]
    rows = np.moveaxis(data, a, 0).reshape(n, x.numel() // n if n else 0)
    if n and not rows.shape[1]:
        raise ValueError(f"unique: x of shape {x.shape} has empty dims other than dim {a}")
    first, inverse, counts = _np_unique_rows(rows)
    return _take(x, tensor(first), a), inverse, counts
