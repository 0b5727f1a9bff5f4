"""Sliding-block extraction and its adjoint with PyTorch's layouts: `unfold` (im2col) and `fold`
(col2im).

Both are one constant index map, built with NumPy from the shapes alone: entry k * L + l is the
flat position, in the zero-padded (H + 2 ph, W + 2 pw) plane, of element k = i * kw + j of block
l = a * n_w + b (blocks in row-major order). `unfold` gathers the padded plane at those positions
(`index_select`); `fold` scatter-adds the columns back (`Tensor.at[...].add`, the transpose of the
gather: overlapping blocks sum) and crops the padding. Gradients, vmap and compile come from those
ops: the gradient of `unfold` is `fold` and vice versa.
"""

from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np

import nabla as nb
from nabla import Tensor

__all__ = ["fold", "unfold"]


def _is_int(v: Any) -> bool:
    return isinstance(v, int | np.integer) and not isinstance(v, bool)


def _pair(value: Any, op: str, arg: str, minimum: int) -> tuple[int, int]:
    """An int or a sequence of 2 ints (each >= minimum) as a pair of ints."""
    items = (value, value) if _is_int(value) else value
    what = "positive" if minimum == 1 else "non-negative"
    if not isinstance(items, tuple | list) or len(items) != 2 or not all(_is_int(v) for v in items):
        raise TypeError(f"{op}: {arg} must be an int or a tuple of 2 ints, got {value!r}")
    if not all(v >= minimum for v in items):
        raise ValueError(f"{op}: {arg} must be {what}, got {value!r}")
    return int(items[0]), int(items[1])


def _params(
    op: str, kernel_size: Any, dilation: Any, padding: Any, stride: Any
) -> tuple[tuple[int, int], tuple[int, int], tuple[int, int], tuple[int, int]]:
    return (
        _pair(kernel_size, op, "kernel_size", 1),
        _pair(dilation, op, "dilation", 1),
        _pair(padding, op, "padding", 0),
        _pair(stride, op, "stride", 1),
    )


def _blocks(
    op: str, what: str, size: tuple[int, int], kernel: tuple, dilation: tuple, padding: tuple, stride: tuple
) -> tuple[int, int]:
    """The number of sliding blocks along H and W (PyTorch's formula); each must be >= 1."""
    blocks = tuple(
        (n + 2 * p - d * (k - 1) - 1) // s + 1
        for n, k, d, p, s in zip(size, kernel, dilation, padding, stride, strict=True)
    )
    if min(blocks) < 1:
        raise ValueError(
            f"{op}: {what} {tuple(size)} with kernel_size={kernel}, dilation={dilation}, padding={padding}, "
            f"stride={stride} gives {blocks} sliding blocks, but each count must be at least 1"
        )
    return blocks[0], blocks[1]


@functools.lru_cache(maxsize=256)
def _block_index(
    padded: tuple[int, int], blocks: tuple[int, int], kernel: tuple, dilation: tuple, stride: tuple
) -> np.ndarray:
    """(kh * kw * L,) int64 flat positions in the padded plane, k-major (see the module doc)."""
    (_, wp), (bh, bw), (kh, kw), (dh, dw), (sh, sw) = padded, blocks, kernel, dilation, stride
    rows = np.arange(kh)[:, None, None, None] * dh + np.arange(bh)[None, None, :, None] * sh
    cols = np.arange(kw)[None, :, None, None] * dw + np.arange(bw)[None, None, None, :] * sw
    index = (rows * wp + cols).reshape(-1).astype(np.int64)
    index.setflags(write=False)
    return index


def _check_input(input: Any, op: str, ranks: tuple[int, int], layout: str) -> None:
    if not isinstance(input, Tensor):
        raise TypeError(f"{op}: input must be a Tensor, got {type(input).__name__}")
    if input.ndim not in ranks or 0 in input.shape[1 if input.ndim == ranks[1] else 0 :]:
        raise ValueError(
            f"{op}: expected a {ranks[0]}-D (unbatched) or {ranks[1]}-D (batched) input {layout} with non-zero "
            f"dimensions other than the batch, got shape {input.shape}"
        )


