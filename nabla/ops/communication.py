"""Communication: collectives as ops, and layout changes (`shard`, `reshard`, `unshard`). The SPMD
step every op call on sharded tensors goes through, and the `window` collective, are in spmd.py.

Collective ops receive every device's value at once (`PerDevice` lists) and return lists.
On a CPU mesh every device is simulated on the host, so their MAX lowering is ordinary
concatenations, sums and slices inside the one graph; the same code runs on NumPy.

Each collective runs in one of two modes, read from its output spec:
  layout   (global view) inserted by propagation or `reshard`: the logical value is
           unchanged, only its layout moves. VJP: move the cotangent back to the input's
           layout (an all_gather's cotangent is just sliced, no communication).
  manual   (inside `shard_map`) every device holds its own value, and a collective has its
           per-device meaning: all_reduce sums the devices' values. VJP: the transposed
           collective (all_gather <-> reduce_scatter, all_reduce -> all_reduce, ...).
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Sequence
from functools import reduce
from typing import Any

import numpy as np
from max.graph import ops

from ..core.common import dtypes as _dt
from ..core.graph.executors import graph_device
from ..core.graph.program import PerDevice
from ..core.sharding import DeviceMesh, DimSpec, P, ShardingSpec, as_spec, plan_reshard, split_range
from ..core.tensor.impl import TensorImpl
from ..core.tensor.tensor import Tensor
from .base import AVal, Operation, public
from .cast import cast

__all__ = [
    "DeviceMesh",
    "DimSpec",
    "P",
    "ShardingSpec",
    "all_gather",
    "all_reduce",
    "all_to_all",
    "axis_index",
    "broadcast",
    "ppermute",
    "reduce_scatter",
    "reshard",
    "shard",
    "unshard",
]

COMMUNICATION_OPS = ("all_reduce", "all_gather", "reduce_scatter", "all_to_all", "ppermute", "broadcast", "window")


# -- the physical collectives, written once for NumPy arrays and MAX graph values -----------------
class _NumpyComm:
    add, div, maximum, minimum = np.add, np.divide, np.maximum, np.minimum

    @staticmethod
    def concat(values: list, axis: int) -> Any:
        return values[0] if len(values) == 1 else np.concatenate(values, axis)

    @staticmethod
    def slice(x: Any, axis: int, start: int, stop: int) -> Any:
        return x[(slice(None),) * axis + (slice(start, stop),)]

    @staticmethod
    def size(x: Any, axis: int) -> int:
        return x.shape[axis]

    @staticmethod
    def zeros_like(x: Any) -> Any:
        return np.zeros_like(x)

    @staticmethod
    def constant(value: Any, dtype: Any) -> Any:
        return np.asarray(value, _dt.to_numpy_dtype(dtype))

    @staticmethod
    def zeros(like: Any, axis: int, length: int) -> Any:
        return np.zeros(like.shape[:axis] + (length,) + like.shape[axis + 1 :], like.dtype)

    @staticmethod
    def flip(x: Any, axis: int) -> Any:
        return np.flip(x, axis)


class _MaxComm:
    add, div = staticmethod(ops.add), staticmethod(ops.div)
    maximum, minimum = staticmethod(ops.max), staticmethod(ops.min)

    @staticmethod
    def concat(values: list, axis: int) -> Any:
        return values[0] if len(values) == 1 else ops.concat(values, axis)

    @staticmethod
    def slice(x: Any, axis: int, start: int, stop: int) -> Any:
        if start == 0 and stop == int(x.shape[axis]):
            return x
        return ops.slice_tensor(x, [slice(None)] * axis + [slice(start, stop)])

    @staticmethod
    def size(x: Any, axis: int) -> int:
        return int(x.shape[axis])

    @staticmethod
    def zeros_like(x: Any) -> Any:
        return ops.broadcast_to(ops.constant(0, x.dtype, x.device), x.shape)

    @staticmethod
    def constant(value: Any, dtype: Any) -> Any:
        return ops.constant(value, dtype, graph_device())

    @staticmethod
    def zeros(like: Any, axis: int, length: int) -> Any:
        shape = [int(d) for d in like.shape]
        shape[axis] = length
        return ops.broadcast_to(ops.constant(0, like.dtype, like.device), shape)

    @staticmethod
    def flip(x: Any, axis: int) -> Any:
        n = int(x.shape[axis])
        return ops.gather(x, ops.constant(np.arange(n - 1, -1, -1, dtype=np.int64), _dt.int64, x.device), axis)


NUMPY_COMM, MAX_COMM = _NumpyComm(), _MaxComm()


def _on_devices(values: tuple, kw: dict) -> list[PerDevice]:
    """Each input as per-device values: an unsharded value is held by every device."""
    n = (kw["out"] or kw["src"]).mesh.size
    return [v if type(v) is PerDevice else PerDevice([v] * n) for v in values]


def _group_map(mesh: DeviceMesh, axes: Sequence[str], fn: Any) -> PerDevice:
    """`fn(group)` -> one value per member, for every group of devices that differ only on `axes`."""
    out: list = [None] * mesh.size
    for group in mesh.groups(axes):
        for pos, value in zip(group, fn(group), strict=True):
            out[pos] = value
    return PerDevice(out)


def _piece(lib: Any, value: Any, mesh: DeviceMesh, axes: Sequence[str], axis: int, pos: int) -> Any:
    start, length = split_range(mesh, lib.size(value, axis), axes, pos)
    return lib.slice(value, axis, start, start + length)


def _combine(lib: Any, op: str) -> Any:
    return {"sum": lib.add, "mean": lib.add, "max": lib.maximum, "min": lib.minimum}[op]


def phys_all_reduce(lib: Any, x: PerDevice, mesh: DeviceMesh, axes: Sequence[str], op: str) -> PerDevice:
    def fn(group: list) -> list:
        total = reduce(_combine(lib, op), [x[p] for p in group])
        if op == "mean":
            total = lib.div(total, len(group))
        return [total] * len(group)

    return _group_map(mesh, axes, fn)


def phys_all_gather(lib: Any, x: PerDevice, mesh: DeviceMesh, axes: Sequence[str], axis: int) -> PerDevice:
    return _group_map(mesh, axes, lambda g: [lib.concat([x[p] for p in g], axis)] * len(g))


def phys_reduce_scatter(lib: Any, x: PerDevice, mesh: DeviceMesh, axes: Sequence[str], axis: int) -> PerDevice:
    def fn(group: list) -> list:
        total = reduce(lib.add, [x[p] for p in group])
        return [_piece(lib, total, mesh, axes, axis, p) for p in group]

    return _group_map(mesh, axes, fn)


def phys_all_to_all(
    lib: Any, x: PerDevice, mesh: DeviceMesh, axes: Sequence[str], split: int, concat: int
) -> PerDevice:
    def fn(group: list) -> list:
        return [lib.concat([_piece(lib, x[p], mesh, axes, split, q) for p in group], concat) for q in group]

    return _group_map(mesh, axes, fn)


# -- collective ops -----------------------------------------------------------------------------
class CollectiveOp(Operation):
    """Base of the communication ops. kwargs: `out` (the output spec; `None` for an
    unsharded output) and `src` (the input's spec), plus the collective's own arguments."""

    collective = True
    # Layout mode: a layout change is the identity on the global value, so any layout of the
    # cotangent is right. Ops that split their input (slices, reduce_scatter) keep the
    # cotangent's layout: moving it back would gather it. Ops that join (gathers, reductions)
    # move it back to the input's layout, which is a local slice.
    keeps_cotangent = False

    def adapt_kwargs(self, impls: list[TensorImpl], kwargs: dict, batch_dims: int) -> dict:
        out = kwargs.get("out")
        if batch_dims and out is not None and out.manual:
            raise NotImplementedError(f"{self.name}: vmap inside shard_map's manual code is not supported")
        return kwargs

    def abstract_eval(self, x: AVal, **kw: Any) -> AVal:
        out = kw["out"]
        return (self.manual_shape(x[0], out.mesh, **kw), x[1]) if out is not None and out.manual else x

    def manual_shape(self, shape: tuple, mesh: DeviceMesh, **kw: Any) -> tuple:
        return shape

    def own_layouts(self, impls: list[TensorImpl], kwargs: dict) -> tuple[None, list]:
        return None, self.out_specs(impls, kwargs)

    def out_specs(self, impls: list[TensorImpl], kwargs: dict) -> list:
        return [kwargs["out"]]

    def kernel(self, *values: Any, **kw: Any) -> Any:
        return self.apply(MAX_COMM, *_on_devices(values, kw), **kw)

    def numpy_kernel(self, *values: Any, **kw: Any) -> Any:
        return self.apply(NUMPY_COMM, *_on_devices(values, kw), **kw)

    def apply(self, lib: Any, *values: PerDevice, **kw: Any) -> Any:
        """The collective on every device's values (an unsharded input is every device's)."""
        raise NotImplementedError

    def vjp_rule(self, primals: list, cotangents: list, outputs: list, **kw: Any) -> list:
        if kw["out"] is not None and kw["out"].manual:
            return [self.transpose(cotangents[0], primals[0], outputs[0], **kw)]
        ct, src = cotangents[0], kw["src"]
        if self.keeps_cotangent and src is not None and ct._impl.sharding is not None:
            return [ct]
        return [_to_layout(ct, src)]

    def jvp_rule(self, primals: list, tangents: list, outputs: list, **kw: Any) -> list:
        if kw["out"] is not None and kw["out"].manual:
            return [self(_as_manual(tangents[0], kw["out"].mesh), **kw)]
        return [_to_layout(tangents[0], kw["out"])]

    def transpose(self, ct: Tensor, x: Tensor, y: Tensor, **kw: Any) -> Tensor:
        raise NotImplementedError(f"{self.name}: no manual-mode transpose")


def _manual_size(shape: tuple, axis: int, parts: int, what: str, divide: bool) -> tuple:
    n = shape[axis]
    if divide and n % parts:
        raise ValueError(f"{what}: dimension {axis} of size {n} does not split evenly over {parts} devices")
    return shape[:axis] + ((n // parts) if divide else n * parts,) + shape[axis + 1 :]


class AllReduceOp(CollectiveOp):
    name = "all_reduce"

    def apply(self, lib: Any, x: Any, *, out: ShardingSpec, src: Any, axes: tuple, op: str) -> PerDevice:
        return phys_all_reduce(lib, x, out.mesh, axes, op)

    def transpose(self, ct: Tensor, x: Tensor, y: Tensor, *, out: Any, src: Any, axes: tuple, op: str) -> Tensor:
        if op in ("sum", "mean"):
            return _all_reduce(ct, out=out, src=out, axes=axes, op=op)
        # max/min: the devices holding the extremum share its cotangent (as amax's ties do)
        hit = cast(x == y, ct.dtype)
        ties = _all_reduce(hit, out=out, src=out, axes=axes, op="sum")
        return _all_reduce(ct, out=out, src=out, axes=axes, op="sum") * hit / ties


class AllGatherOp(CollectiveOp):
    name = "all_gather"

    def manual_shape(self, shape: tuple, mesh: DeviceMesh, *, axes: tuple, dim: int, **kw: Any) -> tuple:
        return _manual_size(shape, dim, mesh.axes_size(axes), "all_gather", False)

    def apply(self, lib: Any, x: Any, *, out: ShardingSpec, src: Any, axes: tuple, dim: int) -> PerDevice:
        return phys_all_gather(lib, x, out.mesh, axes, dim)

    def transpose(self, ct: Tensor, x: Tensor, y: Tensor, *, out: Any, src: Any, axes: tuple, dim: int) -> Tensor:
        return _reduce_scatter(ct, out=out, src=out, axes=axes, dim=dim)


class ReduceScatterOp(CollectiveOp):
    name = "reduce_scatter"
    keeps_cotangent = True

    def manual_shape(self, shape: tuple, mesh: DeviceMesh, *, axes: tuple, dim: int, **kw: Any) -> tuple:
        return _manual_size(shape, dim, mesh.axes_size(axes), "reduce_scatter", True)

    def apply(self, lib: Any, x: Any, *, out: ShardingSpec, src: Any, axes: tuple, dim: int) -> PerDevice:
        return phys_reduce_scatter(lib, x, out.mesh, axes, dim)

    def transpose(self, ct: Tensor, x: Tensor, y: Tensor, *, out: Any, src: Any, axes: tuple, dim: int) -> Tensor:
        return _all_gather(ct, out=out, src=out, axes=axes, dim=dim)


class AllToAllOp(CollectiveOp):
    name = "all_to_all"

    def manual_shape(self, shape: tuple, mesh: DeviceMesh, *, axes: tuple, split: int, concat: int, **kw: Any) -> tuple:
        k = mesh.axes_size(axes)
        return _manual_size(_manual_size(shape, split, k, "all_to_all", True), concat, k, "all_to_all", False)

    def apply(self, lib: Any, x: Any, *, out: Any, src: Any, axes: tuple, split: int, concat: int) -> PerDevice:
        return phys_all_to_all(lib, x, out.mesh, axes, split, concat)

    def transpose(
        self, ct: Tensor, x: Tensor, y: Tensor, *, out: Any, src: Any, axes: tuple, split: int, concat: int
    ) -> Tensor:
        return _all_to_all(ct, out=out, src=out, axes=axes, split=concat, concat=split)


class PPermuteOp(CollectiveOp):
    name = "ppermute"

    def apply(self, lib: Any, x: Any, *, out: Any, src: Any, axes: tuple, perm: tuple) -> PerDevice:
        def fn(group: list) -> list:
            moved = [lib.zeros_like(x[group[0]])] * len(group)
            for s, d in perm:
                moved[d] = x[group[s]]
            return moved

        return _group_map(out.mesh, axes, fn)

    def transpose(self, ct: Tensor, x: Tensor, y: Tensor, *, out: Any, src: Any, axes: tuple, perm: tuple) -> Tensor:
        return _ppermute(ct, out=out, src=out, axes=axes, perm=tuple((d, s) for s, d in perm))


class BroadcastOp(CollectiveOp):
    name = "broadcast"

    def apply(self, lib: Any, x: Any, *, out: Any, src: Any, axes: tuple, root: int) -> PerDevice:
        return _group_map(out.mesh, axes, lambda g: [x[g[root]]] * len(g))

    def transpose(self, ct: Tensor, x: Tensor, y: Tensor, *, out: Any, src: Any, axes: tuple, root: int) -> Tensor:
        total = _all_reduce(ct, out=out, src=out, axes=axes, op="sum")
        at_root = cast(_axis_index(out=_scalar_manual(out.mesh), src=None, axes=axes) == root, ct.dtype)
        return total * at_root


class AxisIndexOp(CollectiveOp):
    """Each device's index along mesh axes (major first), an int32 scalar; inside shard_map."""

    name = "axis_index"
    differentiable = False

    def abstract_eval(self, **kw: Any) -> AVal:
        return (), _dt.int32

    def apply(self, lib: Any, *, out: Any, src: Any, axes: tuple) -> PerDevice:
        mesh = out.mesh
        return PerDevice(lib.constant(mesh.index_along(p, axes), _dt.int32) for p in range(mesh.size))


