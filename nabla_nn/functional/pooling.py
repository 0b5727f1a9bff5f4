"""Pooling with PyTorch's layouts (NCL / NCHW / NCDHW, unbatched CL / CHW / CDHW accepted): max,
average, adaptive average/max and power-average pooling.

1-D / 2-D avg pooling and 2-D adaptive average pooling are nabla's functions re-exported as they
are (they take PyTorch's arguments and `input=`); max pooling adds `return_indices`. The 1-D
adaptive forms run the 2-D ones on a height-1 image. The 3-D poolings are separable, so each runs
two of nabla's 2-D poolings (`_separable3d`): over every (H, W) plane, then over D with a (kD, 1)
window. Adaptive max pooling uses max pooling when the windows tile the input, and otherwise
reads the input at PyTorch's indices (below) with a gather, so its gradient, like max_pool's and
PyTorch's, goes to each window's first maximum only (a max reduction would split it among tied
maxima).

`return_indices=True` keeps those values (and their gradient) and adds PyTorch's indices,
computed without autodiff: a constant table of every window's input positions
(known from the shapes alone) gathers the windows, and reductions pick each window's first
maximum in scan order, or its last NaN, as PyTorch's kernels do. `max_unpool1d` / `2d` / `3d`
scatter values back to those indices; the `*_with_indices` aliases always return them.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

import nabla as nb
from nabla import Tensor, adaptive_avg_pool2d, avg_pool1d, avg_pool2d
from nabla.core.common import dtypes as _dt
from nabla.ops.creation import known_values
from nabla.ops.pooling import _pool_geometry  # the 1-D / 2-D poolings' argument checks and sizes

from ._checks import check_float, first_outside

__all__ = [
    "adaptive_avg_pool1d",
    "adaptive_avg_pool2d",
    "adaptive_avg_pool3d",
    "adaptive_max_pool1d",
    "adaptive_max_pool1d_with_indices",
    "adaptive_max_pool2d",
    "adaptive_max_pool2d_with_indices",
    "adaptive_max_pool3d",
    "adaptive_max_pool3d_with_indices",
    "avg_pool1d",
    "avg_pool2d",
    "avg_pool3d",
    "lp_pool1d",
    "lp_pool2d",
    "lp_pool3d",
    "max_pool1d",
    "max_pool1d_with_indices",
    "max_pool2d",
    "max_pool2d_with_indices",
    "max_pool3d",
    "max_pool3d_with_indices",
    "max_unpool1d",
    "max_unpool2d",
    "max_unpool3d",
]


def _window_table(dims: list[tuple[np.ndarray, int]]) -> np.ndarray:
    """Flat input index of every window element: (K, *out), k in PyTorch's scan order (row-major
    over the window), -1 where the element lies in padding or past the window's end.

    Args:
        dims: per spatial dim, `pos (k_d, o_d)`: the input position of window element k_d of output
            o_d (out of [0, n) or -1 where it does not exist), and the input size n.
    """
    nd = len(dims)
    table, valid = np.zeros((), np.int64), np.ones((), bool)
    for d, (pos, n) in enumerate(dims):
        shape = [1] * (2 * nd)
        shape[d], shape[nd + d] = pos.shape
        p = pos.reshape(shape)
        stride = math.prod(size for _, size in dims[d + 1 :])
        table, valid = table + p * stride, valid & (p >= 0) & (p < n)
    out = table.shape[nd:]
    return np.where(valid, table, -1).reshape(-1, *out)


def _window_argmax(x: Tensor, table: np.ndarray) -> Tensor:
    """int64 flat index (into the input plane) of each window's first maximum, or of its last
    NaN when it holds one: PyTorch's `val > max || isnan(val)` scan. Not differentiated.

    Args:
        x: (*lead, *spatial) input.
        table: `_window_table` of the pooling, (K, *out).
    """
    nd = table.ndim - 1
    lead, plane = x.shape[: x.ndim - nd], math.prod(x.shape[x.ndim - nd :])
    flat = nb.reshape(nb.detach(x), (*lead, plane))
    valid = table >= 0
    win = nb.index_select(flat, -1, nb.tensor(np.maximum(table, 0).reshape(-1)))
    win = nb.reshape(win, (*lead, *table.shape))
    axis = len(lead)
    ok = None if valid.all() else nb.tensor(valid)
    top = nb.max(win if ok is None else nb.where(ok, win, float("-inf")), axis=axis, keepdims=True)
    is_max, is_nan = nb.eq(win, top), nb.isnan(win)
    if ok is not None:  # positions past the window (gathered from index 0) never win
        is_max, is_nan = nb.logical_and(ok, is_max), nb.logical_and(ok, is_nan)
    return _first_max_or_last_nan(is_max, is_nan, nb.tensor(table), plane, axis)


def _first_max_or_last_nan(is_max: Tensor, is_nan: Tensor, idx: Tensor, plane: int, axis: int) -> Tensor:
    """The flat index `idx` (in [0, plane)) of the last NaN along `axis`, else of the first
    maximum: PyTorch's `val > max || isnan(val)` scan, when `idx` grows in scan order."""
    # One reduction for both rules: a NaN at i scores plane + i (the last wins), a maximum at i
    # scores plane - 1 - i (the first wins), anything else -1; every window has a real element.
    score = nb.where(is_nan, idx + plane, nb.where(is_max, (plane - 1) - idx, -1))
    best = nb.max(score, axis=axis)
    return nb.where(nb.greater_equal(best, plane), best - plane, (plane - 1) - best)


