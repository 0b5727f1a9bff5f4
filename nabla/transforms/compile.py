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

This file has the call (cache lookup, `lazy_call`) and the execution; the signature key is
signature.py's `_Signature`, the trace of a miss compile_trace.py's `_Tracing`.
"""

from __future__ import annotations

import functools
import inspect
import sys
import types
import weakref
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..core.common import dtypes as _dt
from ..core.common.config import CONFIG
from ..core.common.context import autocast_device, autocast_dtype, is_grad_enabled
from ..core.common.devices import Device
from ..core.common.pytree import tree_unflatten
from ..core.graph.engine import GRAPH, RecompileError
from ..core.graph.executors import get_executor_impl, placed_storage
from ..core.graph.symbolic import run_prepared
from ..core.graph.tracing import tracing
from ..core.tensor.impl import TensorImpl
from ..core.tensor.tensor import Tensor
from ..ops.call import call
from ..ops.view import detach
from .compile_trace import _Differentiable, _Entry, _retry_captured, _Source, _Tracing
from .signature import _FastCall, _normalize_dynamic, _Signature, _structure


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


class CompiledFunction(_Tracing, _Signature):
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
        _check_static_argnums(fn, self.static_argnums)
        # A bound method (`nabla.compile(model.forward)`, `nabla.compile(obj.run)`) is its
        # function with the object as a first argument, as a decorated method is (`__get__`):
        # so a module's parameters and attributes, or an object's attributes, are read and
        # guarded on every call instead of baked in as the trace found them.
        self._bound: tuple = ()
        if isinstance(fn, types.MethodType):
            self.fn, self._bound = fn.__func__, (fn.__self__,)
            self.static_argnums = tuple(i + 1 if i >= 0 else i for i in self.static_argnums)
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
        args = self._bound + args
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
            # (grad and autocast modes are part of the key, as torch.compile guards on them)
            entry = self._entry_for(self._entries, _modes(), args, kwargs, values, treedef, leaves, structure)
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
        return _retry_captured(self._lazy_call, self._bound + args, kwargs)

    def _lazy_call(self, args: tuple, kwargs: dict) -> Any:
        values, treedef, leaves = self._flatten(args, kwargs)
        if _inside_transform(values) not in (False, "grad"):
            return self.fn(*args, **kwargs)
        return self._record_call(self._lazy_entry(args, kwargs, values, treedef, leaves), values)

    def _lazy_entry(self, args, kwargs, values, treedef, leaves, structure=None, made=None) -> _Entry:
        # Grad mode is part of the key: a trace under no_grad records nothing to differentiate;
        # so is autocast's dtype: a trace inside `nabla.autocast` holds its casts.
        prefix = _modes()
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
            new = tensors[k]
            if facade._impl.is_leaf and facade._impl.requires_grad:
                # a parameter updated under no_grad (Embedding's max_norm) stays a leaf, as eager
                new = detach(new)
            facade._install(new._impl)
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
            out.append(s.getter())
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


# a captured tensor's, as `_captured_source` (compile_trace.py) keeps them
_AVAL_FIELDS = ("shape", "dtype", "requires_grad", "device")


def _modes() -> tuple:
    """What a trace depends on besides its arguments: grad mode, autocast's dtype and the
    default float dtype (`set_default_dtype`), as torch.compile guards them."""
    return is_grad_enabled(), autocast_dtype(), _dt.DEFAULT_FLOAT, autocast_device()


def _wrap(data: Any, spec: Any, shape: tuple, device: Device, ran_on: Device, dtype: Any) -> Tensor:
    """A program output as a Tensor of its traced dtype (the NumPy executor holds bfloat16 in
    float32 arrays: the storage's dtype would say float32)."""
    if ran_on is not device:  # a CPU tensor computed on an accelerator comes back to the host
        data = placed_storage(data, device)
    if spec is not None:  # sharded: one storage per distinct piece
        return Tensor(TensorImpl(shape, dtype, data=data, device=device, sharding=spec))
    shape = tuple(int(d) for d in data.shape)
    return Tensor(TensorImpl(shape, dtype, data=data, device=device))


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
        For a `nabla_nn.Module` (`model = nabla.compile(model)`, as with torch.compile), the
        module itself after `model.compile(...)`: its forward is compiled, and it keeps
        `train()`/`eval()`, `parameters()` and its `state_dict()` keys.

    Example:
        >>> @nabla.compile
        ... def step(w, x, y, lr):
        ...     g = nabla.grad(loss)(w, x, y)
        ...     return w - lr * g
        >>> for x, y in batches:
        ...     w = step(w, x, y, 0.1)   # one trace and compile, then hits
    """
    if fn is None:
        return lambda f: compile(
            f, dynamic_dims=dynamic_dims, static_argnums=static_argnums, max_cache_size=max_cache_size
        )
    if getattr(type(fn), "_compiles_in_place", False):  # a nabla_nn Module: `model = nabla.compile(model)`
        fn.compile(dynamic_dims=dynamic_dims, static_argnums=static_argnums, max_cache_size=max_cache_size)
        return fn  # (still the Module: train()/eval(), parameters(), state_dict() as before)
    return CompiledFunction(fn, dynamic_dims, static_argnums, max_cache_size)


__all__ = ["CompileStats", "CompiledFunction", "compile"]


def _check_static_argnums(fn: Callable, static_argnums: tuple) -> None:
    """As jax.jit: a static index past fn's positional parameters is an error (it was ignored)."""
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):  # (a builtin or a callable without a signature)
        return
    if any(p.kind is p.VAR_POSITIONAL for p in params):
        return
    n = sum(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in params)
    bad = [i for i in static_argnums if not -n <= i < n]
    if bad:
        raise ValueError(
            f"compile: static_argnums={static_argnums} names argument {bad[0]}, but "
            f"{getattr(fn, '__qualname__', fn)} takes {n} positional argument(s)"
        )
