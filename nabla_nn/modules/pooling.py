"""Pooling layers (PyTorch's `torch.nn.modules.pooling`): 1-D, 2-D and 3-D max, average, adaptive
and power-average pooling, max unpooling, and 2-D / 3-D fractional max pooling."""

from __future__ import annotations

from typing import Any

from nabla import Tensor

from .. import functional as F
from ..module import Module

__all__ = [
    "AdaptiveAvgPool1d",
    "AdaptiveAvgPool2d",
    "AdaptiveAvgPool3d",
    "AdaptiveMaxPool1d",
    "AdaptiveMaxPool2d",
    "AdaptiveMaxPool3d",
    "AvgPool1d",
    "AvgPool2d",
    "AvgPool3d",
    "FractionalMaxPool2d",
    "FractionalMaxPool3d",
    "LPPool1d",
    "LPPool2d",
    "LPPool3d",
    "MaxPool1d",
    "MaxPool2d",
    "MaxPool3d",
    "MaxUnpool1d",
    "MaxUnpool2d",
    "MaxUnpool3d",
]

_DIMS = {1: "L", 2: "H, W", 3: "D, H, W"}


def _check_rank(module: Module, input: Tensor, spatial: int) -> None:
    """Pooling takes (N, C, *spatial) or unbatched (C, *spatial)."""
    if input.ndim not in (spatial + 1, spatial + 2):
        dims = _DIMS[spatial]
        raise module.input_error(input.shape, f"(N, C, {dims}) or (C, {dims})")


class _MaxPoolNd(Module):
    _n = 2

    def __init__(
        self,
        kernel_size: Any,
        stride: Any = None,
        padding: Any = 0,
        dilation: Any = 1,
        return_indices: bool = False,
        ceil_mode: bool = False,
    ) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding = padding
        self.dilation = dilation
        self.return_indices = return_indices
        self.ceil_mode = ceil_mode

    def extra_repr(self) -> str:
        return (
            f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}, "
            f"dilation={self.dilation}, ceil_mode={self.ceil_mode}"
        )

    def forward(self, input: Tensor) -> Any:
        _check_rank(self, input, self._n)
        pool = {1: F.max_pool1d, 2: F.max_pool2d, 3: F.max_pool3d}[self._n]
        return pool(
            input,
            self.kernel_size,
            self.stride,
            self.padding,
            self.dilation,
            ceil_mode=self.ceil_mode,
            return_indices=self.return_indices,
        )


class MaxPool1d(_MaxPoolNd):
    """1-D max pooling over (N, C, L) or (C, L).

    Args:
        kernel_size: window size.
        stride: window step (default: kernel_size).
        padding: implicit -inf padding on both sides (at most kernel_size / 2).
        dilation: spacing between window elements.
        return_indices: also return the argmax indices (as `torch.nn.MaxPool1d`).
        ceil_mode: round the output size up instead of down.

    Example:
        >>> nn.MaxPool1d(3, stride=2)(nb.randn(20, 16, 50)).shape
        (20, 16, 24)
    """

    _n = 1


class MaxPool2d(_MaxPoolNd):
    """2-D max pooling over (N, C, H, W) or (C, H, W).

    Args:
        kernel_size: window size, int or (kH, kW).
        stride: window step (default: kernel_size).
        padding: implicit -inf padding on both sides (at most kernel_size / 2).
        dilation: spacing between window elements.
        return_indices: also return the argmax indices (as `torch.nn.MaxPool2d`).
        ceil_mode: round the output size up instead of down.

    Example:
        >>> nn.MaxPool2d(2)(nb.randn(20, 16, 50, 32)).shape
        (20, 16, 25, 16)
    """

    _n = 2


class MaxPool3d(_MaxPoolNd):
    """3-D max pooling over (N, C, D, H, W) or (C, D, H, W).

    Args:
        kernel_size: window size, int or (kD, kH, kW).
        stride: window step (default: kernel_size).
        padding: implicit -inf padding on both sides (at most kernel_size / 2).
        dilation: spacing between window elements.
        return_indices: also return the argmax indices (as `torch.nn.MaxPool3d`).
        ceil_mode: round the output size up instead of down.

    Example:
        >>> nn.MaxPool3d((3, 2, 2), stride=(2, 1, 2))(nb.randn(20, 16, 50, 44, 31)).shape
        (20, 16, 24, 43, 15)
    """

    _n = 3


