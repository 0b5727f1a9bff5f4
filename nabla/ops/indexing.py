"""Indexing: `x[idx]`, functional updates (`setitem`, `x.at[idx].add(v)`), gather/scatter.

Four primitives carry everything here:

    slice          static strided slice, one (start, stop, step) per dimension (basic indexing)
    slice_scatter  write a tensor into a strided slice of another (VJP of slice, basic setitem)
    take           NumPy's `take(x, idx, axis)`: gather along one axis with an index of any
                   shape (advanced indexing, index_select, gather, take_along_axis)
    take_scatter   the inverse of `take`: write / add / multiply / min / max `updates` into
                   `x` at `idx` along one axis; duplicates accumulate (VJP of take, scatter)

Several advanced indices are linearised into one index over their merged dimensions, so a
NumPy-style `x[i, j]` is a single `take` (and its gradient a single `take_scatter`).

Data-dependent shapes: a boolean mask (`x[mask]`) and `one_hot(..., num_classes=-1)` read
the mask's / indices' values to know the result's shape, so they realize those tensors (the
computation pending behind them is evaluated first). Integer index arrays given as Python or
NumPy data (or realized tensors) are bounds-checked at the call; indices computed lazily are
not (out-of-range values then give undefined results on MAX).
"""

from __future__ import annotations

import operator
from typing import Any

import numpy as np
from max.dtype import DType
from max.graph import DeviceRef, ops

from ..core.common import dtypes as _dt
from ..core.tensor.impl import TensorImpl
from ..core.tensor.tensor import Tensor
from . import binary as _bin
from . import control_flow as _cf
from . import unary as _un
from .base import AVal, Operation, public
from .cast import cast
from .creation import full, tensor, zeros_like
from .view import broadcast_shapes, broadcast_to, normalize_axis, permute, reshape

__all__ = [
    "at",
    "gather",
    "getitem",
    "index_select",
    "masked_fill",
    "one_hot",
    "scatter",
    "scatter_add",
    "setitem",
    "take_along_axis",
]

Slices = tuple[tuple[int, int, int], ...]  # one canonical (start, stop, step) per dimension
_MODES = ("set", "add", "mul", "min", "max")


def _prod(shape: Any) -> int:
    return int(np.prod(shape, dtype=np.int64))


def _canonical(start: int, stop: int, step: int) -> tuple[int, int, int]:
    """`range(start, stop, step)` in a canonical form: empty is (0, 0, 1), one element has
    step 1, and `stop` is one step past the last element (it may be -1 for negative steps)."""
    m = len(range(start, stop, step))
    if m == 0:
        return (0, 0, 1)
    if m == 1:
        return (start, start + 1, 1)
    last = start + (m - 1) * step
    return (start, last + (1 if step > 0 else -1), step)


def _slice_len(s: tuple[int, int, int]) -> int:
    return len(range(*s))


def _np_slice(s: tuple[int, int, int]) -> slice:
    start, stop, step = s
    return slice(start, None if stop < 0 else stop, step)


def _is_full(s: tuple[int, int, int], n: int) -> bool:
    return s == (0, n, 1) or (n == 0 and _slice_len(s) == 0)


def _logical_slices(slices: Slices, primal: Tensor) -> Slices:
    return slices[primal._impl.batch_dims :]


def _check_same_batch(impls: list[TensorImpl], op: str, names: tuple[str, ...]) -> int:
    """The data inputs must share their vmap depth; indices must not be batched (yet)."""
    bd = impls[0].batch_dims
    for impl, name in zip(impls, names, strict=False):
        if name == "index" and impl.batch_dims:
            raise NotImplementedError(f"{op}: batched (vmapped) indices are not supported yet")
        if name != "index" and impl.batch_dims != bd:
            raise NotImplementedError(f"{op}: x and {name} must have the same vmap batch dimensions")
    return bd


# -- slice ---------------------------------------------------------------------------------------
class SliceOp(Operation):
    """`x[s0, s1, ...]` for one canonical (start, stop, step) per dimension; rank is kept."""

    name = "slice"

    def adapt_kwargs(self, impls: list[TensorImpl], kwargs: dict, batch_dims: int) -> dict:
        lead = tuple((0, n, 1) for n in impls[0].physical_shape[:batch_dims])
        return {"slices": lead + tuple(kwargs["slices"])}

    def abstract_eval(self, x: AVal, *, slices: Slices) -> AVal:
        if len(slices) != len(x[0]):
            raise ValueError(f"slice: {len(slices)} slices for a tensor of rank {len(x[0])}")
        return tuple(_slice_len(s) for s in slices), x[1]

    def kernel(self, x: Any, *, slices: Slices) -> Any:
        shape = [int(d) for d in x.shape]
        positive = [slice(*s) if s[2] > 0 else slice(None) for s in slices]
        if any(not _is_full(s, n) for s, n in zip(slices, shape, strict=True) if s[2] > 0):
            x = ops.slice_tensor(x, positive)
        for d, s in enumerate(slices):
            if s[2] < 0:  # reversed order: a gather with a constant index vector
                x = ops.gather(x, ops.constant(np.arange(*s, dtype=np.int64), DType.int64, DeviceRef.CPU()), d)
        return x

    def numpy_kernel(self, x: np.ndarray, *, slices: Slices) -> np.ndarray:
        return np.array(x[tuple(_np_slice(s) for s in slices)])

    def vjp_rule(self, primals: list, cotangents: list, outputs: list, *, slices: Slices) -> list:
        x = primals[0]
        return [_slice_scatter(zeros_like(x), cotangents[0], _logical_slices(slices, x))]

    def jvp_rule(self, primals: list, tangents: list, outputs: list, *, slices: Slices) -> list:
        return [_slice(tangents[0], _logical_slices(slices, primals[0]))]