def _ntuple(value: Any, n: int) -> tuple[int, ...]:
    """An int or a sequence of n ints (already validated by the pooling op) as n ints."""
    return tuple(int(v) for v in value) if isinstance(value, tuple | list) else (int(value),) * n


def _max_pool_indices(input: Tensor, out: tuple, kernel_size: Any, stride: Any, padding: Any, dilation: Any) -> Tensor:
    """PyTorch's max_pool indices for an output of spatial size `out` (the pool checked the args)."""
    nd = len(out)
    kernel = _ntuple(kernel_size, nd)
    stride = kernel if stride is None or (isinstance(stride, tuple | list) and not stride) else _ntuple(stride, nd)
    pad, dil = _ntuple(padding, nd), _ntuple(dilation, nd)
    dims = []
    for n, o, k, s, p, d in zip(input.shape[-nd:], out, kernel, stride, pad, dil, strict=True):
        dims.append((np.arange(o)[None, :] * s + np.arange(k)[:, None] * d - p, n))
    return _window_argmax(input, _window_table(dims))


def max_pool1d(
    input: Tensor,
    kernel_size: Any,
    stride: Any = None,
    padding: Any = 0,
    dilation: Any = 1,
    ceil_mode: bool = False,
    return_indices: bool = False,
) -> Tensor | tuple[Tensor, Tensor]:
    """1-D max pooling of (N, C, L) or (C, L).

    Args:
        input: (N, C, L) or (C, L).
        kernel_size: window size (int or (int,)).
        stride: window step; None means kernel_size.
        padding: implicit -inf padding on both sides (at most half the kernel).
        dilation: spacing between window elements.
        ceil_mode: round the output length up instead of down.
        return_indices: also return the int64 index in [0, L) of each window's maximum (the
            first one; the last NaN if any), as `max_unpool1d` takes them.

    Example:
        >>> F.max_pool1d(nb.ones(1, 2, 8), 2).shape
        (1, 2, 4)
        >>> F.max_pool1d(nb.tensor([[1.0, 3.0, 2.0, 2.0]]), 2, return_indices=True)[1].tolist()
        [[1, 2]]
    """
    out = nb.max_pool1d(input, kernel_size, stride, padding, dilation, ceil_mode)
    if not return_indices:
        return out
    return out, _max_pool_indices(input, out.shape[-1:], kernel_size, stride, padding, dilation)


def max_pool2d(
    input: Tensor,
    kernel_size: Any,
    stride: Any = None,
    padding: Any = 0,
    dilation: Any = 1,
    ceil_mode: bool = False,
    return_indices: bool = False,
) -> Tensor | tuple[Tensor, Tensor]:
    """2-D max pooling of (N, C, H, W) or (C, H, W).

    Args:
        input: (N, C, H, W) or (C, H, W).
        kernel_size: int or (kh, kw).
        stride: int or (sh, sw); None means kernel_size.
        padding: int or (ph, pw) of -inf padding (at most half the kernel).
        dilation: int or (dh, dw).
        ceil_mode: round the output size up instead of down.
        return_indices: also return the int64 index h * W + w (into the unpadded input plane) of
            each window's maximum (the first in row-major order; the last NaN if any), as
            `max_unpool2d` takes them.

    Example:
        >>> F.max_pool2d(nb.ones(1, 3, 8, 8), 2).shape
        (1, 3, 4, 4)
        >>> F.max_pool2d(nb.tensor([[[1.0, 5.0], [5.0, 2.0]]]), 2, return_indices=True)[1].tolist()
        [[[1]]]
    """
    out = nb.max_pool2d(input, kernel_size, stride, padding, dilation, ceil_mode)
    if not return_indices:
        return out
    return out, _max_pool_indices(input, out.shape[-2:], kernel_size, stride, padding, dilation)


