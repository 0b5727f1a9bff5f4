"""Fractional max pooling (Graham, https://arxiv.org/abs/1412.6071) with PyTorch's pseudo-random
regions: `fractional_max_pool2d` / `3d` and their `*_with_indices` aliases.

For every (n, c) plane and spatial dim, one sample u in [0, 1) places the output's windows of
size k over the input's n positions, as ATen's `generate_intervals`:

    alpha = (n - k) / (o - 1)                                 (in the input's dtype)
    start[i] = int((i + u) * alpha) - int(u * alpha)          for i < o - 1
    start[o - 1] = n - k

The 2-D form reads u for W from `_random_samples[n, c, 0]` and for H from `[n, c, 1]`; the
3-D form (T, H, W) from `[n, c, 0]`, `[1]`, `[2]`. With the samples given, values and indices
equal PyTorch's; without them they are drawn from nabla's generator (`nabla.rand`, seeded by
`nabla.manual_seed`), so the regions differ from PyTorch's draws.

Everything is computed with nabla ops, so the pooling stays lazy (the samples may be a
pending tensor, a fresh draw in a compiled step): the window starts come from the samples with
arithmetic in the samples' dtype and a floor, a table (N, C, K, O) of every window element's
flat input index gathers the windows, and the first maximum in (d, h, w) scan order (the last
NaN, if any) is picked as PyTorch's kernel does. The values are then read from the input at
those indices, so the gradient goes to each window's maximum alone, as PyTorch's.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

import nabla as nb
from nabla import Tensor
from nabla.core.common import dtypes as _dt

from ._checks import check_float
from .pooling import _check_rank, _first_max_or_last_nan

__all__ = [
    "fractional_max_pool2d",
    "fractional_max_pool2d_with_indices",
    "fractional_max_pool3d",
    "fractional_max_pool3d_with_indices",
]

_DIM_NAMES = {2: ("height", "width"), 3: ("time", "height", "width")}
_SAMPLE_SLOT = {2: (1, 0), 3: (0, 1, 2)}  # which sample each spatial dim reads (ATen's order)


def _ints(value: Any, n: int, op: str, arg: str) -> tuple[int, ...]:
    """An int or a sequence of n ints, each >= 1."""
    items = value if isinstance(value, tuple | list) else (value,) * n
    if len(items) == 1 and n > 1:
        items = tuple(items) * n
    if len(items) != n or not all(isinstance(v, int | np.integer) and not isinstance(v, bool) for v in items):
        raise ValueError(f"{op}: {arg} must be an int or a tuple of {n} ints, got {value!r}")
    if not all(v >= 1 for v in items):
        raise ValueError(f"{op}: {arg} must be positive, got {value!r}")
    return tuple(int(v) for v in items)


def _ratios(value: Any, n: int, op: str) -> tuple[float, ...]:
    """A number or a sequence of n numbers."""
    items = value if isinstance(value, tuple | list) else (value,) * n
    if len(items) == 1 and n > 1:
        items = tuple(items) * n
    if len(items) != n or not all(
        isinstance(v, int | float | np.integer | np.floating) and not isinstance(v, bool) for v in items
    ):
        raise ValueError(f"{op}: output_ratio must be a number or a tuple of {n} numbers, got {value!r}")
    return tuple(float(v) for v in items)


def _check_samples(samples: Any, input: Tensor, n_batch: int, channels: int, nd: int) -> Tensor:
    """PyTorch's checks of `_random_samples` (N', C, nd) with N' >= N; its first N rows."""
    if not isinstance(samples, Tensor):
        raise TypeError(f"_random_samples must be a Tensor, got {type(samples).__name__}")
    if samples.ndim != 3:
        raise RuntimeError(f"Expect _random_samples to have 3 dimensions, got {samples.ndim}")
    if samples.shape[0] < n_batch:
        raise RuntimeError("Expect _random_samples.size(0) no less then input batch size.")
    if samples.shape[1] != channels:
        raise RuntimeError("Expect _random_samples.size(1) equals to input channel size.")
    if samples.shape[2] != nd:
        raise RuntimeError(f"Expect _random_samples.size(2) equals to {nd}; got {samples.shape[2]}.")
    if samples.dtype != input.dtype:
        raise RuntimeError("Expect _random_samples to have the same dtype as input")
    return samples if samples.shape[0] == n_batch else samples[:n_batch]


