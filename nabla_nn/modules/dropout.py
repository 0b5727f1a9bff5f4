"""Dropout layers (PyTorch's `torch.nn.modules.dropout`): active only in training mode."""

from __future__ import annotations

from nabla import Tensor

from .. import functional as F
from ..module import Module

__all__ = ["AlphaDropout", "Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "FeatureAlphaDropout"]


class _DropoutNd(Module):
    def __init__(self, p: float = 0.5, inplace: bool = False) -> None:
        super().__init__()
        if isinstance(p, bool) or not isinstance(p, int | float) or not 0 <= p <= 1:
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
        self.p = p
        self.inplace = inplace

    def extra_repr(self) -> str:
        return f"p={self.p}, inplace={self.inplace}"


class Dropout(_DropoutNd):
    """Zero each element with probability `p` and scale the rest by 1 / (1 - p) (training mode
    only; identity in eval mode).

    Args:
        p: probability of zeroing an element (default 0.5).
        inplace: write the result into the input tensor.

    Example:
        >>> m = nn.Dropout(p=0.2)
        >>> m(nb.randn(20, 16)).shape
        (20, 16)
    """

    def forward(self, input: Tensor) -> Tensor:
        return F.dropout(input, self.p, self.training, self.inplace)


class Dropout1d(_DropoutNd):
    """Zero whole channels of (N, C, L) or (C, L) input with probability `p` (training mode only).

    Args:
        p: probability of zeroing a channel (default 0.5).
        inplace: write the result into the input tensor.

    Example:
        >>> nn.Dropout1d(p=0.2)(nb.randn(20, 16, 32)).shape
        (20, 16, 32)
    """

    def forward(self, input: Tensor) -> Tensor:
        if input.ndim not in (2, 3):
            raise self.input_error(input.shape, "(N, C, L) or (C, L)")
        return F.dropout1d(input, self.p, self.training, self.inplace)


class Dropout2d(_DropoutNd):
    """Zero whole channels of (N, C, H, W) or (C, H, W) input with probability `p` (training
    mode only).

    Args:
        p: probability of zeroing a channel (default 0.5).
        inplace: write the result into the input tensor.

    Example:
        >>> nn.Dropout2d(p=0.2)(nb.randn(20, 16, 32, 32)).shape
        (20, 16, 32, 32)
    """

    def forward(self, input: Tensor) -> Tensor:
        if input.ndim not in (3, 4):
            raise self.input_error(input.shape, "(N, C, H, W) or (C, H, W)")
        return F.dropout2d(input, self.p, self.training, self.inplace)


class Dropout3d(_DropoutNd):
    """Zero whole channels of (N, C, D, H, W) or (C, D, H, W) input with probability `p`
    (training mode only).

    Args:
        p: probability of zeroing a channel (default 0.5).
        inplace: write the result into the input tensor.

    Example:
        >>> nn.Dropout3d(p=0.2)(nb.randn(20, 16, 4, 32, 32)).shape
        (20, 16, 4, 32, 32)
    """

    def forward(self, input: Tensor) -> Tensor:
        if input.ndim not in (4, 5):
            raise self.input_error(input.shape, "(N, C, D, H, W) or (C, D, H, W)")
        return F.dropout3d(input, self.p, self.training, self.inplace)


class AlphaDropout(_DropoutNd):
    """Dropout that keeps the mean and variance of SELU activations (training mode only).

    Args:
        p: probability of dropping an element (default 0.5).
        inplace: write the result into the input tensor.

    Example:
        >>> nn.AlphaDropout(p=0.2)(nb.randn(20, 16)).shape
        (20, 16)
    """

    def forward(self, input: Tensor) -> Tensor:
        return F.alpha_dropout(input, self.p, self.training, self.inplace)


class FeatureAlphaDropout(_DropoutNd):
    """AlphaDropout of whole channels of (N, C, *) input (training mode only).

    Args:
        p: probability of dropping a channel (default 0.5).
        inplace: write the result into the input tensor.

    Example:
        >>> nn.FeatureAlphaDropout(p=0.2)(nb.randn(20, 16, 4, 4)).shape
        (20, 16, 4, 4)
    """

    def forward(self, input: Tensor) -> Tensor:
        return F.feature_alpha_dropout(input, self.p, self.training, self.inplace)