class ShardSliceOp(CollectiveOp):
    """Each device keeps its part of the dimensions that gain axes: local slicing, no
    communication. From an unsharded value (`src` None) this distributes it onto the mesh."""

    name = "shard_slice"
    keeps_cotangent = True

    def apply(self, lib: Any, x: Any, *, out: ShardingSpec, src: Any) -> PerDevice:
        mesh, have = out.mesh, (src.dim_axes if src is not None else ((),) * out.rank)
        memo: dict = {}
        result = []
        for pos in range(mesh.size):
            key = (id(x[pos]), out.piece_of[pos])
            if key not in memo:
                value = x[pos]
                for d, (old, new) in enumerate(zip(have, out.dim_axes, strict=True)):
                    if new[len(old) :]:
                        value = _piece(lib, value, mesh, new[len(old) :], d, pos)
                memo[key] = value
            result.append(memo[key])
        return PerDevice(result)


class RelabelOp(CollectiveOp):
    """A new spec over the same per-device data: into or out of shard_map's manual mode, or
    onto a mesh from an unsharded value held by every device. No data moves."""

    name = "relabel"

    def abstract_eval(self, x: AVal, *, out: Any, src: Any) -> AVal:
        if out.manual and (src is None or not src.manual):  # global -> local shape
            return (src.local_shape(x[0], 0) if src is not None else x[0]), x[1]
        if src is not None and src.manual and not out.manual:  # local -> global shape
            return _global_shape(x[0], out), x[1]
        return x

    def apply(self, lib: Any, x: PerDevice, *, out: Any, src: Any) -> PerDevice:
        return x

    # Device copies along mesh axes a global layout does not use stand for their mean: the
    # cotangent entering shard_map is split evenly over the copies, and the cotangent leaving
    # it sums them. With all_reduce's transpose being all_reduce, gradients come out exact.
    def vjp_rule(self, primals: list, cotangents: list, outputs: list, *, out: Any, src: Any) -> list:
        ct = cotangents[0]
        if out.manual and (src is None or not src.manual):  # into shard_map
            copies = _unused_axes(out.mesh, src)
            if copies:
                ct = _all_reduce(ct, out=out, src=out, axes=copies, op="sum")
            global_spec = src if src is not None else ShardingSpec.replicated_on(out.mesh, ct.ndim)
            back = _relabel(ct, out=global_spec.without_partial(), src=out)
            return [back if src is not None else _unshard(back, out=None, src=global_spec)]
        if src is not None and src.manual and not out.manual:  # out of shard_map
            local = _relabel(_conform_tensor(ct, out.without_partial()), out=src, src=out.without_partial())
            copies = out.mesh.axes_size(_unused_axes(out.mesh, out))
            return [local if copies == 1 else local * (1.0 / copies)]
        return [_to_layout(ct, src)]

    def jvp_rule(self, primals: list, tangents: list, outputs: list, *, out: Any, src: Any) -> list:
        t = tangents[0]
        if not (src is not None and src.manual):
            t = _conform_tensor(t, src)
        return [_relabel(t, out=out, src=src)]


