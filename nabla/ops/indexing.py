"""Indexing: `x[idx]` and functional updates (`setitem`, `x.at[idx].add(v)`); the axis-wise
gather/scatter functions built on the same primitives are in `gather_scatter.py`, and the
primitives themselves (slice, slice_scatter, take, take_scatter, take_transpose) in
`indexing_primitives.py`.

Several advanced indices are linearised into one index over their merged dimensions, so a
NumPy-style `x[i, j]` is a single `take` (and its gradient a single `take_transpose`).

Data-dependent shapes: a boolean mask (`x[mask]`) and `one_hot(..., num_classes=-1)` read
the mask's / indices' values to know the result's shape, so they realize those tensors (the
computation pending behind them is evaluated first). Integer index arrays given as Python or
NumPy data (or realized tensors) are bounds-checked at the call; indices computed lazily are
not (out-of-range values then give undefined results on MAX).

A boolean mask batched by vmap is refused: the result's shape would depend on the element.
"""

from __future__ import annotations

import operator
import warnings
from typing import Any

import numpy as np

from ..core.common import dtypes as _dt
from ..core.tensor.tensor import Tensor
from . import binary as _bin
from . import control_flow as _cf
from . import unary as _un
from .base import public
from .cast import cast
from .creation import full, tensor
from .indexing_primitives import _canonical, _prod, _slice, _slice_len, _slice_scatter, _take, _take_scatter
from .view import broadcast_shapes, broadcast_to, permute, reshape

__all__ = [
    "at",
    "getitem",
    "select_scatter",
    "setitem",
    "slice_scatter",
]

# -- index parsing -----------------------------------------------------------------------------
_INDEX_KINDS = "ints, slices, None, Ellipsis, integer or bool arrays/lists/tensors"