class SliceScatterOp(Operation):
    """`x` with `x[slices] = src` (src has the slice's shape and x's dtype)."""

    name = "slice_scatter"

    def adapt_kwargs(self, impls: list[TensorImpl], kwargs: dict, batch_dims: int) -> dict:
        _check_same_batch(impls, self.name, ("x", "src"))
        lead = tuple((0, n, 1) for n in impls[0].physical_shape[:batch_dims])
        return {"slices": lead + tuple(kwargs["slices"])}

    def abstract_eval(self, x: AVal, src: AVal, *, slices: Slices) -> AVal:
        want = tuple(_slice_len(s) for s in slices)
        if len(slices) != len(x[0]) or src[0] != want:
            raise ValueError(f"slice_scatter: src has shape {src[0]}, the slice of x {x[0]} has shape {want}")
        if src[1] != x[1]:
            raise TypeError(f"slice_scatter: src has dtype {src[1].name}, x has {x[1].name}")
        return x

    def kernel(self, x: Any, src: Any, *, slices: Slices) -> Any:
        shape = [int(d) for d in x.shape]
        device = DeviceRef.CPU()
        value, mask = src, None
        for d, (s, n) in enumerate(zip(slices, shape, strict=True)):
            if _is_full(s, n):
                continue
            sel = np.arange(*s, dtype=np.int64)
            if sel.size == 0:
                return x  # nothing is written
            # Spread `value` along d to x's extent (positions outside the slice are masked).
            pos = np.zeros(n, np.int64)
            pos[sel] = np.arange(sel.size)
            value = ops.gather(value, ops.constant(pos, DType.int64, device), d)
            keep = np.zeros(n, np.bool_)
            keep[sel] = True
            keep_d = ops.broadcast_to(
                ops.constant(keep.reshape([n if i == d else 1 for i in range(len(shape))]), DType.bool, device),
                shape,
            )
            mask = keep_d if mask is None else ops.logical_and(mask, keep_d)
        return value if mask is None else ops.where(mask, value, x)

    def numpy_kernel(self, x: np.ndarray, src: np.ndarray, *, slices: Slices) -> np.ndarray:
        out = np.array(x)
        out[tuple(_np_slice(s) for s in slices)] = src
        return out

    def vjp_rule(self, primals: list, cotangents: list, outputs: list, *, slices: Slices) -> list:
        x, src = primals
        g = cotangents[0]
        sl = _logical_slices(slices, x)
        return [_slice_scatter(g, zeros_like(src), sl), _slice(g, sl)]

    def jvp_rule(self, primals: list, tangents: list, outputs: list, *, slices: Slices) -> list:
        return [_slice_scatter(tangents[0], tangents[1], _logical_slices(slices, primals[0]))]


_SLICE, _SLICE_SCATTER = SliceOp(), SliceScatterOp()


def _slice(x: Tensor, slices: Slices) -> Tensor:
    if all(_is_full(s, n) for s, n in zip(slices, x.shape, strict=True)):
        return x
    return _SLICE(x, slices=tuple(slices))


def _slice_scatter(x: Tensor, src: Tensor, slices: Slices) -> Tensor:
    if all(_is_full(s, n) for s, n in zip(slices, x.shape, strict=True)):
        return src  # the whole of x is overwritten
    return _SLICE_SCATTER(x, src, slices=tuple(slices))


# -- take / take_scatter -------------------------------------------------------------------------
class TakeOp(Operation):
    """NumPy's `take(x, index, axis)`: shape `x[:axis] + index.shape + x[axis+1:]`.

    Indices must be int64 in [0, x.shape[axis]) (callers wrap negatives)."""

    name = "take"

    def adapt_kwargs(self, impls: list[TensorImpl], kwargs: dict, batch_dims: int) -> dict:
        _check_same_batch(impls, self.name, ("x", "index"))
        return {"axis": kwargs["axis"] + batch_dims}

    def abstract_eval(self, x: AVal, index: AVal, *, axis: int) -> AVal:
        if not _dt.is_integer(index[1]):
            raise TypeError(f"take: index must be an integer tensor, got dtype {index[1].name}")
        return x[0][:axis] + index[0] + x[0][axis + 1 :], x[1]

    def kernel(self, x: Any, index: Any, *, axis: int) -> Any:
        if index.rank == 0:  # MAX keeps a size-1 dimension for a scalar index
            out = ops.gather(x, ops.reshape(index, [1]), axis)
            return ops.reshape(out, [int(d) for i, d in enumerate(x.shape) if i != axis])
        return ops.gather(x, index, axis)

    def numpy_kernel(self, x: np.ndarray, index: np.ndarray, *, axis: int) -> np.ndarray:
        return np.take(x, index, axis=axis)

    def vjp_rule(self, primals: list, cotangents: list, outputs: list, *, axis: int) -> list:
        x, index = primals
        a = axis - x._impl.batch_dims
        return [_take_scatter(zeros_like(x), cotangents[0], index, a, "add"), None]

    def jvp_rule(self, primals: list, tangents: list, outputs: list, *, axis: int) -> list:
        x, index = primals
        return [_take(tangents[0], index, axis - x._impl.batch_dims)]


_SCATTER_ND = {
    "set": ops.scatter_nd,
    "add": ops.scatter_nd_add,
    "mul": ops.scatter_nd_mul,
    "min": ops.scatter_nd_min,
    "max": ops.scatter_nd_max,
}
_NUMPY_AT = {"add": np.add.at, "mul": np.multiply.at, "min": np.minimum.at, "max": np.maximum.at}


