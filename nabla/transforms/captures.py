"""What a compiled function captures: tensors it reaches by name (globals, closure cells,
tensors inside dicts, lists and tuples held there, and attributes of user objects held there
or passed as arguments: `self.w`), each with a getter that reads the name again on every call,
and promises made before the trace that it reaches otherwise.

The Python values it reads there (a global `scale = 2.0`, `cfg["eps"]`, `self.mode`, a list's
length, a global model or function by identity) are baked into the trace, so each gets a value
guard, as torch.compile guards them: the function traces again when one changes. Only what its
code reads is guarded (a global it loads, an attribute read from the object, the dict items it
subscripts), so a counter or a log list beside them does not retrace it."""

from __future__ import annotations

import dis
import functools
import types
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..core.common.pytree import leaf_paths, tree_flatten
from ..core.tensor.tensor import Tensor


@dataclass
class Scan:
    by_impl: dict  # id(impl) -> (label, getter returning the Tensor now held there)
    checks: list  # (getter, id(Tensor) at trace time, label): names whose rebinding forces a retrace
    tensors: list  # the Tensors found
    values: list = field(default_factory=list)  # (getter of a value's key, label): see `value_key`
    reads: Reads | None = None  # what the code reads by name (see `code_reads`)


def scan_captures(fn: Callable) -> Scan:
    """Find tensors `fn` can reach by name: globals it names, closure cells, defaults; and
    tensors inside dicts/lists/tuples held there. Each gets a getter that reads the name again.
    The Python values it reads get value guards (see the module doc)."""
    code = getattr(fn, "__code__", None)
    if code is None:
        return Scan({}, [], [])
    reads = code_reads(code)
    scan = Scan({}, [], [], reads=reads)
    glb = getattr(fn, "__globals__", {})
    for name in sorted(reads.names):
        if name in glb:
            guard = name in reads.loaded
            _add_capture(scan, f"global {name!r}", lambda g=glb, n=name: g.get(n), guard=guard, var=name)
    for name, cell in zip(code.co_freevars, getattr(fn, "__closure__", None) or (), strict=False):
        _add_capture(scan, f"closure variable {name!r}", lambda c=cell: _cell_value(c), guard=True, var=name)
    return scan


@dataclass
class Reads:
    """What a function's code (nested code included) reads by name: `names` (every name in
    co_names), `loaded` (globals it loads), `attrs` (per variable, the attributes read right
    after loading it: `self.scale`), `items` (per variable, the constant subscripts read right
    after loading it: `cfg["eps"]`), `whole` (variables also used in other ways), `params`
    (the function's parameter names)."""

    names: set = field(default_factory=set)
    loaded: set = field(default_factory=set)
    attrs: dict = field(default_factory=dict)
    items: dict = field(default_factory=dict)
    whole: set = field(default_factory=set)
    params: tuple = ()


_LOADS = frozenset({"LOAD_GLOBAL", "LOAD_NAME", "LOAD_DEREF", "LOAD_FAST", "LOAD_CLASSDEREF"})


def code_reads(code: types.CodeType) -> Reads:
    reads = Reads(params=code.co_varnames[: code.co_argcount + code.co_kwonlyargcount])
    stack = [code]
    while stack:
        c = stack.pop()
        reads.names.update(c.co_names)
        ins = list(dis.get_instructions(c))
        for k, i in enumerate(ins):
            if i.opname in ("LOAD_GLOBAL", "LOAD_NAME"):
                reads.loaded.add(i.argval)
            if i.opname not in _LOADS:
                continue
            nxt = ins[k + 1] if k + 1 < len(ins) else None
            after = ins[k + 2] if k + 2 < len(ins) else None
            if nxt is not None and nxt.opname in ("LOAD_ATTR", "LOAD_METHOD"):
                reads.attrs.setdefault(i.argval, set()).update(_attr_chain(ins, k + 1))
            elif (
                nxt is not None and nxt.opname == "LOAD_CONST" and after is not None and after.opname == "BINARY_SUBSCR"
            ):
                reads.items.setdefault(i.argval, set()).add(nxt.argval)
            else:
                reads.whole.add(i.argval)
        stack.extend(k for k in c.co_consts if isinstance(k, types.CodeType))
    return reads


def _attr_chain(ins: list, k: int) -> list[str]:
    """The attribute paths read from a variable by the LOAD_ATTRs from `ins[k]` on: `cfg.opt.lr`
    gives "opt" and "opt.lr" (an object two levels down is guarded as one level down is)."""
    paths, path = [], ""
    while k < len(ins) and ins[k].opname in ("LOAD_ATTR", "LOAD_METHOD"):
        path = f"{path}.{ins[k].argval}" if path else ins[k].argval
        paths.append(path)
        k += 1
    return paths


