"""shard_map: write per-device (SPMD) code by hand, with explicit collectives.

Inside the function every tensor is a device's local value (a "manual" layout: local shape,
one value per device); ops run on each device independently, and the collectives of
`nabla.ops.communication` (all_reduce, all_gather, ...) exchange values over named mesh
axes. Outside, arguments and results are ordinary global tensors laid out by `in_specs` and
`out_specs`. Nothing is traced separately: the body is recorded lazily like any other code,
so shard_map composes with grad, vjp and compile, and its program is cached by structure.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..core.common.pytree import tree_flatten, tree_unflatten
from ..core.sharding import DeviceMesh, P, ShardingSpec
from ..core.tensor.tensor import Tensor
from ..ops.communication import MANUAL, _conform_tensor, _relabel, plain_spec


def _spec_for(spec: Any, mesh: DeviceMesh, x: Tensor, what: str) -> ShardingSpec:
    spec = plain_spec(spec, mesh, x.ndim, what)
    for d, (n, axes) in enumerate(zip(x.shape, spec.dim_axes, strict=True)):
        parts = mesh.axes_size(axes)
        if n % parts:
            raise ValueError(
                f"{what}: dimension {d} of size {n} (shape {x.shape}) does not split evenly over mesh axes "
                f"{axes} ({parts} devices); shard_map needs even splits"
            )
    return spec


def _per_leaf(specs: Any, values: tuple, what: str) -> list:
    """One spec per positional value (applied to every tensor leaf in it), like JAX's prefix specs."""
    if specs is None or isinstance(specs, P | ShardingSpec):
        specs = (specs,) * len(values)
    if not isinstance(specs, tuple | list) or not all(s is None or isinstance(s, P | ShardingSpec) for s in specs):
        raise TypeError(f"{what}: expected P(...) specs (one, or a tuple with one per value), got {specs!r}")
    if len(specs) != len(values):
        raise ValueError(f"{what}: {len(specs)} specs for {len(values)} values")
    return list(specs)


def shard_map(fn: Callable, mesh: DeviceMesh, in_specs: Any, out_specs: Any) -> Callable:
    """Run `fn` once per device of `mesh` on local shards, with explicit collectives.

    Args:
        fn: a function of tensors (pytrees allowed) that sees each device's local values.
        mesh: the DeviceMesh.
        in_specs: one `P(...)` per positional argument (applied to every tensor in it).
        out_specs: one `P(...)` per output (or a single one for a single output). An output
            replicated over a mesh axis must hold the same value on every device along it
            (all_reduce it first).

    Example:
        >>> mesh = DeviceMesh("m", (4,), ("x",))
        >>> def dot(a, b):                       # a, b: this device's quarter
        ...     return all_reduce((a * b).sum(), "x")
        >>> f = shard_map(dot, mesh, in_specs=(P("x"), P("x")), out_specs=P())
        >>> f(nb.arange(8.0), nb.ones(8)).item()
        28.0
    """
    if not isinstance(mesh, DeviceMesh):
        raise TypeError(f"shard_map: mesh must be a DeviceMesh, got {type(mesh).__name__}")

    def wrapped(*args: Any) -> Any:
        specs = _per_leaf(in_specs, args, "shard_map in_specs")
        local_args = []
        for i, (arg, spec) in enumerate(zip(args, specs, strict=True)):
            leaves, tree = tree_flatten(arg)
            local_args.append(tree_unflatten(tree, [_enter(x, spec, mesh, f"shard_map argument {i}") for x in leaves]))
        MANUAL.meshes.append(mesh)
        try:
            out = fn(*local_args)
        finally:
            MANUAL.meshes.pop()
        single = not isinstance(out, tuple)
        outs = (out,) if single else out
        ospecs = _per_leaf(out_specs, outs, "shard_map out_specs")
        results = []
        for i, (value, spec) in enumerate(zip(outs, ospecs, strict=True)):
            leaves, tree = tree_flatten(value)
            results.append(tree_unflatten(tree, [_leave(x, spec, mesh, f"shard_map output {i}") for x in leaves]))
        return results[0] if single else tuple(results)

    return wrapped


def _enter(x: Any, spec: Any, mesh: DeviceMesh, what: str) -> Any:
    if not isinstance(x, Tensor):
        return x
    if x._impl.batch_dims:
        raise NotImplementedError(
            f"{what} is batched by vmap: vmap of a shard_map is not supported; vmap inside the shard_map's function "
            "instead (or use vmap's spmd_axis_name)"
        )
    target = _spec_for(spec, mesh, x, what)
    x = _conform_tensor(x, target)
    return _relabel(x, out=ShardingSpec.replicated_on(mesh, x.ndim, manual=True), src=target)


def _leave(x: Any, spec: Any, mesh: DeviceMesh, what: str) -> Any:
    if not isinstance(x, Tensor):
        return x
    current = x._impl.sharding
    if current is None or not current.manual:  # a value that never touched the mesh's devices
        x = _conform_tensor(x, ShardingSpec.replicated_on(mesh, x.ndim, manual=True))
    target = plain_spec(spec, mesh, x.ndim, what)
    return _relabel(x, out=target, src=x._impl.sharding)
