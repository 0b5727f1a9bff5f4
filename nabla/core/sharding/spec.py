"""How a tensor is laid out on a mesh: DimSpec, ShardingSpec, and the short form P(...).

A dimension sharded over several mesh axes is split hierarchically: the first axis splits
it into near-equal parts (NumPy's array_split: the first `n % k` parts are one longer), the
next axis splits each part again, and so on. So uneven sizes work, and gathering the last
axis of a dimension gives back exactly the pieces of the axes before it.

Shards are stored per *piece*: devices whose coordinates agree on every axis the spec uses
(sharded dimensions and partial sums) hold identical data, so they share one storage.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np

from .mesh import DeviceMesh

PARTIAL_OPS = ("sum", "max", "min")


@dataclass(frozen=True)
class DimSpec:
    """The mesh axes one tensor dimension is split over (major first); `()` is replicated.
    `is_open`: propagation may shard it further."""

    axes: tuple[str, ...] = ()
    is_open: bool = False

    def __repr__(self) -> str:
        body = ", ".join(f'"{a}"' for a in self.axes)
        return "{" + body + (", ?" if self.is_open else "") + "}"


def _entry_axes(entry: Any, what: str) -> tuple[str, ...]:
    if entry is None:
        return ()
    if isinstance(entry, str):
        return (entry,)
    if isinstance(entry, DimSpec):
        return entry.axes
    if isinstance(entry, tuple | list) and all(isinstance(a, str) for a in entry):
        return tuple(entry)
    raise TypeError(f"{what}: a dimension's entry must be None, an axis name or a tuple of names, got {entry!r}")


class P(tuple):
    """PartitionSpec: one entry per leading tensor dimension (JAX's `P`).

    An entry is `None` (replicated), an axis name, or a tuple of axis names (the dimension is
    split over several axes, major first). Trailing dimensions left out are replicated.

    Example:
        >>> P("dp", None)          # rows over "dp", columns replicated
        >>> P(("dp", "tp"))        # rows over both axes
    """

    def __new__(cls, *entries: Any) -> P:
        return super().__new__(cls, entries)

    def __repr__(self) -> str:
        return "P(" + ", ".join(repr(e) for e in self) + ")"


class ShardingSpec:
    """A tensor's layout on a mesh.

    Args:
        mesh: the DeviceMesh.
        dim_specs: one DimSpec (or axis name / tuple / None) per tensor dimension.
        replicated: mesh axes explicitly kept replicated.
        partial: mesh axes over which the shards hold partial results still to be reduced
            (a matmul whose contracting dimension is sharded leaves partial sums).
        partial_op: how partial results combine: "sum", "max" or "min".
        manual: inside `shard_map`: every device holds its own local value (no global view).
    """

    def __init__(
        self,
        mesh: DeviceMesh,
        dim_specs: Iterable[Any] = (),
        *,
        replicated: Iterable[str] = (),
        partial: Iterable[str] = (),
        partial_op: str = "sum",
        manual: bool = False,
    ) -> None:
        if not isinstance(mesh, DeviceMesh):
            raise TypeError(f"ShardingSpec: mesh must be a DeviceMesh, got {type(mesh).__name__}")
        dims = tuple(d if isinstance(d, DimSpec) else DimSpec(_entry_axes(d, "ShardingSpec")) for d in dim_specs)
        replicated, partial = frozenset(replicated), frozenset(partial)
        if partial_op not in PARTIAL_OPS:
            raise ValueError(f"ShardingSpec: partial_op must be one of {PARTIAL_OPS}, got {partial_op!r}")
        seen: dict[str, str] = {}
        uses = [(a, f"dimension {i}") for i, d in enumerate(dims) for a in d.axes]
        uses += [(a, "partial") for a in sorted(partial)] + [(a, "replicated") for a in sorted(replicated)]
        for axis, where in uses:
            mesh.axis_index(axis)  # names the mesh's axes when unknown
            if axis in seen:
                raise ValueError(f"ShardingSpec: mesh axis {axis!r} is used twice ({seen[axis]} and {where})")
            seen[axis] = where
        self.mesh, self.dims, self.replicated, self.partial = mesh, dims, replicated, partial
        self.partial_op = partial_op if partial else "sum"
        self.manual = manual
        self._key = (
            "spec",
            mesh.structural_key(),
            tuple((d.axes, d.is_open) for d in dims),
            tuple(sorted(replicated)),
            tuple(sorted(partial)),
            self.partial_op,
            manual,
        )

    # -- construction helpers ---------------------------------------------------------------
    @classmethod
    def replicated_on(cls, mesh: DeviceMesh, rank: int, *, manual: bool = False) -> ShardingSpec:
        return cls(mesh, [DimSpec()] * rank, manual=manual)

    def with_dims(self, dims: Sequence[Sequence[str]], *, partial: Iterable[str] = (), **kw: Any) -> ShardingSpec:
        return ShardingSpec(self.mesh, [DimSpec(tuple(d)) for d in dims], partial=partial, **kw)

    def without_partial(self) -> ShardingSpec:
        if not self.partial:
            return self
        return ShardingSpec(self.mesh, self.dims, replicated=self.replicated, manual=self.manual)

    # -- queries ----------------------------------------------------------------------------
    @property
    def rank(self) -> int:
        return len(self.dims)

    @property
    def dim_axes(self) -> tuple[tuple[str, ...], ...]:
        return tuple(d.axes for d in self.dims)

    @cached_property
    def used_axes(self) -> frozenset[str]:
        return frozenset(a for d in self.dims for a in d.axes) | self.partial

    @property
    def is_replicated(self) -> bool:
        """Every device holds the whole value (nothing sharded, nothing partial)."""
        return not self.used_axes and not self.manual

    @cached_property
    def piece_of(self) -> tuple[int, ...]:
        """Per device position: the index of the distinct piece it holds."""
        mesh = self.mesh
        if self.manual:
            return tuple(range(mesh.size))
        axes = [i for i, a in enumerate(mesh.axis_names) if a in self.used_axes]
        index: dict[tuple, int] = {}
        return tuple(index.setdefault(tuple(mesh.coords[p][i] for i in axes), len(index)) for p in range(mesh.size))

    @cached_property
    def num_pieces(self) -> int:
        return max(self.piece_of) + 1

    @cached_property
    def piece_positions(self) -> tuple[int, ...]:
        """For each piece, the first device position that holds it."""
        first: dict[int, int] = {}
        for pos, piece in enumerate(self.piece_of):
            first.setdefault(piece, pos)
        return tuple(first[i] for i in range(self.num_pieces))

    def dim_range(self, size: int, dim: int, position: int) -> tuple[int, int]:
        """(start, length) of this device's part of dimension `dim` (of global `size`)."""
        return split_range(self.mesh, size, self.dims[dim].axes, position)

    def local_shape(self, global_shape: Sequence[int], position: int) -> tuple[int, ...]:
        if self.manual:
            return tuple(global_shape)
        return tuple(self.dim_range(n, i, position)[1] for i, n in enumerate(global_shape))

    def local_slices(self, global_shape: Sequence[int], position: int) -> tuple[slice, ...]:
        out = []
        for i, n in enumerate(global_shape):
            start, length = self.dim_range(n, i, position)
            out.append(slice(start, start + length))
        return tuple(out)

    def check_rank(self, rank: int, what: str) -> None:
        if self.rank != rank:
            raise ValueError(f"{what}: the sharding spec has {self.rank} dimensions, the tensor has rank {rank}")

    # -- host data --------------------------------------------------------------------------
    def split(self, array: np.ndarray) -> tuple[np.ndarray, ...]:
        """The distinct pieces of a global array (views, no copies)."""
        if self.partial:
            raise ValueError("cannot split a value into partial sums; shard it first, then reduce")
        return tuple(array[(..., *self.local_slices(array.shape, pos))] for pos in self.piece_positions)

    def assemble(self, pieces: Sequence[np.ndarray], global_shape: Sequence[int]) -> np.ndarray:
        """The global value of distinct pieces (partial results are combined)."""
        if self.manual:
            raise ValueError("a shard_map-local value has no global view; return it from the shard_map")
        if not pieces:
            raise ValueError("no pieces")
        out = np.empty(tuple(global_shape), dtype=np.asarray(pieces[0]).dtype)
        by_slice: dict[tuple, list] = {}
        for pos in self.piece_positions:
            sl = self.local_slices(global_shape, pos)
            by_slice.setdefault(tuple((s.start, s.stop) for s in sl), [sl]).append(pieces[self.piece_of[pos]])
        combine = {"sum": np.sum, "max": np.max, "min": np.min}[self.partial_op]
        for sl, *parts in by_slice.values():
            out[sl] = parts[0] if len(parts) == 1 else combine(np.stack(parts), axis=0)
        return out

    # -- identity ---------------------------------------------------------------------------
    def structural_key(self) -> tuple:
        return self._key

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ShardingSpec) and other._key == self._key

    def __hash__(self) -> int:
        return hash(self._key)

    def __repr__(self) -> str:
        parts = [f"@{self.mesh.name}", "[" + ", ".join(map(repr, self.dims)) + "]"]
        if self.replicated:
            parts.append("replicated={" + ", ".join(f'"{a}"' for a in sorted(self.replicated)) + "}")
        if self.partial:
            op = "" if self.partial_op == "sum" else f" ({self.partial_op})"
            parts.append("partial={" + ", ".join(f'"{a}"' for a in sorted(self.partial)) + "}" + op)
        if self.manual:
            parts.append("manual")
        return "sharding<" + ", ".join(parts) + ">"


