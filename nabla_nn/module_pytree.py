"""Modules as arguments of nabla's transforms (`grad`, `vmap`, `compile`).

A module is a pytree: its leaves are its parameters and buffers, its structure the module
itself (by identity), its leaf names and its submodules' training flags. Unflattening makes
a structural copy holding the new leaves (placeholders while tracing, gradients from `grad`),
so the original is never touched. `Module.compile` compiles `_forward_of(module)`: forward
taking the module first, so parameters are inputs of the compiled model, not constants.
"""

from __future__ import annotations

import copy
import inspect
import types
from collections import OrderedDict
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from nabla.transforms.captures import object_key, value_key

if TYPE_CHECKING:  # type hints only: module.py imports this file to register Module
    from .module import Module


def _compiled_forward(self: Module, *args: Any, **kwargs: Any) -> Any:
    """The body of every `_forward_of` function (one code object: `_modules_being_called` finds it)."""
    return self.forward(*args, **kwargs)


def _forward_of(module: Module) -> Callable[..., Any]:
    """What `Module.compile` compiles: `forward` taking the module first, as a pytree, so its
    parameters and buffers are inputs of the compiled model, never stale constants. It carries
    forward's name and signature, so recompile reasons name `x`, not `arg 1`."""
    forward = types.FunctionType(_compiled_forward.__code__, _compiled_forward.__globals__, "forward")
    forward.__qualname__ = f"{type(module).__name__}.forward"
    try:
        params = list(inspect.signature(module.forward).parameters.values())
        self_param = inspect.Parameter("self", inspect.Parameter.POSITIONAL_ONLY)
        forward.__signature__ = inspect.Signature([self_param, *params])  # type: ignore[attr-defined]
    except (TypeError, ValueError):  # a forward without a readable signature keeps (self, *args)
        pass
    return forward


# -- Modules as pytrees: leaves are the parameters and buffers, the module is the structure ----
class _ModuleDef:
    """The hashable structure of a flattened module: the original module (by identity), the
    names of its leaves, and `_tree`'s modes: every submodule (by identity), its training flag
    (train/eval changes the trace), hooks and plain attributes, and the hooks on every module."""

    __slots__ = ("_hash", "module", "modes", "names")

    def __init__(self, module: Module, names: tuple, modes: tuple) -> None:
        self.module = module
        self.names = names
        self.modes = modes
        self._hash: int | None = None

    def __eq__(self, other: object) -> bool:
        return other is self or (
            isinstance(other, _ModuleDef)
            and other.module is self.module
            and other.names == self.names
            and other.modes == self.modes
        )

    def __hash__(self) -> int:
        h = self._hash
        if h is None:
            h = self._hash = hash((id(self.module), self.names, self.modes))
        return h

    def __repr__(self) -> str:
        return f"{type(self.module).__name__}<{len(self.names)} tensors>"

    def describe_change(self, other: _ModuleDef) -> str | None:
        """What differs from `other` (the cached structure), in words, for a recompile reason."""
        kind = type(self.module).__name__
        if other.module is not self.module:
            return f"another {kind} module object"
        if other.names != self.names:
            changed = sorted(set(self.names) ^ set(other.names)) or list(self.names)
            return f"{kind}'s parameters or buffers changed ({', '.join(changed[:3])})"
        if other.modes[0] != self.modes[0]:
            return "the global module hooks changed"
        names = {id(m): f"{n} ({type(m).__name__})" if n else kind for n, m in self.module.named_modules()}
        for (module, training, hooks, attrs), (module2, training2, hooks2, attrs2) in zip(
            other.modes[1:], self.modes[1:], strict=False
        ):
            where = names.get(id(module2), type(module2).__name__)
            if module is not module2:
                return f"{where} is another module object"
            if training != training2:
                return f"{where} training {training} -> {training2} (train()/eval())"
            if hooks != hooks2:
                return f"{where} hooks changed"
            if attrs != attrs2:
                before, after = dict(attrs), dict(attrs2)
                name = next(n for n in {**before, **after} if before.get(n, attrs) != after.get(n, attrs))
                if name not in before or name not in after:
                    return f"{where} attribute {name!r} was set or removed"
                if isinstance(before[name], _TensorId):
                    return f"{where}.{name} is another tensor"
                return f"{where}.{name} {before[name]!r} -> {after[name]!r}"
        return f"{kind}'s submodules changed"


class _TensorId(int):
    """A tensor attribute's identity in `_attributes` (told apart from an int attribute)."""


class _ContainerKey(tuple):
    """A list or dict attribute in `_attributes`, by content: plain values by value, tensors
    and other objects by identity. An in-place change (`self.scales.append(2.0)`) does not
    bump `_Tree.version`, so `_flatten_module` compares these keys on every call."""

    shown = ""  # the value's repr when keyed (shortened), for recompile reasons
    paths: tuple | None = None  # a user object's attribute paths read (see `container_attribute`)

    def __repr__(self) -> str:
        return self.shown or tuple.__repr__(self)


def container_attribute(value: Any, paths: tuple | None = None) -> _ContainerKey:
    """The key of a list/dict attribute, or (`paths`) of a user object whose attributes at
    `paths` forward reads (`self.cfg.scale`)."""
    key = _ContainerKey(attribute_key(value, paths))
    key.paths = paths
    text = repr(value)
    key.shown = text if len(text) <= 80 else text[:77] + "..."
    return key