class TakeScatterOp(Operation):
    """The inverse of `take`: combine `updates` (shaped like `take(x, index, axis)`) into `x`
    at `index` along `axis`. `mode`: "set" (duplicates: one of them wins), "add", "mul",
    "min", "max" (duplicates combine, as JAX's scatter ops)."""

    name = "take_scatter"

    def adapt_kwargs(self, impls: list[TensorImpl], kwargs: dict, batch_dims: int) -> dict:
        _check_same_batch(impls, self.name, ("x", "updates", "index"))
        return {"axis": kwargs["axis"] + batch_dims, "mode": kwargs["mode"]}

    def abstract_eval(self, x: AVal, updates: AVal, index: AVal, *, axis: int, mode: str) -> AVal:
        if mode not in _MODES:
            raise ValueError(f"take_scatter: mode must be one of {_MODES}, got {mode!r}")
        if not _dt.is_integer(index[1]):
            raise TypeError(f"take_scatter: index must be an integer tensor, got dtype {index[1].name}")
        want = x[0][:axis] + index[0] + x[0][axis + 1 :]
        if updates[0] != want or updates[1] != x[1]:
            raise ValueError(
                f"take_scatter: updates have shape {updates[0]} {updates[1].name}, expected {want} {x[1].name}"
            )
        return x

    def kernel(self, x: Any, updates: Any, index: Any, *, axis: int, mode: str) -> Any:
        shape = [int(d) for d in x.shape]
        m = _prod([int(d) for d in index.shape])
        if m == 0:
            return x
        rank = len(shape)
        is_bool = x.dtype == DType.bool
        if is_bool:  # scatter kernels work on numbers
            x, updates = ops.cast(x, DType.int32), ops.cast(updates, DType.int32)
        u = ops.reshape(updates, shape[:axis] + [m] + shape[axis + 1 :])
        idx = ops.reshape(index, [m, 1])
        # scatter_nd indexes leading dimensions: bring `axis` to the front.
        perm = [axis, *range(axis), *range(axis + 1, rank)]
        if axis:
            x, u = ops.permute(x, perm), ops.permute(u, perm)
        out = _SCATTER_ND[mode](x, u, idx)
        if axis:
            out = ops.permute(out, [int(i) for i in np.argsort(perm)])
        return ops.cast(out, DType.bool) if is_bool else out

    def numpy_kernel(self, x: np.ndarray, updates: np.ndarray, index: np.ndarray, *, axis: int, mode: str) -> Any:
        out = np.array(x)
        key = (slice(None),) * axis + (index,)
        if mode == "set":
            out[key] = updates
        else:
            _NUMPY_AT[mode](out, key, updates)
        return out

    def vjp_rule(self, primals: list, cotangents: list, outputs: list, *, axis: int, mode: str) -> list:
        x, u, index = primals
        g = cotangents[0]
        a = axis - x._impl.batch_dims
        if mode == "add":
            return [g, _take(g, index, a), None]
        if mode == "set":
            return [_take_scatter(g, zeros_like(u), index, a, "set"), _take(g, index, a), None]
        if mode == "mul":
            total, others = _product_parts(x, u, index, a)
            return [_bin.mul(g, total), _bin.mul(_take(_bin.mul(g, x), index, a), others), None]
        mask_x, mask_u, count = _extremum_parts(x, u, index, a, outputs[0])
        g = _bin.div(g, count)
        return [_bin.mul(g, mask_x), _bin.mul(_take(g, index, a), mask_u), None]

    def jvp_rule(self, primals: list, tangents: list, outputs: list, *, axis: int, mode: str) -> list:
        x, u, index = primals
        tx, tu = tangents[0], tangents[1]
        a = axis - x._impl.batch_dims
        if mode in ("add", "set"):
            return [_take_scatter(tx, tu, index, a, mode)]
        if mode == "mul":
            total, others = _product_parts(x, u, index, a)
            spread = _take_scatter(zeros_like(x), _bin.mul(tu, others), index, a, "add")
            return [_bin.add(_bin.mul(tx, total), _bin.mul(x, spread))]
        mask_x, mask_u, count = _extremum_parts(x, u, index, a, outputs[0])
        spread = _take_scatter(zeros_like(x), _bin.mul(tu, mask_u), index, a, "add")
        return [_bin.div(_bin.add(_bin.mul(tx, mask_x), spread), count)]


def _product_parts(x: Tensor, u: Tensor, index: Tensor, axis: int) -> tuple[Tensor, Tensor]:
    """For mode "mul": the product of the updates landing on each position of x (`total`),
    and for each update the product of the *other* updates at its position (`others`),
    computed without dividing by zero (zeros are counted separately)."""
    ones, zeros = full(x.shape, 1, x.dtype), zeros_like(x)
    is_zero = _bin.equal(u, 0)
    safe = _cf.where(is_zero, full((), 1, u.dtype), u)
    nonzero_product = _take_scatter(ones, safe, index, axis, "mul")
    zero_count = _take_scatter(zeros, cast(is_zero, x.dtype), index, axis, "add")
    total = _cf.where(_bin.greater(zero_count, 0), full((), 0, x.dtype), nonzero_product)
    at_product, at_zeros = _take(nonzero_product, index, axis), _take(zero_count, index, axis)
    zero = full((), 0, u.dtype)
    others = _cf.where(
        is_zero,
        _cf.where(_bin.equal(at_zeros, 1), at_product, zero),
        _cf.where(_bin.equal(at_zeros, 0), _bin.div(at_product, safe), zero),
    )
    return total, others


