"""More loss layers (PyTorch's `torch.nn.modules.loss`): the multi-class and multi-label margin
losses and the triplet loss with a custom distance. Each forwards to its functional form;
`MultiMarginLoss`'s class weight is a buffer, as in PyTorch."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from nabla import Tensor

from ..functional.extra import multi_margin_loss, multilabel_margin_loss, triplet_margin_with_distance_loss
from .distance import PairwiseDistance
from .loss import _Loss, _WeightedLoss

__all__ = ["MultiLabelMarginLoss", "MultiMarginLoss", "TripletMarginWithDistanceLoss"]


class MultiMarginLoss(_WeightedLoss):
    """Multi-class hinge loss: per sample, sum over classes i != y of
    w[y] * max(0, margin - x[y] + x[i]) ** p, divided by the number of classes.

    Args:
        p: 1 (default) or 2.
        margin: the required gap (default 1).
        weight: a per-class weight of shape (C,) (a buffer).
        reduction: "mean" (default), "sum" or "none".
        size_average, reduce: deprecated; set `reduction` instead.

    Shape:
        input (N, C) or (C,); target (N,) (or ()) int class indices.

    Example:
        >>> x = nb.tensor([[0.1, 0.2, 0.4, 0.8]])
        >>> round(nn.MultiMarginLoss()(x, nb.tensor([3])).item(), 4)
        0.325
    """

    def __init__(
        self,
        p: int = 1,
        margin: float = 1.0,
        weight: Any = None,
        size_average: bool | None = None,
        reduce: bool | None = None,
        reduction: str = "mean",
    ) -> None:
        super().__init__(weight, size_average, reduce, reduction)
        if isinstance(p, bool) or p not in (1, 2):
            raise ValueError(f"MultiMarginLoss: only p == 1 and p == 2 are supported, got p={p!r}")
        if self.weight is not None and self.weight.ndim != 1:
            raise ValueError(
                f"MultiMarginLoss: expected weight to be None or a 1-D tensor, got {self.weight.ndim}-D instead"
            )
        self.p = p
        self.margin = margin

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return multi_margin_loss(
            input, target, p=self.p, margin=self.margin, weight=self.weight, reduction=self.reduction
        )


class MultiLabelMarginLoss(_Loss):
    """Multi-label hinge loss: per sample, sum over target classes j and non-target classes i of
    max(0, 1 - (x[j] - x[i])), divided by the number of classes. A sample's target classes are
    the entries of its target row before the first -1.

    Args:
        reduction: "mean" (default), "sum" or "none".
        size_average, reduce: deprecated; set `reduction` instead.

    Shape:
        input (N, C) or (C,); target int of input's shape, entries in [-1, C).

    Example:
        >>> x = nb.tensor([[0.1, 0.2, 0.4, 0.8]])
        >>> round(nn.MultiLabelMarginLoss()(x, nb.tensor([[3, 0, -1, 1]])).item(), 4)
        0.85
    """

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return multilabel_margin_loss(input, target, reduction=self.reduction)


class TripletMarginWithDistanceLoss(_Loss):
    """max(d(a, p) - d(a, n) + margin, 0) with any distance d (default `PairwiseDistance()`, the
    Euclidean distance).

    Args:
        distance_function: a callable (x1, x2) -> non-negative distances, e.g. a Module; None
            means `PairwiseDistance()` (a submodule, as in PyTorch).
        margin: the required gap (positive, default 1).
        swap: use min(d(a, n), d(p, n)) as the negative distance (distance swap).
        reduction: "mean" (default), "sum" or "none".

    Example:
        >>> a = nb.randn(4, 8)
        >>> loss = nn.TripletMarginWithDistanceLoss(distance_function=nn.PairwiseDistance(p=1))
        >>> loss(a, a, a + 10.0).item()
        0.0
    """

    def __init__(
        self,
        *,
        distance_function: Callable[[Tensor, Tensor], Tensor] | None = None,
        margin: float = 1.0,
        swap: bool = False,
        reduction: str = "mean",
    ) -> None:
        super().__init__(reduction=reduction)
        if margin <= 0:
            raise ValueError(
                f"TripletMarginWithDistanceLoss: expected margin to be greater than 0, got {margin} instead"
            )
        if distance_function is not None and not callable(distance_function):
            raise TypeError(
                "TripletMarginWithDistanceLoss: distance_function must be a callable or None, "
                f"got {type(distance_function).__name__}"
            )
        self.distance_function = distance_function if distance_function is not None else PairwiseDistance()
        self.margin = margin
        self.swap = swap

    def forward(self, anchor: Tensor, positive: Tensor, negative: Tensor) -> Tensor:
        return triplet_margin_with_distance_loss(
            anchor,
            positive,
            negative,
            distance_function=self.distance_function,
            margin=self.margin,
            swap=self.swap,
            reduction=self.reduction,
        )
