"""compile: trace a function once per input signature into one model; later calls only move
buffers in and out.

    call ─► signature key (dtypes, shapes, static values) ─► hit? ─► feed buffers ─► execute
                                   │ miss                                   ▲
                                   └─► trace on placeholders ─► Program ─► prepare (MAX compile)

What becomes a model input on every call:
  - tensor arguments (pytrees of them: dicts, lists, tuples, registered nodes),
  - Python floats and ints (so a changing learning rate or step count does not recompile;
    one that the function uses as a Python value, e.g. a shape, is specialized instead),
  - tensors the function captures (globals, closure cells, attributes): read again from where
    they live on every call, so a rebound global or an in-place update is never stale,
  - the `.grad` of a tensor (captured or an argument) that the function reads before assigning
    it, e.g. the gradient `backward()` accumulates into: whether it is None is part of the
    signature (eager code takes another path), its value is an input,
  - a fresh seed for every random op.
In-place updates (`p.sub_(...)`, `x[i] = v`) and `.grad` assignments made inside the function
are replayed on the real tensors after each call, so a PyTorch-style training step (forward,
backward, optimizer update) compiles into one model.

Outputs that carry autodiff history (grad enabled, an input or captured tensor requiring grad,
no backward inside) make the call one differentiable `call` op in the lazy trace instead
(`_calls`, `lazy_call`), as torch.compile's outputs keep their autograd graph.
"""

from __future__ import annotations

import functools
import sys
import weakref
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..core.common import dtypes as _dt
from ..core.common.config import CONFIG
from ..core.common.context import is_grad_enabled
from ..core.common.devices import Device
from ..core.common.pytree import tree_flatten, tree_unflatten
from ..core.graph.engine import GRAPH, RecompileError
from ..core.graph.executors import get_executor_impl, placed_storage
from ..core.graph.program import collect
from ..core.graph.symbolic import PROBE_STEPS, DynamicPlan, SymbolicProgramError, make_symbolic, run_prepared
from ..core.graph.tracing import ConcretizationError, TraceState, trace_scope, tracing
from ..core.tensor.impl import TensorImpl, next_seq
from ..core.tensor.tensor import Tensor
from ..ops.call import SubProgram, call
from ..ops.creation import next_seed_array, rng_state, set_rng_state
from ..ops.view import identity
from .captures import Scan, outside_promises, scan_captures
from .signature import _FastCall, _grad_label, _Leaf, _normalize_dynamic, _Signature, _structure

_SCALAR_DTYPES = {float: _dt.float32, int: _dt.int64}


@dataclass
class CompileStats:
    """Counters of one compiled function.

    Attributes:
        hits: calls answered by a cached model (no tracing, no op dispatch).
        misses: calls that had to trace the function.
        compiles: models built for this function (MAX compiles on the MAX executor; a model
            whose structure was already compiled elsewhere in the process is reused and not
            counted).
        traces: times the function body ran on placeholders.
        recompile_reasons: why each miss after the first happened, in words.
    """

    hits: int = 0
    misses: int = 0
    compiles: int = 0
    traces: int = 0
    recompile_reasons: list[str] = field(default_factory=list)


@dataclass
class _Source:
    """Where a model input comes from on each call."""

    kind: str  # "leaf", "scalar", "seed", "captured", "grad"
    index: int = -1  # leaf index for "leaf"/"scalar"
    dtype: Any = None
    getter: Callable[[], Tensor] | None = None  # for "captured"
    label: str = ""  # for "captured": where the tensor lives ("global 'W'")
    target: tuple = ()  # for "grad": whose .grad, as in `_facade`
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
    # per program output: (ShardingSpec or None, global shape, device, the program's device) as traced
    out_layouts: list