def _extremum_parts(x: Tensor, u: Tensor, index: Tensor, axis: int, out: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """For modes "min"/"max": which of x and the updates attain the result; ties share the
    gradient evenly (as torch.amax does)."""
    mask_x = cast(_bin.equal(x, out), x.dtype)
    mask_u = cast(_bin.equal(u, _take(out, index, axis)), u.dtype)
    count = _bin.add(mask_x, _take_scatter(zeros_like(x), mask_u, index, axis, "add"))
    return mask_x, mask_u, count


_TAKE, _TAKE_SCATTER = TakeOp(), TakeScatterOp()


def _take(x: Tensor, index: Tensor, axis: int) -> Tensor:
    return _TAKE(x, index, axis=axis)


def _take_scatter(x: Tensor, updates: Tensor, index: Tensor, axis: int, mode: str) -> Tensor:
    return _TAKE_SCATTER(x, updates, index, axis=axis, mode=mode)


# -- index parsing -----------------------------------------------------------------------------
_INDEX_KINDS = "ints, slices, None, Ellipsis, integer or bool arrays/lists/tensors"


def _as_index_array(item: Any, op: str) -> Any:
    """A Tensor (kept) or a NumPy int64/bool array for array-like index entries."""
    if isinstance(item, Tensor):
        if item.dtype == _dt.bool_ or _dt.is_integer(item.dtype):
            if item._impl.is_realized and not item._impl.batch_dims:
                return item.numpy()  # data known: checked and wrapped eagerly
            return item
        raise TypeError(f"{op}: tensors used as indices must be integer or bool, got dtype {item.dtype.name}")
    try:
        arr = np.asarray(item)
    except ValueError:
        raise TypeError(f"{op}: cannot use the ragged sequence {item!r:.60} as an index") from None
    if arr.dtype == np.bool_:
        return arr
    if arr.dtype.kind in "iu":
        return arr.astype(np.int64)
    if arr.size == 0 and not isinstance(item, np.ndarray):
        return arr.astype(np.int64)  # `x[[]]`
    raise TypeError(f"{op}: index {item!r:.60} of dtype {arr.dtype} is not supported; use {_INDEX_KINDS}")


class _Parsed:
    """An index expression resolved against a shape.

    slices: one canonical (start, stop, step) per dimension of x (full for advanced dims).
    advanced: (dim, int64 NumPy array or int Tensor) per advanced dimension, in dim order.
    entries: the result layout: ("dim", d) for a sliced dim, ("new",) for None, ("adv", d).
    empty_new: positions in `entries` of scalar-False indices (a new axis of length 0).
    """

    def __init__(self) -> None:
        self.slices: list[tuple[int, int, int]] = []
        self.advanced: list[tuple[int, Any]] = []
        self.entries: list[tuple] = []
        self.empty_new: list[int] = []


def _parse(shape: tuple[int, ...], index: Any, op: str) -> _Parsed:
    items = index if isinstance(index, tuple) else (index,)
    conv: list[tuple[str, Any]] = []
    for item in items:
        if item is None:
            conv.append(("new", None))
        elif item is Ellipsis:
            conv.append(("ellipsis", None))
        elif isinstance(item, bool | np.bool_):
            conv.append(("bool", bool(item)))
        elif isinstance(item, int | np.integer):
            conv.append(("int", int(item)))
        elif isinstance(item, slice):
            conv.append(("slice", _slice_bounds(item, op)))
        elif isinstance(item, Tensor | np.ndarray | list | tuple):
            arr = _as_index_array(item, op)
            if isinstance(arr, Tensor) and arr.dtype == _dt.bool_:
                arr = arr.numpy()  # the result's shape depends on the mask's values
            if isinstance(arr, np.ndarray) and arr.dtype == np.bool_:
                conv.append(("bool", bool(arr)) if arr.ndim == 0 else ("mask", arr))
            else:
                conv.append(("array", arr))
        else:
            raise TypeError(
                f"{op}: index {item!r:.60} of type {type(item).__name__} is not supported; use {_INDEX_KINDS}"
            )
    if sum(1 for kind, _ in conv if kind == "ellipsis") > 1:
        raise IndexError(f"{op}: an index can only have a single ellipsis ('...')")
    used = sum(1 if kind in ("int", "slice", "array") else (v.ndim if kind == "mask" else 0) for kind, v in conv)
    if used > len(shape):
        raise IndexError(f"{op}: too many indices for a tensor of rank {len(shape)}: {used} dimensions were indexed")

    p = _Parsed()
    advanced = any(kind in ("array", "mask") for kind, _ in conv)
    dim = 0
    for kind, value in conv:
        if kind == "ellipsis":
            for _ in range(len(shape) - used):
                p.slices.append((0, shape[dim], 1))
                p.entries.append(("dim", dim))
                dim += 1
        elif kind == "new":
            p.entries.append(("new",))
        elif kind == "bool":
            if advanced:
                raise IndexError(f"{op}: a scalar bool index cannot be combined with integer or bool array indices")
            if not value:
                p.empty_new.append(len(p.entries))
            p.entries.append(("new",))
        elif kind == "slice":
            n = shape[dim]
            p.slices.append(_canonical(*slice(*value).indices(n)))
            p.entries.append(("dim", dim))
            dim += 1
        elif kind == "int":
            n = shape[dim]
            if not -n <= value < n:
                raise IndexError(f"{op}: index {value} is out of bounds for dim {dim} with size {n}")
            i = value % n
            if advanced:
                p.slices.append((0, n, 1))
                p.advanced.append((dim, np.array(i, np.int64)))
                p.entries.append(("adv", dim))
            else:
                p.slices.append((i, i + 1, 1))
            dim += 1
        elif kind == "array":
            p.slices.append((0, shape[dim], 1))
            p.advanced.append((dim, _check_bounds(value, shape[dim], dim, op)))
            p.entries.append(("adv", dim))
            dim += 1
        else:  # mask
            k = value.ndim
            if tuple(value.shape) != tuple(shape[dim : dim + k]):
                raise IndexError(
                    f"{op}: boolean mask of shape {tuple(value.shape)} does not match the indexed shape "
                    f"{tuple(shape[dim : dim + k])} at dim {dim} (tensor shape {tuple(shape)})"
                )
            for offset, coords in enumerate(np.nonzero(value)):
                p.slices.append((0, shape[dim + offset], 1))
                p.advanced.append((dim + offset, coords.astype(np.int64)))
                p.entries.append(("adv", dim + offset))
            dim += k
    for d in range(dim, len(shape)):  # trailing dimensions are taken whole
        p.slices.append((0, shape[d], 1))
        p.entries.append(("dim", d))
    return p


def _slice_bounds(item: slice, op: str) -> tuple:
    bounds = []
    for name in ("start", "stop", "step"):
        v = getattr(item, name)
        if v is not None:
            if isinstance(v, bool) or isinstance(v, float):
                raise TypeError(f"{op}: slice {name} must be an int or None, got {v!r}")
            try:
                v = operator.index(v)
            except TypeError:
                raise TypeError(f"{op}: slice {name} must be an int or None, got {v!r:.40}") from None
        bounds.append(v)
    if bounds[2] == 0:
        raise ValueError(f"{op}: slice step cannot be zero")
    return tuple(bounds)


def _check_bounds(index: Any, n: int, dim: int, op: str) -> Any:
    """NumPy data: check it lies in [-n, n) and wrap negatives. Tensors pass through."""
    if isinstance(index, Tensor):
        return index
    if index.size:
        bad = index[(index < -n) | (index >= n)]
        if bad.size:
            raise IndexError(f"{op}: index {int(bad.flat[0])} is out of bounds for dim {dim} with size {n}")
    return np.where(index < 0, index + n, index).astype(np.int64)


def _wrap(index: Tensor, n: int) -> Tensor:
    """Negative indices count from the end (computed indices; NumPy data is wrapped eagerly)."""
    index = cast(index, _dt.int64)
    return _cf.where(_bin.less(index, 0), _bin.add(index, n), index)


def _linear_index(arrays: list[tuple[int, Any]], shape: tuple[int, ...]) -> Tensor:
    """One int64 index into the merged (row-major) advanced dims, of the broadcast shape."""
    dims = [d for d, _ in arrays]
    sizes = [shape[d] for d in dims]
    strides = [_prod(sizes[i + 1 :]) for i in range(len(sizes))]
    bshape = broadcast_shapes(*[tuple(a.shape) for _, a in arrays], op="getitem")
    if all(isinstance(a, np.ndarray) for _, a in arrays):
        lin = sum((a * s for (_, a), s in zip(arrays, strides, strict=True)), np.zeros((), np.int64))
        return tensor(np.array(np.broadcast_to(lin, bshape), np.int64))
    lin = None
    for (d, a), s in zip(arrays, strides, strict=True):
        term = _wrap(a, shape[d]) if isinstance(a, Tensor) else tensor(a)
        term = _bin.mul(term, s) if s != 1 else term
        lin = term if lin is None else _bin.add(lin, term)
    return broadcast_to(lin, bshape)


class _Plan:
    """How an index maps onto the primitives: slice x, then (advanced) take from a view of it.

    y_shape: shape after slicing. perm: dims of y brought to the front (or None). view: the
    shape `take` reads (advanced dims merged into one at `axis`). out_shape: `take`'s output.
    result: the final shape (None dims and scalar-False dims inserted).
    """

    def __init__(self, p: _Parsed) -> None:
        self.parsed = p
        self.slices = tuple(p.slices)
        self.y_shape = tuple(_slice_len(s) for s in p.slices)
        y = self.y_shape
        self.advanced = bool(p.advanced)
        self.index: Tensor | None = None
        self.perm: tuple[int, ...] | None = None
        if not self.advanced:
            kept = {d for kind, *rest in p.entries if kind == "dim" for d in rest}
            self.out_shape = tuple(n for d, n in enumerate(y) if d in kept)
            self.result = self._layout(())
            return
        dims = [d for d, _ in p.advanced]
        positions = [i for i, e in enumerate(p.entries) if e[0] == "adv"]
        self.contiguous = positions == list(range(positions[0], positions[0] + len(positions)))
        self.index = _linear_index(p.advanced, y)
        bshape = tuple(self.index.shape)
        rest = [d for d in range(len(y)) if d not in dims]
        if self.contiguous:
            self.axis = dims[0]
            before, after = y[: dims[0]], y[dims[-1] + 1 :]
        else:
            self.perm = tuple(dims + rest)
            self.axis = 0
            before, after = (), tuple(y[d] for d in rest)
        self.view = before + (_prod([y[d] for d in dims]),) + after
        self.out_shape = before + bshape + after
        self.result = self._layout(bshape)

    def _layout(self, bshape: tuple[int, ...]) -> tuple[int, ...]:
        out: list[int] = [] if not self.advanced or self.contiguous else list(bshape)
        for i, entry in enumerate(self.parsed.entries):
            if entry[0] == "dim":
                out.append(self.y_shape[entry[1]])
            elif entry[0] == "new":
                out.append(0 if i in self.parsed.empty_new else 1)
            elif self.contiguous and entry == ("adv", self.parsed.advanced[0][0]):
                out.extend(bshape)
        return tuple(out)

    def read(self, x: Tensor) -> Tensor:
        y = _slice(x, self.slices)
        if self.advanced:
            y = permute(y, self.perm) if self.perm is not None else y
            y = _take(reshape(y, self.view), self.index, self.axis)
        if self.parsed.empty_new:  # scalar-False indices: a new axis of length 0
            # (basic indexing only, so result dims and entries correspond one to one)
            ones = tuple(1 if i in self.parsed.empty_new else n for i, n in enumerate(self.result))
            return _slice(reshape(y, ones), tuple((0, n, 1) for n in self.result))
        return reshape(y, self.result)

    def write(self, x: Tensor, value: Tensor, mode: str) -> Tensor:
        """x with the indexed positions combined with `value` (already of shape `result`)."""
        if self.parsed.empty_new:
            return x
        y = _slice(x, self.slices)
        if not self.advanced:
            new = reshape(value, self.y_shape)
            if mode != "set":
                new = _COMBINE[mode](y, new)
            return _slice_scatter(x, new, self.slices)
        yp = permute(y, self.perm) if self.perm is not None else y
        new = _take_scatter(reshape(yp, self.view), reshape(value, self.out_shape), self.index, self.axis, mode)
        new = reshape(new, yp.shape)
        if self.perm is not None:
            new = permute(new, tuple(int(i) for i in np.argsort(self.perm)))
        return _slice_scatter(x, new, self.slices)


_COMBINE = {"add": _bin.add, "mul": _bin.mul, "min": _bin.minimum, "max": _bin.maximum}


def _check_tensor(x: Any, op: str, arg: str = "x") -> None:
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}: {arg} must be a Tensor, got {type(x).__name__}")


