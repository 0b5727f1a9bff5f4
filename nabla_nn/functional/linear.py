"""Linear maps: `linear` (x @ W.T + b) and `bilinear` (x1^T A x2 + b), PyTorch's weight layouts, and
`linear_cross_entropy` (a linear map's logits scored by cross entropy) and `grouped_mm` (one matmul
per group of rows or columns: a Mixture-of-Experts layer)."""

from __future__ import annotations

import math
from typing import Any

import nabla as nb
from nabla import Tensor
from nabla.ops.linalg import raw_matmul

from ._checks import check_float as _check
from ._checks import check_same_dtype as _same_dtype
from .loss import cross_entropy

__all__ = ["bilinear", "grouped_mm", "linear", "linear_cross_entropy"]


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
    # (raw: torch's autocast keeps bilinear in float32)
    left = raw_matmul(nb.reshape(input1, (b, i)), nb.reshape(nb.permute(weight, (1, 0, 2)), (i, o * j)))
    out = raw_matmul(nb.reshape(left, (b, o, j)), nb.reshape(input2, (b, j, 1)))
    out = nb.reshape(out, (*lead, o))
    if bias is not None:
        _check(bias, "bilinear", "bias")
        out = out + bias
    return out


def linear_cross_entropy(
    input: Tensor,
    linear_weight: Tensor,
    target: Tensor,
    *,
    linear_bias: Tensor | None = None,
    weight: Tensor | None = None,
    reduction: str = "mean",
    ignore_index: int | None = None,
    label_smoothing: float = 0.0,
    options: Any = None,
) -> Tensor:
    """`cross_entropy(linear(input, linear_weight, linear_bias), target, ...)` (PyTorch's).

    Args:
        input: (N, in_features) or (in_features,).
        linear_weight: (C, in_features), or (C, d1, ..., dK, in_features) for a K-dimensional
            loss (batched input only): the logits are then (N, C, d1, ..., dK).
        target: class indices (N,) / (N, d1, ...) or class probabilities of the logits' shape.
        linear_bias: (C,) or (C, d1, ..., dK).
        weight, reduction, label_smoothing: as `cross_entropy`.
        ignore_index: as `cross_entropy` (None: -100); not with probability targets.
        options: PyTorch's chunking options (`LinearCrossEntropyOptions`), a memory saving for
            its eager kernels; accepted and unused: the whole step is one compiled MAX graph.

    Example:
        >>> F.linear_cross_entropy(nb.randn(4, 8), nb.randn(10, 8), nb.tensor([1, 0, 9, 3])).shape
        ()
    """
    if not 1 <= input.ndim <= 2:
        raise RuntimeError(f"linear_cross_entropy: expected input with dimensionality 1 or 2, got {input.ndim}")
    if linear_weight.ndim < 2:
        raise RuntimeError(
            f"linear_cross_entropy: expected linear_weight with dimensionality at least 2, got {linear_weight.ndim}"
        )
    batch, n_in = input.shape[:-1], input.shape[-1]
    if n_in != linear_weight.shape[-1]:
        raise RuntimeError(
            "linear_cross_entropy: expected equal input and linear_weight last dimensions (in_features), "
            f"got {n_in} and {linear_weight.shape[-1]}"
        )
    classes, extra = linear_weight.shape[0], tuple(linear_weight.shape[1:-1])
    if linear_bias is not None and tuple(linear_bias.shape) != (classes, *extra):
        raise RuntimeError(
            f"linear_cross_entropy: expected linear_bias shape {(classes, *extra)}, got {tuple(linear_bias.shape)}"
        )
    if extra and not batch:
        raise RuntimeError(
            f"linear_cross_entropy: K-dimensional loss defined by linear_weight shape {tuple(linear_weight.shape)} "
            f"requires batched input, (N, {n_in}), got unbatched input with shape {tuple(input.shape)}"
        )
    logits_shape = (*batch, classes, *extra)
    if tuple(target.shape) == logits_shape and ignore_index is not None:
        raise RuntimeError("linear_cross_entropy: ignore_index cannot be specified when target contains probabilities")
    flat = math.prod(extra) * classes
    w = nb.reshape(linear_weight, (flat, n_in)) if extra else linear_weight
    b = nb.reshape(linear_bias, (flat,)) if extra and linear_bias is not None else linear_bias
    logits = nb.reshape(linear(input, w, b), logits_shape)
    return cross_entropy(
        logits,
        target,
        weight=weight,
        reduction=reduction,
        ignore_index=-100 if ignore_index is None else ignore_index,
        label_smoothing=label_smoothing,
    )


