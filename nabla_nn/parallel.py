"""Parallel training on a DeviceMesh: lay out a module's parameters and a batch's arrays.

nabla's sharding is SPMD by propagation: once parameters and inputs carry layouts, every op
picks its own layout and the collectives it needs (a matmul over a sharded dimension leaves
partial sums, all-reduced when a non-linear consumer needs them; a data-parallel gradient is
all-reduced by the optimizer's update). So parallel training is the ordinary loop plus two
calls:

Example:
    >>> import nabla as nb, nabla_nn as nn, nabla_optim as optim
    >>> from nabla import DeviceMesh, P
    >>> from nabla_nn.parallel import colwise, rowwise, shard_batch, shard_module
    >>> mesh = DeviceMesh("m", (2, 2), ("dp", "tp"))
    >>> model = nn.Sequential(nn.Linear(32, 128), nn.GELU(), nn.Linear(128, 10))
    >>> shard_module(model, mesh, {"0": colwise("tp"), "2": rowwise("tp")})  # Megatron MLP
    >>> opt = optim.Adam(model.parameters(), lr=1e-3)  # create it after sharding
    >>> for x, y in loader:
    ...     x, y = shard_batch((x, y), mesh, "dp")  # data parallel over "dp"
    ...     opt.zero_grad()
    ...     nn.functional.cross_entropy(model(x), y).backward()
    ...     opt.step()

`model.state_dict()` of a sharded model holds ordinary (assembled) tensors, so checkpoints do
not depend on the layout, and `load_state_dict` keeps each parameter's layout.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

import nabla as nb
from nabla import DeviceMesh, P, ShardingSpec, Tensor
from nabla.core.sharding import as_spec
from nabla.ops.communication import count_collectives

from .module import Module

__all__ = ["DataParallel", "colwise", "count_collectives", "rowwise", "shard_batch", "shard_module"]

Spec = P | ShardingSpec | None
Pattern = str | re.Pattern
Plan = Mapping[Pattern, "Spec | Mapping[Pattern, Spec]"]


def colwise(axis: str | tuple[str, ...] = "tp") -> dict[str, P]:
    """The plan of a column-parallel Linear (Megatron's first MLP layer): output features split.

    A Linear's weight is `(out_features, in_features)` as in PyTorch, so the weight is sharded
    on dimension 0 and the bias with it; each device computes its slice of the outputs, with
    no communication. Use it as the value of a module pattern in `shard_module`'s plan.

    Args:
        axis: the mesh axis (or axes) to split over.

    Example:
        >>> shard_module(mlp, mesh, {"fc1": colwise("tp"), "fc2": rowwise("tp")})
    """
    return {"weight": P(axis, None), "bias": P(axis)}


def rowwise(axis: str | tuple[str, ...] = "tp") -> dict[str, P]:
    """The plan of a row-parallel Linear (Megatron's second MLP layer): input features split.

    The weight is sharded on dimension 1 (`in_features`), so each device contracts its slice
    of a column-parallel layer's output into a partial sum; one all-reduce completes it. The
    bias is replicated (added once, after the reduction).

    Args:
        axis: the mesh axis (or axes) the input features are split over.

    Example:
        >>> shard_module(mlp, mesh, {"fc1": colwise("tp"), "fc2": rowwise("tp")})
    """
    return {"weight": P(None, axis), "bias": P()}


def shard_module(module: Module, mesh: DeviceMesh, plan: Plan | None = None, default: Spec = None) -> Module:
    """Lay out a module's parameters and buffers on `mesh`, in place, by name patterns.

    Keys of `plan` are patterns over the names of `named_parameters()` and `named_buffers()`
    (PyTorch's dotted names, e.g. "layers.0.fc1.weight"): a `str` is a glob (`fnmatch`; `*`
    also crosses dots, so "*.weight" matches every weight) and a compiled `re.Pattern` must
    match the whole name. A value is a spec (`P(...)`, a `ShardingSpec`, or None for
    replicated), or a sub-plan such as `colwise("tp")`: then the key is a pattern over
    *module* names, and the sub-plan's keys name parameters inside each matching module.

    A spec must give every dimension of the tensors it matches (`P()` and None replicate any
    tensor). Tensors no pattern matches get `default` (replicated when None). Call this before
    creating the optimizer, so its state is created in the parameters' layouts.

    Args:
        module: the model; its parameters keep their identity (only their values move).
        mesh: the DeviceMesh.
        plan: `{pattern: spec or sub-plan}`; None replicates everything (data parallelism).
        default: the spec of tensors no pattern matches.

    Returns:
        `module`.

    Raises:
        ValueError: a pattern matches nothing (the message lists available names), a spec's
            rank differs from a matched tensor's, or two patterns give one tensor different specs.

    Example:
        >>> mesh = DeviceMesh("m", (2, 2), ("dp", "tp"))
        >>> shard_module(model, mesh, {
        ...     "layers.*.fc1": colwise("tp"),
        ...     "layers.*.fc2": rowwise("tp"),
        ...     "embed.weight": P(None, "tp"),
        ... })
    """
    if not isinstance(module, Module):
        raise TypeError(f"shard_module: expected a Module, got {type(module).__name__}")
    if not isinstance(mesh, DeviceMesh):
        raise TypeError(f"shard_module: mesh must be a DeviceMesh, got {type(mesh).__name__}")
    tensors = dict(module._all_tensors())
    chosen: dict[str, tuple[Any, str]] = {}  # name -> (spec, the plan entry that chose it)
    for key, value in (plan or {}).items():
        if isinstance(value, Mapping):
            matches = _module_entry(module, tensors, key, value)
        else:
            names = [n for n in tensors if _matches(key, n)]
            if not names:
                raise ValueError(f"shard_module: pattern {_show(key)} matches no parameter or buffer; {_some(tensors)}")
            matches = [(n, value, _show(key)) for n in names]
        for name, spec, origin in matches:
            _choose(chosen, name, spec, origin, tensors[name], mesh)
    layouts = {}
    for name, t in tensors.items():
        spec, origin = chosen.get(name, (default, "default"))
        layouts[name] = _layout(spec, name, t, mesh, origin)
    _install(list(tensors.values()), list(layouts.values()))
    return module


def _matches(pattern: Pattern, name: str) -> bool:
    if isinstance(pattern, re.Pattern):
        return pattern.fullmatch(name) is not None
    if not isinstance(pattern, str):
        raise TypeError(f"shard_module: plan keys must be str (glob) or re.Pattern, got {type(pattern).__name__}")
    return fnmatch.fnmatchcase(name, pattern)


def _show(pattern: Pattern) -> str:
    return f"re {pattern.pattern!r}" if isinstance(pattern, re.Pattern) else repr(pattern)


def _some(names: Iterable[str], what: str = "names") -> str:
    names = list(names)
    shown = ", ".join(names[:8]) + (f", ... ({len(names)} in all)" if len(names) > 8 else "")
    return f"available {what}: {shown}" if names else f"the module has no {what}"


def _module_entry(module: Module, tensors: dict, key: Pattern, sub: Mapping) -> list[tuple[str, Any, str]]:
    """The (tensor name, spec, origin) a `{module pattern: sub-plan}` entry assigns."""
    modules = [(n, m) for n, m in module.named_modules() if _matches(key, n)]
    if not modules:
        names = [n for n, _ in module.named_modules() if n]
        raise ValueError(f"shard_module: module pattern {_show(key)} matches no submodule; {_some(names, 'modules')}")
    out = []
    for mod_name, mod in modules:
        own = [n for n, _ in mod._all_tensors()]
        for sub_key, spec in sub.items():
            hits = [n for n in own if _matches(sub_key, n)]
            # a missing optional parameter (Linear(bias=False) registers bias as None) is fine
            if not hits and not (isinstance(sub_key, str) and mod._parameters.get(sub_key, 0) is None):
                raise ValueError(
                    f"shard_module: {_show(key)} matches module {mod_name!r} ({type(mod).__name__}), which has no "
                    f"parameter or buffer {_show(sub_key)}; {_some(own)}"
                )
            prefix = f"{mod_name}." if mod_name else ""
            out += [(prefix + n, spec, f"{_show(key)} -> {_show(sub_key)}") for n in hits]
    return [m for m in out if m[0] in tensors]  # a tied tensor is listed once, under its first name


def _choose(chosen: dict, name: str, spec: Any, origin: str, t: Tensor, mesh: DeviceMesh) -> None:
    if name in chosen:
        old, old_origin = chosen[name]
        if _layout(old, name, t, mesh, old_origin) != _layout(spec, name, t, mesh, origin):
            raise ValueError(
                f"shard_module: {name} is matched by {old_origin} (spec {old!r}) and by {origin} "
                f"(spec {spec!r}); make the patterns disjoint"
            )
        return
    chosen[name] = (spec, origin)


def _layout(spec: Any, name: str, t: Tensor, mesh: DeviceMesh, origin: str) -> ShardingSpec:
    """The ShardingSpec that `spec` gives tensor `name`, checked against its rank."""
    where = f"shard_module: {origin} gives {name} (shape {tuple(t.shape)})"
    if spec is None:
        spec = P()
    if isinstance(spec, ShardingSpec):
        if spec.mesh != mesh:
            raise ValueError(f"{where} a spec on mesh {spec.mesh.name!r}, expected mesh {mesh.name!r}")
        if spec.rank != t.ndim:
            raise ValueError(f"{where} the spec {spec!r} of rank {spec.rank}, the tensor has rank {t.ndim}")
        return spec
    if not isinstance(spec, tuple | list):
        raise TypeError(f"{where} {spec!r}; expected a P(...), a ShardingSpec, None or a sub-plan dict")
    if len(spec) not in (0, t.ndim):
        raise ValueError(
            f"{where} the spec {P(*spec)!r} with {len(spec)} entries, the tensor has rank {t.ndim} "
            "(give every dimension, None for replicated ones; P() replicates)"
        )
    try:
        return as_spec(spec, mesh, t.ndim, "shard_module")
    except (ValueError, TypeError) as err:
        raise type(err)(f"{where} the spec {P(*spec)!r}: {err}") from None


def _install(tensors: list[Tensor], layouts: list[ShardingSpec]) -> None:
    """Give each tensor its layout (its value moves; the Tensor object stays), in one evaluation."""
    pending = [t for t in tensors if not t.is_realized]
    if pending:
        nb.evaluate(*pending)
    values = [nb.shard(t.data, spec.mesh, spec) for t, spec in zip(tensors, layouts, strict=True)]
    lazy = [v for v in values if not v.is_realized]  # e.g. bfloat16 values are split by an op
    if lazy:
        nb.evaluate(*lazy)
    for t, value in zip(tensors, values, strict=True):
        t.data = value


def shard_batch(batch: Any, mesh: DeviceMesh, axis: str | tuple[str, ...] = "dp") -> Any:
    """Shard every array and tensor of a (nested) batch along dimension 0 over mesh axis `axis`.

    Tuples, lists, dicts and namedtuples are walked (as `nabla.tree_map` does); NumPy arrays
    and Tensors are split along their first dimension (an uneven size splits like
    `np.array_split`), 0-d values are replicated, and anything else is returned unchanged.

    Args:
        batch: e.g. `(x, y)` from a DataLoader, or a dict of arrays.
        mesh: the DeviceMesh.
        axis: the data-parallel mesh axis, or a tuple of axes to split the batch over all of them.

    Returns:
        The batch with the same structure, its arrays as sharded Tensors.

    Example:
        >>> x, y = shard_batch((x, y), mesh, "dp")
        >>> x.sharding
        sharding<@m, [{"dp"}, {}]>
    """
    if not isinstance(mesh, DeviceMesh):
        raise TypeError(f"shard_batch: mesh must be a DeviceMesh, got {type(mesh).__name__}")
    for a in (axis,) if isinstance(axis, str) else tuple(axis):
        if a not in mesh.axis_names:
            raise ValueError(f"shard_batch: {a!r} is not an axis of mesh {mesh.name!r} {mesh.axis_names}")

    def one(leaf: Any) -> Any:
        if isinstance(leaf, np.generic):
            leaf = np.asarray(leaf)
        if not isinstance(leaf, Tensor | np.ndarray):
            return leaf
        spec = P(axis, *(None,) * (leaf.ndim - 1)) if leaf.ndim else P()
        return nb.shard(leaf, mesh, spec)

    return nb.tree_map(one, batch)


class DataParallel(Module):
    """PyTorch's `nn.DataParallel` as SPMD: the batch dimension `dim` of every tensor or array
    input is split over the devices (a one-axis mesh "dp", simulated on a CPU), the module
    runs once on the whole batch with replicated parameters, so their gradients are all-reduced
    sums as PyTorch's, and each output comes back whole. The wrapped model is `self.module`,
    so state_dict keys start with "module." as in PyTorch.

    Args:
        module: the model.
        device_ids: the devices to split over; None or one device: the module's own forward.
        output_device: where outputs are gathered (accepted for PyTorch's signature; outputs
            are ordinary whole tensors).
        dim: the batch dimension of the inputs (default 0).

    Example:
        >>> model = nn.DataParallel(nn.Linear(4, 2), device_ids=[0, 1])
        >>> model(nb.randn(6, 4)).sharding is None
        True
    """

    def __init__(
        self, module: Module, device_ids: Iterable[int] | None = None, output_device: Any = None, dim: int = 0
    ) -> None:
        super().__init__()
        if not isinstance(module, Module):
            raise TypeError(f"DataParallel: module must be a nabla_nn.Module, got {type(module).__name__}")
        ids = [0] if device_ids is None else [int(d) for d in device_ids]
        self.module, self.device_ids, self.output_device, self.dim = module, ids, output_device, dim
        self._mesh = DeviceMesh(f"data_parallel_{len(ids)}", (len(ids),), ("dp",), ids) if len(ids) > 1 else None

    def forward(self, *inputs: Any, **kwargs: Any) -> Any:
        mesh = self._mesh
        if mesh is None:
            return self.module(*inputs, **kwargs)
        dim, n = self.dim, mesh.size

        def split(leaf: Any) -> Any:
            if isinstance(leaf, np.ndarray | np.generic):
                leaf = nb.tensor(np.asarray(leaf))
            if not isinstance(leaf, Tensor) or leaf.ndim == 0:
                return leaf
            d = dim % leaf.ndim if -leaf.ndim <= dim < leaf.ndim else None
            if d is None or leaf.shape[d] < n:
                raise ValueError(
                    f"DataParallel: inputs are split along dim {dim} over {n} devices, got a tensor of shape "
                    f"{tuple(leaf.shape)}"
                )
            return nb.shard(leaf, mesh, P(*([None] * d), "dp"))

        def whole(leaf: Any) -> Any:
            return nb.unshard(leaf) if isinstance(leaf, Tensor) else leaf

        out = self.module(*nb.tree_map(split, inputs), **nb.tree_map(split, kwargs))
        return nb.tree_map(whole, out)

    def extra_repr(self) -> str:
        return f"device_ids={self.device_ids}, dim={self.dim}"