def unfold(input: Tensor, kernel_size: Any, dilation: Any = 1, padding: Any = 0, stride: Any = 1) -> Tensor:
    """Extract sliding local blocks (im2col): (N, C, H, W) -> (N, C * kh * kw, L).

    Row c * kh * kw + i * kw + j of the result holds element (i, j) of every block of channel c;
    column l is block l, blocks in row-major order, L = n_h * n_w with
    n = (size + 2 * padding - dilation * (kernel - 1) - 1) // stride + 1 per dim.

    Args:
        input: (N, C, H, W) or unbatched (C, H, W).
        kernel_size: block size, int or (kh, kw).
        dilation: spacing between block elements, int or (dh, dw).
        padding: implicit zero padding on both sides, int or (ph, pw).
        stride: step between blocks, int or (sh, sw).

    Example:
        >>> F.unfold(nb.ones(2, 3, 4, 5), kernel_size=2).shape  # 3 * 2 * 2 rows, 3 * 4 blocks
        (2, 12, 12)
    """
    op = "unfold"
    _check_input(input, op, (3, 4), "(C, H, W) or (N, C, H, W)")
    kernel, dil, pad, stride = _params(op, kernel_size, dilation, padding, stride)
    *lead, c, h, w = input.shape
    blocks = _blocks(op, "input of spatial size", (h, w), kernel, dil, pad, stride)
    padded = (h + 2 * pad[0], w + 2 * pad[1])
    x = nb.pad(input, (pad[1], pad[1], pad[0], pad[0])) if pad != (0, 0) else input
    flat = nb.reshape(x, (*lead, c, padded[0] * padded[1]))
    cols = nb.index_select(flat, -1, nb.tensor(_block_index(padded, blocks, kernel, dil, stride)))
    return nb.reshape(cols, (*lead, c * kernel[0] * kernel[1], blocks[0] * blocks[1]))


def fold(
    input: Tensor, output_size: Any, kernel_size: Any, dilation: Any = 1, padding: Any = 0, stride: Any = 1
) -> Tensor:
    """Combine sliding local blocks into an image (col2im), summing where blocks overlap:
    (N, C * kh * kw, L) -> (N, C, H, W). The adjoint of `unfold` (not its inverse:
    `fold(unfold(x))` is x times the number of blocks covering each position).

    Args:
        input: (N, C * kh * kw, L) or unbatched (C * kh * kw, L), laid out as `unfold` returns it;
            L must equal the number of blocks that fit in `output_size`.
        output_size: the image's spatial size, int or (H, W).
        kernel_size: block size, int or (kh, kw).
        dilation: spacing between block elements, int or (dh, dw).
        padding: implicit zero padding on both sides (cropped from the result), int or (ph, pw).
        stride: step between blocks, int or (sh, sw).

    Example:
        >>> cols = F.unfold(nb.ones(1, 1, 3, 3), kernel_size=2)
        >>> F.fold(cols, (3, 3), kernel_size=2)[0, 0].tolist()  # how many blocks cover each pixel
        [[1.0, 2.0, 1.0], [2.0, 4.0, 2.0], [1.0, 2.0, 1.0]]
    """
    op = "fold"
    _check_input(input, op, (2, 3), "(C * kh * kw, L) or (N, C * kh * kw, L)")
    size = _pair(output_size, op, "output_size", 1)
    kernel, dil, pad, stride = _params(op, kernel_size, dilation, padding, stride)
    *lead, ck, length = input.shape
    k = kernel[0] * kernel[1]
    if ck % k:
        raise ValueError(
            f"{op}: input dimension {input.ndim - 2} (size {ck}) must be divisible by the product of "
            f"kernel_size {kernel} = {k}"
        )
    blocks = _blocks(op, "output_size", size, kernel, dil, pad, stride)
    if length != blocks[0] * blocks[1]:
        raise ValueError(
            f"{op}: given output_size={size}, kernel_size={kernel}, dilation={dil}, padding={pad}, "
            f"stride={stride}, input dimension {input.ndim - 1} must be the number of sliding blocks "
            f"{blocks[0]} * {blocks[1]} = {blocks[0] * blocks[1]}, got {length} (input shape {input.shape})"
        )
    c = ck // k
    padded = (size[0] + 2 * pad[0], size[1] + 2 * pad[1])
    cols = nb.reshape(input, (*lead, c, k * length))
    out = nb.zeros((*lead, c, math.prod(padded)), dtype=input.dtype)
    out = out.at[..., _block_index(padded, blocks, kernel, dil, stride)].add(cols)
    out = nb.reshape(out, (*lead, c, *padded))
    if pad != (0, 0):
        out = out[..., pad[0] : pad[0] + size[0], pad[1] : pad[1] + size[1]]
    return out