def _separable3d(
    input: Tensor, pool_hw: Callable[[Tensor], Tensor], pool_d: Callable[[Tensor], Tensor], out: tuple
) -> Tensor:
    """A separable 3-D pooling of (*lead, D, H, W) as two 2-D ones: `pool_hw` over every (H, W)
    plane of (M, D, H, W), then `pool_d` over D of the unbatched (M, D, OH * OW) with a (kD, 1)
    window; M is the leading dims flattened and `out` the 3-D output size.

    (H, W) goes first so that for max pooling the D pass picks the first plane holding the
    window's maximum and the (H, W) pass the first maximum in it: PyTorch's first maximum in
    (d, h, w) scan order (and its last NaN), where the gradient goes."""
    lead, (d, h, w) = input.shape[:-3], input.shape[-3:]
    m = math.prod(lead)
    planes = pool_hw(nb.reshape(input, (m, d, h, w)))
    return nb.reshape(pool_d(nb.reshape(planes, (m, d, out[1] * out[2]))), (*lead, *out))


def _check_input3d(input: Any, op: str) -> None:
    _check_rank(input, op, (4, 5))
    check_float(input, op)


def max_pool3d(
    input: Tensor,
    kernel_size: Any,
    stride: Any = None,
    padding: Any = 0,
    dilation: Any = 1,
    ceil_mode: bool = False,
    return_indices: bool = False,
) -> Tensor | tuple[Tensor, Tensor]:
    """3-D max pooling of (N, C, D, H, W) or (C, D, H, W).

    Args:
        input: (N, C, D, H, W) or (C, D, H, W).
        kernel_size: int or (kd, kh, kw).
        stride: int or (sd, sh, sw); None means kernel_size.
        padding: int or (pd, ph, pw) of -inf padding (at most half the effective kernel).
        dilation: int or (dd, dh, dw).
        ceil_mode: round the output size up instead of down.
        return_indices: also return the int64 index (d * H + h) * W + w (into the unpadded input
            volume) of each window's maximum (the first in (d, h, w) order; the last NaN if any),
            as `max_unpool3d` takes them.

    The gradient goes to each window's first maximum, as in PyTorch.

    Example:
        >>> F.max_pool3d(nb.ones(1, 2, 4, 6, 6), 2).shape
        (1, 2, 2, 3, 3)
    """
    op = "max_pool3d"
    _check_input3d(input, op)
    k, s, p, d, _, out = _pool_geometry(
        op, input.shape[-3:], kernel_size, stride, padding, dilation, bool(ceil_mode), 3, "effective"
    )
    res = _separable3d(
        input,
        lambda t: nb.max_pool2d(t, k[1:], s[1:], p[1:], d[1:], ceil_mode),
        lambda t: nb.max_pool2d(t, (k[0], 1), (s[0], 1), (p[0], 0), (d[0], 1), ceil_mode),
        out,
    )
    return (res, _max_pool_indices(input, out, k, s, p, d)) if return_indices else res


def max_pool1d_with_indices(
    input: Tensor,
    kernel_size: Any,
    stride: Any = None,
    padding: Any = 0,
    dilation: Any = 1,
    ceil_mode: bool = False,
    return_indices: bool = False,
) -> tuple[Tensor, Tensor]:
    """`max_pool1d(..., return_indices=True)`: always (values, int64 indices), as PyTorch's alias
    (its `return_indices` argument is ignored).

    Args:
        input, kernel_size, stride, padding, dilation, ceil_mode: as `max_pool1d`.
        return_indices: ignored.

    Example:
        >>> F.max_pool1d_with_indices(nb.tensor([[1.0, 3.0, 2.0, 2.0]]), 2)[1].tolist()
        [[1, 2]]
    """
    return max_pool1d(input, kernel_size, stride, padding, dilation, ceil_mode, return_indices=True)


def max_pool2d_with_indices(
    input: Tensor,
    kernel_size: Any,
    stride: Any = None,
    padding: Any = 0,
    dilation: Any = 1,
    ceil_mode: bool = False,
    return_indices: bool = False,
) -> tuple[Tensor, Tensor]:
    """`max_pool2d(..., return_indices=True)`: always (values, int64 indices), as PyTorch's alias.

    Args:
        input, kernel_size, stride, padding, dilation, ceil_mode: as `max_pool2d`.
        return_indices: ignored.

    Example:
        >>> F.max_pool2d_with_indices(nb.tensor([[[1.0, 5.0], [5.0, 2.0]]]), 2)[1].tolist()
        [[[1]]]
    """
    return max_pool2d(input, kernel_size, stride, padding, dilation, ceil_mode, return_indices=True)


