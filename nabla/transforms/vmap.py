"""vmap: vectorize a function over a batch axis, through tensors' batch dims.

Inside the call every mapped input has the mapped axis moved to a new leading *batch* dim:
`x.shape` (logical) no longer shows it, ops see it as part of the physical shape and treat it
as a batch of independent problems. Nested vmaps stack levels (outermost first). On exit
each output's innermost batch dim becomes logical axis `out_axes` again.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np

from ..core.common.context import vmap_level, vmap_sizes
from ..core.common.pytree import broadcast_prefix, leaf_paths, tree_flatten, tree_unflatten
from ..core.tensor.tensor import Tensor
from ..ops.batching import broadcast_batch, move_from_batch, move_to_batch
from ..ops.communication import shard
from ..ops.creation import tensor
from ..ops.spmd import shard_batch_level

AxisSpec = int | None | tuple | list | dict


def vmap(
    fn: Callable,
    in_axes: AxisSpec = 0,
    out_axes: AxisSpec = 0,
    axis_size: int | None = None,
    randomness: str = "different",
    spmd_axis_name: str | tuple[str, ...] | None = None,
) -> Callable:
    """Vectorize `fn` over an axis of its inputs (JAX's `vmap`, PyTorch's `torch.func.vmap`).

    Args:
        fn: the function to vectorize; takes and returns pytrees of Tensors.
        in_axes: the axis to map of each positional argument: an int, None (broadcast the
            argument unchanged), or a pytree prefix of the arguments with ints/None as leaves.
        out_axes: where the mapped axis goes in each output (same forms; None for outputs
            that do not depend on the mapped axis).
        axis_size: the batch size, required only when no input is mapped.
        randomness: random ops inside `fn` draw independent numbers per batch element
            ("different", e.g. a dropout mask per example), the same numbers for all ("same"),
            or raise ("error"), as in `torch.func.vmap`.
        spmd_axis_name: a mesh axis name (or a tuple of them) to split the mapped axis over,
            as in JAX: every mapped input's batch dimension is laid out over it on the mesh
            of the mapped inputs (at least one must be sharded with `nabla.shard`), so the
            per-example work runs data-parallel and the outputs stay split along the batch.

    Keyword arguments of the call are passed to `fn` unmapped.

    Example:
        >>> batched_dot = nabla.vmap(lambda a, b: (a * b).sum())
        >>> batched_dot(nabla.ones((8, 3)), nabla.ones((8, 3))).shape
        (8,)
        >>> per_example = nabla.vmap(nabla.grad(loss), in_axes=(None, 0, 0))(params, xs, ys)
    """
    if not callable(fn):
        raise TypeError(f"vmap: fn must be callable, got {type(fn).__name__}")
    if axis_size is not None and (
        not isinstance(axis_size, int | np.integer) or isinstance(axis_size, bool) or axis_size < 0
    ):
        raise ValueError(f"vmap: axis_size must be a non-negative int, got {axis_size!r}")
    if randomness not in ("different", "same", "error"):
        raise ValueError(f"vmap: randomness must be 'different', 'same' or 'error', got {randomness!r}")
    spmd_axes = (spmd_axis_name,) if isinstance(spmd_axis_name, str) else spmd_axis_name
    if spmd_axes is not None and (not isinstance(spmd_axes, tuple) or not all(isinstance(a, str) for a in spmd_axes)):
        raise TypeError(f"vmap: spmd_axis_name must be a mesh axis name or a tuple of them, got {spmd_axis_name!r}")

    @functools.wraps(fn)
    def batched(*args: Any, **kwargs: Any) -> Any:
        axes = _in_axes_per_arg(in_axes, len(args))
        leaves, treedef = tree_flatten(args)
        leaf_axes = broadcast_prefix(tuple(axes), args, "vmap in_axes", "argument")
        names = [f"args{p}" for p in leaf_paths(args)]
        leaves = [_as_tensor(x, n) if a is not None else x for x, a, n in zip(leaves, leaf_axes, names, strict=True)]
        size = _batch_size(leaves, leaf_axes, axis_size, names)
        outer = vmap_sizes()
        for x, name in zip(leaves, names, strict=True):
            _check_not_escaped(x, name, len(outer))
        if spmd_axes:
            leaves = _on_one_mesh(leaves, leaf_axes, spmd_axes)
        with vmap_level(size, randomness):
            inner = [move_to_batch(x, a, outer) if a is not None else x for x, a in zip(leaves, leaf_axes, strict=True)]
            if spmd_axes:
                inner = [
                    shard_batch_level(x, spmd_axes) if a is not None else x
                    for x, a in zip(inner, leaf_axes, strict=True)
                ]
            moved = [x._impl if isinstance(x, Tensor) else None for x in inner]
            out = fn(*tree_unflatten(treedef, inner), **kwargs)
            if not spmd_axes:  # (a mesh-placed input is a copy: nothing to write back to)
                _write_back(leaves, leaf_axes, inner, moved, outer + (size,))
            return _unbatch_outputs(out, out_axes, outer + (size,))

    return batched


def _write_back(leaves: list, leaf_axes: list, inner: list, moved: list, sizes: tuple) -> None:
    """Mapped arguments `fn` updated in place take their new values, as torch.func.vmap's
    batched tensors share the caller's storage (`vmap(lambda x: x.mul_(2))(t)` doubles t)."""
    for x, a, t, impl in zip(leaves, leaf_axes, inner, moved, strict=True):
        if a is not None and isinstance(x, Tensor) and t._impl is not impl:
            x.copy_(move_from_batch(t, a, sizes))


