"""Why a compiled function traced again: the first difference between a new signature key
and the closest cached one, in words (argument names, dtypes, shapes, scalar values, .grad)."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any


def similarity(old: tuple, new: tuple) -> tuple:
    """How close a cached signature key is to a new one (same argument tree, then how many
    leaves agree): the closest is the one a recompile message compares against."""
    same_tree = old[0] == new[0]
    same = sum(a == b for a, b in zip(old[1], new[1], strict=False))
    return (same_tree, same)


def positional_names(fn: Callable, n: int) -> list[str]:
    """What to call each of `n` positional arguments of `fn` in messages: its parameter name
    (`*args` ones as `args[0]`), else `arg i`."""
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        params = []
    named = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    star = next((p.name for p in params if p.kind is p.VAR_POSITIONAL), None)
    out = named[:n]
    out += [f"{star}[{i}]" if star else f"arg {len(named) + i}" for i in range(n - len(out))]
    return out


def describe(old: tuple, new: tuple, labels: list[str], grad_labels: list[str]) -> str:
    if old[2] != new[2]:
        return f"executor {old[2]} -> {new[2]}"
    if old[0] != new[0] or len(old[1]) != len(new[1]):
        node = _first_difference(old[0], new[0])
        change = getattr(node[1].aux, "describe_change", None) if node is not None else None
        why = change(node[0].aux) if change is not None and type(node[0].aux) is type(node[1].aux) else None
        if why is not None:  # (a Module's training flag, hooks or tensors: its printed structure is the same)
            return f"argument structure: {why}"
        return f"argument structure {old[0]} -> {new[0]}"
    for label, a, b in zip(labels, old[1], new[1], strict=True):
        if a == b:
            continue
        (ka, va), (kb, vb) = a, b
        if "captured" in (ka, kb):  # (see signature.py's _Leaf)
            if ka == kb:
                return f"{label} is another tensor the function also captures, or it changed"
            state = "now" if kb == "captured" else "no longer"
            return f"{label} is {state} a tensor the function also captures (by name or through an attribute)"
        if ka != kb:
            return f"{label} kind {ka} -> {kb}"
        if ka == "tensor":
            parts = []
            if va[0] != vb[0]:
                parts.append(f"dtype {va[0].name} -> {vb[0].name}")
            if va[1] != vb[1]:
                parts.append(f"shape {va[1]} -> {vb[1]}")
            if va[2] != vb[2]:
                parts.append(f"vmap batch dims {va[2]} -> {vb[2]}")
            if va[3] != vb[3]:
                parts.append(f"requires_grad {va[3]} -> {vb[3]}")
            if va[4] != vb[4]:
                parts.append("sharding changed")
            return f"{label} " + ", ".join(parts)
        if ka == "scalar":
            why = _describe_scalar(label, va, vb)
            if why is None:
                continue
            return why
        return f"{label} static value {va[-1]!r} -> {vb[-1]!r}"
    if old[3] != new[3]:
        return _describe_grads(old[3], new[3], grad_labels)
    return "the cached model was evicted (max_cache_size)"


def _first_difference(a: Any, b: Any) -> tuple | None:
    """The first pair of differing nodes of two treedefs (depth first), or None."""
    if a.kind is not b.kind or a.aux != b.aux or len(a.children) != len(b.children):
        return a, b
    for x, y in zip(a.children, b.children, strict=True):
        if x != y:
            return _first_difference(x, y)
    return None


def _describe_scalar(label: str, old: Any, new: Any) -> str | None:
    """A scalar's key part is its type (a model input) or (type, value) (specialized); None
    when only the specialization differs (another leaf changed the structure)."""
    told, tnew = (k if isinstance(k, type) else k[0] for k in (old, new))
    if told is not tnew:
        return f"{label} type {told.__name__} -> {tnew.__name__}"
    if isinstance(old, type) or isinstance(new, type):
        return None
    return f"{label} value {old[1]!r} -> {new[1]!r} (used as a Python value inside the function)"


def _describe_grads(old: tuple, new: tuple, labels: list[str]) -> str:
    def state(part: Any) -> str:
        if part is None:
            return "None"
        return f"a {part[0].name} tensor" + ("" if part[2] is None else f" of shape {part[2]}")

    for label, a, b in zip(labels, old, new, strict=False):
        if a != b:
            moved = a is not None and b is not None and state(a) == state(b)
            return f".grad of {label} sharding changed" if moved else f".grad of {label} {state(a)} -> {state(b)}"
    return f".grad of {labels[len(old)]} is read too (found by a later trace)"
