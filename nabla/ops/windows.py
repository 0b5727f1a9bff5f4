"""Window arithmetic shared by convolution (`conv.py`, `conv_grad.py`) and pooling (`pooling.py`):
explicit per-side padding (`Pads`; a negative entry crops), the windows a strided, dilated kernel
reads, output sizes, MAX's channels-last layout moves, and the public functions' argument checks."""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np
from max.dtype import DType
from max.graph import ops
from numpy.lib.stride_tricks import sliding_window_view

from ..core.common import dtypes as _dt
from ..core.tensor.tensor import Tensor
from . import view as _view
from ._layout import as_nhwc, to_nchw
from .base import shape_of

__all__: list[str] = []  # internal: the helpers of conv.py, conv_grad.py and pooling.py

Pads = tuple[int, ...]  # (before, after) per spatial dim, e.g. (top, bottom, left, right); negative entries crop


# -- padding, windows, sizes and layouts ----------------------------------------------------------
def _pairs(pads: Pads) -> list[tuple[int, int]]:
    return list(zip(pads[::2], pads[1::2], strict=True))


def _np_pad(x: np.ndarray, pads: Pads, value: float = 0.0) -> np.ndarray:
    """Pad (positive) or crop (negative) the last `len(pads) // 2` axes of `x`."""
    pairs = _pairs(pads)
    n = len(pairs)
    crop = tuple(slice(max(-a, 0), s - max(-b, 0)) for (a, b), s in zip(pairs, x.shape[-n:], strict=True))
    x = x[(..., *crop)]
    widths = [(0, 0)] * (x.ndim - n) + [(max(a, 0), max(b, 0)) for a, b in pairs]
    if any(a or b for a, b in widths):
        x = np.pad(x, widths, constant_values=value)
    return x


def _np_windows(x: np.ndarray, kernel: tuple, stride: tuple, dilation: tuple, out: tuple) -> np.ndarray:
    """The (strided, dilated) windows of the last `len(kernel)` axes: shape (..., *out, *kernel), a view."""
    n = len(kernel)
    extent = tuple((k - 1) * d + 1 for k, d in zip(kernel, dilation, strict=True))
    win = sliding_window_view(x, extent, axis=tuple(range(-n, 0)))
    starts = tuple(slice(None, (o - 1) * s + 1, s) for o, s in zip(out, stride, strict=True))
    return win[(..., *starts, *(slice(None, None, d) for d in dilation))]


def _offsets(kernel: tuple, dilation: tuple) -> list[tuple[int, ...]]:
    """(k, offset along each spatial axis) of every kernel element, k its flat index in PyTorch's
    scan order (in 2-D: (k, row offset, column offset))."""
    taps = itertools.product(*(range(k) for k in kernel))
    return [(k, *(i * d for i, d in zip(tap, dilation, strict=True))) for k, tap in enumerate(taps)]


def _out_size(size: int, before: int, after: int, kernel: int, stride: int, dilation: int) -> int:
    return (size + before + after - dilation * (kernel - 1) - 1) // stride + 1


def _out_sizes(size: tuple, pads: Pads, kernel: tuple, stride: tuple, dilation: tuple) -> tuple[int, ...]:
    """`_out_size` of every spatial dim."""
    return tuple(map(_out_size, size, pads[::2], pads[1::2], kernel, stride, dilation))


def _transposed_sizes(size: tuple, pads: Pads, kernel: tuple, stride: tuple, dilation: tuple) -> tuple[int, ...]:
    """A transposed convolution's output sizes: the full extent, cropped by `pads`."""
    return tuple(
        (n - 1) * s + d * (k - 1) + 1 - a - b
        for n, (a, b), k, s, d in zip(size, _pairs(pads), kernel, stride, dilation, strict=True)
    )


def _subscripts(n: int) -> tuple[str, str]:
    """einsum letters of `n` spatial dims and of their kernel taps."""
    return "dhw"[3 - n :], "ijk"[:n]


def _axes(n: int) -> tuple[str, ...]:
    """Sharding factor names of `n` spatial dims."""
    return tuple("dhw"[3 - n :])


def _channels_last(n: int) -> list[int]:
    """(N, C, *S) -> (N, *S, C) for `n` spatial dims (NHWC in 2-D)."""
    return [0, *range(2, n + 2), 1]


def _channels_first(n: int) -> list[int]:
    return [0, n + 1, *range(1, n + 1)]


def _shape(v: Any) -> tuple[int, ...]:
    return shape_of(v)


def _mx_pad(v: Any, pads: Pads, value: float = 0.0, trail: int = 0) -> Any:
    """MAX: pad (positive) or crop (negative) the `len(pads) // 2` spatial axes of `v`, which `trail`
    axes follow (0: (..., H, W); 1: NHWC)."""
    shape, pairs = _shape(v), _pairs(pads)
    lead = len(shape) - len(pairs) - trail
    if min(pads) < 0:
        sizes = shape[lead : lead + len(pairs)]
        crop = [slice(max(-a, 0), s - max(-b, 0)) for (a, b), s in zip(pairs, sizes, strict=True)]
        v = ops.slice_tensor(v, [slice(None)] * lead + crop + [slice(None)] * trail)
    if max(pads) > 0:
        widths = [max(p, 0) for p in pads]
        v = ops.pad(v, [0, 0] * lead + widths + [0, 0] * trail, value=value)
    return v