def _window_starts(u: Tensor, n: int, o: int, k: int) -> Tensor:
    """int64 (N, C, o) first input position of each window: ATen's `generate_intervals` for
    samples u (N, C), computed in u's dtype (float ops rounded as PyTorch's scalar_t ones)."""
    lead = u.shape
    last = nb.full((*lead, 1), n - k, dtype=nb.int64)
    if o == 1:
        return last
    dt = u.dtype
    # alpha = scalar_t(n - k) / scalar_t(o - 1), rounded once to the dtype (as the C++ division)
    wide = np.float64 if dt == _dt.float64 else np.float32
    alpha = nb.tensor(float(wide(n - k) / wide(o - 1)), dtype=dt)
    i = nb.tensor(np.arange(o - 1, dtype=np.float64), dtype=dt)
    uu = nb.unsqueeze(u, -1)
    seq = nb.floor((i + uu) * alpha) - nb.floor(uu * alpha)  # both non-negative: floor is C++'s int()
    return nb.concatenate([nb.cast(seq, nb.int64), last], axis=-1)


def _fractional_max_pool(
    op: str,
    input: Tensor,
    kernel_size: Any,
    output_size: Any,
    output_ratio: Any,
    samples: Tensor | None,
    nd: int,
) -> tuple[Tensor, Tensor]:
    """(values, int64 indices) of nd-D fractional max pooling over the last nd dims."""
    _check_rank(input, op, (nd + 1, nd + 2))
    check_float(input, op)
    kernel = _ints(kernel_size, nd, op, "kernel_size")
    spatial = tuple(input.shape[-nd:])
    if output_size is None and output_ratio is None:
        raise ValueError(f"{op} requires specifying either an output_size or an output_ratio")
    if output_size is None:
        size = tuple(int(n * r) for n, r in zip(spatial, _ratios(output_ratio, nd, op), strict=True))
        if not all(o >= 1 for o in size):
            raise ValueError(f"{op}: output_ratio {output_ratio!r} gives an empty output {size} for input {spatial}")
    else:
        size = _ints(output_size, nd, op, "output_size")
    batched = input.ndim == nd + 2
    n_batch, channels = (input.shape[0] if batched else 1), input.shape[-nd - 1]
    if channels == 0 or 0 in spatial:
        raise RuntimeError(f"{op}(): Expected input to have non-zero size for non-batch dimensions, got {input.shape}")
    for name, n, o, k in zip(_DIM_NAMES[nd], spatial, size, kernel, strict=True):
        # PyTorch's checks (and wording): o + k - 1 <= n in 2-D, but < n in 3-D
        if o + k - 1 > n or (nd == 3 and o + k - 1 == n):
            where = op if nd == 2 else f"{op}_out"
            raise RuntimeError(f"{where}(): pool {name} {k} too large relative to input {name} {n}")
    if samples is None:
        samples = nb.rand(n_batch, channels, nd, dtype=input.dtype)
    else:
        samples = _check_samples(samples, input, n_batch, channels, nd)
    samples = nb.detach(samples)
    x = input if batched else nb.unsqueeze(input, 0)
    plane = math.prod(spatial)
    # table[n, c, k_1, ..., k_nd, o_1, ..., o_nd]: flat input index of each window element
    table = None
    for d, (n, o, k) in enumerate(zip(spatial, size, kernel, strict=True)):
        starts = _window_starts(samples[:, :, _SAMPLE_SLOT[nd][d]], n, o, k)  # (N, C, o)
        pos = nb.unsqueeze(starts, 2) + nb.tensor(np.arange(k, dtype=np.int64).reshape(k, 1))  # (N, C, k, o)
        shape = [n_batch, channels] + [1] * (2 * nd)
        shape[2 + d], shape[2 + nd + d] = k, o
        term = nb.reshape(pos, tuple(shape)) * math.prod(spatial[d + 1 :])
        table = term if table is None else table + term
    windows, outs = math.prod(kernel), math.prod(size)
    table = nb.reshape(table, (n_batch, channels, windows, outs))
    flat = nb.reshape(x, (n_batch, channels, plane))
    win = nb.reshape(
        nb.gather(nb.detach(flat), -1, nb.reshape(table, (n_batch, channels, windows * outs))),
        (n_batch, channels, windows, outs),
    )
    is_max = nb.eq(win, nb.max(win, axis=2, keepdims=True))
    indices = _first_max_or_last_nan(is_max, nb.isnan(win), table, plane, 2)  # (N, C, O)
    values = nb.reshape(nb.gather(flat, -1, indices), (n_batch, channels, *size))
    indices = nb.reshape(indices, (n_batch, channels, *size))
    if not batched:
        values, indices = nb.squeeze(values, 0), nb.squeeze(indices, 0)
    return values, indices


