"""CTCLoss (PyTorch's `torch.nn.CTCLoss`): the connectionist temporal classification loss."""

from __future__ import annotations

from typing import Any

from nabla import Tensor

from ..functional.ctc import ctc_loss
from ..module import Module

__all__ = ["CTCLoss"]


class CTCLoss(Module):
    """The connectionist temporal classification loss; see `F.ctc_loss`.

    Args:
        blank: the blank class (default 0).
        reduction: "none" | "mean" (each loss divided by its target length, then the batch
            mean; the default) | "sum".
        zero_infinity: replace infinite losses (inputs too short for their targets) and their
            gradients by 0.

    Shape:
        `forward(log_probs, targets, input_lengths, target_lengths)`: log_probs (T, N, C) or
        (T, C); targets (N, S) padded or concatenated (sum(target_lengths),); lengths (N,).
        Output: a scalar, or (N,) with reduction="none".

    Example:
        >>> loss = nn.CTCLoss()
        >>> lp = nb.log_softmax(nb.randn(50, 16, 20), axis=-1)
        >>> loss(lp, nb.randint(1, 20, (16, 30)), [50] * 16, [30] * 16).shape
        ()
    """

    def __init__(self, blank: int = 0, reduction: str = "mean", zero_infinity: bool = False) -> None:
        super().__init__()
        if reduction not in ("none", "mean", "sum"):
            raise ValueError(f"CTCLoss: reduction must be one of 'none', 'mean', 'sum', got {reduction!r}")
        self.blank = blank
        self.reduction = reduction
        self.zero_infinity = zero_infinity

    def forward(self, log_probs: Tensor, targets: Tensor, input_lengths: Any, target_lengths: Any) -> Tensor:
        return ctc_loss(
            log_probs, targets, input_lengths, target_lengths, self.blank, self.reduction, self.zero_infinity
        )
