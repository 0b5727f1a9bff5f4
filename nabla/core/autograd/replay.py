"""Backward replay: a repeated backward pass records one op instead of running the VJP rules
again.

A training loop runs `loss.backward()` on a forward graph of the same structure every step,
and the VJP rules then build the same backward graph every step: ~40 us of Python per op
through the full op pipeline (shape inference, kwargs adaptation, keys). The first backward
over a structure records the nodes the rules create (the *tape*). Without `create_graph`, the
tape is cut from the forward graph as one sub-program, and this and every later backward over
a forward graph with the same signature record it as a single `call` op (nabla/ops/call.py)
on the forward tensors it reads: the step's graph, and so its compiled model, is the same
every step, and evaluation walks one node instead of hundreds. With `create_graph` the tape's
nodes are re-created directly (~3 us each), so they stay differentiable op by op.

The signature covers everything a VJP rule may look at: every forward node's op, static
kwargs, wiring, output shapes, dtypes and liveness, and the shape, dtype and autograd flags of
every tensor entering the graph. Only the plain case is recorded or replayed: no vmap batch
dims, no sharding, no forward-mode tangents, no `nabla.compile` trace, no eager MAX graph. A
backward whose rules evaluate or read a tensor's value (its nodes may depend on it), or reach
a tensor that is neither in the forward graph nor made by the backward itself, is never
replayed.
"""

from __future__ import annotations

import threading
from typing import Any

from ..common.config import CONFIG
from ..common.context import set_grad_enabled
from ..graph.engine import GRAPH
from ..graph.opnode import OpNode
from ..graph.tracing import tracing
from ..tensor.dispatch import OPS
from ..tensor.impl import GRAD_HOOKS, RETAINED, TensorImpl
from ..tensor.tensor import Tensor

_PLANS_KEPT = 64  # signatures remembered (the oldest dropped first)


class _Tape(threading.local):
    """While a backward records, the OpNodes that every op call creates, in creation order."""

    def __init__(self) -> None:
        self.nodes: list | None = None
        self.replays = 0  # backwards that were replayed (tests read it)


TAPE = _Tape()


class Plan:
    """How to re-create one recorded backward.

    Args:
        steps: per recorded node: (op, kwargs, adapted kwargs, struct key, arg refs, per
            output (shape, dtype, device, requires_grad)); empty when `sub` replaces them.
        results: per gradient: (ref of the tensor it is for, ref of the gradient).
        visited: positions of the forward nodes that received a cotangent (the ones a
            backward without `retain_graph` marks as released).
        sub: the whole backward as one sub-program (without `create_graph`), recorded as one
            `call` op instead of re-creating `steps`; None to re-create them.
        sub_args: positions (in the signature's `seen`) of the sub-program's arguments.
        sub_results: per gradient: ("f", position in seen) or ("o", output of the call).
    """

    __slots__ = ("results", "steps", "sub", "sub_args", "sub_results", "visited")

    def __init__(self, steps: list, results: list, visited: list[int]) -> None:
        self.steps = steps
        self.results = results
        self.visited = visited
        self.sub: Any = None
        self.sub_args: list[int] = []
        self.sub_results: list[tuple] = []


_MISSING = object()
_PLANS: dict = {}  # signature -> Plan, or None for "never replayable"; insertion ordered
_LAST: list = [None]  # (signature, plan) last found: compared before hashing (signatures hash dtypes in Python)


def _plain(impl: TensorImpl) -> bool:
    """No vmap batch dims, no forward-mode tangents, no mesh layout: the only tensors a
    recorded backward may read or make."""
    return impl.tangent is None and not impl.batch_dims and impl.sharding is None


