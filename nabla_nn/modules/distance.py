"""Distance layers: CosineSimilarity, PairwiseDistance (PyTorch's `torch.nn.modules.distance`)."""

from __future__ import annotations

from nabla import Tensor

from .. import functional as F
from ..module import Module

__all__ = ["CosineSimilarity", "PairwiseDistance"]


class CosineSimilarity(Module):
    """Cosine similarity `sum(x1 * x2) / (max(||x1||, eps) * max(||x2||, eps))` along `dim`.

    Args:
        dim: the dimension of the vectors (default 1).
        eps: lower bound of each norm, against division by zero.

    Shape:
        x1 and x2 broadcast together; the output drops `dim`.

    Example:
        >>> nn.CosineSimilarity(dim=1)(nb.randn(100, 128), nb.randn(100, 128)).shape
        (100,)
    """

    def __init__(self, dim: int = 1, eps: float = 1e-8) -> None:
        super().__init__()
        self.dim = dim
        self.eps = eps

    def forward(self, x1: Tensor, x2: Tensor) -> Tensor:
        return F.cosine_similarity(x1, x2, self.dim, self.eps)


class PairwiseDistance(Module):
    """The p-norm distance `||x1 - x2 + eps||_p` over the last dimension.

    Args:
        p: the norm's exponent (default 2).
        eps: added to the difference, against the norm's kink at 0.
        keepdim: keep the reduced dimension as size 1.

    Shape:
        x1 and x2 `(N, D)` or `(D,)` (broadcasting), output `(N,)` or `()` (`(N, 1)` / `(1,)`
        with keepdim).

    Example:
        >>> nn.PairwiseDistance(p=2)(nb.randn(100, 128), nb.randn(100, 128)).shape
        (100,)
    """

    def __init__(self, p: float = 2.0, eps: float = 1e-6, keepdim: bool = False) -> None:
        super().__init__()
        self.norm = p
        self.eps = eps
        self.keepdim = keepdim

    def forward(self, x1: Tensor, x2: Tensor) -> Tensor:
        return F.pairwise_distance(x1, x2, self.norm, self.eps, self.keepdim)