def value_key(value: Any, tensors_by_id: bool = False) -> Any:
    """What a trace baked in of a captured Python value, comparable with ==: numbers, strings
    and the structure of containers; tensors stand for themselves (their identity is checked
    apart), or by identity with `tensors_by_id` (a module's list attribute, which nothing else
    watches); any other object by identity (a rebound model or function traces again). NaN
    equals NaN here, so it does not retrace."""
    if isinstance(value, Tensor):
        return ("tensor", id(value)) if tensors_by_id else _TENSOR
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float):
        return ("float", "nan" if value != value else value)
    if value is None or isinstance(value, bool | int | str | bytes):
        return (type(value).__name__, value)
    if isinstance(value, list | tuple):
        return (type(value).__name__, tuple(value_key(v, tensors_by_id) for v in value))
    if isinstance(value, dict):
        return ("dict", tuple((value_key(k, tensors_by_id), value_key(v, tensors_by_id)) for k, v in value.items()))
    return ("object", id(value))


def object_key(obj: Any, paths: tuple, tensors_by_id: bool = True) -> Any:
    """A user object's key: its identity, and the value at each attribute path below it that
    the code reads (`self.cfg.scale` gives the path "scale" of `self.cfg`), looked up in the
    instances' `__dict__`s only (no properties run, no bound methods made)."""
    return ("object", id(obj), tuple((p, value_key(_path_value(obj, p), tensors_by_id)) for p in paths))


def _path_value(obj: Any, path: str) -> Any:
    for part in path.split("."):
        obj = getattr(obj, "__dict__", {}).get(part, _MISSING)
        if obj is _MISSING:
            break
    return obj


_MISSING = ("missing",)


def below(reads: Any, name: str) -> tuple:
    """The attribute paths read below `name` (`cfg.scale` -> "scale"), sorted."""
    return tuple(sorted(p[len(name) + 1 :] for p in reads if p.startswith(name + ".")))


def _items_key(value: Any, keys: tuple) -> Any:
    """The key of the items `keys` of a dict (the ones the code reads: `cfg["eps"]`)."""
    if not isinstance(value, dict):
        return value_key(value)
    return tuple((k, value_key(value[k]) if k in value else ("missing",)) for k in keys)


_TENSOR = ("tensor",)


def scan_argument_objects(scan: Scan, objects: list[tuple[str, Any]]) -> None:
    """Add the tensor attributes of user objects passed as (static) arguments: `self.w` of a
    compiled method. The call is keyed by the object itself, so its getters may hold it. The
    attributes guarded are those the code reads from one of its parameters."""
    read = set().union(*(scan.reads.attrs.get(p, set()) for p in scan.reads.params)) if scan.reads else set()
    for label, obj in objects:
        if user_object(obj):
            _add_attributes(scan, label, lambda o=obj: o, read)


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


def _add_capture(
    scan: Scan, label: str, getter: Callable[[], Any], guard: bool = False, var: str = "", read: set | None = None
) -> None:
    value = getter()
    if guard and not isinstance(value, Tensor):  # (tensors: `checks`, by identity)
        reads = scan.reads
        keys = reads.items.get(var) if reads is not None and var not in reads.whole else None
        if keys and isinstance(value, dict) and all(isinstance(k, str | int) for k in keys):
            ordered = tuple(sorted(keys, key=repr))  # only the items read: a log list beside them may grow
            scan.values.append((lambda g=getter, k=ordered: _items_key(g(), k), label))
        else:
            scan.values.append((lambda g=getter: value_key(g()), label))
    if isinstance(value, Tensor):
        scan.by_impl.setdefault(id(value._impl), (label, lambda g=getter: g()))
        scan.checks.append((getter, id(value), label))
        scan.tensors.append(value)
        return
    if user_object(value):
        if read is None:
            read = scan.reads.attrs.get(var, set()) if scan.reads is not None else set()
        _add_attributes(scan, label, getter, read)
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


def user_object(value: Any) -> bool:
    """An instance of a user's class, whose tensor attributes a compiled function may read.
    nabla's own objects (modules, optimizers, compiled functions) track their tensors
    themselves and are left alone."""
    if isinstance(value, _NOT_USER_OBJECTS) or not hasattr(value, "__dict__"):
        return False
    return not any(c.__module__.partition(".")[0] in _OURS for c in type(value).__mro__[:-1])


_OURS = ("nabla", "nabla_nn", "nabla_optim", "builtins")


def _plain(value: Any) -> bool:
    return value is None or isinstance(value, bool | int | float | str | bytes)


def _add_attributes(scan: Scan, label: str, getter: Callable[[], Any], read: set) -> None:
    """One level of the object's attributes: tensors, and containers of tensors; those the
    code reads (`read`) are guarded too (a rebound `self.cfg` or `self.scale` traces again)."""
    for attr, value in list(vars(getter()).items())[:256]:
        if isinstance(value, Tensor | dict | list | tuple) or _plain(value) or attr in read:
            getter_ = functools.partial(_attr_of, getter, attr)  # (`cfg.scale` is read below `cfg`)
            _add_capture(scan, f"{label}.{attr}", getter_, guard=attr in read, read=set(below(read, attr)))


def _attr_of(getter: Callable[[], Any], attr: str) -> Any:
    return getattr(getter(), attr, None)
