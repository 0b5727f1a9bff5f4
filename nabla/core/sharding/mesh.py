"""DeviceMesh: an N-d grid of devices with named axes.

Devices are addressed by their *position* in the mesh (row-major over `shape`); `devices`
maps positions to device ids. On a CPU every device of a mesh is simulated on the host: each
shard is a host buffer and collectives lower to ordinary ops in the same graph.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import cached_property


class DeviceMesh:
    """A named grid of devices.

    Args:
        name: the mesh's name (shown in sharding reprs, part of cache keys).
        shape: devices along each axis, e.g. `(2, 2)`.
        axis_names: one name per axis, e.g. `("dp", "tp")`.
        devices: device ids, row-major (default `0 .. N-1`); must hold exactly `prod(shape)`.

    Example:
        >>> mesh = DeviceMesh("m", (2, 2), ("dp", "tp"))
        >>> mesh.axis_size("tp"), mesh.size
        (2, 4)
    """

    def __init__(
        self, name: str, shape: Sequence[int], axis_names: Sequence[str], devices: Sequence[int] | None = None
    ) -> None:
        shape, axis_names = tuple(shape), tuple(axis_names)
        if not all(isinstance(s, int) and not isinstance(s, bool) and s > 0 for s in shape):
            raise ValueError(f"DeviceMesh {name!r}: shape must be positive ints, got {shape}")
        if len(shape) != len(axis_names):
            raise ValueError(
                f"DeviceMesh {name!r}: shape {shape} has {len(shape)} axes but axis_names {axis_names} "
                f"has {len(axis_names)}"
            )
        if len(set(axis_names)) != len(axis_names) or not all(isinstance(a, str) for a in axis_names):
            raise ValueError(f"DeviceMesh {name!r}: axis_names must be distinct strings, got {axis_names}")
        size = math.prod(shape)
        devices = tuple(range(size)) if devices is None else tuple(int(d) for d in devices)
        if len(devices) != size:
            raise ValueError(f"DeviceMesh {name!r}: shape {shape} needs {size} devices, got {len(devices)}")
        if len(set(devices)) != size:
            raise ValueError(f"DeviceMesh {name!r}: device ids must be distinct, got {devices}")
        self.name, self.shape, self.axis_names, self.devices = name, shape, axis_names, devices
        self._key = ("mesh", name, shape, axis_names, devices)

    @property
    def size(self) -> int:
        return len(self.devices)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def axis_size(self, axis: str) -> int:
        return self.shape[self.axis_index(axis)]

    def axis_index(self, axis: str) -> int:
        try:
            return self.axis_names.index(axis)
        except ValueError:
            raise ValueError(f"mesh {self.name!r} has no axis {axis!r} (axes: {self.axis_names})") from None

    def axes_size(self, axes: Sequence[str]) -> int:
        return math.prod(self.axis_size(a) for a in axes)

    @cached_property
    def coords(self) -> tuple[tuple[int, ...], ...]:
        """`coords[position]`: the device's coordinate along each mesh axis."""
        out, strides = [], [math.prod(self.shape[i + 1 :]) for i in range(self.ndim)]
        for pos in range(self.size):
            out.append(tuple((pos // st) % n for st, n in zip(strides, self.shape, strict=True)))
        return tuple(out)

    def coord(self, position: int, axis: str) -> int:
        return self.coords[position][self.axis_index(axis)]

    def index_along(self, position: int, axes: Sequence[str]) -> int:
        """The device's row-major index over `axes` (major first)."""
        index = 0
        for a in axes:
            index = index * self.axis_size(a) + self.coord(position, a)
        return index

    def groups(self, axes: Sequence[str]) -> list[list[int]]:
        """Positions grouped by their coordinates off `axes`; each group ordered by `index_along(axes)`."""
        groups: dict[tuple, list[int]] = {}
        others = [i for i, a in enumerate(self.axis_names) if a not in axes]
        for pos in range(self.size):
            groups.setdefault(tuple(self.coords[pos][i] for i in others), []).append(pos)
        return [sorted(g, key=lambda p: self.index_along(p, axes)) for g in groups.values()]

    def structural_key(self) -> tuple:
        return self._key

    def __eq__(self, other: object) -> bool:
        return isinstance(other, DeviceMesh) and other._key == self._key

    def __hash__(self) -> int:
        return hash(self._key)

    def __repr__(self) -> str:
        axes = ", ".join(f"{a}={n}" for a, n in zip(self.axis_names, self.shape, strict=True))
        return f"DeviceMesh({self.name!r}, {axes})"
