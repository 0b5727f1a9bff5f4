"""Factor-based sharding propagation, run eagerly for each op call on sharded inputs.

An op's sharding rule names a *factor* for every dimension of every operand and result
("m k, k n -> m n" for matmul). Dimensions that share a factor are split the same way.
Propagation has three phases:

  1. collect   every sharded input dimension proposes its mesh axes for its factor
  2. resolve   one choice per factor. The proposal of the largest operand wins (moving it
               would cost the most), ties go to the earlier operand; a mesh axis serves one
               factor only (later factors drop axes already taken); factors the rule marks
               `whole` stay unsharded; a factor in a compound dimension "(h d)" is sharded
               only as the major part and only when the split is even
  3. update    each operand's target spec and each result's spec follow from the factors.
               A sharded factor that no result has (a contraction) leaves the results
               *partial* over its axes, to be reduced later

Partial inputs pass through an op while it is linear in them (`partial_ok`): "additive" ops
(add, sub, concatenation, linear unary ops) need every operand partial over the same axes;
"multilinear" positions (the operands of mul or matmul) allow exactly one partial operand
per axis. Everywhere else a partial input is all-reduced first. So the reduction a
contraction needs happens once, as late as linearity allows. (Ops that multiply a partial
narrow their positions before propagation, to those whose other operands are finite
constants: see `Operation.partial_passes`.)
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from .mesh import DeviceMesh
from .spec import DimSpec, ShardingSpec

Dims = tuple[tuple[str, ...], ...]  # per dimension, its factors (compound dims list several, major first)


@dataclass(frozen=True)
class OpShardingRule:
    """Factors of every operand and result dimension.

    Attributes:
        operands, results: per tensor, per dimension, the factor names (major first).
        sizes: each factor's size.
        whole: factors that must stay unsharded (a sorted axis, a slice's dimension).
        reduction: how partial results of contracted factors combine ("sum", "max", "min");
            None: contracted factors must stay unsharded.
        partial_ok: "additive", a tuple of operand positions (multilinear), or None.
    """

    operands: tuple[Dims, ...]
    results: tuple[Dims, ...]
    sizes: dict[str, int] = field(default_factory=dict)
    whole: frozenset[str] = frozenset()
    reduction: str | None = "sum"
    partial_ok: str | tuple[int, ...] | None = None

    @staticmethod
    def parse(
        text: str,
        in_shapes: Sequence[Sequence[int]],
        out_shapes: Sequence[Sequence[int]],
        *,
        sizes: dict[str, int] | None = None,
        whole: Sequence[str] = (),
        reduction: str | None = "sum",
        partial_ok: str | tuple[int, ...] | None = None,
    ) -> OpShardingRule:
        """A rule from einsum-like text: "... m k, ... k n -> ... m n", "(h d) -> h d".

        `...` stands for leading dimensions, aligned from the right across tensors as in
        broadcasting (a size-1 dimension facing a larger one gets a factor of its own).
        A single operand or result list may be written once for all of them with "*": "* -> *".
        """
        lhs, rhs = (part.strip() for part in text.split("->"))
        in_terms = _terms(lhs, len(in_shapes))
        out_terms = _terms(rhs, len(out_shapes))
        sizes = dict(sizes or {})
        fresh = itertools.count()
        ell_rank = max(
            (len(s) - _explicit(t) for t, s in zip(in_terms + out_terms, [*in_shapes, *out_shapes], strict=True)),
            default=0,
        )
        ell_sizes: dict[int, int] = {}
        for t, s in zip(in_terms + out_terms, [*in_shapes, *out_shapes], strict=True):
            if "..." in t:
                k = len(s) - _explicit(t)
                for j in range(k):
                    ell_sizes[ell_rank - k + j] = max(ell_sizes.get(ell_rank - k + j, 1), s[j])

        def dims_of(term: list, shape: Sequence[int]) -> Dims:
            out: list[tuple[str, ...]] = []
            k = len(shape) - _explicit(term)
            for tok in term:
                if tok == "...":
                    for j in range(k):
                        pos = ell_rank - k + j
                        n = shape[len(out)]
                        name = f"_e{pos}" if n == ell_sizes[pos] else f"_b{next(fresh)}"
                        out.append((name,))
                        sizes[name] = n
                    continue
                out.append(tuple(tok))
            if len(out) != len(shape):
                raise ValueError(f"sharding rule {text!r}: {len(out)} dimensions for a tensor of shape {tuple(shape)}")
            for d, n in zip(out, shape, strict=True):
                if len(d) == 1:
                    sizes.setdefault(d[0], n)
            return tuple(out)

        operands = tuple(dims_of(t, s) for t, s in zip(in_terms, in_shapes, strict=True))
        results = tuple(dims_of(t, s) for t, s in zip(out_terms, out_shapes, strict=True))
        for dims, shape in zip(operands + results, [*in_shapes, *out_shapes], strict=True):
            for d, n in zip(dims, shape, strict=True):
                unknown = [f for f in d if f not in sizes]
                if len(unknown) == 1:
                    sizes[unknown[0]] = n // max(1, math.prod(sizes[f] for f in d if f in sizes))
        return OpShardingRule(operands, results, sizes, frozenset(whole), reduction, partial_ok)

    def with_batch(self, sizes: Sequence[int]) -> OpShardingRule:
        """The rule for operands and results that all carry vmap's batch dims `sizes` in front:
        each batch dim is a factor of its own, shared by every tensor (per-example computations
        are independent, so a sharded batch dim stays sharded)."""
        names = tuple(f"_vmap{k}" for k in range(len(sizes)))
        lead = tuple((n,) for n in names)
        return OpShardingRule(
            tuple(lead + tuple(t) for t in self.operands),
            tuple(lead + tuple(t) for t in self.results),
            {**self.sizes, **{n: int(v) for n, v in zip(names, sizes, strict=True)}},
            self.whole,
            self.reduction,
            self.partial_ok,
        )

    @staticmethod
    def replicated(in_ranks: Sequence[int], out_ranks: Sequence[int]) -> OpShardingRule:
        """Every dimension its own factor, none sharded: inputs are gathered, outputs replicated."""
        names = itertools.count()
        operands = tuple(tuple((f"_r{next(names)}",) for _ in range(r)) for r in in_ranks)
        results = tuple(tuple((f"_r{next(names)}",) for _ in range(r)) for r in out_ranks)
        every = frozenset(d[0] for t in operands + results for d in t)
        return OpShardingRule(operands, results, {}, every, None, None)


def _terms(side: str, count: int) -> list[list]:
    terms = [t.strip() for t in side.split(",")] if side else []
    if len(terms) == 1 and terms[0] == "*":
        return [["..."] for _ in range(count)]
    if len(terms) != count:
        raise ValueError(f"sharding rule side {side!r} names {len(terms)} tensors, the op has {count}")
    return [_tokens(t) for t in terms]


def _tokens(term: str) -> list:
    out: list = []
    group: list[str] | None = None
    for tok in term.replace("(", " ( ").replace(")", " ) ").split():
        if tok == "(":
            group = []
        elif tok == ")":
            out.append(tuple(group or ()))
            group = None
        elif group is not None:
            group.append(tok)
        else:
            out.append(tok if tok == "..." else (tok,))
    return out


def _explicit(term: list) -> int:
    return sum(1 for t in term if t != "...")


@dataclass
class Propagation:
    """The outcome for one op call: the spec each operand must have, and each result's spec."""

    in_specs: list[ShardingSpec]
    out_specs: list[ShardingSpec]


def propagate(
    rule: OpShardingRule,
    specs: Sequence[ShardingSpec | None],
    shapes: Sequence[Sequence[int]],
    mesh: DeviceMesh,
) -> Propagation:
    """Collect, resolve, update (see the module doc). `None` specs are unsharded inputs."""
    # Partial inputs that stay partial through this op.
    kept = _kept_partial(rule, specs)
    all_kept = frozenset().union(*kept)
    used: set[str] = set(all_kept)
    # 1. collect
    proposals: dict[str, list] = {}
    for i, spec in enumerate(specs):
        if spec is None:
            continue
        weight = math.prod(shapes[i])
        for dim, factors in enumerate(rule.operands[i]):
            axes = spec.dims[dim].axes
            if axes and factors:
                proposals.setdefault(factors[0], []).append(((-weight, i), axes))
    # 2. resolve
    in_results = {f for t in rule.results for d in t for f in d}
    tensors = [{f for d in t for f in d} for t in rule.operands + rule.results]
    taken: list[set[str]] = [set(used) for _ in tensors]  # mesh axes already sharding each tensor
    chosen: dict[str, tuple[str, ...]] = {}
    for factor, props in sorted(proposals.items(), key=lambda kv: min(p[0] for p in kv[1])):
        if factor in rule.whole or (factor not in in_results and rule.reduction is None):
            continue
        holders = [k for k, t in enumerate(tensors) if factor in t]
        blocked = set().union(*(taken[k] for k in holders))
        axes = tuple(itertools.takewhile(lambda a, blocked=blocked: a not in blocked, min(props)[1]))
        if factor not in in_results and rule.reduction in ("max", "min"):
            # max/min have no identity: every device must hold part of a contracted factor
            while axes and rule.sizes.get(factor, 0) < mesh.axes_size(axes):
                axes = axes[:-1]
        if axes and _compound_ok(rule, factor, mesh.axes_size(axes)):
            chosen[factor] = axes
            for k in holders:
                taken[k].update(axes)
    if rule.results:  # contracted factors make every result partial over their axes
        contracted_axes = {a for f, axes in chosen.items() if f not in in_results for a in axes}
        for factor in [f for f in chosen if f in in_results]:
            if contracted_axes & set(chosen[factor]):
                del chosen[factor]
    # 3. update
    in_specs = [_spec(mesh, dims, chosen, k) for dims, k in zip(rule.operands, kept, strict=True)]
    contracted = [a for f, axes in chosen.items() if f not in in_results for a in axes]
    out_partial = frozenset(contracted) | all_kept
    op = rule.reduction if contracted else "sum"
    out_specs = [_spec(mesh, dims, chosen, out_partial, op) for dims in rule.results]
    return Propagation(in_specs, out_specs)


def _spec(
    mesh: DeviceMesh, dims: Dims, chosen: dict, partial: frozenset = frozenset(), op: str | None = "sum"
) -> ShardingSpec:
    return ShardingSpec(
        mesh, [DimSpec(chosen.get(d[0], ()) if d else ()) for d in dims], partial=partial, partial_op=op or "sum"
    )


def _compound_ok(rule: OpShardingRule, factor: str, parts: int) -> bool:
    """A factor inside a compound dimension may be sharded only as its major part, evenly."""
    for tensor in rule.operands + rule.results:
        for d in tensor:
            if len(d) > 1 and factor in d:
                if d[0] != factor or rule.sizes.get(factor, 0) % parts:
                    return False
    return True


def _kept_partial(rule: OpShardingRule, specs: Sequence[ShardingSpec | None]) -> list[frozenset[str]]:
    """Per input, the mesh axes over which its partial sums pass through unreduced.

    Additive ops keep a partial that every input shares. A multilinear op keeps each axis on
    one operand: f(sum_i a_i, sum_j b_j) = sum_ij f(a_i, b_j), so operands partial over
    different axes all stay partial (the result is partial over both), and of two operands
    partial over the same axis only the first allowed one does; the other is reduced."""
    partial = [s.partial if s is not None and s.partial_op == "sum" else frozenset() for s in specs]
    none = [frozenset()] * len(specs)
    if rule.partial_ok is None or not any(partial):
        return none
    if rule.partial_ok == "additive":
        return partial if all(p == partial[0] for p in partial) else none
    kept: list[set[str]] = [set() for _ in specs]
    for axis in set().union(*partial):
        keeper = next((i for i, p in enumerate(partial) if axis in p and i in rule.partial_ok), None)
        if keeper is not None:
            kept[keeper].add(axis)
    return [frozenset(k) for k in kept]
