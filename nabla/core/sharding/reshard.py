"""Planning a layout change: the cheapest sequence of collectives from one spec to another.

    partial -> sharded on that axis     reduce_scatter (one collective, 1/k of the data)
    partial -> anything else            all_reduce
    axis moves from dim a to dim b      all_to_all
    axis leaves a dimension             all_gather
    axis joins a dimension              local slice (no communication)
    axes trade places (equal sizes)     ppermute: each device's piece is another device's
                                        piece, so it moves whole, once (or stays)

Each step is `(kind, spec_after, details)`; the ops layer turns steps into collective ops.
"""

from __future__ import annotations

from dataclasses import dataclass

from .mesh import DeviceMesh
from .spec import ShardingSpec


@dataclass(frozen=True)
class ReshardStep:
    kind: str  # "all_reduce", "reduce_scatter", "all_gather", "all_to_all", "ppermute", "shard_slice", "relabel"
    after: ShardingSpec
    axes: tuple[str, ...] = ()
    dim: int = -1  # gather/scatter dimension; all_to_all: the dimension the axes leave
    split_dim: int = -1  # all_to_all: the dimension the axes join
    perm: tuple[tuple[int, int], ...] = ()  # ppermute: (source, destination) indices along `axes`


def plan_reshard(src: ShardingSpec, dst: ShardingSpec) -> list[ReshardStep]:
    if src.mesh != dst.mesh:
        raise ValueError(f"reshard: cannot move between meshes {src.mesh.name!r} and {dst.mesh.name!r}")
    if src.rank != dst.rank:
        raise ValueError(f"reshard: spec of rank {dst.rank} for a tensor of rank {src.rank}")
    if dst.partial - src.partial:
        raise ValueError(f"reshard: cannot make a value partial over {sorted(dst.partial - src.partial)}")
    swap = _axis_swap(src, dst)
    if swap is not None:
        return [ReshardStep("ppermute", dst, swap[0], perm=swap[1])]
    steps: list[ReshardStep] = []
    dims = [list(d.axes) for d in src.dims]
    partial = set(src.partial)
    want = [d.axes for d in dst.dims]

    def spec() -> ShardingSpec:
        return src.with_dims(dims, partial=partial, partial_op=src.partial_op if partial else "sum")

    # 1. partial sums: scatter straight into a dimension that wants the axes next, else all-reduce
    drop = partial - dst.partial
    if drop:
        for d, axes in enumerate(dims):
            if list(want[d][: len(axes)]) != axes:
                continue
            ext = []
            for a in want[d][len(axes) :]:
                if a not in drop:
                    break
                ext.append(a)
            if ext and src.partial_op == "sum":
                dims[d] += ext
                partial -= set(ext)
                drop -= set(ext)
                steps.append(ReshardStep("reduce_scatter", spec(), tuple(ext), d))
        if drop:
            partial -= drop
            steps.append(ReshardStep("all_reduce", spec(), tuple(sorted(drop))))
    # 2. axes leaving a dimension: all_to_all into the dimension that takes them, else all_gather
    for d in range(len(dims)):
        keep = _common_prefix(dims[d], want[d])
        leaving = dims[d][keep:]
        if not leaving:
            continue
        target = next(
            (
                e
                for e in range(len(dims))
                if e != d
                and dims[e] == list(want[e][: len(dims[e])])
                and want[e][len(dims[e]) :][:1] == (leaving[0],)
                and list(want[e][len(dims[e]) : len(dims[e]) + len(leaving)]) == leaving
            ),
            None,
        )
        dims[d] = dims[d][:keep]
        if target is None:
            steps.append(ReshardStep("all_gather", spec(), tuple(leaving), d))
        else:
            dims[target] += leaving
            steps.append(ReshardStep("all_to_all", spec(), tuple(leaving), d, target))
    # 3. axes joining: local slices
    if any(tuple(a) != w for a, w in zip(dims, want, strict=True)):
        dims = [list(w) for w in want]
        steps.append(ReshardStep("shard_slice", spec()))
    final = spec()
    if final.dim_axes != dst.dim_axes or final.partial != dst.partial:
        raise AssertionError(f"internal error: reshard plan {src} -> {dst} ended at {final}")
    if steps:  # the last step lands exactly on dst (its replicated/open markers included)
        last = steps[-1]
        steps[-1] = ReshardStep(last.kind, dst, last.axes, last.dim, last.split_dim, last.perm)
    elif src != dst:
        steps.append(ReshardStep("relabel", dst))  # markers only: no data moves
    return steps


def _common_prefix(a: list, b: tuple) -> int:
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    return n


def _axis_swap(src: ShardingSpec, dst: ShardingSpec) -> tuple[tuple[str, ...], tuple[tuple[int, int], ...]] | None:
    """`dst` as `src` with mesh axes renamed: (the axes that move, the ppermute along them).

    When every dimension of `dst` is split over axes of the same sizes as in `src` (only the
    names differ) and the partial axes are the same, every device's piece is exactly the piece
    of one other device (sizes included, uneven splits too): renaming axis `s` to `d` sends the
    device at coordinate c on `s` to coordinate c on `d`. Devices that already hold their piece
    keep it. The gathers and all_to_alls of the general plan would move more and grow the
    pieces on the way. None when `dst` is no such renaming, or renames nothing."""
    mesh = src.mesh
    if src.partial != dst.partial or src.partial_op != dst.partial_op:
        return None
    rename = {a: a for a in src.partial}
    for have, want in zip(src.dim_axes, dst.dim_axes, strict=True):
        if [mesh.axis_size(a) for a in have] != [mesh.axis_size(a) for a in want]:
            return None
        rename.update(zip(have, want, strict=True))
    # Axes neither spec uses keep their place; the ones freed on one side and taken on the other
    # pair up by size (their sizes match: both specs use the same sizes on the other axes).
    free = [a for a in mesh.axis_names if a not in rename]
    taken = set(rename.values())
    rename.update((a, a) for a in free if a not in taken)
    src_left = sorted((a for a in free if a in taken), key=mesh.axis_size)
    dst_left = sorted((a for a in mesh.axis_names if a not in set(rename.values())), key=mesh.axis_size)
    if [mesh.axis_size(a) for a in src_left] != [mesh.axis_size(a) for a in dst_left]:
        return None
    rename.update(zip(src_left, dst_left, strict=True))
    moved = tuple(a for a in mesh.axis_names if rename[a] != a)
    if not moved:
        return None
    perm = sorted(
        {(mesh.index_along(p, moved), mesh.index_along(_renamed(mesh, p, rename), moved)) for p in range(mesh.size)}
    )
    return moved, tuple(perm)


def _renamed(mesh: DeviceMesh, position: int, rename: dict[str, str]) -> int:
    """The position whose coordinate on `rename[a]` is this position's coordinate on `a`."""
    coords = [0] * mesh.ndim
    for a, b in rename.items():
        coords[mesh.axis_index(b)] = mesh.coord(position, a)
    out = 0
    for c, n in zip(coords, mesh.shape, strict=True):
        out = out * n + c
    return out