def fractional_max_pool2d(
    input: Tensor,
    kernel_size: Any,
    output_size: Any = None,
    output_ratio: Any = None,
    return_indices: bool = False,
    _random_samples: Tensor | None = None,
) -> Tensor | tuple[Tensor, Tensor]:
    """2-D fractional max pooling of (N, C, H, W) or (C, H, W): kH x kW windows placed with
    pseudo-random steps so that the output has the requested size (PyTorch's regions).

    Args:
        input: (N, C, H, W) or (C, H, W), floating point.
        kernel_size: window size, int or (kH, kW).
        output_size: int or (oH, oW); oH + kH - 1 <= H (likewise W).
        output_ratio: instead of output_size: a number or (rH, rW), output size int(H * rH).
        return_indices: also return the int64 index h * W + w of each window's maximum (the
            first in row-major order; the last NaN if any), as `max_unpool2d` takes them.
        _random_samples: (N, C, 2) samples in [0, 1) of the input's dtype ([..., 0] places the
            W windows, [..., 1] the H ones; (1, C, 2) for unbatched input; extra rows are
            ignored); None draws them with `nabla.rand`.

    Example:
        >>> F.fractional_max_pool2d(nb.randn(20, 16, 50, 32), 3, output_size=(13, 12)).shape
        (20, 16, 13, 12)
        >>> F.fractional_max_pool2d(nb.randn(1, 2, 8, 8), 2, output_ratio=0.5, return_indices=True)[1].shape
        (1, 2, 4, 4)
    """
    values, indices = _fractional_max_pool(
        "fractional_max_pool2d", input, kernel_size, output_size, output_ratio, _random_samples, 2
    )
    return (values, indices) if return_indices else values


def fractional_max_pool3d(
    input: Tensor,
    kernel_size: Any,
    output_size: Any = None,
    output_ratio: Any = None,
    return_indices: bool = False,
    _random_samples: Tensor | None = None,
) -> Tensor | tuple[Tensor, Tensor]:
    """3-D fractional max pooling of (N, C, T, H, W) or (C, T, H, W) (PyTorch's regions).

    Args:
        input: (N, C, T, H, W) or (C, T, H, W), floating point.
        kernel_size: window size, int or (kT, kH, kW).
        output_size: int or (oT, oH, oW); oT + kT - 1 < T (likewise H, W; strictly less, as
            PyTorch's 3-D check).
        output_ratio: instead of output_size: a number or (rT, rH, rW), output size int(T * rT).
        return_indices: also return the int64 index (t * H + h) * W + w of each window's
            maximum (the first in (t, h, w) order; the last NaN if any).
        _random_samples: (N, C, 3) samples in [0, 1) of the input's dtype (for T, H, W; (1, C, 3)
            for unbatched input); None draws them with `nabla.rand`.

    Example:
        >>> F.fractional_max_pool3d(nb.randn(2, 3, 8, 9, 10), 2, output_size=(4, 5, 6)).shape
        (2, 3, 4, 5, 6)
    """
    values, indices = _fractional_max_pool(
        "fractional_max_pool3d", input, kernel_size, output_size, output_ratio, _random_samples, 3
    )
    return (values, indices) if return_indices else values


def fractional_max_pool2d_with_indices(
    input: Tensor,
    kernel_size: Any,
    output_size: Any = None,
    output_ratio: Any = None,
    return_indices: bool = False,
    _random_samples: Tensor | None = None,
) -> tuple[Tensor, Tensor]:
    """`fractional_max_pool2d(..., return_indices=True)`: always (values, int64 indices), as
    PyTorch's alias (its `return_indices` argument is ignored).

    Args:
        input, kernel_size, output_size, output_ratio, _random_samples: as `fractional_max_pool2d`.
        return_indices: ignored.

    Example:
        >>> F.fractional_max_pool2d_with_indices(nb.randn(1, 2, 8, 8), 2, 4)[1].shape
        (1, 2, 4, 4)
    """
    return fractional_max_pool2d(input, kernel_size, output_size, output_ratio, True, _random_samples)


def fractional_max_pool3d_with_indices(
    input: Tensor,
    kernel_size: Any,
    output_size: Any = None,
    output_ratio: Any = None,
    return_indices: bool = False,
    _random_samples: Tensor | None = None,
) -> tuple[Tensor, Tensor]:
    """`fractional_max_pool3d(..., return_indices=True)`: always (values, int64 indices), as
    PyTorch's alias.

    Args:
        input, kernel_size, output_size, output_ratio, _random_samples: as `fractional_max_pool3d`.
        return_indices: ignored.

    Example:
        >>> F.fractional_max_pool3d_with_indices(nb.randn(1, 2, 6, 6, 6), 2, 3)[1].shape
        (1, 2, 3, 3, 3)
    """
    return fractional_max_pool3d(input, kernel_size, output_size, output_ratio, True, _random_samples)