class _MaxUnpoolNd(Module):
    _n = 2

    def __init__(self, kernel_size: Any, stride: Any = None, padding: Any = 0) -> None:
        super().__init__()
        # Stored as n-tuples, as PyTorch's `_single` / `_pair`.
        self.kernel_size = _tuple(kernel_size, self._n)
        self.stride = _tuple(stride if stride is not None else kernel_size, self._n)
        self.padding = _tuple(padding, self._n)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"

    def forward(self, input: Tensor, indices: Tensor, output_size: Any = None) -> Tensor:
        _check_rank(self, input, self._n)
        unpool = {1: F.max_unpool1d, 2: F.max_unpool2d, 3: F.max_unpool3d}[self._n]
        return unpool(input, indices, self.kernel_size, self.stride, self.padding, output_size)


class MaxUnpool1d(_MaxUnpoolNd):
    """Partial inverse of `MaxPool1d`: pooled values back at their indices, zeros elsewhere.

    Args:
        kernel_size: the pooling's window size.
        stride: the pooling's step (default: kernel_size).
        padding: the pooling's padding.

    Call with `(input, indices, output_size=None)`: `indices` from `MaxPool1d(return_indices=True)`;
    `output_size` picks the length when several inputs pool to the same size.

    Example:
        >>> pool, unpool = nn.MaxPool1d(2, return_indices=True), nn.MaxUnpool1d(2)
        >>> unpool(*pool(nb.tensor([[[1.0, 2.0, 3.0, 4.0]]]))).tolist()
        [[[0.0, 2.0, 0.0, 4.0]]]
    """

    _n = 1


class MaxUnpool2d(_MaxUnpoolNd):
    """Partial inverse of `MaxPool2d`: pooled values back at their indices, zeros elsewhere.

    Args:
        kernel_size: the pooling's window size, int or (kH, kW).
        stride: the pooling's step (default: kernel_size).
        padding: the pooling's padding.

    Call with `(input, indices, output_size=None)`: `indices` from `MaxPool2d(return_indices=True)`;
    `output_size` ((H, W) or (N, C, H, W)) picks the size when several inputs pool to the same size.

    Example:
        >>> pool, unpool = nn.MaxPool2d(2, return_indices=True), nn.MaxUnpool2d(2)
        >>> out, indices = pool(nb.randn(1, 1, 5, 5))
        >>> unpool(out, indices, output_size=(5, 5)).shape
        (1, 1, 5, 5)
    """


class MaxUnpool3d(_MaxUnpoolNd):
    """Partial inverse of `MaxPool3d`: pooled values back at their indices, zeros elsewhere.

    Args:
        kernel_size: the pooling's window size, int or (kD, kH, kW).
        stride: the pooling's step (default: kernel_size).
        padding: the pooling's padding.

    Call with `(input, indices, output_size=None)`: `indices` from `MaxPool3d(return_indices=True)`;
    `output_size` ((D, H, W) or (N, C, D, H, W)) picks the size when several inputs pool to the same size.

    Example:
        >>> pool, unpool = nn.MaxPool3d(2, return_indices=True), nn.MaxUnpool3d(2)
        >>> unpool(*pool(nb.randn(1, 1, 4, 4, 4))).shape
        (1, 1, 4, 4, 4)
    """

    _n = 3


def _tuple(value: Any, n: int) -> tuple:
    return (value,) * n if isinstance(value, int) and not isinstance(value, bool) else tuple(value)


class AvgPool1d(Module):
    """1-D average pooling over (N, C, L) or (C, L).

    Args:
        kernel_size: window size.
        stride: window step (default: kernel_size).
        padding: implicit zero padding on both sides.
        ceil_mode: round the output size up instead of down.
        count_include_pad: count the zero padding in the divisor.

    Example:
        >>> nn.AvgPool1d(3, stride=2)(nb.randn(20, 16, 50)).shape
        (20, 16, 24)
    """

    def __init__(
        self,
        kernel_size: Any,
        stride: Any = None,
        padding: Any = 0,
        ceil_mode: bool = False,
        count_include_pad: bool = True,
    ) -> None:
        super().__init__()
        self.kernel_size = _one(kernel_size)
        self.stride = _one(stride if stride is not None else kernel_size)
        self.padding = _one(padding)
        self.ceil_mode = ceil_mode
        self.count_include_pad = count_include_pad

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"

    def forward(self, input: Tensor) -> Tensor:
        _check_rank(self, input, 1)
        return F.avg_pool1d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode, self.count_include_pad)