def _unused_axes(mesh: DeviceMesh, spec: ShardingSpec | None) -> tuple[str, ...]:
    used = spec.used_axes if spec is not None else frozenset()
    return tuple(a for a in mesh.axis_names if a not in used)


class UnshardOp(CollectiveOp):
    """A sharded value as one ordinary (unsharded) tensor: partial results reduced, pieces joined."""

    name = "unshard"

    def apply(self, lib: Any, x: Any, *, out: Any, src: ShardingSpec) -> Any:
        mesh = src.mesh
        if src.partial:
            x = phys_all_reduce(lib, x, mesh, sorted(src.partial), src.partial_op)
        for d, axes in enumerate(src.dim_axes):
            for k in range(len(axes), 0, -1):  # innermost axis first: pieces join hierarchically
                x = phys_all_gather(lib, x, mesh, axes[k - 1 : k], d)
        return x[0]

    def out_specs(self, impls: list[TensorImpl], kwargs: dict) -> list:
        return [None]

    def vjp_rule(self, primals: list, cotangents: list, outputs: list, *, out: Any, src: ShardingSpec) -> list:
        return [_to_layout(cotangents[0], src)]

    def jvp_rule(self, primals: list, tangents: list, outputs: list, **kw: Any) -> list:
        return [_to_layout(tangents[0], None)]


