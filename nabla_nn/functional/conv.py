"""Convolutions and padding with PyTorch's layouts and argument forms.

conv1d / conv2d / conv3d / conv_transpose2d / conv_transpose3d are nabla's primitives re-exported
as they are (they take PyTorch's arguments and `input=`; NCL / NCHW / NCDHW inputs, OIHW / OIDHW
weights, "same"/"valid" padding); conv_transpose1d runs the 2-D transposed convolution on a
height-1 image; conv_tbc is conv1d in the time-batch-channel layout; `pad` is nabla.pad with
PyTorch's `value=None` default.
"""

from __future__ import annotations

from typing import Any

import numpy as np

import nabla as nb
from nabla import Tensor, conv1d, conv2d, conv3d, conv_transpose2d, conv_transpose3d

__all__ = ["conv1d", "conv2d", "conv3d", "conv_tbc", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d", "pad"]


_ARGS = ("stride", "padding", "output_padding", "dilation")


def _one(v: Any, op: str, arg: str) -> int:
    """An int or a 1-tuple of ints (PyTorch's `_single`)."""
    if isinstance(v, tuple | list) and len(v) == 1:
        v = v[0]
    if isinstance(v, bool) or not isinstance(v, int | np.integer):
        raise TypeError(f"{op}: {arg} must be an int or a tuple of 1 int, got {v!r}")
    return int(v)


def conv_tbc(input: Tensor, weight: Tensor, bias: Tensor, pad: int = 0) -> Tensor:
    """1-D convolution in the time-batch-channel layout (PyTorch's `conv_tbc`, fairseq's):
    `out[t] = bias + sum_k input[t + k - pad] @ weight[k]`.

    Args:
        input: (T, B, C_in).
        weight: (K, C_in, C_out).
        bias: (C_out,).
        pad: zeros added at both ends of the time axis.

    Example:
        >>> F.conv_tbc(nb.ones(10, 2, 4), nb.ones(3, 4, 6), nb.zeros(6), pad=1).shape
        (10, 2, 6)
    """
    op = "conv_tbc"
    for t, arg in ((input, "input"), (weight, "weight"), (bias, "bias")):
        if not isinstance(t, Tensor):
            raise TypeError(f"{op}: {arg} must be a Tensor, got {type(t).__name__}")
    if input.ndim != 3 or weight.ndim != 3 or bias.ndim != 1:
        raise RuntimeError(
            f"{op}: expected input (T, B, C_in), weight (K, C_in, C_out) and bias (C_out,), got shapes "
            f"{tuple(input.shape)}, {tuple(weight.shape)} and {tuple(bias.shape)}"
        )
    if weight.shape[1] != input.shape[2] or bias.shape[0] != weight.shape[2]:
        raise RuntimeError(
            f"{op}: input has {input.shape[2]} channels, weight {tuple(weight.shape)} expects {weight.shape[1]} "
            f"in and {weight.shape[2]} out, bias has {bias.shape[0]}"
        )
    out = conv1d(nb.permute(input, (1, 2, 0)), nb.permute(weight, (2, 1, 0)), bias, padding=_one(pad, op, "pad"))
    return nb.permute(out, (2, 0, 1))


def conv_transpose1d(
    input: Tensor,
    weight: Tensor,
    bias: Tensor | None = None,
    stride: Any = 1,
    padding: Any = 0,
    output_padding: Any = 0,
    groups: int = 1,
    dilation: Any = 1,
) -> Tensor:
    """1-D transposed convolution of (N, C_in, L) or (C_in, L).

    Output length: (L - 1) * stride - 2 * padding + dilation * (k - 1) + output_padding + 1.

    Args:
        input: (N, C_in, L) or unbatched (C_in, L).
        weight: (C_in, C_out / groups, k).
        bias: optional (C_out,).
        stride, padding, output_padding, dilation: int or (int,).
        groups: number of blocked connections.

    Example:
        >>> F.conv_transpose1d(nb.ones(1, 4, 5), nb.ones(4, 2, 3), stride=2).shape
        (1, 2, 11)
    """
    op = "conv_transpose1d"
    if not isinstance(input, Tensor) or not isinstance(weight, Tensor):
        raise TypeError(f"{op}: input and weight must be Tensors")
    if input.ndim not in (2, 3):
        raise ValueError(f"{op}: expected a 2-D (unbatched) or 3-D (batched) input, got shape {input.shape}")
    if weight.ndim != 3:
        raise ValueError(f"{op}: weight must have rank 3 (C_in, C_out / groups, k), got shape {weight.shape}")
    s, p, q, d = (_one(v, op, a) for v, a in zip((stride, padding, output_padding, dilation), _ARGS, strict=True))
    channels = input.shape[-2]
    if channels != weight.shape[0]:  # (here, not in the 2-D op the call becomes, with its shapes)
        raise ValueError(
            f"{op}: expected input with {weight.shape[0]} channels (weight.shape[0]), got {channels} channels "
            f"(input shape {input.shape}, weight shape {weight.shape})"
        )
    out = nb.conv_transpose2d(
        nb.unsqueeze(input, -2), nb.unsqueeze(weight, -2), bias, (1, s), (0, p), (0, q), groups, (1, d)
    )
    return nb.squeeze(out, -2)


def pad(input: Tensor, pad: Any, mode: str = "constant", value: float | None = None) -> Tensor:
    """Pad `input`; `pad` lists (before, after) pairs starting from the LAST dimension.

    Args:
        input: a tensor.
        pad: (left_last, right_last, left_second_last, right_second_last, ...); negative crops.
        mode: "constant", "reflect", "replicate" or "circular".
        value: fill value for "constant" (None means 0).

    Example:
        >>> F.pad(nb.ones(2, 3), (1, 1)).shape
        (2, 5)
    """
    if mode == "constant":
        return nb.pad(input, pad, mode, 0.0 if value is None else value)
    return nb.pad(input, pad, mode, value)