def _as_value(value: Any, dtype: Any, op: str) -> Tensor:
    if isinstance(value, Tensor):
        return cast(value, dtype)
    if isinstance(value, bool | int | float | np.generic):
        return full((), value.item() if isinstance(value, np.generic) else value, dtype)
    if isinstance(value, np.ndarray | list | tuple):
        try:
            return cast(tensor(np.asarray(value)), dtype)
        except (TypeError, ValueError):
            pass
    raise TypeError(f"{op}: value must be a Tensor, a Python scalar or array data, got {type(value).__name__}")


def _fit_value(value: Tensor, shape: tuple[int, ...], op: str) -> Tensor:
    """NumPy assignment broadcasting: extra leading size-1 dims are dropped, then broadcast."""
    vs = tuple(value.shape)
    while len(vs) > len(shape) and vs[0] == 1:
        vs = vs[1:]
    try:
        ok = len(vs) <= len(shape) and broadcast_shapes(vs, shape, op=op) == tuple(shape)
    except ValueError:
        ok = False
    if not ok:
        raise ValueError(f"{op}: value of shape {tuple(value.shape)} cannot be broadcast to the indexed shape {shape}")
    return broadcast_to(reshape(value, vs), shape)


def _update(x: Tensor, index: Any, value: Any, mode: str, op: str) -> Tensor:
    _check_tensor(x, op)
    plan = _Plan(_parse(x.shape, index, op))
    v = _fit_value(_as_value(value, x.dtype, op), plan.result, op)
    return plan.write(x, v, mode)