_all_reduce, _all_gather, _reduce_scatter = AllReduceOp(), AllGatherOp(), ReduceScatterOp()
_all_to_all, _ppermute, _broadcast, _axis_index = AllToAllOp(), PPermuteOp(), BroadcastOp(), AxisIndexOp()
_shard_slice, _relabel, _unshard = ShardSliceOp(), RelabelOp(), UnshardOp()


def _global_shape(local: tuple, spec: ShardingSpec) -> tuple:
    return tuple(n * spec.mesh.axes_size(axes) for n, axes in zip(local, spec.dim_axes, strict=True))


def _scalar_manual(mesh: DeviceMesh) -> ShardingSpec:
    return ShardingSpec.replicated_on(mesh, 0, manual=True)


# -- layout changes (global view) ---------------------------------------------------------------
def _apply_plan(x: Tensor, dst: ShardingSpec) -> Tensor:
    src = x._impl.sharding
    for step in plan_reshard(src, dst):
        kw: dict = {"out": step.after, "src": src}
        if step.kind == "all_reduce":
            x = _all_reduce(x, **kw, axes=step.axes, op=src.partial_op)
        elif step.kind == "reduce_scatter":
            x = _reduce_scatter(x, **kw, axes=step.axes, dim=step.dim)
        elif step.kind == "all_gather":
            x = _all_gather(x, **kw, axes=step.axes, dim=step.dim)
        elif step.kind == "all_to_all":
            x = _all_to_all(x, **kw, axes=step.axes, split=step.split_dim, concat=step.dim)
        elif step.kind == "ppermute":
            x = _ppermute(x, **kw, axes=step.axes, perm=step.perm)
        elif step.kind == "shard_slice":
            x = _shard_slice(x, **kw)
        else:
            x = _relabel(x, **kw)
        src = step.after
    return x


