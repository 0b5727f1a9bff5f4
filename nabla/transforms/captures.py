"""What a compiled function captures: tensors it reaches by name (globals, closure cells,
tensors inside dicts, lists and tuples held there, and attributes of user objects held there
or passed as arguments: `self.w`), each with a getter that reads the name again on every call,
and promises made before the trace that it reaches otherwise."""

from __future__ import annotations

import functools
import types
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..core.common.pytree import leaf_paths, tree_flatten
from ..core.tensor.tensor import Tensor


@dataclass
class Scan:
    by_impl: dict  # id(impl) -> (label, getter returning the Tensor now held there)
    checks: list  # (getter, id(Tensor) at trace time, label): names whose rebinding forces a retrace
    tensors: list  # the Tensors found


def scan_captures(fn: Callable) -> Scan:
    """Find tensors `fn` can reach by name: globals it names, closure cells, defaults; and
    tensors inside dicts/lists/tuples held there. Each gets a getter that reads the name again."""
    scan = Scan({}, [], [])
    code = getattr(fn, "__code__", None)
    if code is None:
        return scan
    names = set()
    stack = [code]
    while stack:
        c = stack.pop()
        names.update(c.co_names)
        stack.extend(k for k in c.co_consts if isinstance(k, types.CodeType))
    glb = getattr(fn, "__globals__", {})
    for name in sorted(names):
        if name in glb:
            _add_capture(scan, f"global {name!r}", lambda g=glb, n=name: g.get(n))
    for name, cell in zip(code.co_freevars, getattr(fn, "__closure__", None) or (), strict=False):
        _add_capture(scan, f"closure variable {name!r}", lambda c=cell: _cell_value(c))
    return scan


def scan_argument_objects(scan: Scan, objects: list[tuple[str, Any]]) -> None:
    """Add the tensor attributes of user objects passed as (static) arguments: `self.w` of a
    compiled method. The call is keyed by the object itself, so its getters may hold it."""
    for label, obj in objects:
        if _user_object(obj):
            _add_attributes(scan, label, lambda o=obj: o)


def outside_promises(impls: list, start_seq: int) -> list:
    """Pending impls created before the trace that the traced values read (the walk stops at
    them): computing them makes them inputs instead of recipes baked into the model."""
    found, seen, stack = [], set(), list(impls)
    while stack:
        impl = stack.pop()
        node = impl.output_refs
        if impl.data is not None or node is None or id(node) in seen:
            continue
        if impl.seq < start_seq:
            found.append(impl)
            continue
        seen.add(id(node))
        stack.extend(node.args)
    return found


def _cell_value(cell: Any) -> Any:
    try:
        return cell.cell_contents
    except ValueError:
        return None


def _add_capture(scan: Scan, label: str, getter: Callable[[], Any]) -> None:
    value = getter()
    if isinstance(value, Tensor):
        scan.by_impl.setdefault(id(value._impl), (label, lambda g=getter: g()))
        scan.checks.append((getter, id(value), label))
        scan.tensors.append(value)
        return
    if _user_object(value):
        _add_attributes(scan, label, getter)
        return
    if isinstance(value, dict | list | tuple) and len(value) <= 1024:
        leaves, _ = tree_flatten(value)
        for k, (leaf, path) in enumerate(zip(leaves, leaf_paths(value), strict=True)):
            if isinstance(leaf, Tensor):
                leaf_getter = functools.partial(_leaf_of, getter, k)
                scan.by_impl.setdefault(id(leaf._impl), (f"{label}{path}", leaf_getter))
                scan.checks.append((leaf_getter, id(leaf), f"{label}{path}"))
                scan.tensors.append(leaf)


def _leaf_of(getter: Callable[[], Any], k: int) -> Any:
    leaves = tree_flatten(getter())[0]
    return leaves[k] if k < len(leaves) else None


_NOT_USER_OBJECTS = (
    type, types.ModuleType, types.FunctionType, types.BuiltinFunctionType, types.MethodType, functools.partial, Tensor
)  # fmt: skip


def _user_object(value: Any) -> bool:
    """An instance of a user's class, whose tensor attributes a compiled function may read.
    nabla's own objects (modules, optimizers, compiled functions) track their tensors
    themselves and are left alone."""
    if isinstance(value, _NOT_USER_OBJECTS) or not hasattr(value, "__dict__"):
        return False
    return not any(c.__module__.partition(".")[0] in _OURS for c in type(value).__mro__[:-1])


_OURS = ("nabla", "nabla_nn", "nabla_optim", "builtins")


def _add_attributes(scan: Scan, label: str, getter: Callable[[], Any]) -> None:
    """One level of the object's attributes: tensors, and containers of tensors."""
    for attr, value in list(vars(getter()).items())[:256]:
        if isinstance(value, Tensor | dict | list | tuple):
            _add_capture(scan, f"{label}.{attr}", functools.partial(_attr_of, getter, attr))


def _attr_of(getter: Callable[[], Any], attr: str) -> Any:
    return getattr(getter(), attr, None)
