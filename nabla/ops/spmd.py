"""Ordinary ops on sharded tensors: the SPMD step every op call goes through, and `window`.

`spmd_prepare` (reached through the dispatch table by `Operation.__call__`) propagates layouts
through one op call: it reshards the operands where the op's sharding rule needs it (by the
collectives of communication.py), gives the output specs and the per-device kwargs and shapes.
`shard_batch_level` lays out a vmapped dimension over mesh axes (vmap's `spmd_axis_name`).

`window` is the collective the data-moving ops (slice, flip, roll, pad, cat, split, and the
sharded forms of cumsum/cumprod, topk and diagonal) use along a sharded dimension: each device
assembles its piece from the pieces holding it, with no gather of the dimension. `windowable`
tells them (and the reductions) whether a dimension is split that way.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

from ..core.graph.executors import storage_to_numpy
from ..core.graph.program import PerDevice, SpmdStep
from ..core.sharding import DeviceMesh, ShardingSpec, propagate, split_range
from ..core.tensor.dispatch import register
from ..core.tensor.impl import TensorImpl
from ..core.tensor.tensor import Tensor
from .base import AVal, Operation
from .communication import CollectiveOp, _conform_tensor, _to_layout

__all__: list[str] = []  # internal: reached through Operation.__call__, vmap and the op families


# -- the SPMD step of every op call on sharded tensors ------------------------------------------
def _mesh_of(op: Operation, impls: list[TensorImpl]) -> DeviceMesh:
    meshes = {i.sharding.mesh for i in impls if i.sharding is not None}
    if len(meshes) > 1:
        names = sorted(m.name for m in meshes)
        raise ValueError(f"{op.name}: operands are on different meshes {names}; reshard them onto one")
    return meshes.pop()


def _local_shape(impl: TensorImpl, pos: int) -> tuple:
    return impl.physical_shape if impl.sharding is None else impl.sharding.local_shape(impl.physical_shape, pos)


def shard_batch_level(x: Tensor, axes: tuple[str, ...]) -> Tensor:
    """vmap(spmd_axis_name=axes): lay the innermost batch dim of `x` (a mapped input on a mesh)
    out over mesh `axes`; dims that used those axes give them up (a gather along them)."""
    impl = x._impl
    spec = impl.sharding
    missing = [a for a in axes if a not in spec.mesh.axis_names]
    if missing:
        raise ValueError(
            f"vmap: spmd_axis_name names axes {missing} that mesh {spec.mesh.name!r} lacks; "
            f"its axes are {list(spec.mesh.axis_names)}"
        )
    level = impl.batch_dims - 1
    dims = [tuple(a for a in d if a not in axes) for d in spec.dim_axes]
    dims[level] = dims[level] + axes
    return _conform_tensor(x, spec.with_dims(dims))


@register("spmd_prepare")
def spmd_prepare(op: Operation, impls: list[TensorImpl], kwargs: dict, avals: list, logical: dict) -> tuple:
    """Propagate layouts through one op call: the inputs it should run on (resharded by
    collectives where needed), its output specs, and its per-device plan. `kwargs` are the
    physical (adapted) kwargs; `logical` the same for unbatched operands (inside vmap)."""
    own = op.own_layouts(impls, kwargs)
    if own is not None:
        ins, outs = own  # ins None: the op takes its inputs as they are
        if ins is not None:
            impls = _conformed(impls, ins)
        mesh = next(s.mesh for s in outs + [i.sharding for i in impls] if s is not None)
        local = tuple(
            tuple((a[0] if s is None else s.local_shape(a[0], p), a[1]) for s, a in zip(outs, avals, strict=True))
            for p in range(mesh.size)
        )
        return impls, outs, SpmdStep(mesh.size, (), local, collective=True)
    mesh = _mesh_of(op, impls)
    specs = [i.sharding for i in impls]
    out_shapes = [a[0] for a in avals]
    if any(s is not None and s.manual for s in specs):
        targets = [ShardingSpec.replicated_on(mesh, len(i.physical_shape), manual=True) for i in impls]
        outs = [ShardingSpec.replicated_on(mesh, len(s), manual=True) for s in out_shapes]
    elif all(s is None or s.is_replicated for s in specs):
        targets, outs = specs, [ShardingSpec.replicated_on(mesh, len(s)) for s in out_shapes]
    else:
        in_shapes = [i.physical_shape for i in impls]
        prop = propagate(_rule(op, impls, in_shapes, out_shapes, kwargs, logical), specs, in_shapes, mesh)
        targets, outs = prop.in_specs, prop.out_specs
    impls = _conformed(impls, targets)  # (a None target is an unsharded input that stays so)
    return impls, outs, _local_step(op, impls, kwargs, avals, outs, mesh)


def _rule(op: Operation, impls: list, in_shapes: list, out_shapes: list, kwargs: dict, logical: dict) -> Any:
    """The op's factors; inside vmap, its logical rule with the batch dims in front (operands
    share one batch prefix: `Operation.__call__` aligns them)."""
    bd = max(i.batch_dims for i in impls)
    if not bd or op.physical_rule:
        rule = op.sharding_rule_for(in_shapes, out_shapes, kwargs)
    else:
        rule = op.sharding_rule_for([s[bd:] for s in in_shapes], [s[bd:] for s in out_shapes], logical)
        rule = rule.with_batch(in_shapes[0][:bd])
    if (
        op.scales_partials
        and isinstance(rule.partial_ok, tuple)
        and any(i.sharding and i.sharding.partial for i in impls)
    ):
        constants = [constant_value(i) for i in impls]
        rule = replace(rule, partial_ok=tuple(k for k in rule.partial_ok if op.partial_passes(k, constants)))
    return rule


_SAME_VALUES = frozenset({"broadcast_to", "cast", "reshape"})  # ops that keep a constant's value


def constant_value(impl: TensorImpl) -> float | None:
    """The one value every element of `impl` has, where it is known while tracing: a fill
    constant (as a Python number becomes), maybe broadcast, reshaped or cast, or a realized
    one-element host tensor. None otherwise."""
    while impl.data is None:
        node = impl.output_refs
        if node is None or not (node.op.name == "full" or node.op.name in _SAME_VALUES):
            return None
        if node.op.name == "full":
            value = node.kwargs.get("value")
            return float(value) if isinstance(value, int | float) else None  # not a symbolic Dim
        impl = node.args[0]
    if impl.sharding is None and impl.data is not None and math.prod(impl.physical_shape) == 1:
        return float(storage_to_numpy(impl.data).reshape(-1)[0])  # NumPy, or the Buffer a model read
    return None


def _conformed(impls: list[TensorImpl], targets: list) -> list[TensorImpl]:
    return [i if i.sharding == t else _conform_tensor(Tensor(i), t)._impl for i, t in zip(impls, targets, strict=True)]


def _local_step(op: Operation, impls: list, kwargs: dict, avals: list, outs: list, mesh: DeviceMesh) -> SpmdStep:
    n = mesh.size
    split = [s for s in [i.sharding for i in impls] + outs if s is not None and not s.manual]
    if not any(any(s.dim_axes) for s in split):  # every device sees whole values: kwargs as they are
        return SpmdStep(n, (kwargs,) * n, (tuple(avals),) * n)
    memo: dict = {}
    kws, local = [], []
    positional = op.position_dependent
    for pos in range(n):
        in_avals = tuple((_local_shape(i, pos), i.dtype) for i in impls)
        out_shapes = tuple(o.local_shape(a[0], pos) for o, a in zip(outs, avals, strict=True))
        key = (in_avals, out_shapes)
        if positional:  # equal local shapes at different places need different kwargs
            offsets = tuple(
                None
                if i.sharding is None or i.sharding.manual
                else tuple(s.start for s in i.sharding.local_slices(i.physical_shape, pos))
                for i in impls
            )
            key += (offsets,)
        if key not in memo:
            if positional:
                sizes = [None if o is None else i.physical_shape for i, o in zip(impls, offsets, strict=True)]
                kw = op.local_kwargs(kwargs, list(in_avals), list(out_shapes), offsets=list(offsets), sizes=sizes)
            else:
                kw = op.local_kwargs(kwargs, list(in_avals), list(out_shapes))
            got = op.abstract_eval(*in_avals, **kw)
            got = tuple(got if isinstance(got, list) else [got])
            if tuple(g[0] for g in got) != out_shapes:
                raise RuntimeError(
                    f"internal error: {op.name}'s sharding rule gives local output shapes {out_shapes} on device "
                    f"{pos}, its kernel would produce {tuple(g[0] for g in got)}"
                )
            memo[key] = (kw, got)
        kws.append(memo[key][0])
        local.append(memo[key][1])
    return SpmdStep(n, tuple(kws), tuple(local))


# -- moving data along a sharded dimension without gathering it --------------------------------
class WindowOp(CollectiveOp):
    """`out[i] = x[i + offset]` along `dim` (`x[offset - i]` with `reverse`) for i < `length`,
    0 where the index leaves x (of size `size`), for a dimension sharded over mesh axes: the
    result keeps the layout, and each device assembles its piece from the pieces holding it
    (slices, flips, rolls and splits without gathering the dimension). Linear, so partial sums
    pass through; its transpose is a window back (`offset` negated, or kept when reversed)."""

    name = "window"

    def abstract_eval(self, x: AVal, *, dim: int, length: int, **kw: Any) -> AVal:
        return x[0][:dim] + (length,) + x[0][dim + 1 :], x[1]

    def apply(
        self, lib: Any, x: Any, *, out: Any, src: Any, dim: int, offset: int, length: int, size: int, reverse: bool
    ) -> PerDevice:
        mesh, axes = out.mesh, out.dim_axes[dim]
        group_of = {p: g for g in mesh.groups(axes) for p in g}
        memo: dict = {}  # devices holding the same pieces (copies along other axes) share the result
        result = []
        for q in range(mesh.size):
            start, n = split_range(mesh, length, axes, q)
            key = (start, n, tuple(id(x[p]) for p in group_of[q]))
            if key in memo:
                result.append(memo[key])
                continue
            lo, hi = (offset - start - n + 1, offset - start + 1) if reverse else (start + offset, start + offset + n)
            parts = [lib.zeros(x[q], dim, min(hi, 0) - lo)] if lo < min(hi, 0) else []
            for p in group_of[q]:  # the pieces along the dimension, in order
                first, m = split_range(mesh, size, axes, p)
                a, b = max(lo, first), min(hi, first + m)
                if a < b:
                    parts.append(lib.slice(x[p], dim, a - first, b - first))
            if max(lo, size) < hi:
                parts.append(lib.zeros(x[q], dim, hi - max(lo, size)))
            value = lib.concat(parts, dim) if parts else lib.zeros(x[q], dim, 0)
            memo[key] = lib.flip(value, dim) if reverse and n > 1 else value
            result.append(memo[key])
        return PerDevice(result)

    def vjp_rule(self, primals: list, cotangents: list, outputs: list, **kw: Any) -> list:
        out, src, offset = kw["out"].without_partial(), kw["src"].without_partial(), kw["offset"]
        back = {"length": kw["size"], "size": kw["length"], "offset": offset if kw["reverse"] else -offset}
        return [_window(_to_layout(cotangents[0], out), **{**kw, **back, "out": src, "src": out})]

    def jvp_rule(self, primals: list, tangents: list, outputs: list, **kw: Any) -> list:
        out, src = kw["out"].without_partial(), kw["src"].without_partial()
        return [_window(_to_layout(tangents[0], src), **{**kw, "out": out, "src": src})]


_window = WindowOp()


def windowable(x: Tensor, dim: int) -> bool:
    """Whether `window` applies: `dim` is sharded over a mesh (global layout, no vmap dims)."""
    impl = x._impl
    spec = impl.sharding
    return spec is not None and not spec.manual and not impl.batch_dims and bool(spec.dim_axes[dim])


def window(x: Tensor, dim: int, offset: int, length: int, reverse: bool = False) -> Tensor | None:
    """`x` windowed along `dim` (see `WindowOp`) when `windowable(x, dim)`; None otherwise,
    for the caller's ordinary op (which gathers a sharded dimension it moves data along)."""
    if not windowable(x, dim):
        return None
    spec = x._impl.sharding
    kw = {"dim": dim, "offset": offset, "length": length, "size": x._impl.physical_shape[dim], "reverse": reverse}
    return _window(x, out=spec, src=spec, **kw)


def split_parts(x: Tensor, dim: int) -> int:
    """How many pieces the sharded `dim` of `x` is split into (the product of its mesh axes)."""
    spec = x._impl.sharding
    return spec.mesh.axes_size(spec.dim_axes[dim])


def evened(x: Tensor, dim: int) -> Tensor:
    """`x` with its sharded `dim` zero-extended (a window: each device moves a few rows) to the
    next size that splits evenly; `x` itself when it already does."""
    n, parts = x.shape[dim], split_parts(x, dim)
    even = -(-n // parts) * parts
    return x if even == n else window(x, dim, 0, even)
