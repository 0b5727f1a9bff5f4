"""Sliding-block layers (PyTorch's `torch.nn.modules.fold`): `Unfold` (im2col) and `Fold` (col2im)."""

from __future__ import annotations

from typing import Any

from nabla import Tensor

from ..functional.fold import fold, unfold
from ..module import Module

__all__ = ["Fold", "Unfold"]


class Fold(Module):
    """Combine sliding local blocks into an image (col2im), summing overlapping blocks:
    (N, C * kh * kw, L) -> (N, C, H, W). See `nabla_nn.functional.fold`.

    Args:
        output_size: the image's spatial size, int or (H, W).
        kernel_size: block size, int or (kh, kw).
        dilation: spacing between block elements (default 1).
        padding: implicit zero padding on both sides, cropped from the result (default 0).
        stride: step between blocks (default 1).

    Shape:
        input (N, C * kh * kw, L) or (C * kh * kw, L), L the number of blocks that fit in
        output_size; output (N, C, H, W) or (C, H, W).

    Example:
        >>> nn.Fold(output_size=(4, 5), kernel_size=(2, 2))(nb.randn(1, 3 * 2 * 2, 12)).shape
        (1, 3, 4, 5)
    """

    def __init__(
        self, output_size: Any, kernel_size: Any, dilation: Any = 1, padding: Any = 0, stride: Any = 1
    ) -> None:
        super().__init__()
        self.output_size = output_size
        self.kernel_size = kernel_size
        self.dilation = dilation
        self.padding = padding
        self.stride = stride

    def forward(self, input: Tensor) -> Tensor:
        return fold(input, self.output_size, self.kernel_size, self.dilation, self.padding, self.stride)

    def extra_repr(self) -> str:
        return (
            f"output_size={self.output_size}, kernel_size={self.kernel_size}, dilation={self.dilation}, "
            f"padding={self.padding}, stride={self.stride}"
        )


class Unfold(Module):
    """Extract sliding local blocks (im2col): (N, C, H, W) -> (N, C * kh * kw, L). See
    `nabla_nn.functional.unfold`.

    Args:
        kernel_size: block size, int or (kh, kw).
        dilation: spacing between block elements (default 1).
        padding: implicit zero padding on both sides (default 0).
        stride: step between blocks (default 1).

    Shape:
        input (N, C, H, W) or (C, H, W); output (N, C * kh * kw, L) or (C * kh * kw, L).

    Example:
        >>> nn.Unfold(kernel_size=(2, 3))(nb.randn(2, 5, 3, 4)).shape
        (2, 30, 4)
    """

    def __init__(self, kernel_size: Any, dilation: Any = 1, padding: Any = 0, stride: Any = 1) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.dilation = dilation
        self.padding = padding
        self.stride = stride

    def forward(self, input: Tensor) -> Tensor:
        return unfold(input, self.kernel_size, self.dilation, self.padding, self.stride)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, dilation={self.dilation}, padding={self.padding}, stride={self.stride}"
