"""Padding layers (PyTorch's `torch.nn.modules.padding`): zero, constant, reflection, replication
and circular padding of the last one, two or three dimensions, over `functional.pad`."""

from __future__ import annotations

from typing import Any

from nabla import Tensor

from .. import functional as F
from ..module import Module

__all__ = [
    "CircularPad1d",
    "CircularPad2d",
    "CircularPad3d",
    "ConstantPad1d",
    "ConstantPad2d",
    "ConstantPad3d",
    "ReflectionPad1d",
    "ReflectionPad2d",
    "ReflectionPad3d",
    "ReplicationPad1d",
    "ReplicationPad2d",
    "ReplicationPad3d",
    "ZeroPad1d",
    "ZeroPad2d",
    "ZeroPad3d",
]

_NAMES = {1: "(left, right)", 2: "(left, right, top, bottom)", 3: "(left, right, top, bottom, front, back)"}
_DIMS = {1: "W", 2: "H, W", 3: "D, H, W"}


def _padding(padding: Any, n: int, cls: str) -> tuple[int, ...]:
    """`padding` as the 2n-tuple (left, right[, top, bottom[, front, back]]) that `F.pad` takes
    (torch's `_pair` / `_quadruple` / `_ntuple(6)`): an int pads every side by it."""
    if isinstance(padding, int) and not isinstance(padding, bool):
        return (padding,) * (2 * n)
    try:
        values = tuple(padding)
    except TypeError:
        values = ()
    if len(values) != 2 * n or any(isinstance(v, bool) or not isinstance(v, int) for v in values):
        raise ValueError(f"{cls}: padding must be an int or a tuple of {2 * n} ints {_NAMES[n]}, got {padding!r}")
    return values


class _PadNd(Module):
    """Pads the last `_n` dims of (N, C, *spatial) or (C, *spatial) with `F.pad` in `_mode`."""

    _n = 2
    _mode = "constant"

    def __init__(self, padding: Any) -> None:
        super().__init__()
        self.padding = _padding(padding, self._n, type(self).__name__)

    def _check_rank(self, input: Tensor) -> None:
        if input.ndim not in (self._n + 1, self._n + 2):
            dims = _DIMS[self._n]
            raise self.input_error(input.shape, f"(N, C, {dims}) or (C, {dims})")

    def forward(self, input: Tensor) -> Tensor:
        self._check_rank(input)
        return F.pad(input, self.padding, self._mode)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class _ConstantPadNd(_PadNd):
    def __init__(self, padding: Any, value: float) -> None:
        super().__init__(padding)
        self.value = value

    def _check_rank(self, input: Tensor) -> None:
        # As torch: any rank that has the padded dims (the leading dims are left alone).
        if input.ndim < self._n:
            raise self.input_error(input.shape, f"(*, {_DIMS[self._n]})")

    def forward(self, input: Tensor) -> Tensor:
        self._check_rank(input)
        return F.pad(input, self.padding, "constant", self.value)

    def extra_repr(self) -> str:
        return f"padding={self.padding}, value={self.value}"


class ConstantPad1d(_ConstantPadNd):
    """Pad the last dimension with a constant.

    Args:
        padding: int (both sides) or (left, right); negative values crop.
        value: the fill value.

    Shape:
        input `(*, W)` (e.g. (N, C, W) or (C, W)), output `(*, W + left + right)`.

    Example:
        >>> nn.ConstantPad1d((2, 1), 3.5)(nb.ones(1, 2, 4)).shape
        (1, 2, 7)
    """

    _n = 1


class ConstantPad2d(_ConstantPadNd):
    """Pad the last two dimensions with a constant.

    Args:
        padding: int (every side) or (left, right, top, bottom); negative values crop.
        value: the fill value.

    Shape:
        input `(*, H, W)`, output `(*, H + top + bottom, W + left + right)`.

    Example:
        >>> nn.ConstantPad2d((3, 0, 2, 1), 3.5)(nb.ones(1, 2, 2)).shape
        (1, 5, 5)
    """

    _n = 2


class ConstantPad3d(_ConstantPadNd):
    """Pad the last three dimensions with a constant.

    Args:
        padding: int (every side) or (left, right, top, bottom, front, back); negative values crop.
        value: the fill value.

    Shape:
        input `(*, D, H, W)`, output `(*, D + front + back, H + top + bottom, W + left + right)`.

    Example:
        >>> nn.ConstantPad3d((3, 0, 2, 1, 1, 1), 3.5)(nb.ones(1, 2, 2, 2)).shape
        (1, 4, 5, 5)
    """

    _n = 3