def max_pool3d_with_indices(
    input: Tensor,
    kernel_size: Any,
    stride: Any = None,
    padding: Any = 0,
    dilation: Any = 1,
    ceil_mode: bool = False,
    return_indices: bool = False,
) -> tuple[Tensor, Tensor]:
    """`max_pool3d(..., return_indices=True)`: always (values, int64 indices), as PyTorch's alias.

    Args:
        input, kernel_size, stride, padding, dilation, ceil_mode: as `max_pool3d`.
        return_indices: ignored.

    Example:
        >>> F.max_pool3d_with_indices(nb.ones(1, 2, 4, 4, 4), 2)[1].shape
        (1, 2, 2, 2, 2)
    """
    return max_pool3d(input, kernel_size, stride, padding, dilation, ceil_mode, return_indices=True)


def _check_divisor(divisor_override: Any, op: str) -> None:
    if divisor_override is not None and (
        not isinstance(divisor_override, int | np.integer) or isinstance(divisor_override, bool) or divisor_override < 1
    ):
        raise ValueError(f"{op}: divisor_override must be a positive int, got {divisor_override!r}")


def avg_pool3d(
    input: Tensor,
    kernel_size: Any,
    stride: Any = None,
    padding: Any = 0,
    ceil_mode: bool = False,
    count_include_pad: bool = True,
    divisor_override: int | None = None,
) -> Tensor:
    """3-D average pooling of (N, C, D, H, W) or (C, D, H, W).

    Args:
        input: (N, C, D, H, W) or (C, D, H, W).
        kernel_size: int or (kd, kh, kw).
        stride: int or (sd, sh, sw); None means kernel_size.
        padding: int or (pd, ph, pw) of zero padding (at most half the kernel).
        ceil_mode: round the output size up instead of down.
        count_include_pad: count the zero padding in the divisor.
        divisor_override: divide every window sum by this positive int instead.

    Example:
        >>> F.avg_pool3d(nb.ones(1, 2, 4, 6, 6), 2).shape
        (1, 2, 2, 3, 3)
    """
    op = "avg_pool3d"
    _check_input3d(input, op)
    k, s, p, _, _, out = _pool_geometry(
        op, input.shape[-3:], kernel_size, stride, padding, 1, bool(ceil_mode), 3, "kernel"
    )
    _check_divisor(divisor_override, op)
    # PyTorch's divisor (the window clipped to the padded input, or its count of input elements)
    # is a product over the dims, so each pass divides by its dims' factor; an override divides once.
    d_override = None if divisor_override is None else 1
    return _separable3d(
        input,
        lambda t: nb.avg_pool2d(t, k[1:], s[1:], p[1:], ceil_mode, count_include_pad, divisor_override),
        lambda t: nb.avg_pool2d(t, (k[0], 1), (s[0], 1), (p[0], 0), ceil_mode, count_include_pad, d_override),
        out,
    )


def _check_rank(input: Any, op: str, ranks: tuple[int, int]) -> None:
    if not isinstance(input, Tensor):
        raise TypeError(f"{op}: input must be a Tensor, got {type(input).__name__}")
    if input.ndim not in ranks:
        raise ValueError(
            f"{op}: expected a {ranks[0]}-D (unbatched) or {ranks[1]}-D (batched) input, got shape {input.shape}"
        )


def _size1(output_size: Any, op: str) -> int:
    if isinstance(output_size, tuple | list) and len(output_size) == 1:
        output_size = output_size[0]
    if isinstance(output_size, bool) or not isinstance(output_size, int | np.integer) or output_size < 1:
        raise ValueError(f"{op}: output_size must be a positive int or a tuple of 1 int, got {output_size!r}")
    return int(output_size)


def _sizes(output_size: Any, shape: tuple, op: str) -> tuple[int, ...]:
    """An adaptive pooling's output size: an int for every dim, or one entry per dim, where None
    keeps that dim's input size."""
    n = len(shape)
    size = output_size if isinstance(output_size, tuple | list) else (output_size,) * n
    if len(size) != n:
        raise ValueError(f"{op}: output_size must be an int or a tuple of {n} ints (or None), got {output_size!r}")
    size = tuple(m if s is None else s for s, m in zip(size, shape, strict=True))
    if not all(isinstance(s, int | np.integer) and not isinstance(s, bool) and s >= 1 for s in size):
        raise ValueError(f"{op}: output_size must be positive ints, got {output_size!r}")
    return tuple(int(s) for s in size)


def adaptive_avg_pool1d(input: Tensor, output_size: Any) -> Tensor:
    """Average pooling of (N, C, L) or (C, L) to a fixed output length.

    Window i of L pooled to m spans [floor(i * L / m), ceil((i + 1) * L / m)), as PyTorch.

    Args:
        input: (N, C, L) or (C, L).
        output_size: the output length m (int or (int,)).

    Example:
        >>> F.adaptive_avg_pool1d(nb.ones(2, 3, 7), 3).shape
        (2, 3, 3)
    """
    _check_rank(input, "adaptive_avg_pool1d", (2, 3))
    m = _size1(output_size, "adaptive_avg_pool1d")
    return nb.squeeze(nb.adaptive_avg_pool2d(nb.unsqueeze(input, -2), (1, m)), -2)


