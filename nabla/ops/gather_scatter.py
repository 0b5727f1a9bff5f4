"""Gather and scatter along one axis (PyTorch names), masks and one-hot.

    index_select, gather,                    reads: the `take` primitive (indexing_primitives.py)
    take_along_axis, take_along_dim
    scatter, scatter_add                     writes: the `take_scatter` primitive (duplicates
                                             accumulate in gradients)
    masked_fill, one_hot

Integer indices given as data are bounds-checked at the call; `one_hot(..., num_classes=-1)`
realizes the indices to learn the number of classes.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..core.common import dtypes as _dt
from ..core.tensor.dispatch import register
from ..core.tensor.tensor import Tensor
from . import binary as _bin
from . import control_flow as _cf
from .base import public
from .cast import cast
from .creation import full, known_values, tensor, zeros_like
from .indexing import _check_tensor, _wrap
from .indexing_primitives import _prod, _slice, _take, _take_scatter  # the primitives' entry points
from .sorting import argsort
from .view import broadcast_shapes, broadcast_to, normalize_axis, reshape

__all__ = [
    "gather",
    "index_add",
    "index_copy",
    "index_fill",
    "index_select",
    "masked_fill",
    "masked_scatter",
    "one_hot",
    "scatter",
    "scatter_add",
    "scatter_reduce",
    "take",
    "take_along_axis",
    "take_along_dim",
]


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


def _check_range(index: Tensor, n: int, op: str, dim: int, *, negative: bool) -> None:
    """Eager bounds check when the index data is known: [0, n) (PyTorch) or [-n, n) (NumPy)."""
    data = known_values(index)
    if data is None or not data.size:
        return
    low = -n if negative else 0
    bad = data[(data < low) | (data >= n)]
    if bad.size:
        raise IndexError(f"{op}: index {int(bad.flat[0])} is out of bounds for dim {dim} with size {n}")


@register("index_from_end")
def from_end(index: Tensor, n: int, op: str, dim: int) -> Tensor:
    """Integer indices in [-n, n) (checked when their values are known, as PyTorch raises)
    with the negative ones counted from the end: NumPy's rule for take, take_along_axis and
    Tensor.put."""
    _check_range(index, n, op, dim, negative=True)
    data = known_values(index)
    return tensor(np.where(data < 0, data + n, data)) if data is not None else _wrap(index, n)


@public()
def take(x: Tensor, indices: Any, axis: int | None = None) -> Tensor:
    """Entries of `x` along `axis` at integer `indices` of any shape: the result has shape
    `x.shape[:axis] + indices.shape + x.shape[axis + 1:]` (NumPy's `take`, with indices in
    [0, n) as PyTorch's indexing functions require). An embedding lookup: the result keeps the
    indices' layout on a mesh (a sequence split over devices stays split). With `axis=None`
    (the default, as torch.take and np.take) x is flattened and indices in [-n, n) count from
    the end when negative.

    Example:
        >>> nabla.take(nabla.arange(6).reshape(3, 2), nabla.tensor([[2, 0]]), 0).shape
        (1, 2, 2)
    """
    _check_tensor(x, "take")
    idx = _index_tensor(indices, "take", "indices")
    if axis is None:
        return _take(reshape(x, (-1,)), from_end(idx, x.numel(), "take", 0), 0)
    if x.ndim == 0:
        raise ValueError("take: x must have at least 1 dimension, got a 0-d tensor")
    a = normalize_axis(axis, x.ndim, "take", "axis")
    _check_range(idx, x.shape[a], "take", a, negative=False)
    return _take(x, idx, a)


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
    idx = from_end(idx, n, "take_along_axis", a)
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


@public()
def take_along_dim(x: Tensor, indices: Any, axis: int | None = None) -> Tensor:
    """PyTorch's `take_along_dim`: values of `x` at `indices` along `axis`, the other dims of
    x and indices broadcast together (both of one rank). With `axis=None` (the default) both
    are flattened: the result is 1-D, one value per index. Negative indices count from the end.

    Args:
        x: the tensor to read.
        indices: integer indices (a Tensor or array-like).
        axis: the dimension to index (`dim=` also accepted), or None for the flattened x.

    Example:
        >>> x = nabla.tensor([[10.0, 30.0, 20.0], [5.0, 4.0, 6.0]])
        >>> nabla.take_along_dim(x, nabla.argmax(x, 1, keepdims=True), 1).tolist()
        [[30.0], [6.0]]
    """
    _check_tensor(x, "take_along_dim")
    idx = _index_tensor(indices, "take_along_dim", "indices")
    if axis is None:
        return take_along_axis(reshape(x, (-1,)), reshape(idx, (-1,)), 0)
    if x.ndim == 0:
        raise IndexError(f"take_along_dim: dim={axis} given for a 0-d tensor; pass dim=None")
    if idx.ndim != x.ndim:
        raise ValueError(f"take_along_dim: indices has {idx.ndim} dims but x has {x.ndim}; they must match")
    return take_along_axis(x, idx, axis)


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
def scatter(
    x: Tensor, axis: int, index: Any, src: Any = None, reduce: str | None = None, *, value: Any = None
) -> Tensor:
    """torch.scatter, functionally: x with `x[index[i][j]][j] = src[i][j]` (axis 0). `src` is a
    Tensor (only its leading index.shape part is used) or a Python scalar (also torch's
    `value=`). `reduce="add"` or `"multiply"` combine instead of overwriting. Repeated indices
    without `reduce`: one of the values wins (unspecified which, as in PyTorch).

    Example:
        >>> nabla.scatter(nabla.zeros(4), 0, nabla.tensor([3, 1]), nabla.tensor([5.0, 6.0])).tolist()
        [0.0, 6.0, 0.0, 5.0]
    """
    if (src is None) == (value is None):
        raise TypeError("scatter: pass exactly one of src and value")
    src = value if src is None else src
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


_REDUCE_MODES = {"sum": "add", "prod": "mul", "mean": "add", "amax": "max", "amin": "min"}


def _extreme(dtype: Any, lowest: bool) -> float | int:
    """The value no element loses to in a max (lowest) or min reduction of `dtype`."""
    if _dt.is_float(dtype):
        return -np.inf if lowest else np.inf
    if dtype == _dt.bool_:
        return not lowest
    info = np.iinfo(_dt.to_numpy_dtype(dtype))
    return int(info.min if lowest else info.max)


@public()
def scatter_reduce(x: Tensor, axis: int, index: Any, src: Any, reduce: str, *, include_self: bool = True) -> Tensor:
    """torch.scatter_reduce, functionally: each `src[i][j]` combined into `x[index[i][j]][j]`
    (axis 0) by `reduce`: "sum", "prod", "mean", "amax" or "amin". With `include_self=False` the
    positions that receive values start from them alone (x's value is dropped there); positions
    that receive none keep x. "mean" of integers rounds down, as PyTorch. Gradients: ties of
    amax/amin share it evenly.

    Example:
        >>> nabla.scatter_reduce(nabla.zeros(3), 0, nabla.tensor([0, 0, 2]), nabla.tensor([1.0, 3.0, 5.0]),
        ...                      "amax", include_self=False).tolist()
        [3.0, 0.0, 5.0]
    """
    if reduce not in _REDUCE_MODES:
        raise ValueError(f"scatter_reduce: reduce must be one of {tuple(_REDUCE_MODES)}, got {reduce!r}")
    _check_tensor(x, "scatter_reduce")
    if not isinstance(src, Tensor):
        raise TypeError(f"scatter_reduce: src must be a Tensor, got {type(src).__name__}")
    base = x
    if not include_self or reduce == "mean":
        count = _scatter(zeros_like(x, _dt.int64), axis, index, 1, "add", "scatter_reduce")
        touched = _bin.greater(count, 0)
    if not include_self:
        identity = {"sum": 0, "mean": 0, "prod": 1}.get(reduce)
        if identity is None:
            identity = _extreme(x.dtype, lowest=reduce == "amax")
        base = _cf.where(touched, full((), identity, x.dtype), x)
    out = _scatter(base, axis, index, src, _REDUCE_MODES[reduce], "scatter_reduce")
    if reduce != "mean":
        return out
    divisor = cast(_bin.maximum(count if not include_self else _bin.add(count, 1), 1), x.dtype)
    return _bin.floor_divide(out, divisor) if not _dt.is_float(x.dtype) else _bin.div(out, divisor)


def _index_update(x: Tensor, axis: int, index: Any, source: Any, mode: str, op: str) -> Tensor:
    """x with `source` (x's shape, len(index) along `axis`) put at the 1-D `index` along `axis`."""
    _check_tensor(x, op)
    idx = _index_tensor(index, op)
    if idx.ndim > 1:
        raise IndexError(f"{op}: index must be 0-d or 1-d, got shape {idx.shape}")
    size = x.shape[normalize_axis(axis, x.ndim, op, "dim")] if x.ndim else 1
    _check_range(idx, size, op, axis, negative=False)  # (before the reshape: its values are known)
    idx = reshape(idx, (-1,))
    if x.ndim == 0:
        normalize_axis(axis, 1, op, "dim")
        return reshape(_index_update(reshape(x, (1,)), 0, idx, reshape(source, (-1,)), mode, op), ())
    a = normalize_axis(axis, x.ndim, op, "dim")
    want = x.shape[:a] + (idx.shape[0],) + x.shape[a + 1 :]
    if not isinstance(source, Tensor):
        source = full(want, source, x.dtype)
    source = cast(source, x.dtype)
    if source.ndim == 0 and idx.shape[0] == 1 and x.ndim == 1:
        source = reshape(source, (1,))
    if tuple(source.shape) != want:
        raise ValueError(
            f"{op}: source must have shape {want} (x's, with len(index) along dim {a}), got {source.shape}"
        )
    return _take_scatter(x, source, idx, a, mode)


@public()
def index_add(x: Tensor, axis: int, index: Any, source: Tensor, *, alpha: Any = 1) -> Tensor:
    """x with `alpha * source` added at the 1-D `index` along `axis` (`torch.index_add`; repeated
    indices accumulate). `source` has x's shape with len(index) along `axis`."""
    if alpha != 1:
        source = _bin.mul(source, alpha)
    return _index_update(x, axis, index, source, "add", "index_add")


@public()
def index_copy(x: Tensor, axis: int, index: Any, source: Tensor) -> Tensor:
    """x with `source` copied to the 1-D `index` along `axis` (`torch.index_copy`; with repeated
    indices one of the values wins)."""
    return _index_update(x, axis, index, source, "set", "index_copy")


@public()
def index_fill(x: Tensor, axis: int, index: Any, value: Any) -> Tensor:
    """x with `value` (a number or a 0-d tensor, which then receives the gradient) at the 1-D
    `index` along `axis` (`torch.index_fill`)."""
    _check_tensor(x, "index_fill")
    if isinstance(value, Tensor) and value.ndim != 0:
        raise ValueError(f"index_fill: value must be a number or a 0-d tensor, got shape {value.shape}")
    idx = _index_tensor(index, "index_fill")
    a = normalize_axis(axis, max(x.ndim, 1), "index_fill", "dim")
    shape = x.shape[:a] + (idx.numel(),) + x.shape[a + 1 :] if x.ndim else (idx.numel(),)
    fill = broadcast_to(cast(value, x.dtype), shape) if isinstance(value, Tensor) else full(shape, value, x.dtype)
    return _index_update(x, axis, idx, fill, "set", "index_fill")


@public()
def masked_scatter(x: Tensor, mask: Tensor, source: Tensor) -> Tensor:
    """x with the positions where the bool `mask` (broadcast to x's shape) is True filled, in
    row-major order, by consecutive elements of `source` (`torch.masked_scatter`), which must hold
    at least as many elements as the mask has True values (the count is not checked: it is
    computed lazily). Gradients reach x (where the mask is False) and the used source elements."""
    _check_tensor(x, "masked_scatter")
    _check_tensor(mask, "masked_scatter", "mask")
    _check_tensor(source, "masked_scatter", "source")
    if mask.dtype != _dt.bool_:
        raise TypeError(f"masked_scatter: mask must be a bool tensor, got dtype {mask.dtype.name}")
    shape = broadcast_shapes(x.shape, mask.shape, op="masked_scatter")
    if shape != x.shape:
        raise ValueError(f"masked_scatter: mask of shape {mask.shape} does not broadcast to x's shape {x.shape}")
    n, m = x.numel(), source.numel()
    if n == 0 or m == 0:  # (an empty source with a True in the mask is an error in PyTorch)
        return x
    flat_mask = reshape(broadcast_to(mask, shape), (-1,))
    # the True positions first, in order (a stable sort of not-mask); source element j goes to the j-th
    order = argsort(cast(_bin.logical_xor(flat_mask, True), _dt.int32), 0)
    take_at = tensor(np.minimum(np.arange(n, dtype=np.int64), m - 1))
    values = _take_scatter(reshape(x, (-1,)), _take(reshape(cast(source, x.dtype), (-1,)), take_at, 0), order, 0, "set")
    return _cf.where(broadcast_to(mask, shape), reshape(values, shape), x)


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
    realizes `indices` (so it is not available under vmap with batched indices). Values must lie
    in [0, num_classes).

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
    data = known_values(indices)
    if num_classes == -1:
        if indices._impl.batch_dims:  # the result's size would depend on each batch element's values
            raise ValueError(
                "one_hot: num_classes=-1 reads the indices to size the result, which indices batched by "
                "vmap cannot provide (each batch element may need a different size); pass num_classes"
            )
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