def _conform_tensor(x: Tensor, dst: ShardingSpec | None) -> Tensor:
    """`x` with layout `dst` (None: unsharded), by the cheapest collectives."""
    src = x._impl.sharding
    if src == dst:
        return x
    if dst is None:
        return _unshard(x, out=None, src=src)
    if dst.manual:
        if src is not None and src.manual:
            raise ValueError(f"internal error: manual layouts {src} and {dst} differ")
        if src is not None and not src.is_replicated:
            raise ValueError(
                "a sharded tensor captured inside shard_map: pass it as an argument with an in_spec instead"
            )
        return _relabel(x, out=dst, src=src)
    if src is None:
        return x if dst.is_replicated else _shard_slice(x, out=dst, src=None)
    if src.manual:
        raise ValueError("a shard_map-local value used outside its shard_map: return it from the function")
    return _apply_plan(x, dst)


def _to_layout(x: Tensor, spec: ShardingSpec | None) -> Tensor:
    """A cotangent or tangent moved to a primal's layout (partial sums are not re-created).
    One that vmap batched (jacrev's cotangents, jacfwd's tangents) keeps its batch dims
    replicated in front of that layout."""
    if spec is None:
        return _conform_tensor(x, None)
    spec = spec.without_partial()
    extra = len(x._impl.physical_shape) - spec.rank
    if extra > 0:
        spec = ShardingSpec(
            spec.mesh, [DimSpec()] * extra + list(spec.dims), replicated=spec.replicated, manual=spec.manual
        )
    return _conform_tensor(x, spec)