def _one(value: Any) -> Any:
    """AvgPool1d stores its sizes as 1-tuples, as PyTorch's `_single`."""
    return (value,) if isinstance(value, int) and not isinstance(value, bool) else tuple(value)


class _AvgPoolNd(Module):
    """AvgPool2d / AvgPool3d: PyTorch keeps their sizes as given (AvgPool1d makes 1-tuples)."""

    _n = 2

    def __init__(
        self,
        kernel_size: Any,
        stride: Any = None,
        padding: Any = 0,
        ceil_mode: bool = False,
        count_include_pad: bool = True,
        divisor_override: int | None = None,
    ) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding = padding
        self.ceil_mode = ceil_mode
        self.count_include_pad = count_include_pad
        self.divisor_override = divisor_override

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"

    def forward(self, input: Tensor) -> Tensor:
        _check_rank(self, input, self._n)
        pool = F.avg_pool2d if self._n == 2 else F.avg_pool3d
        return pool(
            input,
            self.kernel_size,
            self.stride,
            self.padding,
            self.ceil_mode,
            self.count_include_pad,
            self.divisor_override,
        )


class AvgPool2d(_AvgPoolNd):
    """2-D average pooling over (N, C, H, W) or (C, H, W).

    Args:
        kernel_size: window size, int or (kH, kW).
        stride: window step (default: kernel_size).
        padding: implicit zero padding on both sides.
        ceil_mode: round the output size up instead of down.
        count_include_pad: count the zero padding in the divisor.
        divisor_override: use this divisor instead of the window size.

    Example:
        >>> nn.AvgPool2d(2)(nb.randn(20, 16, 50, 32)).shape
        (20, 16, 25, 16)
    """

    _n = 2


class AvgPool3d(_AvgPoolNd):
    """3-D average pooling over (N, C, D, H, W) or (C, D, H, W).

    Args:
        kernel_size: window size, int or (kD, kH, kW).
        stride: window step (default: kernel_size).
        padding: implicit zero padding on both sides.
        ceil_mode: round the output size up instead of down.
        count_include_pad: count the zero padding in the divisor.
        divisor_override: use this divisor instead of the window size.

    Example:
        >>> nn.AvgPool3d((3, 2, 2), stride=(2, 1, 2))(nb.randn(20, 16, 50, 44, 31)).shape
        (20, 16, 24, 43, 15)
    """

    _n = 3


class _AdaptivePoolNd(Module):
    _n = 2

    def __init__(self, output_size: Any) -> None:
        super().__init__()
        self.output_size = output_size

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"


class AdaptiveAvgPool1d(_AdaptivePoolNd):
    """Average pooling of (N, C, L) or (C, L) to a fixed length.

    Args:
        output_size: the target length L_out.

    Example:
        >>> nn.AdaptiveAvgPool1d(5)(nb.randn(1, 64, 8)).shape
        (1, 64, 5)
    """

    _n = 1

    def forward(self, input: Tensor) -> Tensor:
        _check_rank(self, input, 1)
        return F.adaptive_avg_pool1d(input, self.output_size)


class AdaptiveAvgPool2d(_AdaptivePoolNd):
    """Average pooling of (N, C, H, W) or (C, H, W) to a fixed size.

    Args:
        output_size: int or (H_out, W_out); a None entry keeps the input's size.

    Example:
        >>> nn.AdaptiveAvgPool2d((5, 7))(nb.randn(1, 64, 8, 9)).shape
        (1, 64, 5, 7)
    """

    def forward(self, input: Tensor) -> Tensor:
        _check_rank(self, input, 2)
        return F.adaptive_avg_pool2d(input, self.output_size)


class AdaptiveAvgPool3d(_AdaptivePoolNd):
    """Average pooling of (N, C, D, H, W) or (C, D, H, W) to a fixed size.

    Args:
        output_size: int or (D_out, H_out, W_out); a None entry keeps the input's size.

    Example:
        >>> nn.AdaptiveAvgPool3d((5, None, 7))(nb.randn(1, 64, 8, 9, 10)).shape
        (1, 64, 5, 9, 7)
    """

    _n = 3

    def forward(self, input: Tensor) -> Tensor:
        _check_rank(self, input, 3)
        return F.adaptive_avg_pool3d(input, self.output_size)


