"""What `Module.state_dict` and `Module.load_state_dict` use besides the module's own methods:
lazy modules' materialization, the defaults submodules supply for missing keys (BatchNorm's
num_batches_tracked), PyTorch's placeholders and tensors, and sharded values moved between
a mesh layout and the host."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

import nabla as nb
from nabla import Tensor
from nabla.core.common import dtypes as _dt

from .parameter import is_lazy

if TYPE_CHECKING:  # type hints only: module.py imports this file
    from .module import Module


def _materialize_lazy(module: Module, state_dict: Mapping[str, Any], undo: list[Callable[[], None]]) -> list[str]:
    """Call `_materialize_from_state_dict(prefix, state_dict)` on every submodule that defines it
    (the lazy modules), adding their undo steps to `undo`; returns the problems they report."""
    problems: list[str] = []
    for name, sub in module.named_modules(remove_duplicate=False):
        hook = getattr(type(sub), "_materialize_from_state_dict", None)
        if hook is not None:
            steps, found = hook(sub, f"{name}." if name else "", state_dict)
            undo += steps
            problems += found
    return problems


def _with_defaults(module: Module, state_dict: Mapping[str, Any]) -> Mapping[str, Any]:
    """`state_dict` plus the entries submodules supply for keys it lacks (their
    `_state_dict_defaults(prefix, state_dict, local_metadata)`, PyTorch's `_load_from_state_dict`
    upgrades: BatchNorm's num_batches_tracked); a new dict only when one is added, so the
    caller's mapping is never changed. `local_metadata` is the module's entry in a PyTorch
    state_dict's `_metadata` (its version), else empty."""
    metadata = getattr(state_dict, "_metadata", None) or {}
    extra: dict[str, Any] = {}
    for name, sub in module.named_modules(remove_duplicate=False):
        hook = getattr(type(sub), "_state_dict_defaults", None)
        if hook is not None:
            extra.update(hook(sub, f"{name}." if name else "", state_dict, metadata.get(name, {})))
    return {**state_dict, **extra} if extra else state_dict


def _is_placeholder(value: Any) -> bool:
    """Whether a state_dict value is an uninitialized lazy tensor: ours, or PyTorch's (a lazy
    torch module's state_dict), recognized by its mixin's name so torch need not be imported."""
    return is_lazy(value) or any(c.__name__ == "UninitializedTensorMixin" for c in type(value).__mro__)


def _foreign_array(value: Any) -> Any:
    """Another library's array (a torch tensor) as NumPy, or `value` itself when it will not
    convert (bfloat16, a GPU tensor): the caller then names its type."""
    try:
        return np.asarray(value)
    except (TypeError, RuntimeError, ValueError):
        return value


def _assembled(values: list[Tensor]) -> list[Tensor]:
    """Sharded values as ordinary tensors holding their global values, assembled on the host
    (no model to build). Values on one storage (tied parameters) give one tensor."""
    nb.evaluate(*(v for v in values if not v.is_realized))
    memo: dict[int, Tensor] = {}
    out = []
    for v in values:
        key = id(v._impl.data)
        if key not in memo:
            if v.dtype == _dt.bfloat16:  # NumPy has no bfloat16: gather it with an op
                memo[key] = nb.unshard(v)
            else:
                memo[key] = Tensor.from_numpy(v.numpy())
        out.append(memo[key])
    nb.evaluate(*(v for v in out if not v.is_realized))
    return out


def _in_layout_of(target: Tensor, value: Tensor) -> Tensor:
    """`value` in `target`'s layout: split to a sharded target's spec, gathered for an unsharded one."""
    spec = target.sharding
    if spec is None:
        return value if value.sharding is None else _assembled([value])[0]
    return nb.shard(value.data, spec.mesh, spec.without_partial())