def signature(
    nodes: list, outputs: list, cotangents: list, wrt: list | None, create_graph: bool
) -> tuple[tuple, list] | None:
    """(signature, seen) of a backward over `nodes` (topological order), or None when it is
    not a plain backward. `seen` lists every impl of the forward graph a VJP rule may read
    (node inputs and outputs in the order first met, then the seed cotangents): a plan names
    them by their position there, which the signature fixes."""
    if tracing() or CONFIG.eager_max_graph or TAPE.nodes is not None:
        return None
    if RETAINED and any(r() in RETAINED for node in nodes for r in node._refs):
        return None  # a retained gradient (a debugging aid) is one more result: not replayed
    index: dict[TensorImpl, int] = {}  # impl (identity hashing) -> position in seen
    seen: list = []
    parts: list = [create_graph]  # the rules run with grad recording on or off
    # (every backward of a training loop runs this loop: `_plain` and `is_leaf` are inlined)
    for node in nodes:
        if node.spmd is not None or not node.op.replayable:
            return None
        arg_refs = []
        for a in node.args:
            pos = index.get(a)
            if pos is None:  # a tensor entering the graph here
                if a.tangent is not None or a.batch_dims or a.sharding is not None:
                    return None
                pos = index[a] = len(seen)
                seen.append(a)
                maker = a.output_refs
                leaf = maker is None or not maker.op.differentiable
                parts.append((a.physical_shape, a.dtype, a.requires_grad, leaf, a.data is None, a.weak_type))
            arg_refs.append(pos)
        outs = []
        for r in node._refs:
            o = r()
            if o is None:
                outs.append(None)
                continue
            if o.tangent is not None or o.batch_dims or o.sharding is not None:
                return None
            index[o] = len(seen)
            seen.append(o)
            outs.append(o.requires_grad)
        parts.append((node.op, node.struct_key, tuple(arg_refs), node.out_avals, tuple(outs)))
    for o, c in zip(outputs, cotangents, strict=True):
        ci = c._impl
        if o not in index or ci in index or not _plain(ci):
            return None
        index[ci] = len(seen)
        seen.append(ci)
        parts.append((index[o], ci.physical_shape, ci.dtype, ci.requires_grad))
    if wrt is not None:
        if any(w not in index for w in wrt):
            return None
        parts.append(tuple(index[w] for w in wrt))
    if GRAD_HOOKS.count and any(GRAD_HOOKS.of(i) for i in seen):
        return None  # gradient hooks run Python on the gradients each backward: not replayed
    return tuple(parts), seen


def lookup(key: tuple) -> tuple[bool, Plan | None]:
    """(seen before, its plan: None if it cannot be replayed)."""
    last = _LAST[0]
    if last is not None and last[0] == key:  # a training loop: no hashing of the (large) key
        return True, last[1]
    plan = _PLANS.get(key, _MISSING)  # one hash: no LRU reordering
    if plan is _MISSING:
        return False, None
    _LAST[0] = (key, plan)
    return True, plan


def remember(key: tuple, plan: Plan | None) -> None:
    _PLANS[key] = plan
    _LAST[0] = None
    if len(_PLANS) > _PLANS_KEPT:
        del _PLANS[next(iter(_PLANS))]


class recording:
    """Context manager: collect the nodes created in the body into `self.nodes`, and whether
    the body evaluated or read a tensor value (`self.read_values`): the nodes such a backward
    builds may depend on the values, so it is never replayed."""

    def __enter__(self) -> recording:
        self.nodes: list = []
        self._counts = (GRAPH.epoch, GRAPH.host_reads)
        TAPE.nodes = self.nodes
        return self

    def __exit__(self, *exc: object) -> None:
        TAPE.nodes = None
        self.read_values = (GRAPH.epoch, GRAPH.host_reads) != self._counts


