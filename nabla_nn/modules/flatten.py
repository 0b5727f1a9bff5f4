"""Flatten and Unflatten (PyTorch's `torch.nn.modules.flatten`)."""

from __future__ import annotations

import math
from typing import Any

from nabla import Tensor

from ..module import Module

__all__ = ["Flatten", "Unflatten"]


def _axis(dim: int, ndim: int) -> int | None:
    """`dim` as a non-negative axis of a rank-`ndim` tensor, or None when out of range."""
    if ndim == 0:
        return 0 if dim in (0, -1) else None
    return dim + ndim if -ndim <= dim < 0 else (dim if 0 <= dim < ndim else None)


class Flatten(Module):
    """Flatten dims `start_dim..end_dim` into one (by default all but the batch dim).

    Args:
        start_dim: first dim to flatten (default 1).
        end_dim: last dim to flatten (default -1).

    Example:
        >>> nn.Flatten()(nb.ones(32, 1, 5, 5)).shape
        (32, 25)
    """

    def __init__(self, start_dim: int = 1, end_dim: int = -1) -> None:
        super().__init__()
        self.start_dim = start_dim
        self.end_dim = end_dim

    def forward(self, input: Tensor) -> Tensor:
        start, end = _axis(self.start_dim, input.ndim), _axis(self.end_dim, input.ndim)
        if start is None or end is None or start > end:
            need = max(self.start_dim + 1, -self.start_dim, self.end_dim + 1, -self.end_dim)
            raise self.input_error(input.shape, f"a tensor with at least {need} dims and start_dim <= end_dim")
        return input.flatten(self.start_dim, self.end_dim)

    def extra_repr(self) -> str:
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"


class Unflatten(Module):
    """Expand dim `dim` into `unflattened_size` (one entry may be -1).

    Args:
        dim: the dimension to expand.
        unflattened_size: the new shape of that dimension (a tuple or list of ints).

    Example:
        >>> nn.Unflatten(1, (2, 5, 5))(nb.ones(2, 50)).shape
        (2, 2, 5, 5)
    """

    def __init__(self, dim: int | str, unflattened_size: Any) -> None:
        super().__init__()
        if isinstance(dim, str):
            raise TypeError("Unflatten: named dims are not supported; dim must be an int")
        if not isinstance(unflattened_size, tuple | list) or not all(
            isinstance(s, int) and not isinstance(s, bool) for s in unflattened_size
        ):
            raise TypeError(
                f"unflattened_size must be a tuple of ints, but found type {type(unflattened_size).__name__}"
            )
        self.dim = dim
        self.unflattened_size = tuple(unflattened_size) if isinstance(unflattened_size, list) else unflattened_size

    def forward(self, input: Tensor) -> Tensor:
        axis = _axis(self.dim, input.ndim) if input.ndim else None
        sizes = self.unflattened_size
        known = math.prod(s for s in sizes if s != -1)
        if axis is None or (
            -1 not in sizes
            and known != input.shape[axis]
            or (-1 in sizes and (known == 0 or input.shape[axis] % known))
        ):
            raise self.input_error(
                input.shape, f"dim {self.dim} of size {math.prod(sizes) if -1 not in sizes else f'k*{known}'}"
            )
        return input.unflatten(self.dim, sizes)

    def extra_repr(self) -> str:
        return f"dim={self.dim}, unflattened_size={self.unflattened_size}"
