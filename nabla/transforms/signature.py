"""How `nabla.compile` keys a call and explains a miss: the flattened arguments' signature
(`_Leaf` per leaf: a tensor's dtype, shape with dynamic dims named, vmap depth, requires_grad
and layout; a Python number's type; a static value; an alias of an earlier tensor), the cache
key built from it, and the recompile reason when a key is not cached.

`_Signature` is a mixin of `CompiledFunction` (nabla/transforms/compile.py), which owns the
attributes it reads: `fn`, `static_argnums`, `dynamic_dims`, `_static_scalars`,
`_static_dims`, `_grad_watch` and `_captured`.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..core.common import dtypes as _dt
from ..core.common.config import CONFIG
from ..core.common.context import autocast_device, autocast_dtype, is_grad_enabled
from ..core.common.pytree import PyTreeDef, flatten_token, leaf_paths, tree_flatten, tree_leaves, tree_structure
from ..core.tensor.impl import TensorImpl
from ..core.tensor.tensor import Tensor
from .recompile_reasons import describe, positional_names, similarity

_NONE_DEF = tree_structure(None)


@dataclass
class _Leaf:
    # "tensor", "scalar", "static", "alias" (the tensor of leaf `key` again), "captured" (a
    # tensor the function also captures, by name or through an attribute: traced as itself,
    # not as a placeholder)
    kind: str
    key: Any


class _Signature:
    """The signature half of `CompiledFunction` (see the module doc)."""

    def _flatten(self, args: tuple, kwargs: dict) -> tuple[list, Any, list[_Leaf]]:
        values: list = []
        leaves: list[_Leaf] = []
        arg_defs = []  # each argument is flattened once; the whole treedef is put together below
        for i, arg in enumerate(args):
            if i in self.static_argnums:
                try:
                    hash(arg)
                except TypeError:
                    raise TypeError(
                        f"compile: static argument {i} must be hashable, got {type(arg).__name__}"
                    ) from None
                values.append(arg)
                leaves.append(_Leaf("static", ("static", arg)))
                arg_defs.append(_NONE_DEF)
                continue
            arg_leaves, arg_def = tree_flatten(arg)
            arg_defs.append(arg_def)
            plain = i not in self.dynamic_dims and not self._captured  # (a module's parameters)
            for j, v in enumerate(arg_leaves):
                values.append(v)
                if plain and isinstance(v, Tensor):
                    leaves.append(_tensor_leaf(v._impl, v._impl.logical_shape))
                else:
                    leaves.append(self._classify(v, i, functools.partial(self._leaf_label, i, arg, j)))
        for name in sorted(kwargs):
            for j, v in enumerate(tree_leaves(kwargs[name])):
                values.append(v)
                leaves.append(self._classify(v, name, lambda n=name, j=j: f"kwarg {n!r}{leaf_paths(kwargs[n])[j]}"))
        if len(values) > 1:  # a tensor passed twice is one placeholder: in-place ops see each other
            first: dict[int, int] = {}
            for i, v in enumerate(values):
                if isinstance(v, Tensor) and (j := first.setdefault(id(v), i)) != i:
                    leaves[i] = _Leaf("alias", j)
        # == tree_flatten(([args, with static ones as None], kwargs))[1]
        treedef = PyTreeDef(tuple, 2, (PyTreeDef(list, len(args), tuple(arg_defs)), tree_structure(kwargs)))
        return values, treedef, leaves

    def _leaf_label(self, i: int, arg: Any, j: int) -> str:
        """The name of leaf `j` of positional argument `i` (`arg`), for an error."""
        return positional_names(self.fn, i + 1)[i] + leaf_paths(arg)[j]

    def _labels(self, args: tuple, kwargs: dict) -> list[str]:
        """A name per leaf, in `_flatten` order: `params['w1']` (the function's parameter names),
        `arg 2` past them or where the signature cannot be read, `kwarg 'lr'`."""
        names = positional_names(self.fn, len(args))
        out = []
        for i, arg in enumerate(args):
            paths = [""] if i in self.static_argnums else leaf_paths(arg)
            out.extend(f"{names[i]}{p}" for p in paths)
        for name in sorted(kwargs):
            out.extend(f"kwarg {name!r}{p}" for p in leaf_paths(kwargs[name]))
        return out

    def _classify(self, v: Any, arg: Any, label: Callable[[], str]) -> _Leaf:
        """`label` names the leaf in errors; it is only called on bad input (not on hits)."""
        if isinstance(v, np.ndarray):
            raise TypeError(f"compile: {label()} is a NumPy array; pass nabla.tensor(array) (a Tensor) instead")
        if isinstance(v, Tensor):
            impl = v._impl
            ref = self._captured.get(id(v))
            if ref is not None and ref() is v:  # also a global or closure tensor of the function
                return _Leaf("captured", (id(v), *_tensor_leaf(impl, impl.logical_shape).key))
            dims = self.dynamic_dims.get(arg, {})
            shape = tuple(dims.get(d, n) for d, n in enumerate(impl.logical_shape))
            for d in dims:
                if d >= len(impl.logical_shape):
                    raise ValueError(
                        f"compile: dynamic_dims names dim {d} of {label()}, which has shape {impl.logical_shape}"
                    )
            return _tensor_leaf(impl, shape)
        if isinstance(v, float | int) and not isinstance(v, bool):
            return _Leaf("scalar", (float if isinstance(v, float) else int, v))  # np.float64 is a float
        try:
            hash(v)
        except TypeError:
            return _Leaf("static", ("id", type(v).__name__, id(v)))
        return _Leaf("static", ("value", type(v).__name__, v))

    def _key(self, treedef: Any, leaves: list[_Leaf], values: list, structure: tuple, lazy: bool = False) -> tuple:
        # (the sets are empty unless a fallback happened: skip hashing the structure on hits)
        specialize = bool(self._static_scalars) and structure in self._static_scalars
        # A `call` op's program (lazy) has static shapes: its dynamic dims are keyed by size too
        # (the engine then merges the steps that record it at several sizes, see symbolic.py).
        concrete = lazy or (bool(self._static_dims) and structure in self._static_dims)
        parts = []
        for lf, v in zip(leaves, values, strict=True):
            if lf.kind == "scalar":
                parts.append(("scalar", lf.key if specialize else lf.key[0]))
            elif lf.kind == "tensor" and concrete:
                parts.append(("tensor", (lf.key[0], v._impl.logical_shape, *lf.key[2:])))
            else:
                parts.append((lf.kind, lf.key))
        return (treedef, tuple(parts), CONFIG.executor, self._grad_key(values))

    def _grad_key(self, values: list) -> tuple:
        """Per watched `.grad`: None, or the dtype, layout and shape its model input has (an
        argument's grad has the argument's shape, keyed with its dynamic dims already)."""
        out = []
        for target, _ in self._grad_watch.values():
            g = _caller_grad(target, values)
            if g is None:
                out.append(None)
            else:
                shape = None if target[0] == "arg" else g._impl.physical_shape
                out.append((g._impl.dtype, g._impl.sharding_key, shape))
        return tuple(out)

    def _explain(self, key: tuple, stale: str | None, labels: list[str], keys: list[tuple]) -> str | None:
        """Why `key` (grad mode, signature) missed, against the closest of the cached `keys`
        (compiled models and `call` programs alike)."""
        if stale is not None:  # the key is cached, but what the trace read has changed
            return stale
        if not keys:
            return None
        closest = max(keys, key=lambda k: similarity(k[-1], key[-1]))
        if closest[-1] == key[-1] and closest[0] != key[0]:
            return "grad mode {} -> {}".format(*("enabled" if k[0] else "disabled (no_grad)" for k in (closest, key)))
        if closest[-1] == key[-1] and len(key) > 3 and closest[1] != key[1]:
            return "autocast {} -> {}".format(*(k[1].name if k[1] else "off" for k in (closest, key)))
        if closest[-1] == key[-1] and len(key) > 3 and closest[2] != key[2]:
            return f"default dtype {closest[2].name} -> {key[2].name}"
        grad_labels = [_grad_label(target, label, labels) for target, label in self._grad_watch.values()]
        return describe(closest[-1], key[-1], labels, grad_labels)


class _FastCall:
    """The last call's arguments in a form checked without flattening or keying them: a
    training loop calls a compiled forward with the same module and batch shapes every step.

    Per argument it keeps None (a tensor) or the argument's flatten token and leaves (a
    module: its parameters and buffers), and per flattened tensor its `_aval`. `values(args)`
    gives this call's flattened values when all of that matches (the full key would then be
    the same, so the same entry serves), else None. Made only for calls of tensors and
    tokened nodes, without kwargs, static arguments, aliases or captured arguments.
    """

    __slots__ = ("autocast", "avals", "entry", "executor", "grad", "lazy", "leaf_ids", "parts", "tensor_args")

    def __init__(self, parts: list, avals: list, entry: Any, lazy: bool) -> None:
        self.parts = parts
        self.avals = avals
        self.entry = entry
        self.lazy = lazy  # recorded as a `call` op (else the model runs)
        self.grad = is_grad_enabled()
        self.autocast = (autocast_dtype(), _dt.DEFAULT_FLOAT, autocast_device())
        self.executor = CONFIG.executor
        self.leaf_ids = frozenset(id(t) for part in parts if part is not None for t in part[1])
        self.tensor_args = sum(part is None for part in parts)

    @classmethod
    def make(cls, fn: _Signature, args: tuple, values: list, leaves: list[_Leaf], entry: Any, lazy: bool) -> Any:
        """The record of a call that `values` and `leaves` flatten, or None if it does not qualify."""
        if fn.static_argnums or any(lf.kind != "tensor" for lf in leaves):
            return None
        parts: list = []
        flat: list = []
        for a in args:
            if isinstance(a, Tensor):
                parts.append(None)
                flat.append(a)
                continue
            token = flatten_token(a)
            if token is None:
                return None
            part = tree_leaves(a)
            parts.append((token, part))
            flat += part
        if len(flat) != len(values) or any(a is not b for a, b in zip(flat, values, strict=True)):
            return None
        avals = [_aval(v._impl) for v in values]
        if any(a[4] or a[5] is not None or not a[6] for a in avals):
            return None  # vmap, mesh layouts and forward mode take the full path
        return cls(parts, avals, entry, lazy)

    def values(self, args: tuple) -> list | None:
        parts = self.parts
        if len(args) != len(parts) or is_grad_enabled() is not self.grad or CONFIG.executor != self.executor:
            return None
        if (autocast_dtype(), _dt.DEFAULT_FLOAT, autocast_device()) != self.autocast:
            return None
        values: list = []
        for a, part in zip(args, parts, strict=True):
            if part is None:
                if not isinstance(a, Tensor) or id(a) in self.leaf_ids:
                    return None
                values.append(a)
            elif flatten_token(a) == part[0]:
                values += part[1]
            else:
                return None
        if self.tensor_args > 1 and len({id(v) for v in values}) != len(values):
            return None  # a tensor passed twice is keyed as an alias
        return values if [_aval(v._impl) for v in values] == self.avals else None


def _aval(i: TensorImpl) -> tuple:
    """What a tensor's `_tensor_leaf` and `_inside_transform` read (stricter: physical shapes,
    the layout object itself)."""
    node = i.output_refs
    leaf = node is None or not node.op.differentiable
    return (i.dtype, i.physical_shape, i.requires_grad, i.device, i.batch_dims, i.sharding, i.tangent is None, leaf)


def _tensor_leaf(impl: TensorImpl, shape: tuple) -> _Leaf:
    """A tensor leaf's signature; `shape` has symbolic names for its dynamic dims."""
    return _Leaf("tensor", (impl.dtype, shape, impl.batch_dims, impl.requires_grad, impl.sharding_key, impl.device))


