"""The one trace-based VJP engine behind both `Tensor.backward()` and `nabla.grad`.

backward_on_trace(outputs, cotangents, wrt):
  1. walk the recorded OpNodes from `outputs` back through tensors that require grad,
     keeping only nodes that depend on a `wrt` tensor (or, without `wrt`, on any leaf)
  2. visit them in reverse topological order: sum each output's cotangent contributions,
     call `op.vjp_rule`, hand the input cotangents on
  3. return the cotangent of every `wrt` tensor (or of every leaf reached)

A backward over a forward graph whose structure was differentiated before does not run the
rules again (`replay.py`): it records the recorded backward as one `call` op (re-creates its
nodes under `create_graph`), so a training loop pays for its VJP rules once.

Cotangents are promise tensors like any other, so forward and backward evaluate as one graph.
VJP rules are written with ops, so with grad recording on they are themselves differentiable.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from max.dtype import DType

from ..common.context import anomaly_enabled, set_grad_enabled
from ..graph.tracing import TRACE, note_grad, note_guard
from ..tensor.dispatch import OPS
from ..tensor.impl import GRAD_HOOKS, RETAINED, TensorImpl
from ..tensor.tensor import GradFn, Tensor
from . import replay as _replay

_NUMPY_SEED_DTYPES = {DType.float32: np.float32, DType.float64: np.float64, DType.float16: np.float16}

RELEASED_MESSAGE = (
    "Trying to backward through the graph a second time (or directly access saved tensors after "
    "they have already been freed). Specify retain_graph=True if you need to backward through the "
    "graph a second time."
)


def _topo_nodes(outputs: list[TensorImpl], wrt_ids: set[int] | None, cut: bool = True) -> list[Any]:
    """OpNodes on a path from a differentiable leaf (or `wrt`) to `outputs`, inputs first.
    `cut=False`: the walk goes on past a `wrt` tensor that has a recipe (`backward(inputs=[b,
    a * b])` needs b's gradient through the product)."""
    through = wrt_ids if not cut else None
    # Every backward of a training step walks its forward here: one stack level per node
    # being expanded (an iterator over its arguments, resumed after a child is expanded), the
    # outputs being level 0; impls are dict keys themselves (identity hashing), attributes are
    # read directly.
    relevant: dict[TensorImpl, bool] = {}  # impl -> depends on a wrt tensor (or a leaf)
    order: list[Any] = []
    stack: list = [(iter(outputs), outputs, None)]  # (arguments left, all arguments, their node)
    while True:
        rest, args, node = stack[-1]
        for impl in rest:
            if impl in relevant:
                continue
            child = impl.output_refs
            is_target = wrt_ids is not None and id(impl) in wrt_ids
            leaf = child is None or not child.op.differentiable
            if (is_target and through is None) or leaf or not impl.requires_grad:
                relevant[impl] = is_target or (wrt_ids is None and impl.requires_grad and leaf)
                continue
            stack.append((iter(child.args), child.args, child))  # expand it, then come back
            break
        else:  # every argument is classified
            stack.pop()
            if node is None:
                return order
            rel = any([relevant[a] for a in args])
            for ref in node._refs:
                out = ref()
                if out is not None:
                    relevant[out] = rel or (through is not None and id(out) in through)
            if rel:
                order.append(node)


def backward_on_trace(
    outputs: list[TensorImpl],
    cotangents: list[Tensor],
    wrt: list[TensorImpl] | None = None,
    *,
    retain_graph: bool = True,
    create_graph: bool = True,
    cut: bool = True,
) -> dict[int, tuple[TensorImpl, Tensor]]:
    """Reverse-mode AD over the recorded trace.

    Args:
        outputs: impls to differentiate.
        cotangents: one seed per output, of the output's shape.
        wrt: impls to differentiate with respect to; None means every leaf that requires grad.
        retain_graph: False marks the visited nodes as consumed (PyTorch's `backward` default).
        create_graph: record the backward computation itself, for higher-order derivatives.
        cut: the walk stops at `wrt` tensors (False: it goes on through those that have a recipe).

    Returns:
        `{id(impl): (impl, cotangent)}` for each `wrt` impl (or leaf) the outputs depend on.
    """
    wrt_ids = None if wrt is None else {id(w) for w in wrt}
    nodes = _topo_nodes(outputs, wrt_ids, cut)
    for node in nodes:
        if node.released:
            raise RuntimeError(RELEASED_MESSAGE)
    sig = _replay.signature(nodes, outputs, cotangents, wrt, create_graph) if nodes and not anomaly_enabled() else None
    found = True  # without a signature: run the rules, record nothing
    if sig is not None:
        key, seen = sig
        found, plan = _replay.lookup(key)
        if plan is not None:  # this forward structure was differentiated before: replay it
            pairs = _replay.replay(plan, seen)
            if not retain_graph:
                for k in plan.visited:
                    nodes[k].released = nodes[k].op.saves_values
            return {id(t): (t, g) for t, g in pairs}
    if found:  # no signature, or one known not to be replayable
        return _run_rules(nodes, outputs, cotangents, wrt, retain_graph, create_graph)[0]
    with _replay.recording() as rec:
        result, visited = _run_rules(nodes, outputs, cotangents, wrt, retain_graph, create_graph)
    if rec.read_values:
        return result
    plan = _replay.make_plan(rec.nodes, seen, list(result.values()), visited, fuse=not create_graph)
    _replay.remember(key, plan)
    if plan is None or plan.sub is None:
        return result
    # Later backwards of this structure record the backward as one `call`: so does this one,
    # so every step builds the same graph (one compile). The rules' nodes are dropped.
    return {id(t): (t, g) for t, g in _replay.apply(plan, seen)}


def _run_rules(
    nodes: list, outputs: list, cotangents: list, wrt: list | None, retain_graph: bool, create_graph: bool
) -> tuple[dict[int, tuple[TensorImpl, Tensor]], list[int]]:
    """Run the VJP rules over `nodes` (topological order): (the gradients as
    `backward_on_trace` returns them, the positions of the nodes that received a cotangent)."""
    grads: dict[int, list[Tensor]] = {}  # contributions, summed when first read (see _total)
    holders: dict[int, TensorImpl] = {}
    for impl, cot in zip(outputs, cotangents, strict=True):
        _accumulate(grads, holders, impl, cot)

    visited = []
    with set_grad_enabled(create_graph):
        for k in range(len(nodes) - 1, -1, -1):
            node = nodes[k]
            outs = node.outputs()
            out_cots = [_total(grads, id(o), holders) if o is not None else None for o in outs]
            if all(c is None for c in out_cots):
                continue
            visited.append(k)
            out_tensors = [Tensor(o) if o is not None else None for o in outs]
            if not node.op.none_cotangents:  # (an op that takes None for an unused output gets None)
                out_cots = [
                    c if c is not None else OPS.zeros_like(_aval_tensor(node, i, out_tensors[i]))
                    for i, c in enumerate(out_cots)
                ]
            primals = [Tensor(a) for a in node.args]
            in_cots = node.op.vjp_rule(primals, out_cots, out_tensors, **node.rule_kwargs)
            if anomaly_enabled() and TRACE.state is None:
                _check_nan(node, in_cots)
            for arg, cot in zip(node.args, in_cots, strict=True):
                if cot is not None and arg.requires_grad:
                    _accumulate(grads, holders, arg, cot)
            if not retain_graph:  # (as torch frees saved tensors: an op that saves none stays usable)
                node.released = node.op.saves_values

        # Deterministic order (wrt order, else first-reached order): it decides the creation
        # order of the ops that consume these gradients, and so the cache key.
        # The non-leaves whose .grad is kept (retain_grad) get theirs with any `wrt`, as torch's.
        retained = [k for k, i in holders.items() if RETAINED and not i.is_leaf and i in RETAINED]
        if wrt is not None:
            result_ids = [id(w) for w in wrt]
            result_ids += [k for k in retained if k not in set(result_ids)]
        else:  # the leaves, and the retained non-leaves
            result_ids = [k for k, i in holders.items() if i.is_leaf or k in retained]
        return {k: (holders[k], _total(grads, k, holders)) for k in result_ids if k in grads}, visited


def _check_nan(node: Any, cotangents: list) -> None:
    """detect_anomaly: torch's error when a backward function returns nan."""
    for i, cot in enumerate(cotangents):
        if cot is not None and np.isnan(np.asarray(cot.numpy(), dtype=np.float64)).any():
            raise RuntimeError(f"Function '{GradFn(node).name()}' returned nan values in its {i}th output.")


def _aval_tensor(node: Any, index: int, tensor: Tensor | None) -> Tensor:
    """An output, or zeros of its logical shape for one nobody kept (under vmap the zeros stay
    unbatched and broadcast over the batch, which the live outputs' batch dims say)."""
    if tensor is not None:
        return tensor
    shape, dtype = node.out_avals[index]
    batch_dims = next((o.batch_dims for o in node.outputs() if o is not None), 0)
    return OPS.full(shape[batch_dims:], 0, dtype)


def _accumulate(grads: dict[int, Tensor], holders: dict[int, TensorImpl], impl: TensorImpl, cot: Tensor) -> None:
    key = id(impl)
    if tuple(cot.shape) != impl.logical_shape:
        raise RuntimeError(f"internal error: cotangent of shape {cot.shape} for a tensor of shape {impl.logical_shape}")
    if cot.dtype != impl.dtype:
        cot = OPS.cast(cot, impl.dtype)
    holders[key] = impl
    grads.setdefault(key, []).append(cot)


def _total(grads: dict[int, list[Tensor]], key: int, holders: dict[int, TensorImpl]) -> Tensor | None:
    """The sum of a tensor's cotangent contributions, passed through its gradient hooks (once:
    the result is then frozen). Sharded partial sums are added first, so they stay partial
    and are reduced once (not once per contribution)."""
    parts = grads.get(key)
    if not parts:
        return None
    if len(parts) > 1:
        parts.sort(key=lambda t: not (t._impl.sharding is not None and t._impl.sharding.partial))
        total = parts[0]
        for p in parts[1:]:
            total = OPS.add(total, p)
        grads[key] = parts = [total]
    if GRAD_HOOKS.count and type(parts) is list:
        grads[key] = parts = (_run_hooks(holders[key], parts[0]),)
    return parts[0]


def _run_hooks(impl: TensorImpl, grad: Tensor) -> Tensor:
    for hook in tuple((GRAD_HOOKS.of(impl) or {}).values()):
        out = hook(grad)
        if out is None:
            continue
        if not isinstance(out, Tensor) or tuple(out.shape) != tuple(grad.shape):
            got = tuple(out.shape) if isinstance(out, Tensor) else type(out).__name__
            raise RuntimeError(
                f"a gradient hook must return None or a tensor of the gradient's shape {tuple(grad.shape)}, got {got}"
            )
        grad = out if out.dtype == grad.dtype else OPS.cast(out, grad.dtype)
    return grad


_SEEDS: dict[tuple, TensorImpl] = {}  # (shape, dtype) -> realized ones: the usual loss.backward() seed


def _seed(tensor: Tensor) -> Tensor:
    """Ones like a one-element `tensor`: a realized input shared by every backward (a graph
    input, converted once), not a fill op recorded into each step's trace."""
    impl = tensor._impl
    np_dtype = _NUMPY_SEED_DTYPES.get(impl.dtype)
    if impl.sharding is not None or impl.batch_dims or np_dtype is None:
        return OPS.ones_like(tensor)
    key = (impl.physical_shape, impl.dtype)
    seed = _SEEDS.get(key)
    if seed is None:
        seed = _SEEDS[key] = TensorImpl(impl.physical_shape, impl.dtype, data=np.ones(impl.physical_shape, np_dtype))
    return Tensor(seed)


def _cotangent(out: Tensor, given: Any, who: str, out_name: str, arg: str) -> Tensor:
    """The cotangent seeding a backward from `out`: `given` (converted, checked against out's
    shape), or ones for a scalar."""
    if given is None:
        if out.numel() != 1:
            raise RuntimeError(
                f"{who}: grad can be implicitly created only for scalar outputs; {out_name} has shape "
                f"{tuple(out.shape)}: pass {arg} of the same shape"
            )
        return _seed(out)
    if not isinstance(given, Tensor):
        given = OPS.tensor(given, out.dtype)
    if tuple(given.shape) != tuple(out.shape):
        raise RuntimeError(f"{who}: {arg} has shape {tuple(given.shape)}, {out_name} has shape {tuple(out.shape)}")
    return given


def tensor_grad(
    outputs: Any,
    inputs: Any,
    grad_outputs: Any = None,
    retain_graph: bool | None = None,
    create_graph: bool = False,
    allow_unused: bool | None = None,
    materialize_grads: bool = False,
) -> tuple:
    """`torch.autograd.grad`'s engine (`nabla.autograd.grad` adds torch's `only_inputs` and
    `is_grads_batched`): the gradients of `outputs` with respect
    to each of `inputs` (a tuple, one per input), returned, not accumulated into `.grad`.

    Args:
        outputs: a tensor or sequence of tensors to differentiate.
        inputs: a tensor or sequence of tensors (leaves or not) to differentiate against.
        grad_outputs: the cotangent of each output (default: ones, for scalar outputs).
        retain_graph: keep the trace for another backward (default: `create_graph`).
        create_graph: record the gradient computation, for higher-order derivatives.
        allow_unused: an input the outputs do not depend on gets None instead of an error.
        materialize_grads: such an input gets zeros instead.
    """
    outs = as_tensor_list(outputs)
    ins = _differentiated(inputs, "grad")
    if retain_graph is None:
        retain_graph = create_graph
    given = [None] * len(outs) if grad_outputs is None else as_tensor_list(grad_outputs)
    if len(given) != len(outs):
        raise RuntimeError(f"grad: grad_outputs has {len(given)} entries, outputs has {len(outs)}")
    cotangents = []
    for i, (out, g) in enumerate(zip(outs, given, strict=True)):
        if not isinstance(out, Tensor) or not out._impl.requires_grad:
            raise RuntimeError(f"grad: outputs[{i}] does not require grad and does not have a grad_fn")
        cotangents.append(_cotangent(out, g, "grad", f"outputs[{i}]", f"grad_outputs[{i}]"))
    found = backward_on_trace(
        [o._impl for o in outs],
        cotangents,
        [t._impl for t in ins],
        retain_graph=retain_graph,
        create_graph=create_graph,
        cut=False,
    )
    wanted = {id(t._impl) for t in ins}
    for key, (impl, g) in found.items():  # retained non-leaves (retain_grad) keep theirs, as torch
        facade = None if key in wanted or impl.facade is None else impl.facade()
        if facade is not None:
            _accumulate_grad(facade, g, create_graph, TRACE.state is not None)
    result = []
    for i, t in enumerate(ins):
        entry = found.get(id(t._impl))
        if entry is None:
            if not (allow_unused or materialize_grads):
                raise RuntimeError(
                    f"grad: inputs[{i}] (shape {tuple(t.shape)}) was not used to compute the outputs; pass "
                    "allow_unused=True to get None for it"
                )
            result.append(OPS.zeros_like(t) if materialize_grads else None)
            continue
        g = entry[1]
        result.append(OPS.detach_trace(g) if not create_graph and g._impl.requires_grad else g)
    return tuple(result)


def as_tensor_list(value: Any) -> list:
    """A tensor, or a sequence of them, as a list (torch.autograd's arguments)."""
    return [value] if isinstance(value, Tensor) else list(value)


def _differentiated(inputs: Any, who: str) -> list[Tensor]:
    """`inputs` of a backward or `autograd.grad` (one tensor, or a sequence), checked: not
    empty, each a tensor that requires grad."""
    tensors = as_tensor_list(inputs)
    if not tensors:
        raise RuntimeError(f"{who}: inputs= must not be empty")
    for i, t in enumerate(tensors):
        if not isinstance(t, Tensor):
            raise TypeError(f"{who}: inputs[{i}] must be a Tensor, got {type(t).__name__}")
        if not t.requires_grad:
            raise RuntimeError(f"{who}: inputs[{i}] does not require grad (a tensor of shape {tuple(t.shape)})")
    return tensors


def tensor_backward(
    tensor: Tensor,
    gradient: Tensor | None = None,
    *,
    retain_graph: bool | None = None,
    create_graph: bool = False,
    inputs: Any = None,
) -> None:
    """`Tensor.backward`: accumulate gradients into `.grad` of the leaves that require grad (of
    `inputs` only, when given). `retain_graph` defaults to `create_graph`, as in PyTorch."""
    tensors_backward([tensor], [gradient], retain_graph=retain_graph, create_graph=create_graph, inputs=inputs)


def tensors_backward(
    tensors: list[Tensor],
    gradients: list[Tensor | None],
    *,
    retain_graph: bool | None = None,
    create_graph: bool = False,
    inputs: Any = None,
) -> None:
    """`torch.autograd.backward`: one backward from several tensors at once, so each gradient
    hook and `.grad` sees the sum of their contributions (not one call per tensor)."""
    if retain_graph is None:
        retain_graph = create_graph
    if len(gradients) != len(tensors):
        raise RuntimeError(f"backward: grad_tensors has {len(gradients)} entries, tensors has {len(tensors)}")
    seeds = []
    for i, (tensor, gradient) in enumerate(zip(tensors, gradients, strict=True)):
        if not isinstance(tensor, Tensor) or not tensor._impl.requires_grad:
            raise RuntimeError(f"element {i} of tensors does not require grad and does not have a grad_fn")
        name, arg = ("this tensor", "gradient") if len(tensors) == 1 else (f"tensors[{i}]", f"grad_tensors[{i}]")
        seeds.append(_cotangent(tensor, gradient, "backward", name, arg))
    chosen = None if inputs is None else {id(t._impl): t for t in _differentiated(inputs, "backward")}
    wrt = None if chosen is None else [t._impl for t in chosen.values()]
    outs = [t._impl for t in tensors]
    grads = backward_on_trace(outs, seeds, wrt, retain_graph=retain_graph, create_graph=create_graph, cut=False)
    traced = TRACE.state is not None  # (one check: a training step accumulates every parameter's)
    if traced:  # the hooks it ran (or found none of) are baked in: one added or removed retraces
        note_guard(_hooks_version, "the tensors' gradient hooks")
    for leaf, g in grads.values():
        if chosen is not None and id(leaf) in chosen:
            facade = chosen[id(leaf)]
        elif chosen is None or (not leaf.is_leaf and leaf in RETAINED):
            facade = leaf.facade() if leaf.facade is not None else None
        else:
            facade = None
        if facade is not None:
            _accumulate_grad(facade, g, create_graph, traced)


def _accumulate_grad(facade: Tensor, g: Tensor, create_graph: bool, traced: bool) -> None:
    """Add `g` into `facade.grad`, as torch's AccumulateGrad, then run its post-accumulate hooks."""
    if not create_graph and g._impl.requires_grad:
        g = OPS.detach_trace(g)  # (a replayed backward's gradients are history-free already)
    if traced:  # under nabla.compile the caller's .grad is an input: read through the property
        old = facade.grad
        note_grad(facade)
    else:
        old = facade._grad
    if old is None:
        facade._grad = g
    elif traced or create_graph or old._impl.requires_grad or old.shape != g.shape:
        facade._grad = OPS.add(old, g)  # (torch's AccumulateGrad is out of place for these too)
    else:  # in place, as torch's: a reference held to the old .grad sees the sum
        old._install(OPS.add(old, g)._impl)
    if GRAD_HOOKS.post_count:
        post = getattr(facade, "_post_hooks", None)
        for hook in tuple(post.values()) if post else ():
            hook(facade)


def _hooks_version() -> int:
    return GRAD_HOOKS.version