def attribute_key(value: Any, paths: tuple | None) -> Any:
    return container_key(value) if paths is None else object_key(value, paths)


def container_key(value: Any) -> Any:
    """A list/dict attribute's key: `value_key` with its tensors by identity."""
    return value_key(value, tensors_by_id=True)


class _Tree:
    """The version of every module tree in the process: any change to one (a parameter, buffer
    or submodule set or removed, a training flag) bumps it, so a module flattened at this
    version flattens the same way until it moves (`_flatten_module` keeps its last result)."""

    version = 0


class _Store(OrderedDict):
    """A module's `_parameters`, `_buffers` or `_modules`: every change bumps `_Tree.version`
    (also a change made to the dict directly, as some PyTorch code does)."""

    __slots__ = ()

    def __setitem__(self, key: str, value: Any) -> None:
        _Tree.version += 1
        OrderedDict.__setitem__(self, key, value)

    def __delitem__(self, key: str) -> None:
        _Tree.version += 1
        OrderedDict.__delitem__(self, key)

    def pop(self, *args: Any) -> Any:
        _Tree.version += 1
        return OrderedDict.pop(self, *args)

    def popitem(self, last: bool = True) -> tuple:
        _Tree.version += 1
        return OrderedDict.popitem(self, last)

    def clear(self) -> None:
        _Tree.version += 1
        OrderedDict.clear(self)

    def update(self, *args: Any, **kwargs: Any) -> None:
        _Tree.version += 1
        OrderedDict.update(self, *args, **kwargs)

    def setdefault(self, key: str, default: Any = None) -> Any:
        _Tree.version += 1
        return OrderedDict.setdefault(self, key, default)

    def move_to_end(self, key: str, last: bool = True) -> None:
        _Tree.version += 1
        OrderedDict.move_to_end(self, key, last)

    def __ior__(self, other: Any) -> _Store:
        self.update(other)
        return self


def _flatten_module(module: Module) -> tuple[list, _ModuleDef]:
    # A compiled forward flattens its module every call: unless a module tree changed since,
    # the last walk's leaves and _ModuleDef are this one's (the key then compares by identity).
    flat = _current_flat(module)
    if flat is not None:
        return flat[1], flat[2]
    flat = module.__dict__.get("_flat")
    named, modes = module._tree()
    names = tuple(n for n, _ in named)
    last = None if flat is None else flat[2]  # (the same structure keeps its _ModuleDef object)
    if last is None or last.names != names or last.modes != modes or last.module is not module:
        last = _ModuleDef(module, names, modes)
    leaves = [t for _, t in named]
    watched = [(m, n, v) for m, *_, attrs in modes[1:] for n, v in attrs if isinstance(v, _ContainerKey)]
    object.__setattr__(module, "_flat", (_Tree.version, leaves, last, watched))
    return leaves, last


def _current_flat(module: Module) -> tuple | None:
    """The module's last flatten, if no module tree changed since; a list/dict attribute
    changed in place (which __setattr__ does not see) counts as a change of every tree."""
    flat = module.__dict__.get("_flat")
    if flat is None or flat[0] != _Tree.version:
        return None
    if flat[3] and not all(attribute_key(m.__dict__.get(n), key.paths) == key for m, n, key in flat[3]):
        _Tree.version += 1
        return None
    return flat


def _module_token(module: Module) -> tuple:
    """Equal for two flattens of `module` with the same leaves and structure (see
    `register_pytree_node`'s `token`): the module and the version of the module trees."""
    _current_flat(module)  # (bumps the version if a watched list/dict changed)
    return module, _Tree.version


def _unflatten_module(definition: _ModuleDef, leaves: list) -> Module:
    """A structural copy of the module whose parameters/buffers are `leaves` (placeholders
    while tracing, gradients from `grad`); the original module is untouched. A tensor shared
    by several submodules (tied weights) is replaced everywhere it appears."""
    originals = [t for _, t in definition.module._all_tensors()]
    replace = {id(t): leaf for t, leaf in zip(originals, leaves, strict=True)}
    clone = _clone_structure(definition.module, {})
    for module in clone.modules():
        for store in (module._parameters, module._buffers):
            for name, value in store.items():
                if value is not None and id(value) in replace:
                    store[name] = replace[id(value)]
    return clone


def _clone_structure(module: Module, memo: dict) -> Module:
    if id(module) in memo:
        return memo[id(module)]
    clone = copy.copy(module)
    memo[id(module)] = clone
    for store in (
        "_parameters",
        "_buffers",
        "_non_persistent_buffers",
        "_forward_hooks",
        "_forward_pre_hooks",
        "_backward_hooks",
    ):
        object.__setattr__(clone, store, copy.copy(module.__dict__[store]))
    children = OrderedDict((n, None if m is None else _clone_structure(m, memo)) for n, m in module._modules.items())
    object.__setattr__(clone, "_modules", children)
    object.__setattr__(clone, "_compiled", None)
    object.__setattr__(clone, "_trace_clone", True)
    return clone
