"""Reusable sharding-rule templates for op families (shapes are physical, axes adapted)."""

from __future__ import annotations

import math
from collections.abc import Sequence

from .propagation import OpShardingRule


def _dims(names: Sequence[str]) -> tuple[tuple[str, ...], ...]:
    return tuple((n,) for n in names)


def elementwise(
    in_shapes: Sequence[Sequence[int]],
    out_shapes: Sequence[Sequence[int]],
    *,
    whole: Sequence[int] = (),
    partial_ok: str | tuple[int, ...] | None = None,
) -> OpShardingRule:
    """Operands and results of one shape share a factor per dimension (`whole`: dims that
    must stay unsharded, such as a softmax or sort axis). Rank-0 operands have no factors."""
    rank = max((len(s) for s in [*in_shapes, *out_shapes]), default=0)
    names = [f"d{i}" for i in range(rank)]
    sizes = {}
    for s in [*in_shapes, *out_shapes]:
        if len(s) == rank:
            sizes = {n: int(v) for n, v in zip(names, s, strict=True)}
            break

    def of(shape: Sequence[int]) -> tuple:
        return _dims(names) if len(shape) == rank else tuple((f"_s{i}",) for i in range(len(shape)))

    return OpShardingRule(
        tuple(of(s) for s in in_shapes),
        tuple(of(s) for s in out_shapes),
        sizes,
        frozenset(names[i] for i in whole),
        None,
        partial_ok,
    )


def reduction(
    shape: Sequence[int], axes: Sequence[int], keepdims: bool, *, reduce: str | None, partial_ok: str | None = None
) -> OpShardingRule:
    """Reducing `axes`: the other dims pass through; the reduced factors, if sharded, leave
    partial results combined by `reduce` ("sum", "max", "min"; None: keep them whole)."""
    names = [f"d{i}" for i in range(len(shape))]
    out = [(n,) if i not in axes else (f"_k{i}",) for i, n in enumerate(names) if keepdims or i not in axes]
    return OpShardingRule(
        (_dims(names),),
        (tuple(out),),
        {n: int(v) for n, v in zip(names, shape, strict=True)},
        frozenset(),
        reduce,
        partial_ok,
    )


def permutation(shape: Sequence[int], dims: Sequence[int]) -> OpShardingRule:
    names = [f"d{i}" for i in range(len(shape))]
    return OpShardingRule(
        (_dims(names),),
        (tuple((names[d],) for d in dims),),
        {n: int(v) for n, v in zip(names, shape, strict=True)},
        partial_ok="additive",
    )


def broadcast(in_shape: Sequence[int], out_shape: Sequence[int]) -> OpShardingRule:
    """Aligned from the right; an expanded size-1 dimension and new leading dims get factors
    of their own (the output's new dims start replicated; a sharded size-1 input dimension is
    gathered, not contracted: `reduction=None`)."""
    lead = len(out_shape) - len(in_shape)
    out_names = [f"d{i}" for i in range(len(out_shape))]
    in_dims = []
    for i, n in enumerate(in_shape):
        in_dims.append((out_names[lead + i],) if n == out_shape[lead + i] else (f"_one{i}",))
    return OpShardingRule(
        (tuple(in_dims),),
        (_dims(out_names),),
        {n: int(v) for n, v in zip(out_names, out_shape, strict=True)},
        reduction=None,
        partial_ok="additive",
    )


def reshape(in_shape: Sequence[int], out_shape: Sequence[int]) -> OpShardingRule:
    """Dimensions are matched in groups of equal size products. One-to-one groups share a
    factor; a split "(a b) -> a b" or a merge "a b -> (a b)" shares compound factors (so only
    the major part can carry sharding); anything else stays whole."""
    ins: list = [None] * len(in_shape)
    outs: list = [None] * len(out_shape)
    sizes: dict[str, int] = {}
    whole: set[str] = set()
    i = j = 0
    group = 0
    while i < len(in_shape) or j < len(out_shape):
        if i < len(in_shape) and in_shape[i] == 1 and (j >= len(out_shape) or out_shape[j] != 1):
            ins[i] = (f"_i{i}",)
            i += 1
            continue
        if j < len(out_shape) and out_shape[j] == 1 and (i >= len(in_shape) or in_shape[i] != 1):
            outs[j] = (f"_o{j}",)
            j += 1
            continue
        i0, j0 = i, j
        a, b = (in_shape[i] if i < len(in_shape) else 1), (out_shape[j] if j < len(out_shape) else 1)
        i, j = i + 1, j + 1
        while a != b:
            if a < b and i < len(in_shape):
                a *= in_shape[i]
                i += 1
            elif j < len(out_shape):
                b *= out_shape[j]
                j += 1
            else:
                break
        g_in, g_out = list(range(i0, min(i, len(in_shape)))), list(range(j0, min(j, len(out_shape))))
        group += 1
        if len(g_in) == 1 or len(g_out) == 1:
            many, one, many_shape = (g_out, g_in, out_shape) if len(g_in) == 1 else (g_in, g_out, in_shape)
            names = [f"g{group}_{k}" for k in range(len(many))]
            for k, d in enumerate(many):
                sizes[names[k]] = int(many_shape[d])
            compound = tuple(names)
            for k, d in enumerate(many):
                (outs if many is g_out else ins)[d] = (names[k],)
            for d in one:
                (ins if one is g_in else outs)[d] = compound
        else:
            for d in g_in:
                ins[d] = (f"_w{group}i{d}",)
                whole.add(ins[d][0])
            for d in g_out:
                outs[d] = (f"_w{group}o{d}",)
                whole.add(outs[d][0])
    assert math.prod(in_shape) == math.prod(out_shape)
    return OpShardingRule((tuple(ins),), (tuple(outs),), sizes, frozenset(whole), None, "additive")
