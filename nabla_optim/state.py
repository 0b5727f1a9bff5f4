"""Optimizer state tensors: how they are created, placed, shared, saved and loaded.

- created realized (`realized_full`, `realized_zeros_like`, `realized_step`): graph inputs
  from the first step on, never fill ops that only the first step's graph would contain;
- placed like their parameter (`placed_like`): on its accelerator, or laid out on its mesh;
- shared (`share_scalars`, `reshare`): a scalar entry whose update reads only itself and
  the hyperparameters (the step count) is one value for the parameters stepped together;
- saved and loaded (`saved_value`, `load_value`, `state_layout`): PyTorch's per-parameter
  layout, checked against the parameter's shape.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import numpy as np

import nabla as nb
from nabla import Tensor
from nabla.core.common import dtypes as _dt
from nabla.core.common.devices import Device
from nabla.core.graph.engine import GRAPH
from nabla.core.graph.tracing import tracing
from nabla_nn.parameter import Parameter
from nabla_nn.serialization import foreign_array

__all__ = [
    "accelerator_of",
    "ensure_state",
    "load_value",
    "placed_like",
    "realized_full",
    "realized_step",
    "realized_zeros_like",
    "reshare",
    "saved_value",
    "share_scalars",
    "state_layout",
]


def realized_full(shape: tuple[int, ...], value: float, dtype: Any) -> Tensor:
    """A realized tensor filled with `value`: a graph input, not a fill op in the graph."""
    dtype = _dt.as_dtype(dtype)
    t = Tensor.from_numpy(np.full(shape, value, _dt.to_numpy_dtype(dtype)), dtype=dtype)
    # bfloat16 (no NumPy dtype) is made by a cast: computed now on the host, so the first
    # step's program reads it as an input as every later step does (one compile for the loop)
    GRAPH.evaluate_on_host([t._impl])
    return t


def realized_zeros_like(p: Tensor, value: float = 0.0) -> Tensor:
    return realized_full(p.shape, value, p.dtype)


def accelerator_of(p: Tensor) -> Device | None:
    """The accelerator an unsharded parameter lives on (its optimizer's tensors live there too)."""
    impl = p._impl
    return impl.device if impl.device.is_accelerator and impl.sharding is None else None


def placed_like(p: Tensor, state: dict[str, Any]) -> dict[str, Any]:
    """A parameter's state (initial or loaded) placed like it, so the first step already has
    the steady-state structure: one compile for the loop. On an accelerator every entry lives
    there (as PyTorch keeps state with its parameter; nothing is copied up each step); a
    sharded parameter's state is laid out like it (scalars replicated on its mesh)."""
    spec = p.sharding
    if spec is None:
        device = accelerator_of(p)
        if device is None:
            return state
        return {key: v.to(device) if isinstance(v, Tensor) else v for key, v in state.items()}
    spec = spec.without_partial()
    out = {}
    for key, v in state.items():
        if isinstance(v, Tensor) and v.sharding is None:
            v = nb.shard(v, spec.mesh, spec if v.shape == p.shape else None)
        out[key] = v
    return out


def realized_step() -> Tensor:
    """A step counter: a float32 scalar, as PyTorch keeps it."""
    return realized_full((), 0.0, _dt.float32)


def _shareable(t: Any) -> bool:
    return isinstance(t, Tensor) and not t.ndim and t._impl.sharding is None and t._impl.is_realized


def share_scalars(columns: list[list[Any]]) -> None:
    """Point each column's realized, unsharded scalar tensors (one state entry of several
    parameters, whose values the caller knows are equal) at one impl per device: every Tensor
    object stays its parameter's own, but a step's graph then has one input for them, and
    `reshare` keeps it one."""
    for column in columns:
        first: dict[Any, Any] = {}
        for t in column:
            if _shareable(t):
                t._impl = first.setdefault((t._impl.device, t._impl.dtype), t._impl)


def share_loaded(rows: list[dict[str, Any]], keys: tuple[str, ...]) -> None:
    """`share_scalars` for a loaded state: the entries `keys` of the parameters whose values
    of them all are equal. Not entry by entry: ASGD's `mu` follows its parameter's step, so two
    parameters with equal `mu` at unequal steps must keep their own (they part at the next step)."""
    groups: dict[tuple, list[dict[str, Any]]] = {}
    for row in rows:
        values = [row.get(k) for k in keys]
        present = [v for v in values if v is not None]
        if not all(_shareable(v) and not v._impl.device.is_accelerator for v in present):
            continue  # (reading an accelerator's value back would wait for the device)
        key = tuple(None if v is None else (v._impl.device, v._impl.dtype, v.item()) for v in values)
        groups.setdefault(key, []).append(row)
    for members in groups.values():
        share_scalars([[row.get(k) for row in members] for k in keys])


def reshare(tensors: list[Tensor], before: list[Any]) -> None:
    """After a fused update: tensors that shared one impl before it get one updated impl (their
    new values are equal: the entry's update reads only itself and the hyperparameters), so
    the next step's graph reads it once. The other outputs are then unused."""
    new_of: dict[int, Any] = {}
    for t, old in zip(tensors, before, strict=True):
        impl = new_of.setdefault(id(old), t._impl)
        if impl is not t._impl:
            if tracing():
                t._install(impl)
            else:
                t._impl = impl


def saved_value(value: Any, shared: bool) -> Any:
    """A state entry as `state_dict` returns it: a tensor's value (its own storage for an entry
    parameters may share, as each of PyTorch's parameters has its own step), else a copy."""
    if not isinstance(value, Tensor):
        return copy.deepcopy(value)
    if shared and value.sharding is None and not value._impl.device.is_accelerator:
        return Tensor.from_numpy(np.array(value.numpy()))
    return value.data


def ensure_state(state: dict[str, Any], key: str, make: Callable[[], Tensor]) -> None:
    """Create state entry `key` if it is missing (a hyperparameter change now needs it)."""
    if not isinstance(state.get(key), Tensor):
        state[key] = make()


def state_layout(state: dict) -> dict:
    """Per parameter, its state entries: Tensor objects by identity, other values by value."""
    return {
        id(p): tuple((k, id(v) if isinstance(v, Tensor) else v) for k, v in s.items()) for p, s in state.items() if s
    }


def load_value(p: Parameter, index: Any, key: str, value: Any, expected: tuple[int, ...]) -> Any:
    """One loaded state entry as a realized tensor of the right dtype (numbers stay numbers);
    a tensor's shape must be `expected` (or a scalar's)."""
    if value is None or isinstance(value, bool | str):
        return value
    if isinstance(value, int | float) and key != "step":
        return value
    if not isinstance(value, Tensor | np.ndarray | int | float):
        value = foreign_array(value)  # a torch tensor (bfloat16 read as its bits)
    array = value.numpy() if isinstance(value, Tensor) else np.asarray(value)
    if array.dtype == object:
        raise TypeError(f"state {key!r} of parameter {index}: cannot load a value of type {type(value).__name__}")
    shape = tuple(array.shape)
    if shape != () and shape != expected:
        what = "the parameter has" if expected == tuple(p.shape) else f"a parameter of shape {p.shape} needs"
        raise ValueError(f"state {key!r} of parameter {index} has shape {shape}, {what} shape {expected}")
    if key == "step":
        dtype = _dt.float32 if array.dtype.kind in "iub" else _dt.from_numpy_dtype(array.dtype)
    elif array.dtype.kind == "f":
        dtype = p.dtype
    else:
        dtype = _dt.from_numpy_dtype(array.dtype)
    if isinstance(value, Tensor) and key == "step":
        dtype = value.dtype
    if dtype == _dt.bfloat16:
        t = Tensor.from_numpy(np.asarray(array, np.float32)).to(dtype)
        GRAPH.evaluate_on_host([t._impl])  # (only it: realize() would compute all that is pending)
        return t
    # A copy: the caller's array (a live PyTorch optimizer's state) may change in place later.
    return Tensor.from_numpy(np.array(array, _dt.to_numpy_dtype(dtype), copy=True), dtype=dtype)