def _as_manual(x: Tensor, mesh: DeviceMesh) -> Tensor:
    spec = x._impl.sharding
    if spec is not None and spec.manual:
        return x
    return _conform_tensor(x, ShardingSpec.replicated_on(mesh, x.ndim, manual=True))


def plain_spec(spec: Any, mesh: DeviceMesh, rank: int, what: str) -> ShardingSpec:
    """`as_spec` for layouts a user asks for, which are never partial or manual."""
    dst = as_spec(spec, mesh, rank, what)
    if dst.partial or dst.manual:
        raise ValueError(f"{what}: the spec must not be partial or manual, got {dst}")
    return dst


@public()
def shard(x: Any, mesh: DeviceMesh, spec: Any = None) -> Tensor:
    """Lay `x` out on `mesh`: each device holds its part (or, for replicated dimensions, all).

    A realized tensor that needs no gradient is split on the host with no op recorded;
    otherwise the split is an op (differentiable: the gradient is gathered back). A tensor on
    another mesh moves through its full value.

    Args:
        x: a tensor (or array-like).
        mesh: the DeviceMesh.
        spec: a `P(...)` or `ShardingSpec`; default fully replicated.

    Example:
        >>> mesh = DeviceMesh("m", (2,), ("dp",))
        >>> xs = shard(nb.ones((8, 4)), mesh, P("dp", None))
        >>> xs.shape, xs.sharding
        ((8, 4), sharding<@m, [{"dp"}, {}]>)
    """
    if not isinstance(x, Tensor):
        x = Tensor.from_numpy(np.asarray(x))
    if not isinstance(mesh, DeviceMesh):
        raise TypeError(f"shard: mesh must be a DeviceMesh, got {type(mesh).__name__}")
    if x._impl.batch_dims:
        raise NotImplementedError("shard: sharded tensors inside vmap are not supported")
    dst = plain_spec(spec, mesh, x.ndim, "shard")
    impl = x._impl
    on_host = impl.is_realized and not impl.requires_grad and impl.dtype != _dt.bfloat16
    if impl.sharding is not None:
        if impl.sharding.mesh == mesh:
            return reshard(x, dst)
        x = Tensor.from_numpy(x.numpy()) if on_host else unshard(x)  # another mesh: through the full value
        impl = x._impl
    if on_host:
        pieces = dst.split(x.numpy())
        return Tensor(TensorImpl(impl.physical_shape, impl.dtype, data=pieces, device=impl.device, sharding=dst))
    return _conform_tensor(x, dst)


