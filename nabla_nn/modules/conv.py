"""Convolution layers (PyTorch's `torch.nn.modules.conv`): Conv1d, Conv2d, Conv3d, ConvTranspose1d,
ConvTranspose2d, ConvTranspose3d. Weights use PyTorch's layouts, so state_dicts move between the two."""

from __future__ import annotations

import math
from typing import Any

from nabla import Tensor

from .. import functional as F
from .. import init
from ..module import Module
from .linear import empty_parameter

__all__ = ["Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d"]

_PADDING_MODES = ("zeros", "reflect", "replicate", "circular")
_SPATIAL = {1: ("L",), 2: ("H", "W"), 3: ("D", "H", "W")}  # dim names in input-shape errors
_CONV = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}
_CONV_TRANSPOSE = {1: F.conv_transpose1d, 2: F.conv_transpose2d, 3: F.conv_transpose3d}


def _ntuple(value: Any, n: int, name: str) -> tuple[int, ...]:
    """An int or a sequence of `n` ints as a tuple of `n` ints (PyTorch's `_pair`/`_single`)."""
    items = (value,) * n if isinstance(value, int) and not isinstance(value, bool) else value
    if (
        not isinstance(items, tuple | list)
        or len(items) != n
        or not all(isinstance(v, int) and not isinstance(v, bool) for v in items)
    ):
        raise TypeError(f"{name} must be an int or a tuple of {n} ints, got {value!r}")
    return tuple(items)


def _single(value: Any, name: str = "argument") -> tuple[int, ...]:
    return _ntuple(value, 1, name)


def _pair(value: Any, name: str = "argument") -> tuple[int, ...]:
    return _ntuple(value, 2, name)


def _reverse_repeat(t: tuple[int, ...]) -> tuple[int, ...]:
    """(a, b) -> (b, b, a, a): F.pad's order (last dim first) for symmetric padding."""
    return tuple(x for x in reversed(t) for _ in range(2))


