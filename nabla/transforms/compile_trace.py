"""How `nabla.compile` traces a miss: the function runs once on placeholders (and, for dynamic
dims, on probes of other sizes), and what it read, returned, updated in place and assigned to
`.grad` becomes an `_Entry` (a prepared model, or a SubProgram for a `call` op) with the
`_Source` of each of its inputs.

`_Tracing` is a mixin of `CompiledFunction` (nabla/transforms/compile.py), which owns the
attributes it reads: `fn`, `stats`, `static_argnums`, `_static_scalars`, `_static_dims` and
`_captured`; the signature methods it calls (`_flatten`, `_labels`) are `_Signature`'s.
"""

from __future__ import annotations

import sys
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..core.common import dtypes as _dt
from ..core.common.config import CONFIG
from ..core.common.context import is_grad_enabled
from ..core.common.pytree import tree_flatten, tree_unflatten
from ..core.graph.engine import GRAPH
from ..core.graph.executors import get_executor_impl
from ..core.graph.program import collect
from ..core.graph.symbolic import PROBE_STEPS, DynamicPlan, SymbolicProgramError, make_symbolic
from ..core.graph.tracing import ConcretizationError, TraceState, trace_scope
from ..core.tensor.impl import TensorImpl, next_seq
from ..core.tensor.tensor import Tensor
from ..ops.call import SubProgram
from ..ops.random_state import all_rng_states, restore_rng_states
from ..ops.view import identity
from .captures import Scan, outside_promises, scan_argument_objects, scan_captures
from .signature import _grad_label, _Leaf

_SCALAR_DTYPES = {float: _dt.float32, int: _dt.int64}


@dataclass
class _Source:
    """Where a model input comes from on each call."""

    kind: str  # "leaf", "scalar", "seed", "captured", "grad"
    index: int = -1  # leaf index for "leaf"/"scalar"
    dtype: Any = None
    getter: Callable[[], Any] | None = None  # "captured": the tensor; "seed": its generator's next seed
    label: str = ""  # for "captured": where the tensor lives ("global 'W'")
    target: tuple = ()  # for "grad": whose .grad, as in `_facade` (compile.py)
    aval: tuple = ()  # (physical shape, dtype, requires_grad) seen at trace time, for "captured"


@dataclass
class _Entry:
    prepared: Any
    executor: Any
    sources: list[_Source]
    out_def: Any
    # per output leaf: ("out", k), ("const", value), or ("same", (k, facade)) for an argument or
    # a captured tensor returned as itself (`x.add_(1); return x`: the call returns x)
    out_slots: list
    mutations: list  # (target getter, k): rebind a facade's impl to program output k
    grads: list  # (target getter, k or None): set a facade's .grad
    grad_reads: list  # (target, label or None for an argument): whose caller's .grad the trace read
    plan: DynamicPlan | None
    name_checks: list  # (getter, id of the Tensor object seen at trace time, label)
    guards: list  # (getter, value at trace time, label): Python values the trace depends on
    # per program output: (ShardingSpec or None, global shape, device, the program's device, dtype) as traced
    out_layouts: list


