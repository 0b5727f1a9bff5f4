"""Margin and embedding losses with PyTorch's names, signatures and reductions (the rest are in
`loss.py`, whose argument checks and reduction rules these share): cosine_similarity and
pairwise_distance (re-exported: they are `nabla.torch_distances`'s, torch's top-level names
too), cosine_embedding_loss, margin_ranking_loss, hinge_embedding_loss,
soft_margin_loss, multilabel_soft_margin_loss, triplet_margin_loss.
"""

from __future__ import annotations

from typing import Any

import nabla as nb
from nabla import Tensor
from nabla.torch_distances import cosine_similarity, pairwise_distance

from ._checks import check_float as _float
from ._checks import number as _number
from .loss import _broadcast_target, _broadcastable, _like, _promoted, _reduce, _reduction, _tensor

__all__ = [
    "cosine_embedding_loss",
    "cosine_similarity",
    "hinge_embedding_loss",
    "margin_ranking_loss",
    "multilabel_soft_margin_loss",
    "pairwise_distance",
    "soft_margin_loss",
    "triplet_margin_loss",
]


# -- margin and embedding losses -------------------------------------------------------------------
def _sign_target(target: Any, ref: Tensor, op: str) -> Tensor:
    return _like(_tensor(target, op, "target"), ref)


def cosine_embedding_loss(
    input1: Tensor,
    input2: Tensor,
    target: Tensor,
    margin: float = 0,
    size_average: bool | None = None,
    reduce: bool | None = None,
    reduction: str = "mean",
) -> Tensor:
    """1 - cos(x1, x2) where target == 1, max(0, cos(x1, x2) - margin) where target == -1.

    Args:
        input1, input2: (N, D) or (D,).
        target: (N,) or () of 1 / -1.
        margin: in [-1, 1].
        reduction: "none" | "mean" | "sum".

    Example:
        >>> x = nb.tensor([[1.0, 0.0]])
        >>> F.cosine_embedding_loss(x, x, nb.tensor([1.0])).item()
        0.0
    """
    op = "cosine_embedding_loss"
    red = _reduction(reduction, op, size_average, reduce)
    _float(input1, op, "input1")
    _float(input2, op, "input2")
    if input1.ndim != input2.ndim or input1.ndim not in (1, 2):
        raise ValueError(
            f"{op}: input1 and input2 must both be (N, D) or (D,) (broadcasting), got {input1.shape} and {input2.shape}"
        )
    # (torch broadcasts the product only: each magnitude is of its own input's rows)
    batch = nb.broadcast_shapes(input1.shape, input2.shape)[:-1]
    if tuple(target.shape) != tuple(batch):
        raise ValueError(f"{op}: expected target shape {tuple(batch)}, got {target.shape}")
    eps = 1e-12  # PyTorch's EPSILON in the squared magnitudes
    prod = nb.sum(input1 * input2, axis=-1)
    mag1 = nb.sum(input1 * input1, axis=-1) + eps
    mag2 = nb.sum(input2 * input2, axis=-1) + eps
    cos = prod / nb.sqrt(mag1 * mag2)
    t = _sign_target(target, input1, op)
    # arithmetic masks rather than `where` next to a sqrt (see nabla.ops.reduction._safe_root)
    is_pos, is_neg = nb.cast(nb.eq(t, 1), cos.dtype), nb.cast(nb.eq(t, -1), cos.dtype)
    neg = nb.clamp(cos - _number(margin, op, "margin"), min=0.0)
    return _reduce((1.0 - cos) * is_pos + neg * is_neg, red)


def margin_ranking_loss(
    input1: Tensor,
    input2: Tensor,
    target: Tensor,
    margin: float = 0,
    size_average: bool | None = None,
    reduce: bool | None = None,
    reduction: str = "mean",
) -> Tensor:
    """max(0, -target * (input1 - input2) + margin), with target 1 or -1.

    Args:
        input1, input2: scores.
        target: 1 (input1 should rank higher) or -1; the three broadcast together.
        margin: the required gap.
        reduction: "none" | "mean" | "sum".

    Example:
        >>> F.margin_ranking_loss(nb.tensor([1.0]), nb.tensor([2.0]), nb.tensor([1.0])).item()
        1.0
    """
    op = "margin_ranking_loss"
    red = _reduction(reduction, op, size_average, reduce)
    _float(input1, op, "input1")
    _float(input2, op, "input2")
    _broadcastable(op, input1=input1, input2=input2, target=_tensor(target, op, "target"))
    input1, t = _promoted(input1, _tensor(target, op, "target"))  # (torch promotes here, not in hinge)
    return _reduce(nb.clamp(-t * (input1 - input2) + _number(margin, op, "margin"), min=0.0), red)