# -- public: indexing ----------------------------------------------------------------------------
@public()
def getitem(x: Tensor, index: Any) -> Tensor:
    """`x[index]` with NumPy semantics (what `Tensor.__getitem__` calls).

    Basic indices (ints, slices with any step, None, Ellipsis) are one static slice; integer
    arrays/lists/tensors are advanced indices (they broadcast together; when separated by a
    slice or None their dimensions go first, as NumPy). A bool mask selects the True positions:
    its values decide the result's shape, so the mask is realized.

    Example:
        >>> x = nabla.arange(12).reshape(3, 4)
        >>> x[1:, ::-2].shape, x[[0, 2], [1, 1]].shape, x[x > 5].shape
        ((2, 2), (2,), (6,))
    """
    _check_tensor(x, "getitem")
    return _Plan(_parse(x.shape, index, "getitem")).read(x)


@public()
def setitem(x: Tensor, index: Any, value: Any) -> Tensor:
    """`x[index] = value` as a functional update: returns the updated tensor (x is unchanged;
    `Tensor.__setitem__` rebinds the tensor to the result). `value` is cast to x's dtype and
    broadcast to the indexed shape. Gradients reach x (zero where overwritten) and value."""
    return _update(x, index, value, "set", "setitem")


class _IndexUpdateRef:
    """`x.at[index]`: functional updates of the indexed positions (JAX's `.at`)."""

    __slots__ = ("_x", "_index")

    def __init__(self, x: Tensor, index: Any) -> None:
        self._x, self._index = x, index

    def get(self) -> Tensor:
        """`x[index]`."""
        return getitem(self._x, self._index)

    def set(self, value: Any) -> Tensor:
        """x with `x[index] = value`."""
        return _update(self._x, self._index, value, "set", "at.set")

    def add(self, value: Any) -> Tensor:
        """x with `value` added at `index`; repeated indices accumulate."""
        return _update(self._x, self._index, value, "add", "at.add")

    def subtract(self, value: Any) -> Tensor:
        """x with `value` subtracted at `index`; repeated indices accumulate."""
        return _update(
            self._x, self._index, _un.neg(_as_value(value, self._x.dtype, "at.subtract")), "add", "at.subtract"
        )

    def multiply(self, value: Any) -> Tensor:
        """x multiplied by `value` at `index`; repeated indices multiply."""
        return _update(self._x, self._index, value, "mul", "at.multiply")

    def min(self, value: Any) -> Tensor:  # noqa: A003
        """x with `minimum(x[index], value)` at `index`."""
        return _update(self._x, self._index, value, "min", "at.min")

    def max(self, value: Any) -> Tensor:  # noqa: A003
        """x with `maximum(x[index], value)` at `index`."""
        return _update(self._x, self._index, value, "max", "at.max")


class _IndexUpdateHelper:
    __slots__ = ("_x",)

    def __init__(self, x: Tensor) -> None:
        self._x = x

    def __getitem__(self, index: Any) -> _IndexUpdateRef:
        return _IndexUpdateRef(self._x, index)

    def __repr__(self) -> str:
        return f"_IndexUpdateHelper(shape={self._x.shape})"


@public()
def at(x: Tensor) -> _IndexUpdateHelper:
    """JAX-style functional updates: `at(x)[idx].set(v)` (also `.add`, `.subtract`,
    `.multiply`, `.min`, `.max`, `.get`), as `x.at[idx].set(v)` on a Tensor.

    Example:
        >>> x = nabla.zeros(3)
        >>> x.at[[0, 0, 2]].add(1.0).tolist()
        [2.0, 0.0, 1.0]
    """
    _check_tensor(x, "at")
    return _IndexUpdateHelper(x)


# -- public: gather / scatter along an axis ----------------------------------------------------
def _index_tensor(index: Any, op: str, arg: str = "index") -> Tensor:
    if isinstance(index, Tensor):
        if not _dt.is_integer(index.dtype):
            raise TypeError(f"{op}: {arg} must be an integer tensor, got dtype {index.dtype.name}")
        return cast(index, _dt.int64)
    arr = np.asarray(index)
    if arr.dtype.kind not in "iu" and not (arr.size == 0 and arr.dtype.kind == "f"):
        raise TypeError(f"{op}: {arg} must hold integers, got dtype {arr.dtype}")
    return tensor(arr.astype(np.int64))


def _known(index: Tensor) -> np.ndarray | None:
    impl = index._impl
    return index.numpy() if impl.is_realized and not impl.batch_dims else None


def _check_range(index: Tensor, n: int, op: str, dim: int, *, negative: bool) -> None:
    """Eager bounds check when the index data is known: [0, n) (PyTorch) or [-n, n) (NumPy)."""
    data = _known(index)
    if data is None or not data.size:
        return
    low = -n if negative else 0
    bad = data[(data < low) | (data >= n)]
    if bad.size:
        raise IndexError(f"{op}: index {int(bad.flat[0])} is out of bounds for dim {dim} with size {n}")