class _Tracing:
    """The tracing half of `CompiledFunction` (see the module doc)."""

    def trace_program(self, args: tuple, kwargs: dict) -> tuple[Any, dict[int, str]]:
        """Trace once (no compile, no cache) and return the collected program with a label per
        input (for `nabla.trace`)."""
        return _retry_captured(self._trace_program, self._bound + args, kwargs)

    def _trace_program(self, args: tuple, kwargs: dict) -> tuple[Any, dict[int, str]]:
        values, _, leaves = self._flatten(args, kwargs)
        placeholders = self._placeholders(values, leaves, False)
        traced = self._run_traced(args, kwargs, placeholders, values, leaves)
        names = self._labels(args, kwargs)
        labels = {id(p._impl): n for p, n in zip(placeholders, names, strict=True) if isinstance(p, Tensor)}
        labels.update({id(s): "random seed" for s in traced.state.seeds})
        for impl_id, (target, label) in _grad_inputs(traced, placeholders).items():
            labels[impl_id] = f".grad of {_grad_label(target, label, names)}"
        for impl in traced.collected.inputs:
            if id(impl) not in labels:
                labels[id(impl)] = self._captured_source(impl, traced).label
        return traced.collected, labels

    def _trace(self, args, kwargs, values, leaves, labels, specialize, structure, lazy=False) -> _Entry:
        try:
            return self._trace_once(args, kwargs, values, leaves, labels, specialize, structure, lazy)
        except ConcretizationError:
            if specialize or not any(lf.kind == "scalar" for lf in leaves):
                raise
        # A Python number was used as a Python value (a shape, a loop bound): compile per value.
        self._static_scalars.add(structure)
        return self._trace_once(args, kwargs, values, leaves, labels, True, structure, lazy)

    def _trace_once(self, args, kwargs, values, leaves, labels, specialize, structure, lazy) -> _Entry:
        rng = all_rng_states()
        try:
            if lazy:
                return self._trace_call(args, kwargs, values, leaves, specialize)
            return self._trace_all(args, kwargs, values, leaves, labels, specialize, structure)
        finally:
            restore_rng_states(rng)  # tracing draws seeds nobody uses; the first run draws them again

    def _trace_call(self, args, kwargs, values, leaves, specialize) -> _Entry:
        """Trace for `lazy_call`: the program becomes a SubProgram (no compile; dynamic dims do
        not apply, since the enclosing graph has static shapes)."""
        placeholders = self._placeholders(values, leaves, specialize)
        return self._call_entry(placeholders, self._run_traced(args, kwargs, placeholders, values, leaves), leaves)

    def _call_entry(self, placeholders: list, traced: _Traced, leaves: list[_Leaf]) -> _Entry:
        if traced.grads:
            raise RuntimeError(
                f"compile: {getattr(self.fn, '__qualname__', '?')} assigns .grad (calls backward()), so it cannot "
                "be recorded as one differentiable op; call it with inputs that carry no autodiff history"
            )
        sources = self._sources(traced, leaves, placeholders)
        sub = SubProgram(traced.collected, list(traced.collected.inputs))
        return self._entry(traced, sub, None, sources, placeholders, None)

    def _trace_all(self, args, kwargs, values, leaves, labels, specialize, structure) -> _Entry:
        sizes = self._dynamic_sizes(values, leaves, labels)
        placeholders = self._placeholders(values, leaves, specialize)
        traced = self._run_traced(args, kwargs, placeholders, values, leaves)
        if traced.differentiable and not traced.grads:
            raise _Differentiable((placeholders, traced))  # a `call` op instead: nothing to compile
        plan = None
        if sizes:
            probes = []
            for name in sizes:
                for step in PROBE_STEPS:
                    bumped = {n: s + (step if n == name else 0) for n, s in sizes.items()}
                    p = self._placeholders(values, leaves, specialize, bumped)
                    probes.append((name, self._run_traced(args, kwargs, p, values, leaves).collected))
            try:
                plan = make_symbolic(traced.collected, sizes, probes)
            except SymbolicProgramError as err:
                self._static_dims.add(structure)
                self._record_note(f"dynamic dims {sorted(sizes)} are specialized per size: {err}")
        return self._build_entry(traced, plan, leaves, placeholders, structure)

    def _record_note(self, note: str) -> None:
        self.stats.recompile_reasons.append(note)
        if CONFIG.log_recompiles:
            print(f"nabla.compile({getattr(self.fn, '__qualname__', '?')}): {note}", file=sys.stderr)

    def _dynamic_sizes(self, values: list, leaves: list[_Leaf], labels: list[str]) -> dict[str, int]:
        sizes: dict[str, int] = {}
        for v, lf, label in zip(values, leaves, labels, strict=True):
            if lf.kind != "tensor":
                continue
            for d, sym in enumerate(lf.key[1]):
                if isinstance(sym, str):
                    n = v.shape[d]
                    if sizes.setdefault(sym, n) != n:
                        raise ValueError(
                            f"compile: dynamic dim {sym!r} has size {sizes[sym]} in one argument and {n} in "
                            f"{label} (shape {v.shape}); give the dims different names in dynamic_dims"
                        )
        return sizes

    def _placeholders(self, values, leaves, specialize, sizes: dict | None = None) -> list:
        with trace_scope():  # placeholders are never pending: nothing may ever evaluate them
            return self._make_placeholders(values, leaves, specialize, sizes)

    def _check_captured(self, values: list, leaves: list[_Leaf], found: Callable[[Tensor], bool]) -> None:
        """An argument that the function also reads as a captured tensor (by name, or through an
        attribute such as a module's weight) is two tensors in the trace, a placeholder and the
        captured one, and an in-place update of either misses the other: remember it and start
        the call again, so that it is keyed and traced as the captured tensor itself."""
        aliased = [v for v, lf in zip(values, leaves, strict=True) if lf.kind == "tensor" and found(v)]
        if aliased:
            for v in aliased:
                self._captured[id(v)] = weakref.ref(v)
            raise _ArgumentCaptured

    def _make_placeholders(self, values, leaves, specialize, sizes: dict | None) -> list:
        # A Python float argument is a weakly typed input: float32, or float64 when a tensor
        # argument is float64, so a float64 computation keeps its precision (0.1, 1e300). The
        # argument dtypes are part of the key, so each choice is its own cache entry.
        f64 = any(lf.kind == "tensor" and v._impl.dtype == _dt.float64 for v, lf in zip(values, leaves, strict=True))
        wide = _dt.float64 if f64 else _SCALAR_DTYPES[float]
        out = []
        for v, lf in zip(values, leaves, strict=True):
            if lf.kind == "tensor":
                impl = v._impl
                shape = impl.physical_shape
                if sizes:
                    bd = impl.batch_dims
                    logical = tuple(sizes[s] if isinstance(s, str) else s for s in lf.key[1])
                    shape = shape[:bd] + logical
                p = TensorImpl(
                    shape, impl.dtype, batch_dims=impl.batch_dims, device=impl.device, sharding=impl.sharding
                )
                t = Tensor(p)
                if impl.requires_grad:
                    t.requires_grad_(True)
                if v._grad is not None:  # the caller's gradient: an input if the function reads it
                    g = v._grad._impl
                    t._grad = Tensor(
                        TensorImpl(shape, g.dtype, batch_dims=impl.batch_dims, device=g.device, sharding=g.sharding)
                    )
                out.append(t)
            elif lf.kind == "alias":
                out.append(out[lf.key])
            elif lf.kind == "scalar" and not specialize:
                impl = TensorImpl((), wide if lf.key[0] is float else _SCALAR_DTYPES[lf.key[0]])
                impl.weak_type = True
                out.append(Tensor(impl))
            else:
                out.append(v)
        return out

    def _run_traced(self, args, kwargs, placeholders, values: list, leaves: list[_Leaf]) -> _Traced:
        scan = scan_captures(self.fn)
        objects = [
            (f"argument {i}", v) for i, (v, lf) in enumerate(zip(values, leaves, strict=True)) if lf.kind == "static"
        ]
        scan_argument_objects(scan, objects)
        named = {id(t) for t in scan.tensors}
        self._check_captured(values, leaves, lambda v: id(v) in named)
        self.stats.traces += 1
        lazy = [t._impl for t in scan.tensors if not t._impl.is_realized]
        if lazy:  # captured promises become inputs (read again each call), not baked recipes
            GRAPH.evaluate(lazy)
        start_seq = next_seq()
        with trace_scope() as state:
            state.start_seq = start_seq
            call_args, call_kwargs = _rebuild(args, kwargs, placeholders, self.static_argnums)
            try:
                out = self.fn(*call_args, **call_kwargs)
                out_leaves, out_def = tree_flatten(out)
                # The values as the function left them, before its in-place updates are undone
                # below (`y.add_(1); return y`, a residual `out += x`, a `.grad` scaled in place).
                out_now = [o._impl if isinstance(o, Tensor) else o for o in out_leaves]
            finally:
                mutated = [(f, f._impl, orig) for f, orig in state.mutated.values()]
                grads = [(f, None if f._grad is None else f._grad._impl, orig) for f, orig in state.grads.values()]
                for f, _, orig in mutated:  # the trace must not change the real tensors
                    f._impl = orig
                for f, _, orig in grads:
                    f._grad = orig
            targets, out_slots = [], []
            facades = {id(p) for p in placeholders if isinstance(p, Tensor)} | {id(f) for f, _, _ in mutated}
            for o, now in zip(out_leaves, out_now, strict=True):
                if isinstance(o, Tensor):
                    out_slots.append(("same", (len(targets), o)) if id(o) in facades else ("out", len(targets)))
                    targets.append(_as_target(Tensor(now)))
                else:
                    out_slots.append(("const", o))
            differentiable = is_grad_enabled() and any(t._impl.requires_grad for t in targets)
            mut, out_of = [], {}  # (tensors updated to one value get one output: they share it after the call too)
            for f, new, _ in mutated:
                k = out_of.get(id(new))
                if k is None:
                    k = out_of[id(new)] = len(targets)
                    targets.append(_as_target(Tensor(new)))
                mut.append((f, k))
            grd = []
            for f, g, _ in grads:
                if g is None:
                    grd.append((f, None))
                else:
                    grd.append((f, len(targets)))
                    targets.append(_as_target(Tensor(g)))
            outside = outside_promises([t._impl for t in targets], start_seq)
            if outside:  # reached through attributes (a module's pending weight): inputs, read each call
                GRAPH.evaluate(outside)
            collected = collect([t._impl for t in targets], placeholders=True)
        read = {id(impl) for impl in collected.inputs} | {id(orig) for _, _, orig in mutated}
        updated = {id(f) for f, _, _ in mutated}
        self._check_captured(values, leaves, lambda v: id(v._impl) in read or id(v) in updated)
        return _Traced(collected, out_def, out_slots, mut, grd, state, scan, start_seq, differentiable)

    def _sources(self, traced: _Traced, leaves: list[_Leaf], placeholders: list) -> list[_Source]:
        """Where each program input comes from on every call."""
        leaf_of = {id(p._impl): i for i, p in enumerate(placeholders) if isinstance(p, Tensor)}
        seeds = {id(s) for s in traced.state.seeds}
        grad_inputs = _grad_inputs(traced, placeholders)
        sources = []
        for impl in traced.collected.inputs:
            i = leaf_of.get(id(impl))
            if i is not None:  # (a captured argument is its own placeholder: read from the call too)
                kind = "scalar" if leaves[i].kind == "scalar" else "leaf"
                sources.append(_Source(kind, i, impl.dtype))
            elif id(impl) in grad_inputs:
                sources.append(_Source("grad", target=grad_inputs[id(impl)][0]))
            elif id(impl) in seeds:
                sources.append(_Source("seed", getter=traced.state.seed_sources[id(impl)]))
            else:
                sources.append(self._captured_source(impl, traced))
        return sources

    def _build_entry(self, traced: _Traced, plan: DynamicPlan | None, leaves, placeholders, structure) -> _Entry:
        collected = traced.collected
        sources = self._sources(traced, leaves, placeholders)
        executor = get_executor_impl(CONFIG.executor)
        before = GRAPH.cache_info().compiles
        prepared = None
        if plan is not None:
            try:
                prepared = plan.prepare(executor)
            except SymbolicProgramError as err:
                self._static_dims.add(structure)
                self._record_note(f"dynamic dims are specialized per size: {err}")
                plan = None
        if plan is None:
            prepared = GRAPH.prepare(executor, collected, hot=True)
        self.stats.compiles += GRAPH.cache_info().compiles - before
        return self._entry(traced, prepared, executor, sources, placeholders, plan)

    @staticmethod
    def _entry(traced: _Traced, prepared, executor, sources, placeholders, plan) -> _Entry:
        target = _target_fn(placeholders)
        return _Entry(
            prepared=prepared,
            executor=executor,
            sources=sources,
            out_def=traced.out_def,
            out_slots=[(kind, (v[0], target(v[1])) if kind == "same" else v) for kind, v in traced.out_slots],
            mutations=[(target(f), k) for f, k in traced.mutations],
            grads=[(target(f), k) for f, k in traced.grads],
            grad_reads=[(t, label) for _, t, label in _grad_reads(traced, placeholders)],
            plan=plan,
            name_checks=traced.scan.checks,
            # (captured values keyed after the trace, so what the function itself wrote into a
            # captured dict or list during the trace does not retrace every call)
            guards=traced.state.guards + [(g, g(), label) for g, label in traced.scan.values],
            out_layouts=[
                (t.sharding, t.physical_shape, t.device, traced.collected.device, t.dtype)
                for t in traced.collected.targets
            ],
        )

    def _captured_source(self, impl: TensorImpl, traced: _Traced) -> _Source:
        aval = (
            impl.physical_shape,
            impl.dtype,
            impl.requires_grad,
            impl.device,
        )  # a thawed or moved parameter retraces
        found = traced.scan.by_impl.get(id(impl))
        if found is not None:
            label, getter = found
            return _Source("captured", getter=getter, label=label, aval=aval)
        facade = traced.state.facades.get(id(impl))
        if facade is not None:
            return _Source("captured", getter=lambda f=facade: f, label="a captured tensor", aval=aval)
        const = Tensor(impl)
        return _Source("captured", getter=lambda: const, label="a constant", aval=aval)