def make_plan(
    tape: list, seen: list, results: list[tuple[TensorImpl, Any]], visited: list[int], *, fuse: bool
) -> Plan | None:
    """Turn a recorded tape into a Plan; None if a node reads a tensor it cannot name. With
    `fuse` (a backward without `create_graph`), the plan also gets the tape as one sub-program."""
    position = {id(impl): pos for pos, impl in enumerate(seen)}
    refs: dict[int, tuple] = {key: ("f", pos) for key, pos in position.items()}
    steps = []
    for node in tape:
        if node.spmd is not None or node.rule_kwargs is not node.adapted_kwargs:
            return None
        arg_refs = []
        for a in node.args:
            ref = refs.get(id(a))
            if ref is None:
                return None
            arg_refs.append(ref)
        live = [r() for r in node._refs]
        if all(o is None for o in live):
            continue  # nothing read its outputs (a gradient for an input that needs none): dead code
        device = next(o.device for o in live if o is not None)
        outs = []
        for j, (o, (shape, dtype)) in enumerate(zip(live, node.out_avals, strict=True)):
            if o is None:  # an unread output of a node whose other outputs are read
                outs.append((shape, dtype, device, False))
                continue
            if not _plain(o):
                return None
            refs[id(o)] = ("t", len(steps), j)
            outs.append((o.physical_shape, o.dtype, o.device, o.requires_grad))
        steps.append((node.op, node.kwargs, node.adapted_kwargs, node.struct_key, tuple(arg_refs), tuple(outs)))
    plan_results = []
    for target, grad in results:
        if id(target) not in refs or id(grad._impl) not in refs:
            return None
        plan_results.append((refs[id(target)], refs[id(grad._impl)]))
    plan = Plan(steps, plan_results, visited)
    if fuse:
        _fuse(plan, position, [grad._impl for _, grad in results])
    return plan


def _fuse(plan: Plan, position: dict[int, int], grads: list[TensorImpl]) -> None:
    """Give the plan its backward as one sub-program (`Plan.sub`), cut from the tape at the
    forward tensors and seeds it reads (`position`: id -> position in the signature's `seen`).
    The re-creatable steps are then dead: they are dropped."""
    made = [g for (_, g_ref), g in zip(plan.results, grads, strict=True) if g_ref[0] == "t"]
    targets = list({id(g): g for g in made}.values())
    if not targets:
        return
    sub = OPS.backward_program(targets, set(position))
    args = [position.get(id(impl)) for impl in sub.arg_impls]
    if None in args:  # it reads a tensor the signature does not name
        return
    sub.forget_trace()
    out_of = {id(g): k for k, g in enumerate(targets)}
    plan.sub, plan.sub_args, plan.steps = sub, args, []
    plan.sub_results = [
        g_ref if g_ref[0] == "f" else ("o", out_of[id(g)]) for (_, g_ref), g in zip(plan.results, grads, strict=True)
    ]


def replay(plan: Plan, seen: list) -> list[tuple[TensorImpl, Tensor]]:
    """A backward replayed from its plan (`apply`, counted in `TAPE.replays`)."""
    TAPE.replays += 1
    return apply(plan, seen)


def apply(plan: Plan, seen: list) -> list[tuple[TensorImpl, Tensor]]:
    """The plan's gradients (per gradient: the tensor it is for, the gradient) on the forward
    graph `seen` came from: one `call` op when the plan has a sub-program, else its recorded
    nodes re-created."""
    if plan.sub is not None:
        with set_grad_enabled(False):
            outs = OPS.call_on_impls(plan.sub, [seen[k] for k in plan.sub_args])
        return [
            (seen[t[1]], Tensor(seen[g[1]]) if g[0] == "f" else outs[g[1]])
            for (t, _), g in zip(plan.results, plan.sub_results, strict=True)
        ]
    made: list[list] = []

    def resolve(ref: tuple) -> TensorImpl:
        return seen[ref[1]] if ref[0] == "f" else made[ref[1]][ref[2]]

    for op, kwargs, adapted, struct_key, arg_refs, out_specs in plan.steps:
        node = OpNode(op, tuple(resolve(r) for r in arg_refs), kwargs, adapted, struct_key)
        outs = [TensorImpl(shape, dtype, None, device, 0, rg) for shape, dtype, device, rg in out_specs]
        node.set_outputs(outs)
        made.append(outs)
    return [(resolve(target), Tensor(resolve(grad))) for target, grad in plan.results]