class _AdaptiveMaxPoolNd(_AdaptivePoolNd):
    def __init__(self, output_size: Any, return_indices: bool = False) -> None:
        super().__init__(output_size)
        self.return_indices = return_indices

    def forward(self, input: Tensor) -> Any:
        _check_rank(self, input, self._n)
        pool = {1: F.adaptive_max_pool1d, 2: F.adaptive_max_pool2d, 3: F.adaptive_max_pool3d}[self._n]
        return pool(input, self.output_size, self.return_indices)


class AdaptiveMaxPool1d(_AdaptiveMaxPoolNd):
    """Max pooling of (N, C, L) or (C, L) to a fixed length.

    Args:
        output_size: the target length L_out.
        return_indices: also return the argmax indices.

    Example:
        >>> nn.AdaptiveMaxPool1d(5)(nb.randn(1, 64, 8)).shape
        (1, 64, 5)
    """

    _n = 1


class AdaptiveMaxPool2d(_AdaptiveMaxPoolNd):
    """Max pooling of (N, C, H, W) or (C, H, W) to a fixed size.

    Args:
        output_size: int or (H_out, W_out); a None entry keeps the input's size.
        return_indices: also return the argmax indices.

    Example:
        >>> nn.AdaptiveMaxPool2d((5, 7))(nb.randn(1, 64, 8, 9)).shape
        (1, 64, 5, 7)
    """


class AdaptiveMaxPool3d(_AdaptiveMaxPoolNd):
    """Max pooling of (N, C, D, H, W) or (C, D, H, W) to a fixed size.

    Args:
        output_size: int or (D_out, H_out, W_out); a None entry keeps the input's size.
        return_indices: also return the argmax indices.

    Example:
        >>> nn.AdaptiveMaxPool3d((5, None, 7))(nb.randn(1, 64, 8, 9, 10)).shape
        (1, 64, 5, 9, 7)
    """

    _n = 3


class _LPPoolNd(Module):
    _n = 2

    def __init__(self, norm_type: float, kernel_size: Any, stride: Any = None, ceil_mode: bool = False) -> None:
        super().__init__()
        self.norm_type = norm_type
        self.kernel_size = kernel_size
        self.stride = stride
        self.ceil_mode = ceil_mode

    def extra_repr(self) -> str:
        return (
            f"norm_type={self.norm_type}, kernel_size={self.kernel_size}, stride={self.stride}, "
            f"ceil_mode={self.ceil_mode}"
        )

    def forward(self, input: Tensor) -> Tensor:
        _check_rank(self, input, self._n)
        pool = {1: F.lp_pool1d, 2: F.lp_pool2d, 3: F.lp_pool3d}[self._n]
        return pool(input, float(self.norm_type), self.kernel_size, self.stride, self.ceil_mode)


class LPPool1d(_LPPoolNd):
    """Power-average pooling (sum of x^p over each window)^(1/p) over (N, C, L) or (C, L).

    Args:
        norm_type: p.
        kernel_size: window size.
        stride: window step (default: kernel_size).
        ceil_mode: round the output size up instead of down.

    Example:
        >>> nn.LPPool1d(2, 3, stride=2)(nb.randn(20, 16, 50)).shape
        (20, 16, 24)
    """

    _n = 1


class LPPool2d(_LPPoolNd):
    """Power-average pooling (sum of x^p over each window)^(1/p) over (N, C, H, W) or (C, H, W).

    Args:
        norm_type: p.
        kernel_size: window size, int or (kH, kW).
        stride: window step (default: kernel_size).
        ceil_mode: round the output size up instead of down.

    Example:
        >>> nn.LPPool2d(2, 3, stride=2)(nb.randn(20, 16, 50, 32)).shape
        (20, 16, 24, 15)
    """

    _n = 2


class LPPool3d(_LPPoolNd):
    """Power-average pooling (sum of x^p over each window)^(1/p) over (N, C, D, H, W) or (C, D, H, W).

    Args:
        norm_type: p.
        kernel_size: window size, int or (kD, kH, kW).
        stride: window step (default: kernel_size).
        ceil_mode: round the output size up instead of down.

    Example:
        >>> nn.LPPool3d(2, 3, stride=2)(nb.randn(20, 16, 50, 44, 31)).shape
        (20, 16, 24, 21, 15)
    """

    _n = 3