def _target_fn(placeholders: list) -> Callable[[Tensor], tuple]:
    """Maps a facade seen in the trace to a target: ("arg", leaf index) for a placeholder,
    else ("tensor", the captured Tensor)."""
    facade_of = {id(f): i for i, f in enumerate(placeholders) if isinstance(f, Tensor)}

    def target(f: Tensor) -> tuple:
        i = facade_of.get(id(f))
        return ("arg", i) if i is not None else ("tensor", f)

    return target


def _grad_reads(traced: _Traced, placeholders: list) -> list[tuple]:
    """(the caller's .grad or None, target, label) per `.grad` the trace read before assigning
    it; the label is None for an argument (named by the call, see `_grad_label`). Tensors the
    trace created have no caller: their .grad is not part of the signature."""
    target = _target_fn(placeholders)
    out = []
    for f, g in traced.state.grad_reads.values():
        t = target(f)
        if t[0] == "tensor" and f._impl.seq > traced.start_seq:
            continue
        label = None if t[0] == "arg" else traced.scan.by_impl.get(id(f._impl), ("a captured tensor",))[0]
        out.append((g, t, label))
    return out


def _grad_inputs(traced: _Traced, placeholders: list) -> dict:
    """id(impl) -> (target, label) of each caller's .grad the trace read that was a tensor."""
    return {id(g._impl): (t, label) for g, t, label in _grad_reads(traced, placeholders) if g is not None}


