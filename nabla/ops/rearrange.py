"""Rearranging ops built on shape.py's: repeat_interleave (a primitive), and roll, tile,
meshgrid, moveaxis/movedim, unflatten, rot90, fliplr/flipud, hsplit/vsplit/dsplit and unfold
(`Tensor.unfold`'s windows): composites of shape.py's and view.py's ops.

Rules receive physical (batch-shifted) kwargs, as in shape.py; `repeat_interleave` keeps its
axis whole when sharded (`_sharding.py`).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from max.graph import ops

from ..core.common import dtypes as _dt
from ..core.tensor.impl import TensorImpl
from ..core.tensor.tensor import Tensor
from . import binary as _bin
from . import control_flow as _cf
from . import creation as _cr
from . import reduction as _red
from ._sharding import whole_dims
from .base import AVal, Operation, public
from .indexing_primitives import _take
from .shape import (
    _axes,
    _check_tensor,
    _concatenate,
    _empty,
    _int,
    _piece_shape,
    _shift,
    _slice,
    _split,
    _split_points,
    _static_shape,
    _tensor_list,
    concatenate,
    flip,
    tensor_split,
)
from .spmd import window, windowable
from .view import broadcast_to, normalize_axis, permute, reshape, unsqueeze

__all__ = [
    "dsplit",
    "fliplr",
    "flipud",
    "hsplit",
    "meshgrid",
    "moveaxis",
    "movedim",
    "repeat_interleave",
    "roll",
    "rot90",
    "tile",
    "unflatten",
    "unfold",
    "vsplit",
]


# -- roll / tile / repeat_interleave -----------------------------------------------------------
@public()
def roll(x: Tensor, shifts: Any, axis: Any = None, *, dims: Any = None) -> Tensor:
    """Shift elements cyclically along `axis` (int or tuple, paired with `shifts`); with
    `axis=None` the tensor is rolled as if flattened, as `torch.roll`.

    Example:
        >>> nb.roll(nb.arange(4), 1).tolist()
        [3, 0, 1, 2]
    """
    _check_tensor(x, "roll")
    if dims is not None:
        if axis is not None:
            raise TypeError("roll: pass either axis= or dims=, not both")
        axis = dims
    shift_t = (shifts,) if isinstance(shifts, int | np.integer) else tuple(shifts)
    shift_t = tuple(_int(s, "roll", "shifts") for s in shift_t)
    if axis is None:
        if len(shift_t) != 1:
            raise ValueError(f"roll: with dim=None, shifts must be a single int, got {shifts!r}")
        return reshape(roll(reshape(x, (-1,)), shift_t[0], 0), x.shape)
    axes = (axis,) if isinstance(axis, int | np.integer) else tuple(axis)
    if len(axes) != len(shift_t):
        raise ValueError(f"roll: shifts {shifts!r} and dims {axis!r} must have the same number of entries")
    if x.ndim == 0:
        _axes(axes, 0, "roll")
        return x
    for s, a in zip(shift_t, axes, strict=True):
        a = normalize_axis(a, x.ndim, "roll")
        n = x.shape[a]
        s = s % n if n else 0
        if s and windowable(x, a):  # two zero-filled windows, each keeping the layout
            x = _bin.add(window(x, a, -s, n), window(x, a, n - s, n))
        elif s:
            x = concatenate([_slice(x, a, n - s, n), _slice(x, a, 0, n - s)], a)
    return x


@public()
def tile(x: Tensor, reps: Any = None, *, dims: Any = None) -> Tensor:
    """Repeat the whole tensor `reps[i]` times along each dimension, as `torch.tile` /
    `Tensor.repeat` (a longer `reps` prepends dimensions; a shorter one is padded with 1s).

    Example:
        >>> nb.tile(nb.arange(2), (2, 2)).tolist()
        [[0, 1, 0, 1], [0, 1, 0, 1]]
    """
    _check_tensor(x, "tile")
    if (reps is None) == (dims is None):
        raise TypeError("tile: pass reps (or dims=) exactly once")
    reps = reps if dims is None else dims
    reps = (reps,) if isinstance(reps, int | np.integer) else tuple(reps)
    reps = tuple(_int(r, "tile", "reps") for r in reps)
    if any(r < 0 for r in reps):
        raise ValueError(f"tile: reps must be non-negative, got {reps}")
    nd = max(len(reps), x.ndim)
    reps = (1,) * (nd - len(reps)) + reps
    x = reshape(x, (1,) * (nd - x.ndim) + x.shape)
    if all(r == 1 for r in reps):
        return x
    shape = x.shape
    y = reshape(x, tuple(v for d in shape for v in (1, d)))
    y = broadcast_to(y, tuple(v for r, d in zip(reps, shape, strict=True) for v in (r, d)))
    return reshape(y, tuple(r * d for r, d in zip(reps, shape, strict=True)))


class RepeatInterleaveOp(Operation):
    """Element i along `axis` repeated `repeats[i]` times (static per-element counts)."""

    name = "repeat_interleave"

    def adapt_kwargs(self, impls: list[TensorImpl], kwargs: dict, batch_dims: int) -> dict:
        return {**kwargs, "axis": _shift(kwargs["axis"], batch_dims)}

    def abstract_eval(self, x: AVal, *, repeats: tuple, axis: int) -> AVal:
        if len(repeats) != x[0][axis]:
            raise ValueError(f"repeat_interleave: {len(repeats)} repeats for dim {axis} of shape {x[0]}")
        return x[0][:axis] + (sum(repeats),) + x[0][axis + 1 :], x[1]

    sharding_rule_for = whole_dims(lambda kw, rank: (kw["axis"],))

    def kernel(self, x: Any, *, repeats: tuple, axis: int) -> Any:
        shape = _static_shape(x)
        out_shape = shape[:axis] + (sum(repeats),) + shape[axis + 1 :]
        if 0 in out_shape:
            return _empty(out_shape, x.dtype, x.device)
        index = np.repeat(np.arange(len(repeats), dtype=np.int64), repeats)
        return ops.gather(x, ops.constant(index, _dt.int64, x.device), axis)

    def numpy_kernel(self, x: np.ndarray, *, repeats: tuple, axis: int) -> np.ndarray:
        return np.repeat(x, repeats, axis=axis)

    def vjp_rule(self, primals: list, cotangents: list, outputs: list, *, repeats: tuple, axis: int) -> list:
        x = primals[0]
        pieces = _split(cotangents[0], sizes=repeats, axis=axis, keepdims=True) if len(repeats) > 1 else cotangents
        sums = [
            _red.sum(p, axis, True) if r else _cr.zeros(_piece_shape(x.shape, axis, 1, True), dtype=x.dtype)
            for p, r in zip(pieces, repeats, strict=True)
        ]
        return [sums[0] if len(sums) == 1 else _concatenate(*sums, axis=axis)]

    def jvp_rule(self, primals: list, tangents: list, outputs: list, *, repeats: tuple, axis: int) -> list:
        return [_repeat_interleave(tangents[0], repeats=repeats, axis=axis)]


_repeat_interleave = RepeatInterleaveOp()


@public()
def repeat_interleave(x: Tensor, repeats: Any = None, axis: Any = None, *, output_size: int | None = None) -> Tensor:
    """Repeat each element along `axis` (None: of the flattened tensor), as
    `torch.repeat_interleave`. `repeats` is an int or one static count per element. With
    `repeats` alone (`repeat_interleave(counts)`), index i is repeated counts[i] times;
    `output_size`, the result's length along `axis`, is checked when given.

    Example:
        >>> nb.repeat_interleave(nb.arange(3), [1, 0, 2]).tolist()
        [0, 2, 2]
    """
    if repeats is None:  # torch's repeat_interleave(repeats): arange(len) repeated
        _check_tensor(x, "repeat_interleave")
        x, repeats, axis = _cr.arange(x.shape[0] if x.ndim else 1), x, 0
    out = _repeat_interleave_checked(x, repeats, axis)
    size = (
        out.shape[0 if axis is None else normalize_axis(axis, max(out.ndim, 1), "repeat_interleave")] if out.ndim else 1
    )
    if output_size is not None and output_size != size:
        raise ValueError(f"repeat_interleave: output_size={output_size} but the repeats give {size}")
    return out


def _repeat_interleave_checked(x: Tensor, repeats: Any, axis: Any) -> Tensor:
    _check_tensor(x, "repeat_interleave")
    if axis is None:
        x = reshape(x, (-1,))
        a = 0
    else:
        if x.ndim == 0:
            _axes(axis, 0, "repeat_interleave")
            x = reshape(x, (1,))
        a = normalize_axis(axis, x.ndim, "repeat_interleave")
    n = x.shape[a]
    if isinstance(repeats, Tensor):  # static counts: under vmap they must agree across the batch
        impl = repeats._impl
        values = _cf.host_array(repeats).reshape((math.prod(impl.physical_shape[: impl.batch_dims]), *repeats.shape))
        if not len(values) or np.any(values != values[:1]):
            raise ValueError("repeat_interleave: under vmap, repeats must be the same for every batch element")
        repeats = values[0]
    if isinstance(repeats, bool) or isinstance(repeats, float):
        raise TypeError(f"repeat_interleave: repeats must be an int or a sequence of ints, got {repeats!r}")
    reps = np.asarray(repeats)
    if reps.dtype.kind not in "iu" and reps.size:
        raise TypeError(f"repeat_interleave: repeats must be integers, got {repeats!r}")
    if reps.ndim > 1:
        raise ValueError(f"repeat_interleave: repeats must be an int or 1-D, got shape {reps.shape}")
    reps = reps.astype(np.int64).reshape(-1)
    if np.any(reps < 0):
        raise ValueError(f"repeat_interleave: repeats must be non-negative, got {repeats!r}")
    if reps.size == 1:
        reps = np.full(n, reps[0], np.int64)
    if reps.size != n:
        raise ValueError(f"repeat_interleave: repeats has {reps.size} entries, but dim {a} has size {n}")
    if n == 0 or np.all(reps == reps[0]):
        r = int(reps[0]) if n else 0
        if r == 1:
            return x
        y = broadcast_to(unsqueeze(x, a + 1), x.shape[: a + 1] + (r,) + x.shape[a + 1 :])
        return reshape(y, x.shape[:a] + (n * r,) + x.shape[a + 1 :])
    return _repeat_interleave(x, repeats=tuple(int(r) for r in reps), axis=a)


# -- meshgrid ----------------------------------------------------------------------------------
@public()
def meshgrid(*tensors: Any, indexing: str = "ij") -> tuple[Tensor, ...]:
    """Coordinate grids from 1-D (or 0-d) tensors, as `torch.meshgrid`: output i holds tensor i
    broadcast along its own dimension of the grid. `indexing="xy"` swaps the first two grid
    dimensions (Cartesian, as NumPy's default); "ij" (matrix) is PyTorch's default.

    Args:
        tensors: tensors of one dtype, or a single list or tuple of them.
        indexing: "ij" or "xy".

    Example:
        >>> gx, gy = nb.meshgrid(nb.arange(3), nb.arange(2), indexing="xy")
        >>> gx.tolist(), gy.tolist()
        ([[0, 1, 2], [0, 1, 2]], [[0, 0, 0], [1, 1, 1]])
    """
    if len(tensors) == 1 and isinstance(tensors[0], list | tuple):
        tensors = tuple(tensors[0])
    tensors = _tensor_list(list(tensors), "meshgrid")
    if indexing not in ("ij", "xy"):
        raise ValueError(f"meshgrid: indexing must be 'ij' or 'xy', got {indexing!r}")
    for i, t in enumerate(tensors):
        if t.ndim > 1:
            raise ValueError(f"meshgrid: expected 0-d or 1-d tensors, got shape {t.shape} for input {i}")
        if t.dtype != tensors[0].dtype:
            raise TypeError(f"meshgrid: expected tensors of one dtype, got {tensors[0].dtype.name} and {t.dtype.name}")
    dims = list(range(len(tensors)))
    if indexing == "xy" and len(dims) > 1:  # the first input varies along the columns
        dims[0], dims[1] = 1, 0
    shape = [0] * len(dims)
    for t, d in zip(tensors, dims, strict=True):
        shape[d] = t.numel()
    return tuple(
        broadcast_to(reshape(t, tuple(shape[d] if k == d else 1 for k in range(len(dims)))), tuple(shape))
        for t, d in zip(tensors, dims, strict=True)
    )


# -- moveaxis / unflatten ----------------------------------------------------------------------
@public()
def moveaxis(x: Tensor, source: Any, destination: Any) -> Tensor:
    """Move dims `source` to positions `destination` (ints or tuples), keeping the others' order.

    Example:
        >>> nb.moveaxis(nb.ones(2, 3, 4), 0, -1).shape
        (3, 4, 2)
    """
    _check_tensor(x, "moveaxis")
    src = (source,) if isinstance(source, int | np.integer) else tuple(source)
    dst = (destination,) if isinstance(destination, int | np.integer) else tuple(destination)
    if len(src) != len(dst):
        raise ValueError(
            f"moveaxis: source {source!r} and destination {destination!r} must have the same number of entries"
        )
    if x.ndim == 0:
        _axes(src, 0, "moveaxis", "source")
        _axes(dst, 0, "moveaxis", "destination")
        return x
    s = _axes(src, x.ndim, "moveaxis", "source")
    d = _axes(dst, x.ndim, "moveaxis", "destination")
    order = [i for i in range(x.ndim) if i not in s]
    for di, si in sorted(zip(d, s, strict=True)):
        order.insert(di, si)
    return permute(x, order)


movedim = moveaxis


@public()
def unflatten(x: Tensor, axis: int, sizes: Any) -> Tensor:
    """Expand dim `axis` into `sizes` (one entry may be -1), as `torch.unflatten`.

    Example:
        >>> nb.unflatten(nb.ones(2, 6), 1, (2, -1)).shape
        (2, 2, 3)
    """
    _check_tensor(x, "unflatten")
    if x.ndim == 0:
        raise ValueError("unflatten: expected a tensor of rank >= 1, got a 0-d tensor")
    a = normalize_axis(axis, x.ndim, "unflatten")
    sizes = (sizes,) if isinstance(sizes, int | np.integer) else tuple(sizes)
    sizes = tuple(_int(s, "unflatten", "sizes") for s in sizes)
    n = x.shape[a]
    if not sizes:
        raise ValueError("unflatten: sizes must be non-empty")
    if sizes.count(-1) > 1 or any(s < -1 for s in sizes):
        raise ValueError(f"unflatten: sizes {sizes} may hold at most one -1 and otherwise non-negative sizes")
    known = math.prod(s for s in sizes if s != -1)
    if -1 in sizes:
        if known == 0 or n % known:
            raise ValueError(f"unflatten: sizes {sizes} cannot unflatten dim {a} of size {n}")
        sizes = tuple(n // known if s == -1 else s for s in sizes)
    elif known != n:
        raise ValueError(f"unflatten: sizes {sizes} multiply to {known}, but dim {a} has size {n}")
    return reshape(x, x.shape[:a] + sizes + x.shape[a + 1 :])


# -- composites: rotations, directional flips and splits, sliding windows ----------------------
@public()
def rot90(x: Tensor, k: int = 1, dims: Any = (0, 1)) -> Tensor:
    """Rotate by 90 degrees `k` times in the plane of `dims`, from the first towards the second
    (`torch.rot90`)."""
    _check_tensor(x, "rot90")
    k = _int(k, "rot90", "k")
    dims = tuple(dims)
    if len(dims) != 2:
        raise ValueError(f"rot90: dims must name 2 dimensions, got {dims}")
    if x.ndim < 2:
        raise ValueError(f"rot90: expected a tensor of rank >= 2, got shape {x.shape}")
    d0, d1 = (normalize_axis(d, x.ndim, "rot90", "dims") for d in dims)
    if d0 == d1:
        raise ValueError(f"rot90: dims must differ, got {dims}")
    perm = list(range(x.ndim))
    perm[d0], perm[d1] = d1, d0
    k %= 4
    if k == 1:
        return permute(flip(x, d1), tuple(perm))
    if k == 2:
        return flip(x, (d0, d1))
    if k == 3:
        return permute(flip(x, d0), tuple(perm))
    return x


@public()
def fliplr(x: Tensor) -> Tensor:
    """Reverse the columns: flip along dim 1 (rank >= 2)."""
    _check_tensor(x, "fliplr")
    if x.ndim < 2:
        raise ValueError(f"fliplr: expected a tensor of rank >= 2, got shape {x.shape}")
    return flip(x, 1)


@public()
def flipud(x: Tensor) -> Tensor:
    """Reverse the rows: flip along dim 0 (rank >= 1)."""
    _check_tensor(x, "flipud")
    if x.ndim < 1:
        raise ValueError("flipud: expected a tensor of rank >= 1, got a 0-d tensor")
    return flip(x, 0)


def _directional_split(x: Tensor, indices_or_sections: Any, axis: int, rank: int, name: str) -> tuple[Tensor, ...]:
    """torch's hsplit/vsplit/dsplit: tensor_split along `axis`; a section count must divide it."""
    _check_tensor(x, name)
    if x.ndim < rank:
        raise ValueError(f"{name}: expected a tensor of rank >= {rank}, got shape {x.shape}")
    spec = _split_points(indices_or_sections, name)
    if isinstance(spec, int) and (spec <= 0 or x.shape[axis] % spec):
        raise ValueError(f"{name}: dimension {axis} of size {x.shape[axis]} cannot be split into {spec} equal sections")
    return tensor_split(x, indices_or_sections, axis)


@public()
def hsplit(x: Tensor, indices_or_sections: Any) -> tuple[Tensor, ...]:
    """Split horizontally: along dim 1 (dim 0 of a 1-D tensor), as `torch.hsplit`."""
    return _directional_split(x, indices_or_sections, 1 if getattr(x, "ndim", 0) > 1 else 0, 1, "hsplit")


@public()
def vsplit(x: Tensor, indices_or_sections: Any) -> tuple[Tensor, ...]:
    """Split vertically: along dim 0 of a tensor of rank >= 2, as `torch.vsplit`."""
    return _directional_split(x, indices_or_sections, 0, 2, "vsplit")


@public()
def dsplit(x: Tensor, indices_or_sections: Any) -> tuple[Tensor, ...]:
    """Split depthwise: along dim 2 of a tensor of rank >= 3, as `torch.dsplit`."""
    return _directional_split(x, indices_or_sections, 2, 3, "dsplit")


@public()
def unfold(x: Tensor, dimension: int, size: int, step: int) -> Tensor:
    """The windows of `size` entries every `step` along `dimension` (`Tensor.unfold`): that
    dimension becomes the window count, (n - size) // step + 1, and a last dimension of `size`
    holds each window. Not the im2col of `nn.functional.unfold`."""
    _check_tensor(x, "unfold")
    size, step = _int(size, "unfold", "size"), _int(step, "unfold", "step")
    if step <= 0:
        raise ValueError(f"unfold: step must be positive, got {step}")
    if size < 0:
        raise ValueError(f"unfold: size must be non-negative, got {size}")
    if x.ndim == 0:
        normalize_axis(dimension, 1, "unfold", "dimension")
        if size > 1:
            raise ValueError(f"unfold: size {size} exceeds the size 1 of a 0-d tensor")
        return reshape(x, (size,))
    a = normalize_axis(dimension, x.ndim, "unfold", "dimension")
    n = x.shape[a]
    if size > n:
        raise ValueError(f"unfold: size {size} exceeds dimension {a} of size {n}")
    count = (n - size) // step + 1
    index = np.arange(count, dtype=np.int64)[:, None] * step + np.arange(size, dtype=np.int64)[None, :]
    windows = _take(x, _cr.tensor(index), a)  # x.shape[:a] + (count, size) + x.shape[a + 1:]
    return moveaxis(windows, a + 1, -1)