def _structure(treedef: Any, leaves: list[_Leaf]) -> tuple:
    """A call's signature without scalar values and dynamic sizes (what specialization and
    differentiability are remembered by)."""
    return (treedef, tuple((lf.kind, lf.key if lf.kind != "scalar" else lf.key[0]) for lf in leaves))


def _caller_grad(target: tuple, values: list) -> Tensor | None:
    """The `.grad` of a watched tensor in this call (None where a leaf of another signature is
    not a tensor)."""
    kind, t = target
    if kind == "arg":
        t = values[t] if t < len(values) else None
    return t._grad if isinstance(t, Tensor) else None


def _grad_label(target: tuple, label: str | None, labels: list[str]) -> str:
    """A watched tensor's name: its capture's, or the argument's in this call."""
    if label is not None:
        return label
    return labels[target[1]] if target[1] < len(labels) else f"argument leaf {target[1]}"


def _normalize_dynamic(dynamic_dims: Any) -> dict:
    """{argnum or kwarg name: int | [ints] | {dim: name}} -> {arg: {dim: name}}."""
    if dynamic_dims is None:
        return {}
    if not isinstance(dynamic_dims, dict):
        raise TypeError(
            "compile: dynamic_dims must be a dict {argnum: dims}, e.g. {0: 0} or {0: {0: 'batch'}}, "
            f"got {dynamic_dims!r}"
        )
    out = {}
    for arg, dims in dynamic_dims.items():
        if isinstance(dims, int):
            dims = {dims: f"dyn{dims}"}
        elif isinstance(dims, list | tuple):
            dims = {d: f"dyn{d}" for d in dims}
        elif not isinstance(dims, dict):
            raise TypeError(f"compile: dynamic_dims[{arg!r}] must be an int, a list of ints or a dict, got {dims!r}")
        for d, name in dims.items():
            if not isinstance(d, int) or d < 0 or not isinstance(name, str):
                raise TypeError(f"compile: dynamic_dims[{arg!r}] entries must be dim (int >= 0) -> name (str)")
        out[arg] = dict(dims)
    return out
