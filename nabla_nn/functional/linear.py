"""Linear maps: `linear` (x @ W.T + b) and `bilinear` (x1^T A x2 + b), PyTorch's weight layouts."""

from __future__ import annotations

import math

import nabla as nb
from nabla import Tensor

from ._checks import check_float as _check
from ._checks import check_same_dtype as _same_dtype

__all__ = ["bilinear", "linear"]


def linear(input: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """y = input @ weight.T + bias.

    Args:
        input: (*, in_features).
        weight: (out_features, in_features), or (in_features,) for a single output (dropped dim).
        bias: optional (out_features,) (or anything that broadcasts with the output).

    Example:
        >>> F.linear(nb.ones(4, 3), nb.ones(2, 3), nb.zeros(2)).shape
        (4, 2)
    """
    _check(input, "linear", "input")
    _check(weight, "linear", "weight")
    if bias is not None:
        _check(bias, "linear", "bias")
    dtype = input._impl.dtype  # identity checks first: every Linear runs them each step
    if weight._impl.dtype is not dtype or (bias is not None and bias._impl.dtype is not dtype):
        _same_dtype("linear", input=input, weight=weight, bias=bias)
    return nb.linear(input, weight, bias)  # which checks the shapes


def bilinear(input1: Tensor, input2: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """y[..., o] = sum_ij input1[..., i] * weight[o, i, j] * input2[..., j] + bias[o].

    Args:
        input1: (*, in1_features).
        input2: (*, in2_features), the same leading dims as input1.
        weight: (out_features, in1_features, in2_features).
        bias: optional (out_features,).

    Example:
        >>> F.bilinear(nb.ones(4, 3), nb.ones(4, 5), nb.ones(2, 3, 5)).shape
        (4, 2)
    """
    for x, arg in ((input1, "input1"), (input2, "input2"), (weight, "weight")):
        _check(x, "bilinear", arg)
    _same_dtype("bilinear", input1=input1, input2=input2, weight=weight, bias=bias)
    if weight.ndim != 3:
        raise ValueError(
            f"bilinear: weight must be 3-D (out_features, in1_features, in2_features), got shape {weight.shape}"
        )
    if input1.ndim == 0 or input2.ndim == 0 or input1.shape[:-1] != input2.shape[:-1]:
        raise ValueError(
            f"bilinear: input1 and input2 must have the same leading dimensions, got shapes {input1.shape} "
            f"and {input2.shape}"
        )
    o, i, j = weight.shape
    if input1.shape[-1] != i or input2.shape[-1] != j:
        raise ValueError(
            f"bilinear: expected input1 (*, {i}) and input2 (*, {j}) for weight shape {weight.shape}, "
            f"got {input1.shape} and {input2.shape}"
        )
    lead = input1.shape[:-1]
    b = math.prod(lead)
    # (B, i) @ (i, o*j) -> (B, o, j), then contract j with input2: two matmul-sized steps.
    left = nb.matmul(nb.reshape(input1, (b, i)), nb.reshape(nb.permute(weight, (1, 0, 2)), (i, o * j)))
    out = nb.matmul(nb.reshape(left, (b, o, j)), nb.reshape(input2, (b, j, 1)))
    out = nb.reshape(out, (*lead, o))
    if bias is not None:
        _check(bias, "bilinear", "bias")
        out = out + bias
    return out