@public()
def reshard(x: Tensor, spec: Any) -> Tensor:
    """`x` with a new layout on its mesh, moved by the cheapest collectives.

    Args:
        x: a sharded tensor (an unsharded one is sharded, which needs a ShardingSpec).
        spec: a `P(...)` (on x's mesh) or a ShardingSpec.
    """
    current = x._impl.sharding
    mesh = current.mesh if current is not None else None
    dst = as_spec(spec, mesh, x.ndim, "reshard")
    if dst.manual:
        raise ValueError("reshard: the target spec must not be manual")
    if current is not None and current.manual:
        raise ValueError("reshard: x is a shard_map-local value; use the collectives inside shard_map")
    bd = x._impl.batch_dims
    if bd and dst.rank == x.ndim:  # under vmap: the batch dims keep their layout
        front = list(current.dims[:bd]) if current is not None and current.rank > x.ndim else [DimSpec()] * bd
        dst = ShardingSpec(dst.mesh, front + list(dst.dims), replicated=dst.replicated)
    return _conform_tensor(x, dst)


@public()
def unshard(x: Tensor) -> Tensor:
    """`x` as one ordinary tensor off the mesh (partial sums reduced, pieces joined)."""
    return x if x._impl.sharding is None else _conform_tensor(x, None)


# -- collectives inside shard_map (manual mode) -------------------------------------------------
class _ManualState(threading.local):
    def __init__(self) -> None:
        self.meshes: list[DeviceMesh] = []


MANUAL = _ManualState()


def _manual_mesh(what: str) -> DeviceMesh:
    if not MANUAL.meshes:
        raise RuntimeError(f"{what}: collectives over named axes run inside shard_map; outside it use reshard")
    return MANUAL.meshes[-1]


def _axes(mesh: DeviceMesh, axis_name: Any, what: str) -> tuple[str, ...]:
    axes = (axis_name,) if isinstance(axis_name, str) else tuple(axis_name)
    for a in axes:
        if a not in mesh.axis_names:
            raise ValueError(f"{what}: axis_name {a!r} is not an axis of mesh {mesh.name!r} {mesh.axis_names}")
    return axes


def _manual_call(collective: CollectiveOp, x: Tensor, axis_name: Any, **kw: Any) -> Tensor:
    what = collective.name
    mesh = _manual_mesh(what)
    x = _as_manual(x, mesh)
    out = ShardingSpec.replicated_on(mesh, x.ndim, manual=True)
    return collective(x, out=out, src=x._impl.sharding, axes=_axes(mesh, axis_name, what), **kw)


def _dim(x: Tensor, dim: int, what: str) -> int:
    if not -x.ndim <= dim < x.ndim:
        raise ValueError(f"{what}: dim={dim} is out of range for a tensor of rank {x.ndim}")
    return dim % x.ndim


@public()
def all_reduce(x: Tensor, axis_name: Any, op: str = "sum") -> Tensor:
    """Inside shard_map: combine every device's value over mesh axes ("sum", "mean", "max", "min")."""
    if op not in ("sum", "mean", "max", "min"):
        raise ValueError(f"all_reduce: op must be 'sum', 'mean', 'max' or 'min', got {op!r}")
    return _manual_call(_all_reduce, x, axis_name, op=op)


