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
    """Dimensions are matched in groups of equal size products, and each group is cut into
    the common sub-factors of its input and output dimensions (row-major), major first:
    (4, 16) -> (8, 8) is "a (b c) -> (a b) c" with a=4, b=2, c=8. A dimension shares the
    factors it is made of, so one-to-one dims pass their sharding through and a sharded
    dimension keeps it across splits and merges when its major factor is also the major part
    of every dimension holding it, split evenly (propagation's rule for compound factors).
    Groups with no common sub-factors ((6, 4) -> (4, 6)) stay whole.

    Example:
        >>> rule = reshape((4, 16), (8, 8))
        >>> rule.operands, rule.results
        (((('g1_0',), ('g1_1', 'g1_2')),), ((('g1_0', 'g1_1'), ('g1_2',)),))
    """
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
        cut = _common_factors([int(in_shape[d]) for d in g_in], [int(out_shape[d]) for d in g_out])
        if cut is None:
            for d in g_in:
                ins[d] = (f"_w{group}i{d}",)
                whole.add(ins[d][0])
            for d in g_out:
                outs[d] = (f"_w{group}o{d}",)
                whole.add(outs[d][0])
            continue
        in_parts, out_parts, factor_sizes = cut
        names = [f"g{group}_{k}" for k in range(len(factor_sizes))]
        sizes.update(zip(names, factor_sizes, strict=True))
        for d, part in zip(g_in, in_parts, strict=True):
            ins[d] = tuple(names[k] for k in part) or (f"_i{d}",)  # a size-1 dim inside a group
        for d, part in zip(g_out, out_parts, strict=True):
            outs[d] = tuple(names[k] for k in part) or (f"_o{d}",)
    assert math.prod(in_shape) == math.prod(out_shape)
    return OpShardingRule((tuple(ins),), (tuple(outs),), sizes, frozenset(whole), None, "additive")


def _common_factors(a: Sequence[int], b: Sequence[int]) -> tuple[list, list, list[int]] | None:
    """The coarsest row-major refinement of two shapes of one size: per dim of `a` and of `b`,
    the indices of the factors it is made of (major first), and each factor's size. None when
    there is none (a prefix product of one shape neither divides nor is divided by the other's).
    Size-1 dims are made of no factor."""
    a_parts: list[list[int]] = [[] for _ in a]
    b_parts: list[list[int]] = [[] for _ in b]
    factors: list[int] = []
    if 0 in a or 0 in b:  # nothing to cut; a one-to-one group of size 0 shares its factor
        if len(a) == len(b) == 1:
            return [[0]], [[0]], [0]
        return None
    i = j = 0
    ra, rb = (a[0] if a else 1), (b[0] if b else 1)  # what is left of the current dims
    while i < len(a) and j < len(b):
        if ra == 1 and rb != 1:  # a size-1 dim of `a`
            i += 1
            ra = a[i] if i < len(a) else 1
            continue
        if rb == 1 and ra != 1:
            j += 1
            rb = b[j] if j < len(b) else 1
            continue
        small = min(ra, rb)
        if max(ra, rb) % small:
            return None
        a_parts[i].append(len(factors))
        b_parts[j].append(len(factors))
        factors.append(small)
        ra, rb = ra // small, rb // small
        if ra == 1:
            i += 1
            ra = a[i] if i < len(a) else 1
        if rb == 1:
            j += 1
            rb = b[j] if j < len(b) else 1
    return a_parts, b_parts, factors