class CompiledFunction(_Signature):
    """A function compiled with `nabla.compile`. Call it like the original.

    Attributes:
        stats: a `CompileStats` with hits, misses, compiles, traces and recompile reasons.
    """

    def __init__(
        self,
        fn: Callable,
        dynamic_dims: Any = None,
        static_argnums: int | Sequence[int] = (),
        max_cache_size: int = 64,
    ) -> None:
        self.fn = fn
        self.static_argnums = (static_argnums,) if isinstance(static_argnums, int) else tuple(static_argnums)
        self.dynamic_dims = _normalize_dynamic(dynamic_dims)
        self.max_cache_size = int(max_cache_size)
        self.stats = CompileStats()
        self._entries: OrderedDict[tuple, _Entry] = OrderedDict()
        self._calls: OrderedDict[tuple, _Entry] = OrderedDict()  # lazy_call: one `call` op each
        self._static_scalars: set[tuple] = set()  # structures whose scalars must be specialized
        self._static_dims: set[tuple] = set()  # structures whose dynamic dims could not be symbolic
        # Tensors whose caller's .grad some trace read, by identity: (target, label) each; their
        # grads' state is part of every key (empty for steps that zero grads before backward).
        self._grad_watch: dict[tuple, tuple] = {}
        # Structures whose outputs carry autodiff history (inputs or captured tensors that
        # require grad, no backward inside): with grad enabled they are recorded as a `call` op.
        self._differentiable: set[tuple] = set()
        # Arguments that are also tensors the function captures (`f(g)` where f reads the global
        # g, or `f(m.w)` where f reads m.w), by id, weakly: traced as themselves so in-place ops
        # on one are seen by the other.
        self._captured: dict[int, weakref.ref] = {}
        # (cache, key, entry) of the last hit, and the last structure found differentiable:
        # compared before hashing (see `_entry_for`)
        self._last_found: tuple | None = None
        self._last_structure: tuple | None = None
        self._fast: _FastCall | None = None  # the last hit, checked before flattening (`_call`)
        functools.update_wrapper(self, fn)

    def _is_differentiable(self, structure: tuple) -> bool:
        if structure == self._last_structure:
            return True
        if structure in self._differentiable:
            self._last_structure = structure
            return True
        return False

    def __repr__(self) -> str:
        return f"<nabla.compile of {getattr(self.fn, '__qualname__', self.fn)}>"

    def __get__(self, obj: Any, objtype: Any = None) -> Any:  # decorating methods
        return self if obj is None else functools.partial(self, obj)

    def clear_cache(self) -> None:
        self._last_found = self._last_structure = self._fast = None
        self._entries.clear()
        self._calls.clear()
        self._grad_watch.clear()

    # -- call ---------------------------------------------------------------------------
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if tracing():  # called while another compiled function traces: its ops join that trace
            return self.fn(*args, **kwargs)
        return _retry_captured(self._call, args, kwargs)

    def _call(self, args: tuple, kwargs: dict) -> Any:
        # A training loop's compiled forward: the arguments of the last hit again (same module,
        # same shapes), checked without flattening them or building the key.
        fast = self._fast
        if fast is not None and not kwargs and not self._grad_watch and not self._captured:
            values = fast.values(args)
            if values is not None and self._stale(fast.entry) is None:
                self.stats.hits += 1
                return self._record_call(fast.entry, values) if fast.lazy else self._run(fast.entry, values)
        values, treedef, leaves = self._flatten(args, kwargs)
        inside = _inside_transform(values)
        if inside and inside != "grad":
            # Under jvp/vmap: run the function inline so the outer transform sees its ops.
            return self.fn(*args, **kwargs)
        hits = self.stats.hits
        entry, lazy = self._find(args, kwargs, values, treedef, leaves, inside == "grad")
        if self.stats.hits > hits and not kwargs:  # (a hit: the next call with these arguments is fast)
            self._fast = _FastCall.make(self, args, values, leaves, entry, lazy)
        return self._record_call(entry, values) if lazy else self._run(entry, values)

    def _find(self, args, kwargs, values, treedef, leaves, history: bool) -> tuple[_Entry, bool]:
        """(the entry for this call, whether it is recorded as a `call` op rather than run)."""
        if history:
            # An input carries autodiff history (under grad, or after ops on parameters): record
            # the function as one differentiable `call` op, as jit does inside JAX's grad.
            return self._lazy_entry(args, kwargs, values, treedef, leaves), True
        structure = _structure(treedef, leaves)
        if self._differentiable and is_grad_enabled() and self._is_differentiable(structure):
            return self._lazy_entry(args, kwargs, values, treedef, leaves, structure), True
        try:
            # (grad mode is part of the key, as torch.compile guards on it: see `_lazy_entry`)
            entry = self._entry_for(
                self._entries, (is_grad_enabled(),), args, kwargs, values, treedef, leaves, structure
            )
        except _Differentiable as signal:
            # As torch.compile's: outputs that depend on tensors requiring grad (a parameter the
            # function reads) carry autodiff history, so `backward()` after the call reaches them.
            self._differentiable.add(structure)
            return self._lazy_entry(args, kwargs, values, treedef, leaves, structure, signal), True
        return entry, False

    def lazy_call(self, *args: Any, **kwargs: Any) -> Any:
        """Record the function as one differentiable `call` op in the lazy trace; nothing runs.

        Calling the function does this by itself when its outputs carry autodiff history (as
        `Module.compile`'s forward in a training step: one op, traced once per input signature;
        `backward()` adds one more, and the step is still one cached model). Under jvp or vmap
        the function runs inline instead.
        """
        return _retry_captured(self._lazy_call, args, kwargs)

    def _lazy_call(self, args: tuple, kwargs: dict) -> Any:
        values, treedef, leaves = self._flatten(args, kwargs)
        if _inside_transform(values) not in (False, "grad"):
            return self.fn(*args, **kwargs)
        return self._record_call(self._lazy_entry(args, kwargs, values, treedef, leaves), values)

    def _lazy_entry(self, args, kwargs, values, treedef, leaves, structure=None, made=None) -> _Entry:
        # Grad mode is part of the key: a trace under no_grad records nothing to differentiate.
        prefix = (is_grad_enabled(),)
        return self._entry_for(self._calls, prefix, args, kwargs, values, treedef, leaves, structure, made)

    def _entry_for(self, cache, prefix, args, kwargs, values, treedef, leaves, structure=None, made=None) -> _Entry:
        """The cached entry for this signature, or a new trace. `cache` is `_entries` (compiled
        models) or `_calls` (SubPrograms for `call` ops, keyed also by `prefix`); `structure`
        is `_structure(treedef, leaves)` where the caller has it; `made`, the `_Differentiable`
        signal of a miss in `_entries` whose trace becomes this `_calls` entry."""
        lazy = cache is self._calls
        structure = _structure(treedef, leaves) if structure is None else structure
        key = (*prefix, self._key(treedef, leaves, values, structure, lazy))
        # A training step calls with one key every time: compared with the last key found (no
        # hashing; the same objects compare by identity), that entry is already the most recent.
        last = self._last_found
        if last is not None and last[0] is cache and last[1] == key:
            entry = last[2]
        else:
            entry = cache.get(key)
            if entry is not None:
                cache.move_to_end(key)
                self._last_found = (cache, key, entry)
        stale = None if entry is None else self._stale(entry)
        if entry is not None and stale is None:
            self.stats.hits += 1
            return entry
        self._last_found = None
        labels = self._labels(args, kwargs)  # only a miss needs names for its explanation
        reason = made.reason if made else self._explain(key, stale, labels, [*self._entries, *self._calls])
        if GRAPH._no_recompile_depth:
            verb, noun = ("retrace", "traced") if lazy else ("recompile", "compiled")
            what = reason or f"nothing is {noun} for this function yet"
            raise RecompileError(f"no_recompile: {getattr(self.fn, '__qualname__', '?')} would {verb}: {what}")
        specialize = bool(self._static_scalars) and structure in self._static_scalars
        traced_args = (args, kwargs, values, leaves, labels, specialize, structure)
        compiles = self.stats.compiles
        try:
            entry = self._call_entry(*made.made, leaves) if made else self._trace(*traced_args, lazy)
        except _Differentiable as signal:
            signal.reason = reason  # (the miss is counted, and explained, by the `_calls` entry)
            raise
        for target, label in entry.grad_reads:
            self._grad_watch.setdefault(_identity(target), (target, label))
        served = not lazy and self.stats.compiles == compiles and get_executor_impl(CONFIG.executor).makes_max_models
        self._record_miss(reason, served)
        # (the trace may have switched this structure to specialized scalars: key it again)
        cache[(*prefix, self._key(treedef, leaves, values, structure, lazy))] = entry
        while len(cache) > self.max_cache_size:
            cache.popitem(last=False)
        return entry

    def trace_program(self, args: tuple, kwargs: dict) -> tuple[Any, dict[int, str]]:
        """Trace once (no compile, no cache) and return the collected program with a label per
        input (for `nabla.trace`)."""
        return _retry_captured(self._trace_program, args, kwargs)

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

    def _record_miss(self, reason: str | None, served: bool) -> None:
        """Count a miss; log why. `served`: a MAX model already built (a symbolic one for this
        size, or the same program compiled elsewhere) runs it, so it was only traced again."""
        self.stats.misses += 1
        if reason is None:
            return
        verb = "retracing (a compiled model serves it)" if served else "recompiling"
        message = f"nabla.compile({getattr(self.fn, '__qualname__', '?')}): {verb}: {reason}"
        self.stats.recompile_reasons.append(reason)
        if CONFIG.log_recompiles:
            print(message, file=sys.stderr)

    # -- tracing -------------------------------------------------------------------------
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
        rng = rng_state()
        try:
            if lazy:
                return self._trace_call(args, kwargs, values, leaves, specialize)
            return self._trace_all(args, kwargs, values, leaves, labels, specialize, structure)
        finally:
            set_rng_state(rng)  # tracing draws seeds nobody uses; the first run draws them again

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
                impl = TensorImpl((), _SCALAR_DTYPES[lf.key[0]])
                impl.weak_type = True
                out.append(Tensor(impl))
            else:
                out.append(v)
        return out

    def _run_traced(self, args, kwargs, placeholders, values: list, leaves: list[_Leaf]) -> _Traced:
        scan = scan_captures(self.fn)
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
            mut = []
            for f, new, _ in mutated:
                mut.append((f, len(targets)))
                targets.append(_as_target(Tensor(new)))
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
                sources.append(_Source("seed"))
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
            guards=traced.state.guards,
            out_layouts=[
                (t.sharding, t.physical_shape, t.device, traced.collected.device) for t in traced.collected.targets
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

    def _stale(self, entry: _Entry) -> str | None:
        """None while what the entry's trace read still holds; else why it must trace again."""
        for getter, seen, label in entry.name_checks:
            if id(getter()) != seen:
                return f"{label} was rebound to another tensor"
        for s in entry.sources:
            if s.kind == "captured":
                impl = s.getter()._impl
                now = (impl.physical_shape, impl.dtype, impl.requires_grad, impl.device)
                if now != s.aval:
                    changed = [n for n, a, b in zip(_AVAL_FIELDS, now, s.aval, strict=True) if a != b]
                    return f"{s.label} changed {' and '.join(changed)}"
        for getter, seen, label in entry.guards:
            if getter() != seen:
                return f"{label} changed"
        return None

    # -- execution -----------------------------------------------------------------------
    def _run(self, entry: _Entry, values: list) -> Any:
        inputs = _source_values(entry.sources, values)
        pending = [v._impl for v in inputs if isinstance(v, Tensor) and not v._impl.is_realized]
        if pending:
            GRAPH.evaluate(pending)
        storages = [v._impl.data if isinstance(v, Tensor) else v for v in inputs]
        if entry.plan is not None:
            results = entry.plan.run(entry.executor, entry.prepared, storages, values, entry.sources)
        else:  # the engine's model (for a new size, perhaps a symbolic one: SizedProgram)
            results = run_prepared(entry.executor, entry.prepared, storages)
        tensors = [_wrap(r, *layout) for r, layout in zip(results, entry.out_layouts, strict=True)]
        for target, k in entry.mutations:
            facade = _facade(target, values)
            new = tensors[k]._impl
            if facade._impl.is_leaf and facade._impl.requires_grad:  # a parameter stays one
                new.requires_grad = True
                new.facade = weakref.ref(facade)
            facade._impl = new
            _through_view(facade)
        for target, k in entry.grads:
            _facade(target, values)._grad = None if k is None else tensors[k]
        return tree_unflatten(entry.out_def, _outputs(entry.out_slots, tensors, values))

    def _record_call(self, entry: _Entry, values: list) -> Any:
        args = [v if isinstance(v, Tensor) else Tensor.from_numpy(v) for v in _source_values(entry.sources, values)]
        tensors = call(entry.prepared, args)
        for target, k in entry.mutations:  # running statistics and other in-place updates
            facade = _facade(target, values)
            facade._install(tensors[k]._impl)
            _through_view(facade)
        return tree_unflatten(entry.out_def, _outputs(entry.out_slots, tensors, values))


def _through_view(facade: Tensor) -> None:
    """`f(x[0])` updating its argument updates x, as eager does."""
    if facade._is_view():
        facade._write_through("an in-place update in a compiled function")


def _outputs(slots: list, tensors: list[Tensor], values: list) -> list:
    """A call's output leaves: the model's outputs, constants, and arguments or captured tensors
    the function returned as themselves (after their in-place updates)."""
    out = []
    for kind, v in slots:
        if kind == "out":
            out.append(tensors[v])
        elif kind == "same":
            out.append(_facade(v[1], values))
        else:
            out.append(v)
    return out


def _source_values(sources: list[_Source], values: list) -> list:
    """This call's model inputs: Tensors (arguments, captured tensors) and NumPy arrays (Python
    numbers, fresh random seeds)."""
    out: list = []
    for s in sources:
        if s.kind == "leaf":
            out.append(values[s.index])
        elif s.kind == "scalar":
            out.append(np.asarray(values[s.index], dtype=_dt.to_numpy_dtype(s.dtype)))
        elif s.kind == "seed":
            out.append(next_seed_array())
        elif s.kind == "grad":
            out.append(_facade(s.target, values)._grad)
        else:
            out.append(s.getter())
    return out


def _facade(target: tuple, values: list) -> Tensor:
    """The tensor an in-place update or `.grad` assignment lands on: an argument, or a captured one."""
    kind, t = target
    return values[t] if kind == "arg" else t


def _identity(target: tuple) -> tuple:
    """A hashable stand-in for a target (Tensors compare elementwise)."""
    kind, t = target
    return (kind, t if kind == "arg" else id(t))


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


def _inside_transform(values: list) -> bool | str:
    """False outside transforms; "grad" when inputs only carry reverse-mode history (a `call`
    op can stand for the function); True under jvp or vmap (the function must run inline)."""
    found: bool | str = False
    for v in values:
        if isinstance(v, Tensor):
            impl = v._impl
            if impl.batch_dims or impl.tangent is not None:
                return True
            if impl.requires_grad and not impl.is_leaf:
                found = "grad"
    return found


_AVAL_FIELDS = ("shape", "dtype", "requires_grad", "device")  # a captured tensor's, as `_captured_source` keeps them


def _wrap(data: Any, spec: Any, shape: tuple, device: Device, ran_on: Device) -> Tensor:
    if ran_on is not device:  # a CPU tensor computed on an accelerator comes back to the host
        data = placed_storage(data, device)
    if spec is not None:  # sharded: one storage per distinct piece
        first = data[0]
        dtype = _dt.from_numpy_dtype(first.dtype) if isinstance(first, np.ndarray) else first.dtype
        return Tensor(TensorImpl(shape, dtype, data=data, device=device, sharding=spec))
    shape = tuple(int(d) for d in data.shape)
    dtype = _dt.from_numpy_dtype(data.dtype) if isinstance(data, np.ndarray) else data.dtype
    return Tensor(TensorImpl(shape, dtype, data=data, device=device))


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


def compile(  # noqa: A001
    fn: Callable | None = None,
    *,
    dynamic_dims: Any = None,
    static_argnums: int | Sequence[int] = (),
    max_cache_size: int = 64,
) -> Any:
    """Compile `fn`: trace it once per input signature into one model, then only run that model.

    Args:
        fn: the function (takes and returns pytrees of Tensors and Python values).
        dynamic_dims: dims that may change size without a recompile, per positional argument
            index (or keyword name): `{0: 0}` (dim 0 of argument 0), `{0: [0, 1]}`, or with names
            `{0: {0: "batch"}, 1: {0: "batch"}}`. Dims given by index share one symbol per index
            (dim 0 of every argument is the same "batch").
        static_argnums: positional arguments passed through as Python values; a new value
            compiles a new model. They must be hashable.
        max_cache_size: models kept for different signatures (least recently used dropped).

    Returns:
        a `CompiledFunction`; `.stats` has hits, misses, compiles and recompile reasons. Set
        `NABLA_LOG_RECOMPILES=1` (or `nabla.set_log_recompiles(True)`) to print each reason.

    Example:
        >>> @nabla.compile
        ... def step(w, x, y, lr):
        ...     g = nabla.grad(loss)(w, x, y)
        ...     return w - lr * g
        >>> for x, y in batches:
        ...     w = step(w, x, y, 0.1)   # one trace and compile, then hits
    """
    if fn is None:
        return lambda f: CompiledFunction(f, dynamic_dims, static_argnums, max_cache_size)
    return CompiledFunction(fn, dynamic_dims, static_argnums, max_cache_size)


__all__ = ["CompileStats", "CompiledFunction", "compile"]