class _FractionalMaxPoolNd(Module):
    _n = 2

    def __init__(
        self,
        kernel_size: Any,
        output_size: Any = None,
        output_ratio: Any = None,
        return_indices: bool = False,
        _random_samples: Tensor | None = None,
    ) -> None:
        super().__init__()
        n, name = self._n, type(self).__name__
        if self._n == 3 and (
            (isinstance(kernel_size, int) and kernel_size <= 0)
            or (isinstance(kernel_size, tuple | list) and not all(k > 0 for k in kernel_size))
        ):
            raise ValueError(f"kernel_size must be greater than 0, but got {kernel_size}")
        self.kernel_size = _ntuple(kernel_size, n)
        self.return_indices = return_indices
        self.register_buffer("_random_samples", _random_samples)
        self.output_size = _ntuple(output_size, n) if output_size is not None else None
        self.output_ratio = _ntuple(output_ratio, n) if output_ratio is not None else None
        if output_size is None and output_ratio is None:
            raise ValueError(f"{name} requires specifying either an output size, or a pooling ratio")
        if output_size is not None and output_ratio is not None:
            raise ValueError("only one of output_size and output_ratio may be specified")
        if self.output_ratio is not None and not all(0 < r < 1 for r in self.output_ratio):
            raise ValueError(f"output_ratio must be between 0 and 1 (got {output_ratio})")

    def forward(self, input: Tensor) -> Any:
        _check_rank(self, input, self._n)
        pool = F.fractional_max_pool2d if self._n == 2 else F.fractional_max_pool3d
        return pool(
            input,
            self.kernel_size,
            self.output_size,
            self.output_ratio,
            self.return_indices,
            _random_samples=self._random_samples,
        )


def _ntuple(value: Any, n: int) -> Any:
    """PyTorch's `_pair` / `_triple`: a sequence as a tuple, anything else repeated n times."""
    return tuple(value) if isinstance(value, tuple | list) else (value,) * n


class FractionalMaxPool2d(_FractionalMaxPoolNd):
    """2-D fractional max pooling over (N, C, H, W) or (C, H, W): kH x kW windows placed with
    pseudo-random steps so that the output has the requested size (Graham, "Fractional
    Max-Pooling"; PyTorch's regions, see `F.fractional_max_pool2d`).

    Args:
        kernel_size: window size, int or (kH, kW).
        output_size: the output size oH x oW, int or (oH, oW).
        output_ratio: instead of output_size: the output size as a fraction of the input's, a
            number or (rH, rW) in (0, 1).
        return_indices: also return the argmax indices (h * W + w), as `max_unpool2d` takes them.
        _random_samples: optional fixed (N, C, 2) samples in [0, 1) (a buffer, in the state_dict
            when given, as PyTorch's); None draws new samples from nabla's generator every call.

    Example:
        >>> nn.FractionalMaxPool2d(3, output_size=(13, 12))(nb.randn(20, 16, 50, 32)).shape
        (20, 16, 13, 12)
        >>> nn.FractionalMaxPool2d(3, output_ratio=(0.5, 0.5))(nb.randn(20, 16, 50, 32)).shape
        (20, 16, 25, 16)
    """

    _n = 2


class FractionalMaxPool3d(_FractionalMaxPoolNd):
    """3-D fractional max pooling over (N, C, T, H, W) or (C, T, H, W) (PyTorch's regions, see
    `F.fractional_max_pool3d`).

    Args:
        kernel_size: window size, int or (kT, kH, kW) (each > 0).
        output_size: the output size, int or (oT, oH, oW).
        output_ratio: instead of output_size: the output size as a fraction of the input's, a
            number or (rT, rH, rW) in (0, 1).
        return_indices: also return the argmax indices ((t * H + h) * W + w).
        _random_samples: optional fixed (N, C, 3) samples in [0, 1) (a buffer, in the state_dict
            when given); None draws new samples from nabla's generator every call.

    Example:
        >>> nn.FractionalMaxPool3d(3, output_size=(13, 12, 11))(nb.randn(2, 4, 50, 32, 16)).shape
        (2, 4, 13, 12, 11)
    """

    _n = 3
