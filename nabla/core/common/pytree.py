"""Minimal JAX-compatible pytrees: tuples, lists, dicts (keys sorted), OrderedDicts (order kept),
namedtuples, None and registered node types. Anything else is a leaf."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterator
from dataclasses import dataclass
from typing import Any

_REGISTRY: dict[type, tuple[Callable, Callable, Callable | None]] = {}  # (flatten, unflatten, token)
_SUBCLASS_CACHE: dict[type, tuple[Callable, Callable, Callable | None] | None] = {}
_KEYS: dict[type, Callable[[Hashable], list[str]]] = {}  # how `leaf_paths` names a node's children
_LEAF_TYPES: set[type] = set()  # types `_children` found to be leaves (a tensor): skipped at once


def _registered(t: type) -> tuple[Callable, Callable, Callable | None] | None:
    """The (flatten, unflatten, token) of `t`: its own, or that of its nearest registered base
    class (registering `nabla_nn.Module` covers every user subclass)."""
    try:
        return _SUBCLASS_CACHE[t]
    except KeyError:
        entry = next((_REGISTRY[b] for b in t.__mro__ if b in _REGISTRY), None)
        _SUBCLASS_CACHE[t] = entry
        return entry


def register_pytree_node(
    cls: type,
    flatten: Callable[[Any], tuple[list[Any], Hashable]],
    unflatten: Callable[[Hashable, list[Any]], Any],
    keys: Callable[[Hashable], list[str]] | None = None,
    token: Callable[[Any], Hashable] | None = None,
) -> None:
    """Register `cls` so tree utilities recurse into it.

    Args:
        cls: the container type.
        flatten: `obj -> (children, aux_data)`; aux_data must be hashable.
        unflatten: `(aux_data, children) -> obj`.
        keys: `aux_data -> [path suffix per child]` (`".weight"`), how errors name the leaves
            below a node; by default `[0]`, `[1]`, ...
        token: `obj -> hashable`, cheap, equal for two calls only when `flatten` would return
            the same aux_data and the same child objects both times (a module: itself and a
            version its changes bump). Compiled functions then skip flattening an argument
            whose token did not change (`flatten_token`).

    Example:
        >>> register_pytree_node(Point, lambda p: ((p.x, p.y), None), lambda aux, kids: Point(*kids))
    """
    if cls in _REGISTRY or cls in (tuple, list, dict, OrderedDict, type(None)):
        raise ValueError(f"register_pytree_node: {cls.__name__} is already a pytree node type")
    _REGISTRY[cls] = (flatten, unflatten, token)
    if keys is not None:
        _KEYS[cls] = keys
    _SUBCLASS_CACHE.clear()
    _LEAF_TYPES.clear()


def flatten_token(node: Any) -> Hashable | None:
    """The `token` of a node of a registered type that has one (its own or its nearest
    registered base class's), else None."""
    entry = _registered(type(node))
    return None if entry is None or entry[2] is None else entry[2](node)


@dataclass(frozen=True, eq=False)
class PyTreeDef:
    kind: Any  # None for a leaf, else the node type
    aux: Any
    children: tuple[PyTreeDef, ...]
    # A dict's keys in insertion order, where it differs from the sorted `aux` (leaves follow
    # the sorted order, as JAX's, so equal dicts flatten alike): not part of equality, but
    # `tree_unflatten` rebuilds the dict in this order, as torch's pytrees keep it (a
    # `zip(params.values(), grads.values())` pairs the right tensors).
    order: tuple | None = None

    # Compiled functions key every call by its treedef: each node hashes its subtree once.
    def __hash__(self) -> int:
        try:
            return self.__dict__["_hash"]
        except KeyError:
            h = hash((self.kind, self.aux, self.children))
            object.__setattr__(self, "_hash", h)
            return h

    def __eq__(self, other: object) -> bool:
        if self is other:
            return True
        if not isinstance(other, PyTreeDef) or hash(self) != hash(other):
            return False
        return self.kind == other.kind and self.aux == other.aux and self.children == other.children

    def __repr__(self) -> str:
        if self.kind is None:
            return "*"
        kids = ", ".join(repr(c) for c in self.children)
        if self.kind is tuple:
            return f"({kids}{',' if len(self.children) == 1 else ''})"
        if self.kind is list:
            return f"[{kids}]"
        if self.kind is dict or self.kind is OrderedDict:
            return "{" + ", ".join(f"{k!r}: {c!r}" for k, c in zip(self.aux, self.children, strict=True)) + "}"
        if self.kind is type(None):
            return "None"
        return f"{self.kind.__name__}({kids})"

    @property
    def num_leaves(self) -> int:
        if self.kind is None:
            return 1
        return sum(c.num_leaves for c in self.children)


_LEAF = PyTreeDef(None, None, ())


def _children(node: Any) -> tuple[type, Hashable, list[Any]] | None:
    t = type(node)
    if t is tuple or t is list:
        return t, len(node), list(node)
    if t is dict:
        keys = tuple(sorted(node, key=repr))
        return dict, keys, [node[k] for k in keys]
    if t is OrderedDict:
        return t, tuple(node), list(node.values())
    if node is None:
        return type(None), None, []
    entry = _registered(t)
    if entry is not None:
        children, aux = entry[0](node)
        return t, aux, list(children)
    if isinstance(node, tuple) and hasattr(node, "_fields"):  # namedtuple
        return t, None, list(node)
    return None


def _flatten(node: Any, leaves: list[Any], is_leaf: Callable[[Any], bool] | None) -> PyTreeDef:
    if type(node) in _LEAF_TYPES if is_leaf is None else is_leaf(node):
        leaves.append(node)
        return _LEAF
    info = _children(node)
    if info is None:  # (whether a node has children depends on its type alone)
        _LEAF_TYPES.add(type(node))
        leaves.append(node)
        return _LEAF
    kind, aux, kids = info
    children = tuple(_flatten(k, leaves, is_leaf) for k in kids)
    if kind is dict and (order := tuple(node)) != aux:
        return PyTreeDef(kind, aux, children, order)
    return PyTreeDef(kind, aux, children)


# Module-level recursion (not nested closures): a recursive closure is a reference cycle,
# and a cycle holding tensors keeps them alive, and pending, until the garbage collector runs.
def tree_flatten(tree: Any, is_leaf: Callable[[Any], bool] | None = None) -> tuple[list[Any], PyTreeDef]:
    leaves: list[Any] = []
    treedef = _flatten(tree, leaves, is_leaf)
    return leaves, treedef


def _unflatten(td: PyTreeDef, it: Iterator[Any]) -> Any:
    if td.kind is None:
        return next(it)
    kids = [_unflatten(c, it) for c in td.children]
    if td.kind is tuple:
        return tuple(kids)
    if td.kind is list:
        return kids
    if td.kind is dict or td.kind is OrderedDict:
        out = td.kind(zip(td.aux, kids, strict=True))
        return out if td.order is None else {k: out[k] for k in td.order}
    if td.kind is type(None):
        return None
    entry = _registered(td.kind)
    if entry is not None:
        return entry[1](td.aux, kids)
    return td.kind(*kids)  # namedtuple


def tree_unflatten(treedef: PyTreeDef, leaves: list[Any]) -> Any:
    leaves = list(leaves)
    if len(leaves) != treedef.num_leaves:
        raise ValueError(f"tree_unflatten: {treedef} has {treedef.num_leaves} leaves, got {len(leaves)}")
    return _unflatten(treedef, iter(leaves))


def tree_leaves(tree: Any, is_leaf: Callable[[Any], bool] | None = None) -> list[Any]:
    return tree_flatten(tree, is_leaf)[0]


def tree_structure(tree: Any, is_leaf: Callable[[Any], bool] | None = None) -> PyTreeDef:
    return tree_flatten(tree, is_leaf)[1]


def tree_map(fn: Callable[..., Any], tree: Any, *rest: Any, is_leaf: Callable[[Any], bool] | None = None) -> Any:
    """`fn` applied leafwise; the trees in `rest` must have the structure of `tree`."""
    leaves, treedef = tree_flatten(tree, is_leaf)
    others = []
    for i, r in enumerate(rest):
        r_leaves, r_def = tree_flatten(r, is_leaf)
        if r_def != treedef:
            raise ValueError(f"tree_map: tree {i + 1} has structure {r_def}, the first tree has structure {treedef}")
        others.append(r_leaves)
    return tree_unflatten(treedef, [fn(*xs) for xs in zip(leaves, *others, strict=True)])


def leaf_paths(tree: Any) -> list[str]:
    """A name for each leaf, in `tree_leaves` order: `[0]['w']` for `tree[0]['w']`."""
    out: list[str] = []
    _paths(tree, "", out)
    return out


def _paths(node: Any, path: str, out: list[str]) -> None:
    info = _children(node)
    if info is None:
        out.append(path)
        return
    kind, aux, kids = info
    if kind is dict or kind is OrderedDict:
        names = [f"[{k!r}]" for k in aux]
    elif hasattr(kind, "_fields") and _registered(kind) is None:
        names = [f".{f}" for f in kind._fields]
    elif (keys := next((_KEYS[b] for b in kind.__mro__ if b in _KEYS), None)) is not None:
        names = keys(aux)
    else:
        names = [f"[{i}]" for i in range(len(kids))]
    for name, kid in zip(names, kids, strict=True):
        _paths(kid, path + name, out)


def broadcast_prefix(prefix: Any, tree: Any, where: str = "prefix", what: str = "argument") -> list[Any]:
    """One value per leaf of `tree`: `prefix` is a tree prefix of `tree` whose leaves (e.g. vmap's
    in_axes, ints or None) apply to every leaf below them. On a mismatch the error names
    `where` (with the path inside it) and `what` the tree is."""
    out: list[Any] = []
    _broadcast(prefix, tree, out, where, what)
    return out


def _broadcast(prefix: Any, tree: Any, out: list[Any], where: str, what: str) -> None:
    p_info = None if prefix is None else _children(prefix)
    if p_info is None:  # a prefix leaf covers the whole subtree
        out.extend([prefix] * len(tree_leaves(tree)))
        return
    t_info = _children(tree)
    if t_info is None or t_info[0] is not p_info[0] or t_info[1] != p_info[1]:
        detail = ""
        if t_info is not None and t_info[0] is p_info[0] and p_info[0] in (dict, OrderedDict):
            extra, missing = set(p_info[1]) - set(t_info[1]), set(t_info[1]) - set(p_info[1])
            detail = f" (keys not in the {what}: {sorted(extra, key=repr)}; {what} keys missing: "
            detail += f"{sorted(missing, key=repr)})"
        elif t_info is not None and t_info[0] is p_info[0] and p_info[0] in (tuple, list):
            detail = f" ({len(p_info[2])} entries for {len(t_info[2])})"
        raise ValueError(
            f"{where}: structure {tree_structure(prefix)} does not match the {what}'s structure "
            f"{tree_structure(tree)}{detail}"
        )
    is_map = p_info[0] in (dict, OrderedDict)
    for i, (p, t) in enumerate(zip(p_info[2], t_info[2], strict=True)):
        _broadcast(p, t, out, f"{where}[{p_info[1][i]!r}]" if is_map else f"{where}[{i}]", what)