@public()
def index_select(x: Tensor, axis: int, index: Any) -> Tensor:
    """Select entries of `x` along `axis` at the 1-D integer `index` (torch.index_select).

    Example:
        >>> nabla.index_select(nabla.arange(6).reshape(2, 3), 1, nabla.tensor([2, 0])).tolist()
        [[2, 0], [5, 3]]
    """
    _check_tensor(x, "index_select")
    idx = _index_tensor(index, "index_select")
    if idx.ndim > 1:
        raise IndexError(f"index_select: index must be 0-d or 1-d, got shape {idx.shape}")
    if x.ndim == 0:
        normalize_axis(axis, 1, "index_select", "dim")
        _check_range(idx, 1, "index_select", 0, negative=False)
        return reshape(_take(reshape(x, (1,)), reshape(idx, (-1,)), 0), () if idx.numel() == 1 else (-1,))
    a = normalize_axis(axis, x.ndim, "index_select", "dim")
    _check_range(idx, x.shape[a], "index_select", a, negative=False)
    return _take(x, reshape(idx, (-1,)), a)


def _offsets(shape: tuple[int, ...], index_shape: tuple[int, ...], axis: int) -> np.ndarray:
    """Row-major linear offsets of every position of `index_shape` in `shape`, except `axis`."""
    strides = [_prod(shape[d + 1 :]) for d in range(len(shape))]
    out = np.zeros(index_shape, np.int64)
    for d, n in enumerate(index_shape):
        if d != axis:
            out = out + (np.arange(n, dtype=np.int64) * strides[d]).reshape(
                [n if i == d else 1 for i in range(len(index_shape))]
            )
    return out


def _elementwise_index(x_shape: tuple[int, ...], index: Tensor, axis: int) -> Tensor:
    """Linear indices into flattened x for `x[..., index[i, j, ...], ...]` along `axis`."""
    stride = _prod(x_shape[axis + 1 :])
    lin = _bin.mul(index, stride) if stride != 1 else index
    if index.ndim > 1:
        lin = _bin.add(lin, tensor(_offsets(x_shape, index.shape, axis)))
    return lin


def _check_elementwise_shapes(x: Tensor, index: Tensor, axis: int, op: str, src: Tensor | None = None) -> None:
    if index.ndim != x.ndim:
        raise ValueError(f"{op}: index must have the same number of dimensions as x: got {index.shape} and {x.shape}")
    for d, (i, n) in enumerate(zip(index.shape, x.shape, strict=True)):
        if d != axis and i > n:
            raise ValueError(
                f"{op}: index shape {index.shape} exceeds x shape {x.shape} at dim {d} (only dim={axis} may be larger)"
            )
        if src is not None and i > src.shape[d]:
            raise ValueError(f"{op}: index shape {index.shape} exceeds src shape {src.shape} at dim {d}")


@public()
def gather(x: Tensor, axis: int, index: Any) -> Tensor:
    """`out[i][j][k] = x[index[i][j][k]][j][k]` for axis 0 (torch.gather): the result has
    index's shape; index.shape[d] <= x.shape[d] for d != axis. Indices must lie in [0, n).

    Example:
        >>> x = nabla.tensor([[1.0, 2.0], [3.0, 4.0]])
        >>> nabla.gather(x, 1, nabla.tensor([[0, 0], [1, 0]])).tolist()
        [[1.0, 1.0], [4.0, 3.0]]
    """
    _check_tensor(x, "gather")
    idx = _index_tensor(index, "gather")
    a = normalize_axis(axis, max(x.ndim, 1), "gather", "dim")
    if x.ndim == 0:
        if idx.ndim != 0:
            raise ValueError(f"gather: index must be 0-d for a 0-d x, got shape {idx.shape}")
        _check_range(idx, 1, "gather", 0, negative=False)
        return reshape(_take(reshape(x, (1,)), idx, 0), ())
    _check_elementwise_shapes(x, idx, a, "gather")
    _check_range(idx, x.shape[a], "gather", a, negative=False)
    return _take(reshape(x, (-1,)), _elementwise_index(x.shape, idx, a), 0)


@public()
def take_along_axis(x: Tensor, indices: Any, axis: int | None = -1) -> Tensor:
    """NumPy's `take_along_axis`: pick values along `axis` at `indices` (same rank as x;
    other dims broadcast together). Negative indices count from the end. `axis=None` works
    on the flattened x with 1-D indices.

    Example:
        >>> x = nabla.tensor([[10.0, 30.0, 20.0]])
        >>> nabla.take_along_axis(x, nabla.argmax(x, 1, keepdims=True), 1).tolist()
        [[30.0]]
    """
    _check_tensor(x, "take_along_axis")
    idx = _index_tensor(indices, "take_along_axis", "indices")
    if axis is None:
        if idx.ndim != 1:
            raise ValueError(f"take_along_axis: with axis=None, indices must be 1-d, got shape {idx.shape}")
        x, a = reshape(x, (-1,)), 0
    else:
        a = normalize_axis(axis, x.ndim, "take_along_axis", "axis")
        if idx.ndim != x.ndim:
            raise ValueError(f"take_along_axis: indices has {idx.ndim} dims but x has {x.ndim}; they must match")
    n = x.shape[a]
    _check_range(idx, n, "take_along_axis", a, negative=True)
    data = _known(idx)
    idx = tensor(np.where(data < 0, data + n, data)) if data is not None else _wrap(idx, n)
    try:
        common = broadcast_shapes(
            tuple(1 if d == a else s for d, s in enumerate(x.shape)),
            tuple(1 if d == a else s for d, s in enumerate(idx.shape)),
            op="take_along_axis",
        )
    except ValueError:
        raise ValueError(
            f"take_along_axis: x of shape {x.shape} and indices of shape {idx.shape} do not broadcast outside axis {a}"
        ) from None
    x = broadcast_to(x, tuple(n if d == a else s for d, s in enumerate(common)))
    idx = broadcast_to(idx, tuple(idx.shape[a] if d == a else s for d, s in enumerate(common)))
    return _take(reshape(x, (-1,)), _elementwise_index(x.shape, idx, a), 0)


