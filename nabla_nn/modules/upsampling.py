"""Upsampling layers (PyTorch's `torch.nn.modules.upsampling` and `pixelshuffle`): `Upsample`,
its fixed-mode forms `UpsamplingNearest2d` / `UpsamplingBilinear2d`, and `PixelShuffle` /
`PixelUnshuffle`. They hold no parameters; `forward` calls the functional forms."""

from __future__ import annotations

from typing import Any

from nabla import Tensor

from ..functional.upsampling import interpolate, pixel_shuffle, pixel_unshuffle
from ..module import Module

__all__ = ["PixelShuffle", "PixelUnshuffle", "Upsample", "UpsamplingBilinear2d", "UpsamplingNearest2d"]


class Upsample(Module):
    """Resample (N, C, W) or (N, C, H, W) to a size or by a factor (see `F.interpolate`).

    Args:
        size: output spatial size, an int or one int per spatial dim.
        scale_factor: multiplier of the spatial size, a number or one per spatial dim (stored as
            floats, as PyTorch).
        mode: "nearest", "nearest-exact", "linear", "bilinear", "bicubic" or "area".
        align_corners: for "linear" / "bilinear" / "bicubic" only (see `F.interpolate`).
        recompute_scale_factor: compute the output size from scale_factor, then sample as if
            that size had been given.

    Example:
        >>> nn.Upsample(scale_factor=2, mode="bilinear")(nb.ones(1, 3, 4, 5)).shape
        (1, 3, 8, 10)
        >>> nn.Upsample(scale_factor=2)
        Upsample(scale_factor=2.0, mode='nearest')
    """

    def __init__(
        self,
        size: Any = None,
        scale_factor: Any = None,
        mode: str = "nearest",
        align_corners: bool | None = None,
        recompute_scale_factor: bool | None = None,
    ) -> None:
        super().__init__()
        self.name = type(self).__name__
        self.size = size
        if isinstance(scale_factor, tuple):
            self.scale_factor = tuple(float(factor) for factor in scale_factor)
        else:
            self.scale_factor = float(scale_factor) if scale_factor else None
        self.mode = mode
        self.align_corners = align_corners
        self.recompute_scale_factor = recompute_scale_factor

    def forward(self, input: Tensor) -> Tensor:
        return interpolate(
            input,
            self.size,
            self.scale_factor,
            self.mode,
            self.align_corners,
            recompute_scale_factor=self.recompute_scale_factor,
        )

    def extra_repr(self) -> str:
        info = f"scale_factor={self.scale_factor!r}" if self.scale_factor is not None else f"size={self.size!r}"
        return f"{info}, mode={self.mode!r}"


class UpsamplingNearest2d(Upsample):
    """Nearest-neighbour upsampling of (N, C, H, W): `Upsample(size, scale_factor, mode="nearest")`.

    Args:
        size: output (H, W), or an int for both.
        scale_factor: multiplier of H and W, a number or a pair.

    Example:
        >>> nn.UpsamplingNearest2d(scale_factor=2)(nb.tensor([[[[1.0, 2.0]]]])).tolist()
        [[[[1.0, 1.0, 2.0, 2.0], [1.0, 1.0, 2.0, 2.0]]]]
    """

    def __init__(self, size: Any = None, scale_factor: Any = None) -> None:
        super().__init__(size, scale_factor, mode="nearest")


class UpsamplingBilinear2d(Upsample):
    """Bilinear upsampling of (N, C, H, W) with the corner pixels aligned:
    `Upsample(size, scale_factor, mode="bilinear", align_corners=True)`.

    Args:
        size: output (H, W), or an int for both.
        scale_factor: multiplier of H and W, a number or a pair.

    Example:
        >>> nn.UpsamplingBilinear2d(size=(1, 3))(nb.tensor([[[[1.0, 2.0]]]])).tolist()
        [[[[1.0, 1.5, 2.0]]]]
    """

    def __init__(self, size: Any = None, scale_factor: Any = None) -> None:
        super().__init__(size, scale_factor, mode="bilinear", align_corners=True)


class PixelShuffle(Module):
    """(*, C * r * r, H, W) to (*, C, H * r, W * r) (see `F.pixel_shuffle`).

    Args:
        upscale_factor: r.

    Example:
        >>> nn.PixelShuffle(3)(nb.ones(1, 9, 4, 4)).shape
        (1, 1, 12, 12)
    """

    def __init__(self, upscale_factor: int) -> None:
        super().__init__()
        self.upscale_factor = upscale_factor

    def forward(self, input: Tensor) -> Tensor:
        return pixel_shuffle(input, self.upscale_factor)

    def extra_repr(self) -> str:
        return f"upscale_factor={self.upscale_factor}"


class PixelUnshuffle(Module):
    """(*, C, H * r, W * r) to (*, C * r * r, H, W), the inverse of `PixelShuffle`.

    Args:
        downscale_factor: r.

    Example:
        >>> nn.PixelUnshuffle(3)(nb.ones(1, 1, 12, 12)).shape
        (1, 9, 4, 4)
    """

    def __init__(self, downscale_factor: int) -> None:
        super().__init__()
        self.downscale_factor = downscale_factor

    def forward(self, input: Tensor) -> Tensor:
        return pixel_unshuffle(input, self.downscale_factor)

    def extra_repr(self) -> str:
        return f"downscale_factor={self.downscale_factor}"