class _ConvNd(Module):
    """Shared constructor, initialisation, checks and repr of every convolution layer."""

    _n: int = 2  # spatial dims
    _transposed: bool = False

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size: Any,
        stride: Any,
        padding: Any,
        dilation: Any,
        groups: int,
        bias: bool,
        padding_mode: str,
        output_padding: Any = 0,
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__()
        name = type(self).__name__
        for arg, value in (("in_channels", in_channels), ("out_channels", out_channels)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name}: {arg} must be a positive int, got {value!r}")
        if isinstance(groups, bool) or not isinstance(groups, int) or groups <= 0:
            raise ValueError(f"{name}: groups must be a positive integer, got {groups!r}")
        if in_channels % groups != 0:
            raise ValueError(
                f"{name}: in_channels must be divisible by groups (in_channels={in_channels}, groups={groups})"
            )
        if out_channels % groups != 0:
            raise ValueError(
                f"{name}: out_channels must be divisible by groups (out_channels={out_channels}, groups={groups})"
            )
        n = self._n
        self.in_channels = in_channels
        self.out_channels = out_channels
        self.kernel_size = _ntuple(kernel_size, n, "kernel_size")
        self.stride = _ntuple(stride, n, "stride")
        self.dilation = _ntuple(dilation, n, "dilation")
        self.output_padding = _ntuple(output_padding, n, "output_padding")
        self.groups = groups
        self.transposed = self._transposed
        self.padding_mode = padding_mode
        self.padding = self._check_padding(padding, padding_mode)
        shape = (in_channels, out_channels // groups) if self.transposed else (out_channels, in_channels // groups)
        self.weight = empty_parameter((*shape, *self.kernel_size), dtype, device)
        if bias:
            self.bias = empty_parameter((out_channels,), dtype, device)
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def _check_padding(self, padding: Any, padding_mode: str) -> Any:
        name = type(self).__name__
        if padding_mode not in _PADDING_MODES:
            raise ValueError(
                f"{name}: padding_mode must be one of {_PADDING_MODES}, but got padding_mode={padding_mode!r}"
            )
        if isinstance(padding, str):
            if padding not in ("same", "valid"):
                raise ValueError(f"{name}: invalid padding string {padding!r}, should be one of ('same', 'valid')")
            if padding == "same" and any(s != 1 for s in self.stride):
                raise ValueError(f"{name}: padding='same' is not supported for strided convolutions")
            pads = [0, 0] * self._n
            if padding == "same":  # F.pad order: last dim first, the odd extra after
                for i, (d, k) in enumerate(zip(reversed(self.dilation), reversed(self.kernel_size), strict=True)):
                    total = d * (k - 1)
                    pads[2 * i], pads[2 * i + 1] = total // 2, total - total // 2
            self._reversed_padding_repeated_twice = tuple(pads)
            return padding
        padding = _ntuple(padding, self._n, "padding")
        if any(p < 0 for p in padding):
            raise ValueError(f"{name}: padding must be non-negative, got {padding}")
        self._reversed_padding_repeated_twice = _reverse_repeat(padding)
        return padding

    def reset_parameters(self) -> None:
        """PyTorch's default: kaiming_uniform_(a=sqrt(5)) weight, U(+-1/sqrt(fan_in)) bias, where
        fan_in = weight.shape[1] * prod(kernel_size)."""
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in = self.weight.shape[1] * math.prod(self.kernel_size)
            if fan_in != 0:
                bound = 1 / math.sqrt(fan_in)
                init.uniform_(self.bias, -bound, bound)

    def _check_input(self, input: Tensor) -> None:
        n, c = self._n, self.in_channels
        if input.ndim not in (n + 1, n + 2) or input.shape[-n - 1] != c:
            unbatched = ", ".join((str(c), *_SPATIAL[n]))
            raise self.input_error(input.shape, f"(N, {unbatched}) or ({unbatched})")

    def extra_repr(self) -> str:
        s = f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, stride={self.stride}"
        if self.padding != (0,) * self._n:
            s += f", padding={self.padding}"
        if self.dilation != (1,) * self._n:
            s += f", dilation={self.dilation}"
        if self.output_padding != (0,) * self._n:
            s += f", output_padding={self.output_padding}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        if self.bias is None:
            s += ", bias=False"
        if self.padding_mode != "zeros":
            s += f", padding_mode={self.padding_mode}"
        return s


class _Conv(_ConvNd):
    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size: Any,
        stride: Any = 1,
        padding: Any = 0,
        dilation: Any = 1,
        groups: int = 1,
        bias: bool = True,
        padding_mode: str = "zeros",
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__(
            in_channels,
            out_channels,
            kernel_size,
            stride,
            padding,
            dilation,
            groups,
            bias,
            padding_mode,
            device=device,
            dtype=dtype,
        )

    def _conv_forward(self, input: Tensor, weight: Tensor, bias: Tensor | None) -> Tensor:
        conv = _CONV[self._n]
        if self.padding_mode != "zeros":
            padded = F.pad(input, self._reversed_padding_repeated_twice, mode=self.padding_mode)
            return conv(padded, weight, bias, self.stride, 0, self.dilation, self.groups)
        return conv(input, weight, bias, self.stride, self.padding, self.dilation, self.groups)

    def forward(self, input: Tensor) -> Tensor:
        self._check_input(input)
        return self._conv_forward(input, self.weight, self.bias)


class Conv1d(_Conv):
    """1-D convolution over (N, C_in, L) or unbatched (C_in, L) input.

    Args:
        in_channels: channels of the input.
        out_channels: channels of the output.
        kernel_size: int or (k,).
        stride: int or (s,) (default 1).
        padding: int, (p,), "valid" or "same" (default 0).
        dilation: spacing between kernel taps (default 1).
        groups: independent channel groups (default 1).
        bias: whether to learn a bias (default True).
        padding_mode: "zeros", "reflect", "replicate" or "circular".

    Shape:
        `weight` is `(out_channels, in_channels / groups, k)`.

    Example:
        >>> nn.Conv1d(16, 33, 3, stride=2)(nb.randn(20, 16, 50)).shape
        (20, 33, 24)
    """

    _n = 1


class Conv2d(_Conv):
    """2-D convolution over (N, C_in, H, W) or unbatched (C_in, H, W) input.

    Args:
        in_channels: channels of the input.
        out_channels: channels of the output.
        kernel_size: int or (kH, kW).
        stride: int or (sH, sW) (default 1).
        padding: int, (pH, pW), "valid" or "same" (default 0).
        dilation: spacing between kernel taps (default 1).
        groups: independent channel groups (default 1).
        bias: whether to learn a bias (default True).
        padding_mode: "zeros", "reflect", "replicate" or "circular".

    Shape:
        `weight` is `(out_channels, in_channels / groups, kH, kW)` (OIHW, as PyTorch).

    Example:
        >>> nn.Conv2d(16, 33, 3, stride=2)(nb.randn(20, 16, 50, 100)).shape
        (20, 33, 24, 49)
    """

    _n = 2


class Conv3d(_Conv):
    """3-D convolution over (N, C_in, D, H, W) or unbatched (C_in, D, H, W) input.

    Args:
        in_channels: channels of the input.
        out_channels: channels of the output.
        kernel_size: int or (kD, kH, kW).
        stride: int or (sD, sH, sW) (default 1).
        padding: int, (pD, pH, pW), "valid" or "same" (default 0).
        dilation: spacing between kernel taps (default 1).
        groups: independent channel groups (default 1).
        bias: whether to learn a bias (default True).
        padding_mode: "zeros", "reflect", "replicate" or "circular".

    Shape:
        `weight` is `(out_channels, in_channels / groups, kD, kH, kW)` (OIDHW, as PyTorch).

    Example:
        >>> nn.Conv3d(16, 33, 3, stride=2)(nb.randn(20, 16, 10, 50, 100)).shape
        (20, 33, 4, 24, 49)
    """

    _n = 3


class _ConvTranspose(_ConvNd):
    _transposed = True

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size: Any,
        stride: Any = 1,
        padding: Any = 0,
        output_padding: Any = 0,
        groups: int = 1,
        bias: bool = True,
        dilation: Any = 1,
        padding_mode: str = "zeros",
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        if padding_mode != "zeros":
            raise ValueError(f'Only "zeros" padding mode is supported for {type(self).__name__}, got {padding_mode!r}')
        if isinstance(padding, str):
            raise ValueError(f"{type(self).__name__}: padding must be an int or a tuple of ints, got {padding!r}")
        super().__init__(
            in_channels,
            out_channels,
            kernel_size,
            stride,
            padding,
            dilation,
            groups,
            bias,
            padding_mode,
            output_padding,
            device=device,
            dtype=dtype,
        )

    def _output_padding(self, input: Tensor, output_size: Any) -> tuple[int, ...]:
        """The output_padding that gives `output_size` (PyTorch's rule), or self.output_padding."""
        if output_size is None:
            return self.output_padding
        n = self._n
        lead = input.ndim - n
        output_size = tuple(int(s) for s in output_size)
        if len(output_size) == lead + n:
            output_size = output_size[lead:]
        if len(output_size) != n:
            raise ValueError(
                f"{type(self).__name__}: output_size must have {n} or {n + lead} elements (got {len(output_size)})"
            )
        mins = [
            (input.shape[lead + d] - 1) * self.stride[d]
            - 2 * self.padding[d]
            + self.dilation[d] * (self.kernel_size[d] - 1)
            + 1
            for d in range(n)
        ]
        maxs = [m + s - 1 for m, s in zip(mins, self.stride, strict=True)]
        if any(not lo <= s <= hi for s, lo, hi in zip(output_size, mins, maxs, strict=True)):
            raise ValueError(
                f"requested an output size of {output_size}, but valid sizes range from {tuple(mins)} to "
                f"{tuple(maxs)} (for an input of {input.shape[lead:]})"
            )
        return tuple(s - m for s, m in zip(output_size, mins, strict=True))

    def forward(self, input: Tensor, output_size: Any = None) -> Tensor:
        self._check_input(input)
        output_padding = self._output_padding(input, output_size)
        conv = _CONV_TRANSPOSE[self._n]
        return conv(
            input, self.weight, self.bias, self.stride, self.padding, output_padding, self.groups, self.dilation
        )


_ConvTransposeNd = _ConvTranspose  # (torch's name: `isinstance(m, nn.modules.conv._ConvTransposeNd)`)


class ConvTranspose1d(_ConvTranspose):
    """1-D transposed convolution ("deconvolution") over (N, C_in, L) or (C_in, L) input.

    Args:
        in_channels: channels of the input.
        out_channels: channels of the output.
        kernel_size: int or (k,).
        stride: int or (s,) (default 1).
        padding: implicit zero padding removed from each side of the output (default 0).
        output_padding: extra size added to one side of the output (default 0).
        groups: independent channel groups (default 1).
        bias: whether to learn a bias (default True).
        dilation: spacing between kernel taps (default 1).

    Shape:
        `weight` is `(in_channels, out_channels / groups, k)`; L_out =
        (L - 1) * stride - 2 * padding + dilation * (k - 1) + output_padding + 1.

    Example:
        >>> nn.ConvTranspose1d(16, 33, 3, stride=2)(nb.randn(20, 16, 50)).shape
        (20, 33, 101)
    """

    _n = 1


class ConvTranspose2d(_ConvTranspose):
    """2-D transposed convolution ("deconvolution") over (N, C_in, H, W) or (C_in, H, W) input.

    Args:
        in_channels: channels of the input.
        out_channels: channels of the output.
        kernel_size: int or (kH, kW).
        stride: int or (sH, sW) (default 1).
        padding: implicit zero padding removed from each side of the output (default 0).
        output_padding: extra size added to one side of each output dim (default 0).
        groups: independent channel groups (default 1).
        bias: whether to learn a bias (default True).
        dilation: spacing between kernel taps (default 1).

    Shape:
        `weight` is `(in_channels, out_channels / groups, kH, kW)`, as PyTorch;
        `forward(input, output_size=None)` picks output_padding to reach `output_size`.

    Example:
        >>> nn.ConvTranspose2d(16, 33, 3, stride=2)(nb.randn(20, 16, 50, 100)).shape
        (20, 33, 101, 201)
    """

    _n = 2


class ConvTranspose3d(_ConvTranspose):
    """3-D transposed convolution ("deconvolution") over (N, C_in, D, H, W) or (C_in, D, H, W) input.

    Args:
        in_channels: channels of the input.
        out_channels: channels of the output.
        kernel_size: int or (kD, kH, kW).
        stride: int or (sD, sH, sW) (default 1).
        padding: implicit zero padding removed from each side of the output (default 0).
        output_padding: extra size added to one side of each output dim (default 0).
        groups: independent channel groups (default 1).
        bias: whether to learn a bias (default True).
        dilation: spacing between kernel taps (default 1).

    Shape:
        `weight` is `(in_channels, out_channels / groups, kD, kH, kW)`, as PyTorch;
        `forward(input, output_size=None)` picks output_padding to reach `output_size`.

    Example:
        >>> nn.ConvTranspose3d(16, 33, 3, stride=2)(nb.randn(20, 16, 10, 50, 100)).shape
        (20, 33, 21, 101, 201)
    """

    _n = 3
