"""Tensor's shape methods (`reshape`, `transpose`, `permute`, `squeeze`, `split`, `gather`,
...): a mixin of `Tensor`. Those that are views in PyTorch return views (see `views.py`): an
in-place op on the result writes through to the tensor it was taken from.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from max.dtype import DType

from .dispatch import OPS
from .strides import layout_of, reshape_strides
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
        return _reshaped(self, out, "reshape")

    def view(self, *shape: Any) -> Tensor:
        if len(shape) == 1 and isinstance(shape[0], DType):
            raise TypeError(
                f"view({shape[0]}): reading a tensor's bits as another dtype is not supported; .to({shape[0]}) "
                "converts the values"
            )
        out = OPS.reshape(self, shape[0] if len(shape) == 1 and isinstance(shape[0], tuple | list) else shape)
        return _reshaped(self, out, "view")

    def flatten(self, start_dim: int = 0, end_dim: int = -1) -> Tensor:
        return _reshaped(self, OPS.flatten(self, start_dim, end_dim), "flatten")

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

    def flip(self, *dims: Any, **kwargs: Any) -> Tensor:
        """torch's `flip(dims)`: positional dims, a list of them, or the `dims=` keyword."""
        if kwargs:
            if set(kwargs) != {"dims"} or dims:
                raise TypeError(f"flip() takes the dims positionally or as dims=, got {dims} and {sorted(kwargs)}")
            dims = (kwargs["dims"],)
        return OPS.flip(self, dims[0] if len(dims) == 1 and isinstance(dims[0], tuple | list) else dims)

    def roll(self, shifts: Any, dims: Any = None) -> Tensor:
        return OPS.roll(self, shifts, dims)

    def repeat(self, *sizes: Any) -> Tensor:
        """PyTorch's `repeat`: tile the tensor `sizes` times along each dimension."""
        return OPS.tile(self, sizes[0] if len(sizes) == 1 and isinstance(sizes[0], tuple | list) else sizes)

    def tile(self, *reps: Any) -> Tensor:
        return OPS.tile(self, reps[0] if len(reps) == 1 and isinstance(reps[0], tuple | list) else reps)

    def repeat_interleave(
        self, repeats: Any = None, dim: int | None = None, *, output_size: int | None = None
    ) -> Tensor:
        return OPS.repeat_interleave(self, repeats, dim, output_size=output_size)

    def tensor_split(self, indices_or_sections: Any, dim: int = 0) -> tuple:
        pieces = OPS.tensor_split(self, indices_or_sections, dim)
        return _pieces_as_views(self, pieces, dim, _split_bounds(self.shape[dim], indices_or_sections))

    def hsplit(self, indices_or_sections: Any) -> tuple:
        return _directional(self, OPS.hsplit, indices_or_sections, 1 if self.ndim > 1 else 0)

    def vsplit(self, indices_or_sections: Any) -> tuple:
        return _directional(self, OPS.vsplit, indices_or_sections, 0)

    def dsplit(self, indices_or_sections: Any) -> tuple:
        return _directional(self, OPS.dsplit, indices_or_sections, 2)

    def unfold(self, dimension: int, size: int, step: int) -> Tensor:
        """The windows of `size` entries every `step` along `dimension`, in a new last dim (a view)."""
        out = OPS.unfold(self, dimension, size, step)
        return out._as_view_of(self, "unfold", (dimension % max(self.ndim, 1), int(size), int(step)))

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
        out = OPS.diagonal(self, offset, dim1, dim2)
        return out._as_view_of(self, "diagonal", (int(offset), dim1 % self.ndim, dim2 % self.ndim))

    def moveaxis(self, source: Any, destination: Any) -> Tensor:
        out = OPS.moveaxis(self, source, destination)
        return out._as_view_of(self, "permute", _moved(self.ndim, source, destination))

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


def _reshaped(base: Tensor, out: Tensor, what: str) -> Tensor:
    """`out`, a reshape of `base`: a view of it, unless base is a view PyTorch lays out so that
    no view can have out's shape (a transpose flattened): then `reshape` copies, `view` raises."""
    if getattr(base, "_view", None) is not None:
        layout = layout_of(base)
        if reshape_strides(layout, tuple(out.shape)) is None:
            if what == "view":
                raise RuntimeError(
                    f"view: a tensor of shape {layout[0]} and strides {layout[1]} (a non-contiguous view) cannot be "
                    f"viewed as shape {tuple(out.shape)}; use .reshape(...), which copies, or .contiguous() first"
                )
            return OPS.identity(base) if out is base else out
    return out._as_view_of(base, "reshape", out.shape)


def _split_bounds(n: int, indices_or_sections: Any) -> list[tuple]:
    """Each `tensor_split` piece's (start, stop), read as a Python slice: k near-equal pieces
    (the first n % k one longer) or the pieces between the given indices."""
    spec = indices_or_sections.tolist() if hasattr(indices_or_sections, "tolist") else indices_or_sections
    if isinstance(spec, int):
        size, extra = divmod(n, spec)
        starts = [i * size + min(i, extra) for i in range(spec + 1)]
        return list(zip(starts, starts[1:], strict=False))
    cuts = [0, *(int(i) for i in spec), None]
    return list(zip(cuts, cuts[1:], strict=False))


def _directional(base: Tensor, split: Any, indices_or_sections: Any, dim: int) -> tuple:
    """hsplit/vsplit/dsplit: `split`'s pieces, each a view of its slice along `dim`."""
    pieces = split(base, indices_or_sections)
    return _pieces_as_views(base, pieces, dim, _split_bounds(base.shape[dim], indices_or_sections))


def _moved(ndim: int, source: Any, destination: Any) -> tuple[int, ...]:
    """The permutation `moveaxis(source, destination)` applies (NumPy's order)."""
    src = [int(s) % ndim for s in (source if isinstance(source, tuple | list) else (source,))]
    dst = [int(d) % ndim for d in (destination if isinstance(destination, tuple | list) else (destination,))]
    order = [d for d in range(ndim) if d not in src]
    for d, s in sorted(zip(dst, src, strict=True)):
        order.insert(d, s)
    return tuple(order)


def _axis_index(ndim: int, dim: int, item: Any) -> tuple:
    """The basic index selecting `item` (an int or slice) along `dim`."""
    return (slice(None),) * (dim % ndim) + (item,)


def _pieces_as_views(base: Tensor, pieces: tuple, dim: int, bounds: Any = None) -> tuple:
    """split/chunk results: each a view of its slice of `base` along `dim` (the pieces follow
    each other, unless `bounds` gives each piece's (start, stop) as a Python slice reads them)."""
    views, start = [], 0
    for i, piece in enumerate(pieces):
        stop = start + piece.shape[dim]
        item = slice(start, stop) if bounds is None else slice(*bounds[i])
        views.append(piece._as_view_of(base, "index", _axis_index(base.ndim, dim, item)))
        start = stop
    return tuple(views)


def _swap(ndim: int, a: int, b: int) -> tuple[int, ...]:
    perm = list(range(ndim))
    perm[a % ndim], perm[b % ndim] = perm[b % ndim], perm[a % ndim]
    return tuple(perm)