def _on_one_mesh(leaves: list, leaf_axes: list, axes: tuple[str, ...]) -> list:
    """Mapped inputs not yet on the mapped inputs' mesh are placed on it (replicated)."""
    meshes = [x.sharding.mesh for x, a in zip(leaves, leaf_axes, strict=True) if a is not None and x.sharding]
    if not meshes:
        raise ValueError(
            f"vmap: spmd_axis_name={axes if len(axes) > 1 else axes[0]!r} splits the mapped axis over a mesh "
            "axis, but no mapped input is on a DeviceMesh; place one first with nabla.shard(x, mesh, spec)"
        )
    mesh = meshes[0]
    return [
        shard(x, mesh) if a is not None and x.sharding is None else x for x, a in zip(leaves, leaf_axes, strict=True)
    ]


def _in_axes_per_arg(in_axes: AxisSpec, nargs: int) -> list:
    if isinstance(in_axes, int | type(None)) and not isinstance(in_axes, bool):
        return [in_axes] * nargs
    if isinstance(in_axes, list):
        in_axes = tuple(in_axes)  # JAX also accepts a list of per-argument axes
    if not isinstance(in_axes, tuple):
        raise TypeError(f"vmap: in_axes must be an int, None or a tuple with one entry per argument, got {in_axes!r}")
    if len(in_axes) != nargs:
        raise ValueError(
            f"vmap: in_axes has {len(in_axes)} entries but the function was called with {nargs} positional arguments"
        )
    return list(in_axes)


def _as_tensor(x: Any, name: str) -> Any:
    if isinstance(x, Tensor):
        return x
    if isinstance(x, np.ndarray):
        return tensor(x)
    raise TypeError(
        f"vmap: {name} is mapped (its in_axes is an int) so it must be a Tensor or array, got {type(x).__name__}; "
        "use in_axes=None for arguments that are not mapped"
    )


def _batch_size(leaves: list, leaf_axes: list, axis_size: int | None, names: list[str]) -> int:
    sizes = []
    for x, a, name in zip(leaves, leaf_axes, names, strict=True):
        if a is None:
            continue
        if not isinstance(a, int) or isinstance(a, bool):
            raise TypeError(f"vmap: in_axes entries must be ints or None, got {a!r} for {name}")
        if not -x.ndim <= a < x.ndim:
            raise ValueError(f"vmap: in_axes={a} is out of range for {name} of shape {x.shape} (rank {x.ndim})")
        sizes.append((name, a, x.shape[a], x.shape))
    if not sizes:
        if axis_size is None:
            raise ValueError("vmap: no input is mapped (every in_axes is None); pass axis_size")
        return int(axis_size)
    size = sizes[0][2]
    if any(s[2] != size for s in sizes) or (axis_size is not None and axis_size != size):
        shown = "; ".join(f"{name} has size {n} along axis {a} (shape {shape})" for name, a, n, shape in sizes)
        wanted = f" but axis_size={axis_size}" if axis_size is not None else ""
        raise ValueError(f"vmap: inconsistent sizes for the mapped axis: {shown}{wanted}")
    return size


def _check_not_escaped(x: Any, name: str, depth: int) -> None:
    if isinstance(x, Tensor) and x._impl.batch_dims > depth:
        raise ValueError(
            f"vmap: {name} is batched over {x._impl.batch_dims} vmap levels but only {depth} are active here: it "
            "escaped the vmap that made it (through a closure or a side effect); return it from that vmap instead"
        )


def _output_tensor(x: Any, name: str) -> Tensor:
    if isinstance(x, bool | int | float | np.ndarray | np.number):
        return tensor(x)
    raise TypeError(f"vmap: {name} is a {type(x).__name__}; fn may return Tensors, arrays, numbers and pytrees of them")


def _unbatch_outputs(out: Any, out_axes: AxisSpec, prefix: tuple[int, ...]) -> Any:
    leaves, treedef = tree_flatten(out)
    if isinstance(out_axes, list | tuple) and isinstance(out, list | tuple) and not hasattr(out, "_fields"):
        out_axes = type(out)(out_axes)  # a list of axes for a tuple of outputs (and vice versa) is fine
    axes = broadcast_prefix(out_axes, out, "vmap out_axes", "output")
    names = [f"output{p}" for p in leaf_paths(out)]
    level = len(prefix)
    result = []
    for name, x, a in zip(names, leaves, axes, strict=True):
        if not isinstance(x, Tensor):
            if a is not None:
                x = _output_tensor(x, name)
            else:
                result.append(x)
                continue
        _check_not_escaped(x, name, level)
        if a is None:
            if x._impl.batch_dims >= level:
                raise ValueError(f"vmap: {name} depends on the mapped axis, so its out_axes cannot be None")
            result.append(x)
            continue
        if not isinstance(a, int) or isinstance(a, bool) or not -x.ndim - 1 <= a <= x.ndim:
            raise ValueError(
                f"vmap: out_axes={a!r} is invalid for {name} of shape {x.shape}: the result has rank {x.ndim + 1}"
            )
        if x._impl.batch_dims < level:  # does not depend on the batch: broadcast it (as JAX does)
            x = broadcast_batch(x, prefix)
        result.append(move_from_batch(x, a, prefix))
    return tree_unflatten(treedef, result)
