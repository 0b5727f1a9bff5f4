"""Sharding-rule helpers shared by op families, beside the templates of nabla/core/sharding/rules.py
(elementwise, reduction, permutation, broadcast, reshape)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ..core.sharding import OpShardingRule
from ..core.sharding import rules as _rules


def whole_dims(dims: Callable[[dict, int], Sequence[int]], partial_ok: Any = "additive") -> Callable:
    """A `sharding_rule_for` for an op whose operands and results have one rank: the dims
    `dims(kwargs, rank)`, which the op moves data along (flipped, padded, concatenated), stay
    whole; the others pass through. `partial_ok`: a value, or a function of the kwargs."""

    def sharding_rule_for(self: Any, in_shapes: list, out_shapes: list, kwargs: dict) -> OpShardingRule:
        ok = partial_ok(kwargs) if callable(partial_ok) else partial_ok
        whole = tuple(dims(kwargs, len(in_shapes[0])))
        return _rules.elementwise(in_shapes, out_shapes, whole=whole, partial_ok=ok)

    return sharding_rule_for


def picked(picks: Callable[[dict, int, int], tuple], partial_ok: Any = "additive") -> Callable:
    """A `sharding_rule_for` for a one-operand op whose results keep some of its dims (split,
    unbind, diagonal): `picks(kwargs, rank, n_results)` gives `select`'s picks and whole dims."""

    def sharding_rule_for(self: Any, in_shapes: list, out_shapes: list, kwargs: dict) -> OpShardingRule:
        result_dims, whole = picks(kwargs, len(in_shapes[0]), len(out_shapes))
        return select(in_shapes[0], result_dims, whole=whole, partial_ok=partial_ok)

    return sharding_rule_for


def select(
    shape: Sequence[int], picks: Sequence[Sequence[int | None]], *, whole: Sequence[int] = (), partial_ok: Any = None
) -> OpShardingRule:
    """One operand whose dim i is factor `d{i}`; result k has the operand dims `picks[k]` in
    order (None: a new dim, unsharded). Operand dims in `whole` stay unsharded."""
    names = [f"d{i}" for i in range(len(shape))]
    results = tuple(
        tuple((names[i] if i is not None else f"_new{k}_{j}",) for j, i in enumerate(p)) for k, p in enumerate(picks)
    )
    new = {d[0] for r in results for d in r if d[0].startswith("_")}
    sizes = {n: int(s) for n, s in zip(names, shape, strict=True)}
    operand = tuple((n,) for n in names)
    return OpShardingRule((operand,), results, sizes, frozenset({*(names[i] for i in whole), *new}), None, partial_ok)