class ZeroPad1d(ConstantPad1d):
    """Pad the last dimension with zeros.

    Args:
        padding: int (both sides) or (left, right); negative values crop.

    Example:
        >>> nn.ZeroPad1d((3, 1))(nb.ones(1, 2, 4)).shape
        (1, 2, 8)
    """

    def __init__(self, padding: Any) -> None:
        super().__init__(padding, 0.0)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class ZeroPad2d(ConstantPad2d):
    """Pad the last two dimensions with zeros.

    Args:
        padding: int (every side) or (left, right, top, bottom); negative values crop.

    Example:
        >>> nn.ZeroPad2d((1, 1, 2, 0))(nb.ones(1, 1, 3, 3)).shape
        (1, 1, 5, 5)
    """

    def __init__(self, padding: Any) -> None:
        super().__init__(padding, 0.0)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class ZeroPad3d(ConstantPad3d):
    """Pad the last three dimensions with zeros.

    Args:
        padding: int (every side) or (left, right, top, bottom, front, back); negative values crop.

    Example:
        >>> nn.ZeroPad3d((1, 1, 2, 0, 0, 1))(nb.ones(1, 1, 3, 3, 3)).shape
        (1, 1, 4, 5, 5)
    """

    def __init__(self, padding: Any) -> None:
        super().__init__(padding, 0.0)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class ReflectionPad1d(_PadNd):
    """Pad the last dimension with its reflection (the edge value is not repeated).

    Args:
        padding: int (both sides) or (left, right); each must be smaller than W.

    Shape:
        input (N, C, W) or (C, W), output (..., W + left + right).

    Example:
        >>> nn.ReflectionPad1d(2)(nb.tensor([[[0.0, 1.0, 2.0, 3.0]]])).tolist()
        [[[2.0, 1.0, 0.0, 1.0, 2.0, 3.0, 2.0, 1.0]]]
    """

    _n, _mode = 1, "reflect"


class ReflectionPad2d(_PadNd):
    """Pad the last two dimensions with their reflection (edge values are not repeated).

    Args:
        padding: int (every side) or (left, right, top, bottom); each smaller than its dim.

    Shape:
        input (N, C, H, W) or (C, H, W), output (..., H + top + bottom, W + left + right).

    Example:
        >>> nn.ReflectionPad2d((1, 1, 2, 0))(nb.ones(1, 1, 3, 3)).shape
        (1, 1, 5, 5)
    """

    _n, _mode = 2, "reflect"


class ReflectionPad3d(_PadNd):
    """Pad the last three dimensions with their reflection (edge values are not repeated).

    Args:
        padding: int (every side) or (left, right, top, bottom, front, back); each smaller than its dim.

    Shape:
        input (N, C, D, H, W) or (C, D, H, W), output (..., D + front + back, H + top + bottom,
        W + left + right).

    Example:
        >>> nn.ReflectionPad3d(1)(nb.ones(1, 1, 2, 3, 3)).shape
        (1, 1, 4, 5, 5)
    """

    _n, _mode = 3, "reflect"


class ReplicationPad1d(_PadNd):
    """Pad the last dimension by repeating its edge values.

    Args:
        padding: int (both sides) or (left, right).

    Shape:
        input (N, C, W) or (C, W), output (..., W + left + right).

    Example:
        >>> nn.ReplicationPad1d((3, 1))(nb.tensor([[0.0, 1.0]])).tolist()
        [[0.0, 0.0, 0.0, 0.0, 1.0, 1.0]]
    """

    _n, _mode = 1, "replicate"


class ReplicationPad2d(_PadNd):
    """Pad the last two dimensions by repeating their edge values.

    Args:
        padding: int (every side) or (left, right, top, bottom).

    Shape:
        input (N, C, H, W) or (C, H, W), output (..., H + top + bottom, W + left + right).

    Example:
        >>> nn.ReplicationPad2d(2)(nb.ones(1, 1, 3, 3)).shape
        (1, 1, 7, 7)
    """

    _n, _mode = 2, "replicate"


class ReplicationPad3d(_PadNd):
    """Pad the last three dimensions by repeating their edge values.

    Args:
        padding: int (every side) or (left, right, top, bottom, front, back).

    Shape:
        input (N, C, D, H, W) or (C, D, H, W), output (..., D + front + back, H + top + bottom,
        W + left + right).

    Example:
        >>> nn.ReplicationPad3d((1, 1, 2, 0, 3, 1))(nb.ones(1, 1, 2, 3, 3)).shape
        (1, 1, 6, 5, 5)
    """

    _n, _mode = 3, "replicate"


class CircularPad1d(_PadNd):
    """Pad the last dimension circularly: the end wraps to pad the beginning and vice versa.

    Args:
        padding: int (both sides) or (left, right); at most W each.

    Shape:
        input (N, C, W) or (C, W), output (..., W + left + right).

    Example:
        >>> nn.CircularPad1d((1, 2))(nb.tensor([[0.0, 1.0, 2.0]])).tolist()
        [[2.0, 0.0, 1.0, 2.0, 0.0, 1.0]]
    """

    _n, _mode = 1, "circular"


class CircularPad2d(_PadNd):
    """Pad the last two dimensions circularly (each wraps around to pad the other side).

    Args:
        padding: int (every side) or (left, right, top, bottom); each at most its dim.

    Shape:
        input (N, C, H, W) or (C, H, W), output (..., H + top + bottom, W + left + right).

    Example:
        >>> nn.CircularPad2d(1)(nb.ones(1, 1, 3, 3)).shape
        (1, 1, 5, 5)
    """

    _n, _mode = 2, "circular"


class CircularPad3d(_PadNd):
    """Pad the last three dimensions circularly (each wraps around to pad the other side).

    Args:
        padding: int (every side) or (left, right, top, bottom, front, back); each at most its dim.

    Shape:
        input (N, C, D, H, W) or (C, D, H, W), output (..., D + front + back, H + top + bottom,
        W + left + right).

    Example:
        >>> nn.CircularPad3d(1)(nb.ones(1, 1, 2, 3, 3)).shape
        (1, 1, 4, 5, 5)
    """

    _n, _mode = 3, "circular"