def _as_index_array(item: Any, op: str) -> Any:
    """A Tensor (kept) or a NumPy int64/bool array for array-like index entries."""
    if isinstance(item, Tensor):
        if item.dtype == _dt.uint8:  # PyTorch's legacy byte mask
            warnings.warn(
                "indexing with dtype uint8 is deprecated, please use a dtype bool instead", UserWarning, stacklevel=4
            )
            item = cast(item, _dt.bool_)
        if item.dtype in (_dt.int8, _dt.int16):
            raise IndexError(
                f"{op}: tensors used as indices must be int64, int32, uint8 or bool, got {item.dtype.name}"
            )
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

    slices: one canonical (start, stop, step) per dimension of x (full for advanced dims; an
    int index is the length-1 slice at it).
    advanced: (dim, int64 NumPy array or int Tensor) per advanced dimension, in dim order.
    entries: the result layout: ("dim", d) for a sliced dim, ("new",) for None, ("adv", d).
    An int, and a 0-d index tensor (advanced, as its value is not known), have no entry.
    empty_new: positions in `entries` of scalar-False indices (a new axis of length 0).
    shape: the shape indexed: x's, with a 1 inserted for each scalar bool beside advanced
    indices (PyTorch makes such a bool a new axis indexed by [0], or by [] for False).
    """

    def __init__(self, shape: tuple[int, ...]) -> None:
        self.shape = shape
        self.slices: list[tuple[int, int, int]] = []
        self.advanced: list[tuple[int, Any]] = []
        self.entries: list[tuple] = []
        self.empty_new: list[int] = []


def _parse(shape: tuple[int, ...], index: Any, op: str) -> _Parsed:
    index_shape = shape
    items = index if isinstance(index, tuple) else (index,)
    conv: list[tuple[str, Any]] = []
    for item in items:
        if item is None:
            conv.append(("new", None))
        elif item is Ellipsis:  # as PyTorch: a second `...` stands for no dimensions
            if all(kind != "ellipsis" for kind, _ in conv):
                conv.append(("ellipsis", None))
        elif isinstance(item, bool | np.bool_):
            conv.append(("bool", bool(item)))
        elif isinstance(item, int | np.integer):
            conv.append(("int", int(item)))
        elif isinstance(item, slice):
            conv.append(("slice", _slice_bounds(item, op)))
        elif isinstance(item, Tensor | np.ndarray | list | tuple | range):  # (torch takes a range as a list)
            arr = _as_index_array(item, op)
            if isinstance(arr, Tensor) and arr.dtype == _dt.bool_:
                if arr._impl.batch_dims:  # as JAX: no per-element result shapes under vmap
                    raise IndexError(
                        f"{op}: a boolean mask batched by vmap cannot be an index: the number of selected "
                        "elements (the result's shape) may differ per batch element. Use an unbatched mask, "
                        "or nabla.where(mask, x, fill) / masked_fill to keep the shape"
                    )
                arr = arr.numpy()  # the result's shape depends on the mask's values
            if isinstance(arr, np.ndarray) and arr.dtype == np.bool_:
                conv.append(("bool", bool(arr)) if arr.ndim == 0 else ("mask", arr))
            elif isinstance(arr, np.ndarray) and arr.ndim == 0:
                conv.append(("int", int(arr)))  # as PyTorch: a 0-d integer index is an int
            else:
                conv.append(("array", arr))
        else:
            raise TypeError(
                f"{op}: index {item!r:.60} of type {type(item).__name__} is not supported; use {_INDEX_KINDS}"
            )
    used = sum(1 if kind in ("int", "slice", "array") else (v.ndim if kind == "mask" else 0) for kind, v in conv)
    if used > len(shape):
        raise IndexError(f"{op}: too many indices for a tensor of rank {len(shape)}: {used} dimensions were indexed")

    advanced = any(kind in ("array", "mask") for kind, _ in conv)
    if advanced and any(kind == "bool" for kind, _ in conv):
        shape, conv = _bools_as_axes(shape, conv, used)
        used += len(shape) - len(index_shape)
    p = _Parsed(shape)
    dim = 0
    for kind, value in conv:
        if kind == "ellipsis":
            for _ in range(len(shape) - used):
                p.slices.append((0, shape[dim], 1))
                p.entries.append(("dim", dim))
                dim += 1
        elif kind == "new":
            p.entries.append(("new",))
        elif kind == "bool":  # (beside advanced indices it became an axis: `_bools_as_axes`)
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
            # As PyTorch (not NumPy): an int is a select applied before the advanced indices, never
            # one of them, so it neither places nor separates their dims in the result.
            p.slices.append((value % n, value % n + 1, 1))
            dim += 1
        elif kind == "array":
            p.slices.append((0, shape[dim], 1))
            p.advanced.append((dim, _check_bounds(value, shape[dim], dim, op)))
            if value.ndim:  # a lazy 0-d tensor gathers like an advanced index but places like an int
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


def _bools_as_axes(shape: tuple[int, ...], conv: list, used: int) -> tuple[tuple[int, ...], list]:
    """PyTorch's scalar bool beside advanced indices: a new axis of length 1 (inserted into the
    shape indexed) that an advanced index [0] (True) or [] (False) reads, so it broadcasts
    with the other advanced indices (`x[True, i]` is `x[i]`; with False, nothing matches)."""
    dims, out, dim = list(shape), [], 0
    for kind, value in conv:
        if kind == "bool":
            dims.insert(dim, 1)
            out.append(("array", np.zeros(1 if value else 0, np.int64)))
        else:
            out.append((kind, value))
        if kind == "ellipsis":
            dim += len(shape) - used
        elif kind in ("int", "slice", "array", "bool"):
            dim += 1
        elif kind == "mask":
            dim += value.ndim
    return tuple(dims), out


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

    y_shape: shape after slicing. perm: the order of y's dims that puts the advanced dims together
    at `axis` (None when no data moves). view: the shape `take` reads (advanced dims merged into
    one at `axis`). out_shape: `take`'s output. result: the final shape (the dims of ints dropped,
    None dims and scalar-False dims inserted).
    in_place: the advanced dims replace the advanced indices in the result, else they go first.
    """

    def __init__(self, p: _Parsed) -> None:
        self.parsed = p
        self.slices = tuple(p.slices)
        self.y_shape = tuple(_slice_len(s) for s in p.slices)
        y = self.y_shape
        self.advanced = bool(p.advanced)
        self.index: Tensor | None = None
        self.perm: tuple[int, ...] | None = None
        positions = [i for i, e in enumerate(p.entries) if e[0] == "adv"]
        # PyTorch's rule: adjacent in the index (ints, having no entry, do not separate them)
        self.in_place = positions == list(range(positions[0], positions[0] + len(positions))) if positions else True
        self.first = positions[0] if positions else -1
        if not self.advanced:
            kept = {d for kind, *rest in p.entries if kind == "dim" for d in rest}
            self.out_shape = tuple(n for d, n in enumerate(y) if d in kept)
            self.result = self._layout(())
            return
        dims = [d for d, _ in p.advanced]
        self.index = _linear_index(p.advanced, y)
        rest = [d for d in range(len(y)) if d not in dims]
        # the dims of y left of the advanced ones are those before the first placed advanced index
        anchor = p.entries[self.first][1] if positions else dims[0]
        self.axis = sum(1 for d in rest if d < anchor) if self.in_place else 0
        before, after = rest[: self.axis], rest[self.axis :]
        self.perm = _moving_perm(before + dims + after, y)
        self.view = tuple(y[d] for d in before) + (_prod([y[d] for d in dims]),) + tuple(y[d] for d in after)
        bshape = tuple(self.index.shape)
        self.out_shape = tuple(y[d] for d in before) + bshape + tuple(y[d] for d in after)
        self.result = self._layout(bshape)

    def _layout(self, bshape: tuple[int, ...]) -> tuple[int, ...]:
        out: list[int] = [] if self.in_place else list(bshape)
        for i, entry in enumerate(self.parsed.entries):
            if entry[0] == "dim":
                out.append(self.y_shape[entry[1]])
            elif entry[0] == "new":
                out.append(0 if i in self.parsed.empty_new else 1)
            elif self.in_place and i == self.first:
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
        new = reshape(new, yp.shape)  # y's own shape when perm is None (only size-1 dims moved)
        if self.perm is not None:
            new = permute(new, tuple(int(i) for i in np.argsort(self.perm)))
        return _slice_scatter(x, new, self.slices)