def _mx_strided(v: Any, start: tuple, stride: tuple, out: tuple, trail: int = 0) -> Any:
    """MAX: `v[..., r0::sh][:OH], [c0::sw][:OW]` on the spatial axes (`trail` as in `_mx_pad`)."""
    lead = len(v.shape) - len(start) - trail
    spatial = [slice(a, a + (o - 1) * s + 1, s) for a, s, o in zip(start, stride, out, strict=True)]
    return ops.slice_tensor(v, [slice(None)] * lead + spatial + [slice(None)] * trail)


def _mx_place(v: Any, start: tuple, stride: tuple, size: tuple) -> Any:
    """MAX, the transpose of `_mx_strided`: put `v` (..., OH, OW) at rows start[0] + i*sh and
    columns start[1] + j*sw of a zero tensor (..., size[0], size[1]) (likewise in 3-D)."""
    n = len(start)
    shape = _shape(v)
    lead, inner = shape[:-n], shape[-n:]
    if any(s != 1 for s in stride):  # insert stride-1 zeros between elements
        v = ops.reshape(v, lead + tuple(d for o in inner for d in (o, 1)))
        v = ops.pad(v, [0, 0] * len(lead) + [p for s in stride for p in (0, 0, 0, s - 1)])
        v = ops.reshape(v, lead + tuple(o * s for o, s in zip(inner, stride, strict=True)))
    pads = [p for a, z, o, s in zip(start, size, inner, stride, strict=True) for p in (a, z - a - o * s)]
    return _mx_pad(v, tuple(pads))


def _mx_channels_last(v: Any) -> Any:
    """MAX: (N, C, *S) -> (N, *S, C); a 4-D value's NHWC twin when it has one."""
    rank = len(_shape(v))
    return as_nhwc(v) if rank == 4 else ops.permute(v, _channels_last(rank - 2))


def _mx_to_nhwc(v: Any, spatial: int = 2) -> tuple[Any, tuple[int, ...]]:
    """MAX: (..., C, *S) -> (N, *S, C) with the leading dims merged (a 4-D value's NHWC twin
    when it has one: no permute); returns the lead dims."""
    shape = _shape(v)
    lead = shape[: -spatial - 1]
    if len(lead) == 1:
        return _mx_channels_last(v), lead
    v = ops.reshape(v, (math.prod(lead),) + shape[-spatial - 1 :])
    return ops.permute(v, _channels_last(spatial)), lead


def _mx_from_nhwc(v: Any, lead: tuple[int, ...]) -> Any:
    """MAX: the inverse of `_mx_to_nhwc`; a 4-D result keeps `v` as its NHWC twin."""
    rank = len(_shape(v))
    if len(lead) == 1 and rank == 4:
        return to_nchw(v)
    v = ops.permute(v, _channels_first(rank - 2))
    return v if len(lead) == 1 else ops.reshape(v, lead + _shape(v)[1:])


def _mx_pool(xp: Any, pool: Any) -> Any:
    """MAX: run an NHWC pooling `pool` over the last two axes of the padded `xp (..., C, H, W)`."""
    shape = _shape(xp)
    v = ops.reshape(xp, (1,) + shape) if len(shape) < 3 else xp
    xn, lead = _mx_to_nhwc(v)
    y = _mx_from_nhwc(pool(xn), lead)
    return ops.reshape(y, shape[:-2] + _shape(y)[-2:])


def _mx_const(array: np.ndarray, like: Any) -> Any:
    return ops.cast(ops.constant(array.astype(np.float32), DType.float32, device=like.device), like.dtype)


def _lead(shape: tuple, rank: int, op: str, arg: str = "x") -> tuple[int, ...]:
    if len(shape) < rank:
        raise ValueError(f"{op}: {arg} must have rank >= {rank}, got shape {shape}")
    return shape[:-rank]


# -- argument checking ----------------------------------------------------------------------------
def _ints(value: Any, n: int, op: str, arg: str, minimum: int) -> tuple[int, ...]:
    """An int or a tuple of `n` ints (each >= minimum), as a tuple of `n` ints; a 1-element
    sequence counts for every dim, as in PyTorch."""
    items = (value,) * n if isinstance(value, int | np.integer) and not isinstance(value, bool) else value
    if isinstance(items, tuple | list) and len(items) == 1:
        items = tuple(items) * n
    if (
        not isinstance(items, tuple | list)
        or len(items) != n
        or not all(isinstance(v, int | np.integer) and not isinstance(v, bool) for v in items)
    ):
        raise TypeError(f"{op}: {arg} must be an int or a tuple of {n} ints, got {value!r}")
    items = tuple(int(v) for v in items)
    if any(v < minimum for v in items):
        what = "positive" if minimum == 1 else "non-negative"
        raise ValueError(f"{op}: {arg} must be {what}, got {value!r}")
    return items


def _check_tensor(x: Any, op: str, arg: str) -> None:
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}: {arg} must be a Tensor, got {type(x).__name__}")
    if not _dt.is_float(x.dtype):
        raise TypeError(f"{op}: {arg} must have a floating-point dtype, got {x.dtype.name}")


def _batched(x: Any, spatial: int, op: str) -> tuple[Tensor, bool]:
    """Accept (C, *spatial) or (N, C, *spatial): returns the batched tensor and whether the input
    was unbatched."""
    _check_tensor(x, op, "input")
    if x.ndim not in (spatial + 1, spatial + 2):
        raise ValueError(
            f"{op}: expected a {spatial + 1}-D (unbatched) or {spatial + 2}-D (batched) input, got shape {x.shape}"
        )
    return (_view.unsqueeze(x, 0), True) if x.ndim == spatial + 1 else (x, False)