@public()
def all_gather(x: Tensor, axis_name: Any, dim: int = 0) -> Tensor:
    """Inside shard_map: concatenate the devices' values along `dim`, in mesh order."""
    return _manual_call(_all_gather, x, axis_name, dim=_dim(x, dim, "all_gather"))


@public()
def reduce_scatter(x: Tensor, axis_name: Any, dim: int = 0) -> Tensor:
    """Inside shard_map: sum the devices' values, each keeping its part of `dim`."""
    return _manual_call(_reduce_scatter, x, axis_name, dim=_dim(x, dim, "reduce_scatter"))


@public()
def all_to_all(x: Tensor, axis_name: Any, split_dim: int, concat_dim: int) -> Tensor:
    """Inside shard_map: split `split_dim` into one part per device, send part j to device j,
    and concatenate what arrives along `concat_dim`."""
    split, concat = _dim(x, split_dim, "all_to_all"), _dim(x, concat_dim, "all_to_all")
    return _manual_call(_all_to_all, x, axis_name, split=split, concat=concat)


@public()
def ppermute(x: Tensor, axis_name: Any, perm: Sequence[tuple[int, int]]) -> Tensor:
    """Inside shard_map: send each device's value to another along a mesh axis.

    `perm` lists (source, destination) index pairs; a device nobody sends to gets zeros."""
    mesh = _manual_mesh("ppermute")
    n = mesh.axes_size(_axes(mesh, axis_name, "ppermute"))
    pairs = tuple((int(s), int(d)) for s, d in perm)
    for s, d in pairs:
        if not (0 <= s < n and 0 <= d < n):
            raise ValueError(f"ppermute: pair ({s}, {d}) is out of range for {n} devices")
    if len({d for _, d in pairs}) != len(pairs) or len({s for s, _ in pairs}) != len(pairs):
        raise ValueError(f"ppermute: perm {pairs} must send from and to each device at most once")
    return _manual_call(_ppermute, x, axis_name, perm=pairs)


@public()
def broadcast(x: Tensor, axis_name: Any, root: int = 0) -> Tensor:
    """Inside shard_map: every device gets the value of device `root` along the axes."""
    mesh = _manual_mesh("broadcast")
    n = mesh.axes_size(_axes(mesh, axis_name, "broadcast"))
    if not 0 <= root < n:
        raise ValueError(f"broadcast: root={root} is out of range for {n} devices")
    return _manual_call(_broadcast, x, axis_name, root=int(root))


@public()
def axis_index(axis_name: Any) -> Tensor:
    """Inside shard_map: this device's index along mesh axes (int32 scalar)."""
    mesh = _manual_mesh("axis_index")
    return _axis_index(out=_scalar_manual(mesh), src=None, axes=_axes(mesh, axis_name, "axis_index"))


# -- inspection -----------------------------------------------------------------------------------
def count_collectives(*tensors: Tensor) -> Counter[str]:
    """How many of each collective (all_reduce, all_gather, ...) the pending computation of
    `tensors` contains: the communication recorded so far, before it is evaluated.

    Only unrealized tensors have a recorded trace, so count before `opt.step()` or `.item()`.
    Reductions the optimizer will add for partial-sum gradients are not recorded yet (a
    gradient whose `sharding.partial` is non-empty costs one all-reduce in the update).

    Example:
        >>> loss = F.cross_entropy(model(x), y)
        >>> loss.backward()
        >>> count_collectives(loss, *(p.grad for p in model.parameters()))
        Counter({'all_reduce': 2})
    """
    counts: Counter[str] = Counter()
    seen: set[int] = set()
    stack = [t._impl for t in tensors if t is not None]
    while stack:
        impl = stack.pop()
        node = impl.output_refs
        if node is None or impl.is_realized or id(node) in seen:
            continue
        seen.add(id(node))
        if node.op.name in COMMUNICATION_OPS:
            counts[node.op.name] += 1
        stack.extend(node.args)
    return counts