@dataclass
class _Traced:
    collected: Any
    out_def: Any
    out_slots: list
    mutations: list
    grads: list
    state: TraceState
    scan: Scan
    start_seq: int  # impls created by the trace have a larger seq
    differentiable: bool  # an output has autodiff history (grad enabled, an input requires grad)


class _ArgumentCaptured(Exception):  # noqa: N818 (a signal, not an error)
    """Raised by a trace that found an argument the function also captures (see
    `CompiledFunction._check_captured`): the call starts again with it keyed as captured."""


def _retry_captured(run: Callable[[tuple, dict], Any], args: tuple, kwargs: dict) -> Any:
    """`run(args, kwargs)`, again while a trace finds an argument the function also captures:
    flattened again, that argument is keyed and traced as the captured tensor. Each retry keys
    one more argument as captured, so this ends (found by name before the function runs, through
    an attribute after a trace)."""
    while True:
        try:
            return run(args, kwargs)
        except _ArgumentCaptured:
            continue


class _Differentiable(Exception):  # noqa: N818 (a signal, not an error)
    """Raised by a trace for `__call__` whose outputs carry autodiff history; `made` is that
    trace (placeholders, _Traced), which becomes the `call` op's program."""

    def __init__(self, made: tuple) -> None:
        super().__init__()
        self.made = made
        self.reason: str | None = None  # why `_entries` missed


def _as_target(t: Tensor) -> Tensor:
    """Every output gets its own op, so inputs and constants returned as-is still get a slot."""
    return identity(t) if t._impl.is_realized or t._impl.output_refs is None else t


def _rebuild(args: tuple, kwargs: dict, placeholders: list, static_argnums: tuple) -> tuple[list, dict]:
    it = iter(placeholders)
    call_args = []
    for i, a in enumerate(args):
        if i in static_argnums:
            next(it)
            call_args.append(a)
        else:
            leaves, d = tree_flatten(a)
            call_args.append(tree_unflatten(d, [next(it) for _ in leaves]))
    call_kwargs = {}
    for name in sorted(kwargs):
        leaves, d = tree_flatten(kwargs[name])
        call_kwargs[name] = tree_unflatten(d, [next(it) for _ in leaves])
    return call_args, call_kwargs
