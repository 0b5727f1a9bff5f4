"""Tensor's shape methods (`reshape`, `transpose`, `permute`, `squeeze`, `split`, `gather`,
...): a mixin of `Tensor`. Those that are views in PyTorch return views (see `views.py`): an
in-place op on the result writes through to the tensor it was taken from.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .dispatch import OPS
from .torch_methods import _src_or_value

if TYPE_CHECKING:  # annotations only: tensor.py imports this module
    from .tensor import Tensor


def _axis_arg(dim: Any, axis: Any, what: str) -> Any:
    """Accept PyTorch's `dim=` and NumPy's `axis=` (not both)."""
    if dim is not None and axis is not None:
        raise TypeError(f"{what}: pass either dim= or axis=, not both")
    return dim if dim is not None else axis


class ShapeMethods:
    """Reshaping, permuting, splitting and gathering methods (mixed into `Tensor`)."""

    __slots__ = ()

    # Shape methods return views (PyTorch): an in-place op on the result writes through.
    def reshape(self, *shape: Any) -> Tensor:
        out = OPS.reshape(self, shape[0] if len(shape) == 1 and isinstance(shape[0], tuple | list) else shape)
        return out._as_view_of(self, "reshape", out.shape)

    def view(self, *shape: Any) -> Tensor:
        return self.reshape(*shape)

    def flatten(self, start_dim: int = 0, end_dim: int = -1) -> Tensor:
        out = OPS.flatten(self, start_dim, end_dim)
        return out._as_view_of(self, "reshape", out.shape)

    def transpose(self, dim0: int = -2, dim1: int = -1) -> Tensor:
        out = OPS.transpose(self, dim0, dim1)
        return out._as_view_of(self, "permute", _swap(self.ndim, dim0, dim1)) if self.ndim else out

    @property
    def T(self) -> Tensor:  # noqa: N802  (PyTorch/NumPy name)
        perm = tuple(reversed(range(self.ndim)))
        return OPS.permute(self, perm)._as_view_of(self, "permute", perm)

    @property
    def mT(self) -> Tensor:  # noqa: N802
        return self.transpose(-2, -1)

    def permute(self, *dims: Any) -> Tensor:
        out = OPS.permute(self, dims[0] if len(dims) == 1 and isinstance(dims[0], tuple | list) else dims)
        perm = tuple(
            int(d) % self.ndim for d in (dims[0] if len(dims) == 1 and isinstance(dims[0], tuple | list) else dims)
        )
        return out._as_view_of(self, "permute", perm)

    def squeeze(self, dim: Any = None, *, axis: Any = None) -> Tensor:
        out = OPS.squeeze(self, _axis_arg(dim, axis, "squeeze"))
        return out._as_view_of(self, "reshape", out.shape)

    def unsqueeze(self, dim: int) -> Tensor:
        out = OPS.unsqueeze(self, dim)
        return out._as_view_of(self, "reshape", out.shape)

    def broadcast_to(self, shape: Any) -> Tensor:
        return OPS.broadcast_to(self, shape)

    def expand(self, *shape: Any) -> Tensor:
        shape = shape[0] if len(shape) == 1 and isinstance(shape[0], tuple | list) else shape
        for i, s in enumerate(shape[: max(len(shape) - self.ndim, 0)]):
            if s == -1:
                raise RuntimeError(
                    f"The expanded size of the tensor (-1) isn't allowed in a leading, non-existing dimension {i}"
                )
        full = tuple(s if s != -1 else self.shape[i - (len(shape) - self.ndim)] for i, s in enumerate(shape))
        return OPS.broadcast_to(self, full)

    def expand_as(self, other: Tensor) -> Tensor:
        return OPS.broadcast_to(self, other.shape)

    def flip(self, *dims: Any) -> Tensor:
        return OPS.flip(self, dims[0] if len(dims) == 1 and isinstance(dims[0], tuple | list) else dims)

    def roll(self, shifts: Any, dims: Any = None) -> Tensor:
        return OPS.roll(self, shifts, dims)

    def repeat(self, *sizes: Any) -> Tensor:
        """PyTorch's `repeat`: tile the tensor `sizes` times along each dimension."""
        return OPS.tile(self, sizes[0] if len(sizes) == 1 and isinstance(sizes[0], tuple | list) else sizes)

    def tile(self, *reps: Any) -> Tensor:
        return OPS.tile(self, reps[0] if len(reps) == 1 and isinstance(reps[0], tuple | list) else reps)

    def repeat_interleave(self, repeats: Any, dim: int | None = None) -> Tensor:
        return OPS.repeat_interleave(self, repeats, dim)

    def split(self, split_size: Any, dim: int = 0) -> tuple:
        return _pieces_as_views(self, OPS.split(self, split_size, dim), dim)

    def chunk(self, chunks: int, dim: int = 0) -> tuple:
        return _pieces_as_views(self, OPS.chunk(self, chunks, dim), dim)

    def unbind(self, dim: int = 0) -> tuple:
        pieces = OPS.unbind(self, dim)
        return tuple(p._as_view_of(self, "index", _axis_index(self.ndim, dim, i)) for i, p in enumerate(pieces))

    def tril(self, diagonal: int = 0) -> Tensor:
        return OPS.tril(self, diagonal)

    def triu(self, diagonal: int = 0) -> Tensor:
        return OPS.triu(self, diagonal)

    def diagonal(self, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Tensor:
        return OPS.diagonal(self, offset, dim1, dim2)

    def moveaxis(self, source: Any, destination: Any) -> Tensor:
        return OPS.moveaxis(self, source, destination)

    movedim = moveaxis

    def swapaxes(self, axis0: int, axis1: int) -> Tensor:
        return self.transpose(axis0, axis1)

    def unflatten(self, dim: int, sizes: Any) -> Tensor:
        out = OPS.unflatten(self, dim, sizes)
        return out._as_view_of(self, "reshape", out.shape)

    def index_select(self, dim: int, index: Tensor) -> Tensor:
        return OPS.index_select(self, dim, index)

    def gather(self, dim: int, index: Tensor) -> Tensor:
        return OPS.gather(self, dim, index)

    def scatter(
        self, dim: int, index: Tensor, src: Any = None, *, value: Any = None, reduce: str | None = None
    ) -> Tensor:
        """torch's scatter: `src` (a tensor) or `value=` (a number) at `index` along `dim`."""
        return OPS.scatter(self, dim, index, _src_or_value(src, value, "scatter"), reduce)

    def scatter_add(self, dim: int, index: Tensor, src: Tensor) -> Tensor:
        return OPS.scatter_add(self, dim, index, src)


def _axis_index(ndim: int, dim: int, item: Any) -> tuple:
    """The basic index selecting `item` (an int or slice) along `dim`."""
    return (slice(None),) * (dim % ndim) + (item,)


def _pieces_as_views(base: Tensor, pieces: tuple, dim: int) -> tuple:
    """split/chunk results: each a view of its slice of `base` along `dim`."""
    start = 0
    for piece in pieces:
        stop = start + piece.shape[dim]
        piece._as_view_of(base, "index", _axis_index(base.ndim, dim, slice(start, stop)))
        start = stop
    return pieces


def _swap(ndim: int, a: int, b: int) -> tuple[int, ...]:
    perm = list(range(ndim))
    perm[a % ndim], perm[b % ndim] = perm[b % ndim], perm[a % ndim]
    return tuple(perm)