def _check_nonempty(input: Tensor, nd: int, op: str) -> None:
    if 0 in input.shape[-nd:]:
        raise ValueError(f"{op}: input spatial size {tuple(input.shape[-nd:])} must be non-empty")


def adaptive_avg_pool3d(input: Tensor, output_size: Any) -> Tensor:
    """Average pooling of (N, C, D, H, W) or (C, D, H, W) to a fixed output size.

    Window i of a dim of size n pooled to m spans [floor(i * n / m), ceil((i + 1) * n / m)), as
    PyTorch; the windows are separable, so (H, W) and then D are pooled by `adaptive_avg_pool2d`.

    Args:
        input: (N, C, D, H, W) or (C, D, H, W).
        output_size: int or (od, oh, ow); a None entry keeps that input size.

    Example:
        >>> F.adaptive_avg_pool3d(nb.ones(2, 3, 5, 7, 4), (2, None, 3)).shape
        (2, 3, 2, 7, 3)
    """
    op = "adaptive_avg_pool3d"
    _check_input3d(input, op)
    _check_nonempty(input, 3, op)
    od, oh, ow = _sizes(output_size, input.shape[-3:], op)
    return _separable3d(
        input,
        lambda t: nb.adaptive_avg_pool2d(t, (oh, ow)),
        lambda t: nb.adaptive_avg_pool2d(t, (od, oh * ow)),
        (od, oh, ow),
    )