def _scatter(x: Tensor, axis: int, index: Any, src: Any, mode: str, op: str) -> Tensor:
    _check_tensor(x, op)
    idx = _index_tensor(index, op)
    if isinstance(src, Tensor):
        src = cast(src, x.dtype)
    elif isinstance(src, bool | int | float | np.generic):
        src = full(idx.shape, src.item() if isinstance(src, np.generic) else src, x.dtype)
    else:
        raise TypeError(f"{op}: src must be a Tensor or a Python scalar, got {type(src).__name__}")
    if x.ndim == 0:
        normalize_axis(axis, 1, op, "dim")
        if idx.ndim != 0 or src.ndim != 0:
            raise ValueError(f"{op}: index and src must be 0-d for a 0-d x, got {idx.shape} and {src.shape}")
        _check_range(idx, 1, op, 0, negative=False)
        return reshape(_take_scatter(reshape(x, (1,)), src, idx, 0, mode), ())
    a = normalize_axis(axis, x.ndim, op, "dim")
    if src.ndim != idx.ndim:
        raise ValueError(f"{op}: src must have the same number of dimensions as index: got {src.shape} and {idx.shape}")
    _check_elementwise_shapes(x, idx, a, op, src)
    _check_range(idx, x.shape[a], op, a, negative=False)
    src = _slice(src, tuple((0, n, 1) for n in idx.shape))
    flat = _take_scatter(
        reshape(x, (-1,)), reshape(src, (-1,)), reshape(_elementwise_index(x.shape, idx, a), (-1,)), 0, mode
    )
    return reshape(flat, x.shape)


@public()
def scatter(x: Tensor, axis: int, index: Any, src: Any, reduce: str | None = None) -> Tensor:
    """torch.scatter, functionally: x with `x[index[i][j]][j] = src[i][j]` (axis 0). `src` is a
    Tensor (only its leading index.shape part is used) or a Python scalar. `reduce="add"` or
    `"multiply"` combine instead of overwriting. Repeated indices without `reduce`: one of the
    values wins (unspecified which, as in PyTorch).

    Example:
        >>> nabla.scatter(nabla.zeros(4), 0, nabla.tensor([3, 1]), nabla.tensor([5.0, 6.0])).tolist()
        [0.0, 6.0, 0.0, 5.0]
    """
    modes = {None: "set", "add": "add", "multiply": "mul"}
    if reduce not in modes:
        raise ValueError(f"scatter: reduce must be None, 'add' or 'multiply', got {reduce!r}")
    return _scatter(x, axis, index, src, modes[reduce], "scatter")


@public()
def scatter_add(x: Tensor, axis: int, index: Any, src: Any) -> Tensor:
    """torch.scatter_add, functionally: x with `src[i][j]` added at `[index[i][j]][j]` (axis 0);
    repeated indices accumulate.

    Example:
        >>> nabla.scatter_add(nabla.zeros(3), 0, nabla.tensor([0, 2, 0]), nabla.ones(3)).tolist()
        [2.0, 0.0, 1.0]
    """
    return _scatter(x, axis, index, src, "add", "scatter_add")


# -- public: masks and one-hot -------------------------------------------------------------------
@public()
def masked_fill(x: Tensor, mask: Tensor, value: Any) -> Tensor:
    """`value` where the bool `mask` (broadcast with x) is True, x elsewhere; keeps x's dtype.
    `value` is a Python scalar or a 0-d tensor (which receives the gradient of the filled
    positions)."""
    _check_tensor(x, "masked_fill")
    _check_tensor(mask, "masked_fill", "mask")
    if mask.dtype != _dt.bool_:
        raise TypeError(f"masked_fill: mask must be a bool tensor, got dtype {mask.dtype.name}")
    if isinstance(value, Tensor):
        if value.ndim != 0:
            raise ValueError(f"masked_fill: value must be a Python scalar or a 0-d tensor, got shape {value.shape}")
        v = cast(value, x.dtype)
    elif isinstance(value, bool | int | float | np.generic):
        v = full((), value.item() if isinstance(value, np.generic) else value, x.dtype)
    else:
        raise TypeError(f"masked_fill: value must be a Python scalar or a 0-d tensor, got {type(value).__name__}")
    shape = broadcast_shapes(x.shape, mask.shape, op="masked_fill")
    return _cf.where(broadcast_to(mask, shape), broadcast_to(v, shape), broadcast_to(x, shape))


@public()
def one_hot(indices: Tensor, num_classes: int = -1) -> Tensor:
    """int64 one-hot encoding with a new last dimension of size `num_classes` (torch's
    F.one_hot). `num_classes=-1` uses `max(indices) + 1`, which reads the data and so
    realizes `indices`. Values must lie in [0, num_classes).

    Example:
        >>> nabla.one_hot(nabla.tensor([0, 2]), 3).tolist()
        [[1, 0, 0], [0, 0, 1]]
    """
    _check_tensor(indices, "one_hot", "indices")
    if not _dt.is_integer(indices.dtype):
        raise TypeError(f"one_hot: indices must be an integer tensor, got dtype {indices.dtype.name}")
    if isinstance(num_classes, bool) or not isinstance(num_classes, int | np.integer):
        raise TypeError(f"one_hot: num_classes must be an int, got {num_classes!r}")
    num_classes = int(num_classes)
    data = _known(indices)
    if num_classes == -1:
        if indices.numel() == 0:
            raise ValueError("one_hot: cannot infer num_classes from an empty tensor; pass num_classes")
        data = indices.numpy()
        num_classes = int(data.max()) + 1
    elif num_classes < 0:
        raise ValueError(f"one_hot: num_classes must be -1 or non-negative, got {num_classes}")
    if data is not None and data.size:
        if data.min() < 0:
            raise ValueError(f"one_hot: class values must be non-negative, got {int(data.min())}")
        if data.max() >= num_classes:
            raise ValueError(f"one_hot: class value {int(data.max())} is out of range for num_classes={num_classes}")
    classes = tensor(np.arange(num_classes, dtype=np.int64))
    hot = _bin.equal(reshape(cast(indices, _dt.int64), (*indices.shape, 1)), classes)
    return cast(hot, _dt.int64)
