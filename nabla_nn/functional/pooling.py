"""Pooling with PyTorch's layouts (NCL / NCHW, unbatched CL / CHW accepted): max, average,
adaptive average/max and power-average pooling.

avg pooling and 2-D adaptive average pooling are nabla's functions re-exported as they are
(they take PyTorch's arguments and `input=`); max pooling adds `return_indices`. The 1-D adaptive forms
run the 2-D ones on a height-1 image. Adaptive max pooling uses `max_pool2d` when the windows
tile the input, and otherwise the maximum of each window per dimension (a rectangle's maximum is
the maximum over rows of the row maxima), so it needs out_h + out_w slices, not out_h * out_w.
`return_indices=True` is not supported (nabla has no index-returning pooling yet).
"""

from __future__ import annotations

from typing import Any

import numpy as np

import nabla as nb
from nabla import Tensor, adaptive_avg_pool2d, avg_pool1d, avg_pool2d

__all__ = [
    "adaptive_avg_pool1d",
    "adaptive_avg_pool2d",
    "adaptive_max_pool1d",
    "adaptive_max_pool2d",
    "avg_pool1d",
    "avg_pool2d",
    "lp_pool1d",
    "lp_pool2d",
    "max_pool1d",
    "max_pool2d",
]


def _no_indices(return_indices: bool, op: str) -> None:
    if return_indices:
        raise NotImplementedError(f"{op}: return_indices=True is not supported; pool without indices")


def max_pool1d(
    input: Tensor,
    kernel_size: Any,
    stride: Any = None,
    padding: Any = 0,
    dilation: Any = 1,
    ceil_mode: bool = False,
    return_indices: bool = False,
) -> Tensor:
    """1-D max pooling of (N, C, L) or (C, L).

    Args:
        input: (N, C, L) or (C, L).
        kernel_size: window size (int or (int,)).
        stride: window step; None means kernel_size.
        padding: implicit -inf padding on both sides (at most half the kernel).
        dilation: spacing between window elements.
        ceil_mode: round the output length up instead of down.
        return_indices: not supported (must be False).

    Example:
        >>> F.max_pool1d(nb.ones(1, 2, 8), 2).shape
        (1, 2, 4)
    """
    _no_indices(return_indices, "max_pool1d")
    return nb.max_pool1d(input, kernel_size, stride, padding, dilation, ceil_mode)


def max_pool2d(
    input: Tensor,
    kernel_size: Any,
    stride: Any = None,
    padding: Any = 0,
    dilation: Any = 1,
    ceil_mode: bool = False,
    return_indices: bool = False,
) -> Tensor:
    """2-D max pooling of (N, C, H, W) or (C, H, W).

    Args:
        input: (N, C, H, W) or (C, H, W).
        kernel_size: int or (kh, kw).
        stride: int or (sh, sw); None means kernel_size.
        padding: int or (ph, pw) of -inf padding (at most half the kernel).
        dilation: int or (dh, dw).
        ceil_mode: round the output size up instead of down.
        return_indices: not supported (must be False).

    Example:
        >>> F.max_pool2d(nb.ones(1, 3, 8, 8), 2).shape
        (1, 3, 4, 4)
    """
    _no_indices(return_indices, "max_pool2d")
    return nb.max_pool2d(input, kernel_size, stride, padding, dilation, ceil_mode)


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


def _size2(output_size: Any, shape: tuple, op: str) -> tuple[int, int]:
    size = output_size if isinstance(output_size, tuple | list) else (output_size, output_size)
    if len(size) != 2:
        raise ValueError(f"{op}: output_size must be an int or a tuple of 2 ints (or None), got {output_size!r}")
    size = tuple(n if s is None else s for s, n in zip(size, shape, strict=True))
    if not all(isinstance(s, int | np.integer) and not isinstance(s, bool) and s >= 1 for s in size):
        raise ValueError(f"{op}: output_size must be positive ints, got {output_size!r}")
    return int(size[0]), int(size[1])


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


def _adaptive_max_axis(x: Tensor, axis: int, m: int) -> Tensor:
    """Maximum of each adaptive window along one (negative) axis."""
    n = x.shape[axis]
    if n == m:
        return x
    parts = []
    for i in range(m):
        start, end = (i * n) // m, -((-(i + 1) * n) // m)
        index = [slice(None)] * x.ndim
        index[axis] = slice(start, end)
        parts.append(nb.max(x[tuple(index)], axis=axis, keepdims=True))
    return parts[0] if m == 1 else nb.concatenate(parts, axis=axis)