def _moving_perm(perm: list[int], shape: tuple[int, ...]) -> tuple[int, ...] | None:
    """perm, or None when it moves only size-1 dims (a reshape then reorders them): an int's
    length-1 dim between advanced dims costs no transpose."""
    moved = [d for d in perm if shape[d] != 1]
    return None if moved == sorted(moved) else tuple(perm)


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
    shape = plan.parsed.shape
    if shape == x.shape:
        return plan.write(x, v, mode)
    return reshape(plan.write(reshape(x, shape), v, mode), x.shape)


# -- public: indexing ----------------------------------------------------------------------------
@public()
def getitem(x: Tensor, index: Any) -> Tensor:
    """`x[index]` with PyTorch semantics (what `Tensor.__getitem__` calls).

    Basic indices (ints, slices with any step, None, Ellipsis) are one static slice; integer
    arrays/lists/tensors are advanced indices (they broadcast together; when separated by a
    slice, None or dims of an Ellipsis their dimensions go first). As in PyTorch, not NumPy, an
    int (or a 0-d integer array/tensor) is a select applied first, never an advanced index:
    `x[0, :, i]` is `x[0][:, i]`. A bool mask selects the True positions: its values decide the
    result's shape, so the mask is realized (it cannot be batched by vmap).

    Example:
        >>> x = nabla.arange(12).reshape(3, 4)
        >>> x[1:, ::-2].shape, x[[0, 2], [1, 1]].shape, x[x > 5].shape
        ((2, 2), (2,), (6,))
    """
    _check_tensor(x, "getitem")
    plan = _Plan(_parse(x.shape, index, "getitem"))
    shape = plan.parsed.shape
    return plan.read(x if shape == x.shape else reshape(x, shape))


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


# -- torch's functional scatters of a view --------------------------------------------------------
def _view_scatter(x: Tensor, src: Any, index: tuple, op: str) -> Tensor:
    """x with `x[index] = src`, where src must have the shape of `x[index]` exactly (as torch)."""
    _check_tensor(x, op)
    _check_tensor(src, op, "src")
    want = getitem(x, index).shape
    if tuple(src.shape) != tuple(want):
        raise ValueError(f"{op}: src must have the shape {want} of the slice it replaces, got {src.shape}")
    return setitem(x, index, src)


@public()
def select_scatter(x: Tensor, src: Tensor, axis: int, index: int) -> Tensor:
    """x with its slice at `index` along `axis` (`x.select(axis, index)`) replaced by `src`
    (`torch.select_scatter`); gradients reach both."""
    _check_tensor(x, "select_scatter")
    if x.ndim == 0:
        raise ValueError("select_scatter: x must have at least 1 dimension, got a 0-d tensor")
    if isinstance(index, bool) or not isinstance(index, int | np.integer):
        raise TypeError(f"select_scatter: index must be an int, got {index!r}")
    a = _axis(axis, x.ndim, "select_scatter")
    n = x.shape[a]
    if not -n <= index < n:
        raise IndexError(f"select_scatter: index {index} is out of range for dimension {a} of size {n}")
    return _view_scatter(x, src, (slice(None),) * a + (int(index),), "select_scatter")


@public()
def slice_scatter(
    x: Tensor, src: Tensor, axis: int = 0, start: int | None = None, end: int | None = None, step: int = 1
) -> Tensor:
    """x with `x[start:end:step]` along `axis` replaced by `src` (`torch.slice_scatter`); gradients
    reach both."""
    _check_tensor(x, "slice_scatter")
    if x.ndim == 0:
        raise ValueError("slice_scatter: x must have at least 1 dimension, got a 0-d tensor")
    if isinstance(step, bool) or not isinstance(step, int | np.integer) or step <= 0:
        raise ValueError(f"slice_scatter: step must be a positive int, got {step!r}")
    a = _axis(axis, x.ndim, "slice_scatter")
    return _view_scatter(x, src, (slice(None),) * a + (slice(start, end, step),), "slice_scatter")


def _axis(axis: Any, rank: int, op: str) -> int:
    if isinstance(axis, bool) or not isinstance(axis, int | np.integer):
        raise TypeError(f"{op}: dim must be an int, got {axis!r}")
    if not -rank <= axis < rank:
        raise IndexError(f"{op}: dim {axis} is out of range for a tensor of rank {rank}")
    return int(axis) % rank