def split_range(mesh: DeviceMesh, size: int, axes: Sequence[str], position: int) -> tuple[int, int]:
    """Hierarchical array_split: (start, length) of a device's part of a dimension of `size`."""
    start, length = 0, size
    for axis in axes:
        k, j = mesh.axis_size(axis), mesh.coord(position, axis)
        base, extra = divmod(length, k)
        start += j * base + min(j, extra)
        length = base + (1 if j < extra else 0)
    return start, length


def as_spec(spec: Any, mesh: DeviceMesh | None, rank: int, what: str) -> ShardingSpec:
    """A ShardingSpec from a ShardingSpec, a `P(...)`, or a tuple of entries, checked against rank."""
    if isinstance(spec, ShardingSpec):
        if mesh is not None and spec.mesh != mesh:
            raise ValueError(f"{what}: the spec is on mesh {spec.mesh.name!r}, expected mesh {mesh.name!r}")
        spec.check_rank(rank, what)
        return spec
    if mesh is None:
        raise TypeError(f"{what}: a P(...) spec needs a mesh")
    if spec is None:
        spec = P()
    if not isinstance(spec, tuple | list):
        raise TypeError(f"{what}: expected a ShardingSpec or P(...), got {type(spec).__name__}")
    if len(spec) > rank:
        raise ValueError(f"{what}: spec {P(*spec)!r} has {len(spec)} entries, the tensor has rank {rank}")
    entries = [_entry_axes(e, what) for e in spec] + [()] * (rank - len(spec))
    return ShardingSpec(mesh, entries)