def hinge_embedding_loss(
    input: Tensor,
    target: Tensor,
    margin: float = 1.0,
    size_average: bool | None = None,
    reduce: bool | None = None,
    reduction: str = "mean",
) -> Tensor:
    """x where target == 1, max(0, margin - x) where target == -1 (PyTorch's sum of both cases).

    Args:
        input: distances (any shape).
        target: 1 or -1, broadcasting with input.
        margin: the margin for target == -1.
        reduction: "none" | "mean" | "sum".

    Example:
        >>> F.hinge_embedding_loss(nb.tensor([0.3, 0.3]), nb.tensor([1.0, -1.0])).item()  # (0.3 + 0.7) / 2
        0.5
    """
    op = "hinge_embedding_loss"
    red = _reduction(reduction, op, size_average, reduce)
    _float(input, op, "input")
    _broadcastable(op, input=input, target=_tensor(target, op, "target"))
    t = _sign_target(target, input, op)
    zero = nb.zeros_like(input)
    margin_clamp = nb.clamp(_number(margin, op, "margin") - input, min=0.0)
    loss = nb.where(nb.not_equal(t, 1), margin_clamp, zero) + nb.where(nb.not_equal(t, -1), input, zero)
    return _reduce(loss, red)


def soft_margin_loss(
    input: Tensor,
    target: Tensor,
    size_average: bool | None = None,
    reduce: bool | None = None,
    reduction: str = "mean",
) -> Tensor:
    """log(1 + exp(-target * input)), with target 1 or -1 (computed stably).

    Args:
        input: scores (any shape).
        target: 1 or -1, input's shape.
        reduction: "none" | "mean" | "sum".

    Example:
        >>> F.soft_margin_loss(nb.tensor([0.0]), nb.tensor([1.0])).item()  # 0.6931...
    """
    op = "soft_margin_loss"
    red = _reduction(reduction, op, size_average, reduce)
    _float(input, op, "input")
    target = _broadcast_target(input, _tensor(target, op, "target"), op)
    return _reduce(-nb.logsigmoid(_sign_target(target, input, op) * input), red)


def multilabel_soft_margin_loss(
    input: Tensor,
    target: Tensor,
    weight: Tensor | None = None,
    size_average: bool | None = None,
    reduce: bool | None = None,
    reduction: str = "mean",
) -> Tensor:
    """Mean over classes of the binary logistic loss of each label (target in {0, 1}), (N, C).

    Args:
        input: logits (N, C) or (C,).
        target: 0 / 1 labels, input's shape.
        weight: optional per-class weight, broadcast against input.
        reduction: "none" | "mean" | "sum".

    Example:
        >>> F.multilabel_soft_margin_loss(nb.tensor([[0.0, 0.0]]), nb.tensor([[1.0, 0.0]])).item()  # 0.6931...
    """
    op = "multilabel_soft_margin_loss"
    red = _reduction(reduction, op, size_average, reduce)
    _float(input, op, "input")
    input, t = _promoted(input, _broadcast_target(input, _tensor(target, op, "target"), op))
    loss = -(t * nb.logsigmoid(input) + (1.0 - t) * nb.logsigmoid(-input))
    if weight is not None:
        loss = loss * _like(_float(weight, op, "weight"), input)
    c = input.shape[-1] if input.ndim else 1
    loss = nb.sum(loss, axis=-1) / float(c) if input.ndim else loss
    return _reduce(loss, red)


def triplet_margin_loss(
    anchor: Tensor,
    positive: Tensor,
    negative: Tensor,
    margin: float = 1.0,
    p: float = 2,
    eps: float = 1e-6,
    swap: bool = False,
    size_average: bool | None = None,
    reduce: bool | None = None,
    reduction: str = "mean",
) -> Tensor:
    """max(d(a, p) - d(a, n) + margin, 0) with d the pairwise p-norm distance (eps added to the
    difference); `swap` uses min(d(a, n), d(p, n)) as the negative distance.

    Args:
        anchor, positive, negative: (N, D) or (D,).
        margin: the required gap between the distances.
        p: the norm's exponent.
        eps: added to the differences.
        swap: use the smaller of d(a, n) and d(p, n).
        reduction: "none" | "mean" | "sum".

    Example:
        >>> a = nb.tensor([[0.0, 0.0]])
        >>> F.triplet_margin_loss(a, a, a + 3.0).item()
        0.0
    """
    op = "triplet_margin_loss"
    red = _reduction(reduction, op, size_average, reduce)
    for x, arg in ((anchor, "anchor"), (positive, "positive"), (negative, "negative")):
        _float(x, op, arg)
    if not (anchor.ndim == positive.ndim == negative.ndim) or anchor.ndim not in (1, 2):
        raise ValueError(
            f"{op}: anchor, positive and negative must all be (N, D) or (D,), got {anchor.shape}, "
            f"{positive.shape} and {negative.shape}"
        )
    d_pos = pairwise_distance(anchor, positive, p, eps)
    d_neg = pairwise_distance(anchor, negative, p, eps)
    if swap:
        d_neg = nb.minimum(d_neg, pairwise_distance(positive, negative, p, eps))
    return _reduce(nb.clamp(d_pos - d_neg + _number(margin, op, "margin"), min=0.0), red)