def grouped_mm(
    mat_a: Tensor, mat_b: Tensor, *, offs: Tensor | None = None, bias: Tensor | None = None, out_dtype: Any = None
) -> Tensor:
    """PyTorch's grouped matrix multiply (Mixture-of-Experts layers): one product per group,
    the groups a jagged dimension delimited by `offs` (group g ends at offs[g]) or a leading
    group dimension.

    - 2-D @ 3-D (G, K, N), `offs` over mat_a's rows: rows of group g times mat_b[g] -> (M, N).
    - 3-D (G, M, K) @ 2-D (K, N), `offs` over mat_b's columns: mat_a[g] times group g's
      columns -> (M, N).
    - 2-D (M, K) @ 2-D (K, N), `offs` over K: group g's slice of K -> (G, M, N).
    - 3-D @ 3-D, no `offs`: a batched matmul -> (G, M, N).

    Rows or columns past offs[-1] are zeros (PyTorch leaves them unspecified). Static shapes
    make each group's product run over the whole jagged dimension, masked: G times the
    FLOPs of PyTorch's CUDA kernel, which is what MoE layers with few experts can afford.

    Args:
        mat_a, mat_b: as above.
        offs: 1-D int tensor of G increasing group ends (required exactly when a 2-D operand is
            jagged).
        bias: added to the result (broadcast).
        out_dtype: the result's dtype (default mat_a's).

    Example:
        >>> F.grouped_mm(nb.randn(6, 4), nb.randn(3, 4, 5), offs=nb.tensor([2, 4, 6], dtype=nb.int32)).shape
        (6, 5)
    """
    op = "grouped_mm"
    if mat_a.ndim not in (2, 3) or mat_b.ndim not in (2, 3):
        raise RuntimeError(
            f"{op}: mat_a and mat_b must be 2-D or 3-D, got {tuple(mat_a.shape)} and {tuple(mat_b.shape)}"
        )
    if mat_a.shape[-1] != mat_b.shape[-2]:
        raise RuntimeError(f"{op}: contraction dims differ: mat_a {tuple(mat_a.shape)}, mat_b {tuple(mat_b.shape)}")
    jagged = mat_a.ndim == 2 or mat_b.ndim == 2
    if jagged != (offs is not None):
        raise RuntimeError(
            f"{op}: offs {'is required' if jagged else 'must be None'} for a {mat_a.ndim}-D @ {mat_b.ndim}-D product"
        )
    if mat_a.ndim == 3 and mat_b.ndim == 3:
        if mat_a.shape[0] != mat_b.shape[0]:
            raise RuntimeError(f"{op}: group counts differ: {mat_a.shape[0]} and {mat_b.shape[0]}")
        out = nb.matmul(mat_a, mat_b)
    else:
        if offs.ndim != 1:
            raise RuntimeError(f"{op}: offs must be 1-D, got shape {tuple(offs.shape)}")
        groups = offs.shape[0]
        name, batched = ("mat_a", mat_a) if mat_a.ndim == 3 else ("mat_b", mat_b)
        if batched.ndim == 3 and batched.shape[0] != groups:
            raise RuntimeError(f"{op}: offs has {groups} groups, the 3-D operand {name} has {batched.shape[0]}")
        if mat_a.ndim == 2 and mat_b.ndim == 3:  # rows of mat_a by group
            full = nb.einsum("mk,gkn->gmn", mat_a, mat_b)
            out = nb.sum(full * _group_mask(offs, mat_a.shape[0], full.dtype)[:, :, None], axis=0)
        elif mat_a.ndim == 3:  # columns of mat_b by group
            full = nb.einsum("gmk,kn->gmn", mat_a, mat_b)
            out = nb.sum(full * _group_mask(offs, mat_b.shape[1], full.dtype)[:, None, :], axis=0)
        else:  # slices of K by group
            out = nb.einsum("mk,kn,gk->gmn", mat_a, mat_b, _group_mask(offs, mat_a.shape[1], mat_a.dtype))
    if bias is not None:
        out = out + bias
    return out if out_dtype is None else out.to(out_dtype)


def _group_mask(offs: Tensor, n: int, dtype: Any) -> Tensor:
    """(G, n): 1 where position i of the jagged dimension lies in group g (offs[g-1] <= i <
    offs[g]), 0 elsewhere and past offs[-1]."""
    pos = nb.reshape(nb.arange(n, dtype=offs.dtype), (1, n))
    ends = nb.reshape(offs, (-1, 1))
    starts = nb.concatenate([nb.zeros(1, 1, dtype=offs.dtype), ends[:-1]], axis=0)
    return nb.cast((pos >= starts) & (pos < ends), dtype)