def _adaptive_positions(n: int, m: int) -> np.ndarray:
    """(K, m) input positions of PyTorch's adaptive windows [floor(i*n/m), ceil((i+1)*n/m)) of
    n pooled to m, K the widest window; -1 past a narrower window's end."""
    starts = np.arange(m) * n // m
    ends = -((-(np.arange(m) + 1) * n) // m)
    pos = starts[None, :] + np.arange(int((ends - starts).max()))[:, None]
    return np.where(pos < ends[None, :], pos, -1)


def _adaptive_max(
    op: str, input: Tensor, output_size: Any, return_indices: bool, nd: int, pool: Callable[..., Tensor]
) -> Tensor | tuple[Tensor, Tensor]:
    """Adaptive max pooling over the last `nd` dims; `pool(input, kernel, stride)`, the nd-D max
    pooling, serves windows that tile the input."""
    _check_rank(input, op, (nd + 1, nd + 2))
    check_float(input, op)
    _check_nonempty(input, nd, op)
    shape = input.shape[-nd:]
    size = _sizes(output_size, shape, op)
    table = _window_table([(_adaptive_positions(n, m), n) for n, m in zip(shape, size, strict=True)])
    if all(n % m == 0 for n, m in zip(shape, size, strict=True)):  # windows tile the input
        k = tuple(n // m for n, m in zip(shape, size, strict=True))
        out = pool(input, k, k)
        return (out, _window_argmax(input, table)) if return_indices else out
    # Read the input at the first maxima: its gradient goes to them alone (as max_pool's and
    # PyTorch's), where a max reduction would split it among tied maxima.
    indices, lead = _window_argmax(input, table), input.shape[:-nd]
    flat = nb.gather(nb.reshape(input, (*lead, math.prod(shape))), -1, nb.reshape(indices, (*lead, math.prod(size))))
    out = nb.reshape(flat, (*lead, *size))
    return (out, indices) if return_indices else out


def adaptive_max_pool2d(
    input: Tensor, output_size: Any, return_indices: bool = False
) -> Tensor | tuple[Tensor, Tensor]:
    """Max pooling of (N, C, H, W) or (C, H, W) to a fixed output size (PyTorch's windows).

    Args:
        input: (N, C, H, W) or (C, H, W).
        output_size: int or (oh, ow); a None entry keeps that input size.
        return_indices: also return the int64 index h * W + w of each window's maximum (the first
            in row-major order; the last NaN if any).

    Example:
        >>> F.adaptive_max_pool2d(nb.ones(2, 3, 7, 5), 2).shape
        (2, 3, 2, 2)
    """
    return _adaptive_max("adaptive_max_pool2d", input, output_size, return_indices, 2, nb.max_pool2d)


def adaptive_max_pool3d(
    input: Tensor, output_size: Any, return_indices: bool = False
) -> Tensor | tuple[Tensor, Tensor]:
    """Max pooling of (N, C, D, H, W) or (C, D, H, W) to a fixed output size (PyTorch's windows).

    Args:
        input: (N, C, D, H, W) or (C, D, H, W).
        output_size: int or (od, oh, ow); a None entry keeps that input size.
        return_indices: also return the int64 index (d * H + h) * W + w of each window's maximum
            (the first in (d, h, w) order; the last NaN if any).

    Example:
        >>> F.adaptive_max_pool3d(nb.ones(2, 3, 5, 7, 4), (2, None, 3)).shape
        (2, 3, 2, 7, 3)
    """
    return _adaptive_max("adaptive_max_pool3d", input, output_size, return_indices, 3, max_pool3d)


def adaptive_max_pool1d(
    input: Tensor, output_size: Any, return_indices: bool = False
) -> Tensor | tuple[Tensor, Tensor]:
    """Max pooling of (N, C, L) or (C, L) to a fixed output length (PyTorch's windows).

    Args:
        input: (N, C, L) or (C, L).
        output_size: the output length (int or (int,)).
        return_indices: also return the int64 index in [0, L) of each window's maximum (the
            first; the last NaN if any).

    Example:
        >>> F.adaptive_max_pool1d(nb.ones(2, 3, 7), 3).shape
        (2, 3, 3)
    """
    op = "adaptive_max_pool1d"
    _check_rank(input, op, (2, 3))
    m = _size1(output_size, op)
    res = adaptive_max_pool2d(nb.unsqueeze(input, -2), (1, m), return_indices)
    if not return_indices:
        return nb.squeeze(res, -2)
    return nb.squeeze(res[0], -2), nb.squeeze(res[1], -2)  # on a height-1 plane h * W + w is w


def adaptive_max_pool1d_with_indices(
    input: Tensor, output_size: Any, return_indices: bool = False
) -> tuple[Tensor, Tensor]:
    """`adaptive_max_pool1d(..., return_indices=True)`: always (values, int64 indices), as
    PyTorch's alias (its `return_indices` argument is ignored).

    Args:
        input, output_size: as `adaptive_max_pool1d`.
        return_indices: ignored.

    Example:
        >>> F.adaptive_max_pool1d_with_indices(nb.tensor([[1.0, 3.0, 2.0]]), 1)[1].tolist()
        [[1]]
    """
    return adaptive_max_pool1d(input, output_size, return_indices=True)


def adaptive_max_pool2d_with_indices(
    input: Tensor, output_size: Any, return_indices: bool = False
) -> tuple[Tensor, Tensor]:
    """`adaptive_max_pool2d(..., return_indices=True)`: always (values, int64 indices), as
    PyTorch's alias.

    Args:
        input, output_size: as `adaptive_max_pool2d`.
        return_indices: ignored.

    Example:
        >>> F.adaptive_max_pool2d_with_indices(nb.tensor([[[1.0, 5.0], [5.0, 2.0]]]), 1)[1].tolist()
        [[[1]]]
    """
    return adaptive_max_pool2d(input, output_size, return_indices=True)


def adaptive_max_pool3d_with_indices(
    input: Tensor, output_size: Any, return_indices: bool = False
) -> tuple[Tensor, Tensor]:
    """`adaptive_max_pool3d(..., return_indices=True)`: always (values, int64 indices), as
    PyTorch's alias.

    Args:
        input, output_size: as `adaptive_max_pool3d`.
        return_indices: ignored.

    Example:
        >>> F.adaptive_max_pool3d_with_indices(nb.ones(1, 4, 4, 4), 2)[1].shape
        (1, 2, 2, 2)
    """
    return adaptive_max_pool3d(input, output_size, return_indices=True)


def _unpool_ints(value: Any, n: int, op: str, arg: str, minimum: int) -> tuple[int, ...]:
    items = (value,) * n if isinstance(value, int | np.integer) and not isinstance(value, bool) else value
    if (
        not isinstance(items, tuple | list)
        or len(items) != n
        or not all(isinstance(v, int | np.integer) and not isinstance(v, bool) and v >= minimum for v in items)
    ):
        what = "positive" if minimum == 1 else "non-negative"
        raise ValueError(f"{op}: {arg} must be a {what} int or a tuple of {n} such ints, got {value!r}")
    return tuple(int(v) for v in items)


def _max_unpool(
    op: str, input: Tensor, indices: Tensor, kernel_size: Any, stride: Any, padding: Any, output_size: Any, nd: int
) -> Tensor:
    _check_rank(input, op, (nd + 1, nd + 2))
    if not isinstance(indices, Tensor) or not _dt.is_integer(indices.dtype):
        got = indices.dtype.name if isinstance(indices, Tensor) else type(indices).__name__
        raise TypeError(f"{op}: indices must be an integer Tensor (as max_pool returns them), got {got}")
    if tuple(indices.shape) != tuple(input.shape):
        raise ValueError(f"{op}: indices must have the input's shape {input.shape}, got {indices.shape}")
    kernel = _unpool_ints(kernel_size, nd, op, "kernel_size", 1)
    stride = kernel if stride is None else _unpool_ints(stride, nd, op, "stride", 1)
    pad = _unpool_ints(padding, nd, op, "padding", 0)
    spatial = input.shape[-nd:]
    default = tuple((n - 1) * s + k - 2 * p for n, s, k, p in zip(spatial, stride, kernel, pad, strict=True))
    if output_size is None:
        size = default
    else:
        size = tuple(output_size)
        if len(size) == nd + 2:  # a full (N, C, *spatial) size, as PyTorch accepts
            size = size[2:]
        if len(size) != nd:
            raise ValueError(
                f"{op}: output_size should be a sequence containing {nd} or {nd + 2} elements, "
                f"but it has a length of '{len(size)}'"
            )
        for d, (o, n, s) in enumerate(zip(size, default, stride, strict=True)):
            if not n - s < o < n + s:  # PyTorch's bound: the sizes a pooling could have come from
                raise ValueError(
                    f'{op}: invalid output_size "{output_size}" (dim {d} must be between {n - s} and {n + s})'
                )
        size = tuple(int(o) for o in size)
    values = known_values(indices)  # (checked when the host has them, as other index arguments)
    bad = None if values is None else first_outside(values, math.prod(size))
    if bad is not None:
        volume = "x".join(str(s) for s in size)
        raise IndexError(f"{op}: found an invalid max index {bad} in indices (output volumes are of size {volume})")
    lead = input.shape[:-nd]
    flat = (*lead, math.prod(spatial))
    out = nb.zeros((*lead, math.prod(size)), dtype=input.dtype)
    out = nb.scatter(out, -1, nb.reshape(indices, flat), nb.reshape(input, flat))
    return nb.reshape(out, (*lead, *size))


def max_unpool1d(
    input: Tensor,
    indices: Tensor,
    kernel_size: Any,
    stride: Any = None,
    padding: Any = 0,
    output_size: Any = None,
) -> Tensor:
    """Partial inverse of `max_pool1d`: each value goes to its index, every other position is 0.

    Args:
        input: (N, C, L_in) or (C, L_in) pooled values.
        indices: the int64 indices `max_pool1d(..., return_indices=True)` returned, input's shape.
        kernel_size, stride, padding: those of the pooling (stride None means kernel_size).
        output_size: the length to restore (a pooling's input length is ambiguous with stride > 1):
            (L,) or (N, C, L); default (L_in - 1) * stride - 2 * padding + kernel_size.

    Indices must lie in [0, L_out); duplicates (overlapping windows) carry equal values.

    Example:
        >>> out, idx = F.max_pool1d(nb.tensor([[1.0, 3.0, 2.0, 2.0]]), 2, return_indices=True)
        >>> F.max_unpool1d(out, idx, 2).tolist()
        [[0.0, 3.0, 2.0, 0.0]]
    """
    return _max_unpool("max_unpool1d", input, indices, kernel_size, stride, padding, output_size, 1)


def max_unpool2d(
    input: Tensor,
    indices: Tensor,
    kernel_size: Any,
    stride: Any = None,
    padding: Any = 0,
    output_size: Any = None,
) -> Tensor:
    """Partial inverse of `max_pool2d`: each value goes to its flat index h * W + w, every other
    position is 0.

    Args:
        input: (N, C, H_in, W_in) or (C, H_in, W_in) pooled values.
        indices: the int64 indices `max_pool2d(..., return_indices=True)` returned, input's shape.
        kernel_size, stride, padding: those of the pooling, ints or pairs (stride None means
            kernel_size).
        output_size: the (H, W) or (N, C, H, W) size to restore; default per dim
            (in - 1) * stride - 2 * padding + kernel_size.

    Indices must lie in [0, H * W); duplicates (overlapping windows) carry equal values.

    Example:
        >>> out, idx = F.max_pool2d(nb.tensor([[[1.0, 5.0], [5.0, 2.0]]]), 2, return_indices=True)
        >>> F.max_unpool2d(out, idx, 2).tolist()
        [[[0.0, 5.0], [0.0, 0.0]]]
    """
    return _max_unpool("max_unpool2d", input, indices, kernel_size, stride, padding, output_size, 2)


def max_unpool3d(
    input: Tensor,
    indices: Tensor,
    kernel_size: Any,
    stride: Any = None,
    padding: Any = 0,
    output_size: Any = None,
) -> Tensor:
    """Partial inverse of `max_pool3d`: each value goes to its flat index (d * H + h) * W + w,
    every other position is 0.

    Args:
        input: (N, C, D_in, H_in, W_in) or (C, D_in, H_in, W_in) pooled values.
        indices: the int64 indices `max_pool3d(..., return_indices=True)` returned, input's shape.
        kernel_size, stride, padding: those of the pooling, ints or triples (stride None means
            kernel_size).
        output_size: the (D, H, W) or (N, C, D, H, W) size to restore; default per dim
            (in - 1) * stride - 2 * padding + kernel_size.

    Indices must lie in [0, D * H * W); duplicates (overlapping windows) carry equal values.

    Example:
        >>> out, idx = F.max_pool3d(nb.ones(1, 4, 4, 4), 2, return_indices=True)
        >>> F.max_unpool3d(out, idx, 2).shape
        (1, 4, 4, 4)
    """
    return _max_unpool("max_unpool3d", input, indices, kernel_size, stride, padding, output_size, 3)


def _norm_type(norm_type: Any, op: str) -> float:
    if isinstance(norm_type, bool) or not isinstance(norm_type, int | float | np.integer | np.floating):
        raise TypeError(f"{op}: norm_type must be a number, got {norm_type!r}")
    if norm_type == 0:
        raise ValueError(f"{op}: norm_type must be nonzero, got {norm_type}")
    return float(norm_type)


def _lp_pool(
    op: str,
    input: Tensor,
    norm_type: Any,
    kernel_size: Any,
    stride: Any,
    ceil_mode: bool,
    nd: int,
    max_pool: Callable[..., Tensor],
    avg_pool: Callable[..., Tensor],
) -> Tensor:
    """PyTorch's lp_poolNd over nabla's nd-D max / avg pooling (which check the arguments)."""
    p = _norm_type(norm_type, op)
    if math.isinf(p):  # max_pool(|x|) for inf, -max_pool(-|x|) (the smallest |x|) for -inf
        sign = 1.0 if p > 0 else -1.0
        return sign * max_pool(sign * nb.abs(input), kernel_size, stride, 0, 1, ceil_mode)
    out = avg_pool(nb.pow(input, p), kernel_size, stride, 0, ceil_mode)
    window = math.prod(_ntuple(kernel_size, nd))
    # PyTorch's formula: sign(out) * relu(|out|) keeps its gradient conventions at 0.
    return nb.pow(nb.sign(out) * nb.relu(nb.abs(out)) * float(window), 1.0 / p)


def lp_pool1d(input: Tensor, norm_type: float, kernel_size: int, stride: Any = None, ceil_mode: bool = False) -> Tensor:
    """Power-average pooling: (sum over each window of x**p) ** (1/p) on (N, C, L) or (C, L).

    Args:
        input: (N, C, L) or (C, L).
        norm_type: the exponent p (nonzero); inf pools max |x|, -inf min |x| (as PyTorch).
        kernel_size: window size.
        stride: window step; None means kernel_size.
        ceil_mode: round the output length up instead of down.

    Example:
        >>> F.lp_pool1d(nb.ones(1, 2, 8), 2, 2).shape
        (1, 2, 4)
    """
    return _lp_pool("lp_pool1d", input, norm_type, kernel_size, stride, ceil_mode, 1, nb.max_pool1d, nb.avg_pool1d)


def lp_pool2d(input: Tensor, norm_type: float, kernel_size: Any, stride: Any = None, ceil_mode: bool = False) -> Tensor:
    """Power-average pooling: (sum over each window of x**p) ** (1/p) on (N, C, H, W) or (C, H, W).

    Args:
        input: (N, C, H, W) or (C, H, W).
        norm_type: the exponent p (nonzero); inf pools max |x|, -inf min |x| (as PyTorch).
        kernel_size: int or (kh, kw).
        stride: int or (sh, sw); None means kernel_size.
        ceil_mode: round the output size up instead of down.

    Example:
        >>> F.lp_pool2d(nb.ones(1, 2, 8, 8), 2, 2).shape
        (1, 2, 4, 4)
    """
    return _lp_pool("lp_pool2d", input, norm_type, kernel_size, stride, ceil_mode, 2, nb.max_pool2d, nb.avg_pool2d)


def lp_pool3d(input: Tensor, norm_type: float, kernel_size: Any, stride: Any = None, ceil_mode: bool = False) -> Tensor:
    """Power-average pooling: (sum over each window of x**p) ** (1/p) on (N, C, D, H, W) or
    (C, D, H, W).

    Args:
        input: (N, C, D, H, W) or (C, D, H, W).
        norm_type: the exponent p (nonzero); inf pools max |x|, -inf min |x| (as PyTorch).
        kernel_size: int or (kd, kh, kw).
        stride: int or (sd, sh, sw); None means kernel_size.
        ceil_mode: round the output size up instead of down.

    Example:
        >>> F.lp_pool3d(nb.ones(1, 2, 4, 8, 8), 2, 2).shape
        (1, 2, 2, 4, 4)
    """
    return _lp_pool("lp_pool3d", input, norm_type, kernel_size, stride, ceil_mode, 3, max_pool3d, avg_pool3d)