def adaptive_max_pool2d(input: Tensor, output_size: Any, return_indices: bool = False) -> Tensor:
    """Max pooling of (N, C, H, W) or (C, H, W) to a fixed output size (PyTorch's windows).

    Args:
        input: (N, C, H, W) or (C, H, W).
        output_size: int or (oh, ow); a None entry keeps that input size.
        return_indices: not supported (must be False).

    Example:
        >>> F.adaptive_max_pool2d(nb.ones(2, 3, 7, 5), 2).shape
        (2, 3, 2, 2)
    """
    op = "adaptive_max_pool2d"
    _no_indices(return_indices, op)
    _check_rank(input, op, (3, 4))
    (h, w), (oh, ow) = input.shape[-2:], _size2(output_size, input.shape[-2:], op)
    if 0 in (h, w):
        raise ValueError(f"{op}: input spatial size {(h, w)} must be non-empty")
    if h % oh == 0 and w % ow == 0:  # windows tile the input
        k = (h // oh, w // ow)
        return nb.max_pool2d(input, k, k)
    return _adaptive_max_axis(_adaptive_max_axis(input, -1, ow), -2, oh)


def adaptive_max_pool1d(input: Tensor, output_size: Any, return_indices: bool = False) -> Tensor:
    """Max pooling of (N, C, L) or (C, L) to a fixed output length (PyTorch's windows).

    Args:
        input: (N, C, L) or (C, L).
        output_size: the output length (int or (int,)).
        return_indices: not supported (must be False).

    Example:
        >>> F.adaptive_max_pool1d(nb.ones(2, 3, 7), 3).shape
        (2, 3, 3)
    """
    op = "adaptive_max_pool1d"
    _no_indices(return_indices, op)
    _check_rank(input, op, (2, 3))
    m = _size1(output_size, op)
    return nb.squeeze(adaptive_max_pool2d(nb.unsqueeze(input, -2), (1, m)), -2)


def _lp(out: Tensor, norm_type: float, window: int) -> Tensor:
    # PyTorch's formula: sign(out) * relu(|out|) keeps its gradient conventions at 0.
    return nb.pow(nb.sign(out) * nb.relu(nb.abs(out)) * float(window), 1.0 / norm_type)


def _norm_type(norm_type: Any, op: str) -> float:
    if isinstance(norm_type, bool) or not isinstance(norm_type, int | float | np.integer | np.floating):
        raise TypeError(f"{op}: norm_type must be a number, got {norm_type!r}")
    if norm_type == 0:
        raise ValueError(f"{op}: norm_type must be nonzero, got {norm_type}")
    return float(norm_type)


def lp_pool1d(input: Tensor, norm_type: float, kernel_size: int, stride: Any = None, ceil_mode: bool = False) -> Tensor:
    """Power-average pooling: (sum over each window of x**p) ** (1/p) on (N, C, L) or (C, L).

    Args:
        input: (N, C, L) or (C, L).
        norm_type: the exponent p (nonzero).
        kernel_size: window size.
        stride: window step; None means kernel_size.
        ceil_mode: round the output length up instead of down.

    Example:
        >>> F.lp_pool1d(nb.ones(1, 2, 8), 2, 2).shape
        (1, 2, 4)
    """
    p = _norm_type(norm_type, "lp_pool1d")
    k = int(kernel_size[0]) if isinstance(kernel_size, tuple | list) else int(kernel_size)
    out = nb.avg_pool1d(nb.pow(input, p), kernel_size, stride, 0, ceil_mode)
    return _lp(out, p, k)


def lp_pool2d(input: Tensor, norm_type: float, kernel_size: Any, stride: Any = None, ceil_mode: bool = False) -> Tensor:
    """Power-average pooling: (sum over each window of x**p) ** (1/p) on (N, C, H, W) or (C, H, W).

    Args:
        input: (N, C, H, W) or (C, H, W).
        norm_type: the exponent p (nonzero).
        kernel_size: int or (kh, kw).
        stride: int or (sh, sw); None means kernel_size.
        ceil_mode: round the output size up instead of down.

    Example:
        >>> F.lp_pool2d(nb.ones(1, 2, 8, 8), 2, 2).shape
        (1, 2, 4, 4)
    """
    p = _norm_type(norm_type, "lp_pool2d")
    kh, kw = kernel_size if isinstance(kernel_size, tuple | list) else (kernel_size, kernel_size)
    out = nb.avg_pool2d(nb.pow(input, p), kernel_size, stride, 0, ceil_mode)
    return _lp(out, p, int(kh) * int(kw))
