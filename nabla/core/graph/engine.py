"""ComputeGraph (`GRAPH`): turns pending promise tensors into data, through the model cache.

evaluate(targets):
  1. collect    targets + every live pending tensor (tracked weakly), in creation order
  2. key        one walk of the trace gives the structural key and the input storages
  3. hit        run the cached model on the inputs: no Graph, no MLIR, no compile
  4. miss       Program -> executor.prepare -> cache (LRU, `set_cache_limit`)
                  auto: load a stored model from disk, else run on NumPy now and compile in
                        the background (tiered.py)
                  max:  load a stored model from disk, else build the graph and compile now
                symbolic: the same ops as an earlier evaluation on inputs of another size
                  (a partial last batch): one model with a symbolic dim serves both sizes
                  and every later size whose trace is its instance (symbolic.py)
  5. store      write outputs into the targets, drop recipes nobody needs any more
"""

from __future__ import annotations

import operator
import sys
import threading
import weakref
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

from ..common import dtypes as _dt
from ..common.config import CONFIG
from ..common.devices import CPU_DEVICE
from . import artifacts
from .executors import (
    Executor,
    ExecutorStats,
    all_executors,
    get_executor_impl,
    input_buffers,
    lowered_ops,
    placed_storage,
)
from .program import collect, describe_key_difference
from .symbolic import DynamicPlan, SizedProgram, SymbolicProgramError, family_key, make_symbolic_pair, run_prepared
from .tiered import TieredExecutor
from .tracing import TRACE, tracing


@dataclass
class CacheInfo:
    """Counters that make model reuse visible.

    Attributes:
        compiles: MAX compilations started (the auto executor compiles in the background).
        loads: compiled models read from the on-disk model store instead of compiled.
        hits: evaluations answered by a cached model.
        misses: evaluations that had to build a new model.
        graph_builds: times a trace was replayed into an executable program.
        executions: models run.
        tier0_executions: runs on NumPy while the compiled model was not ready (auto).
        per_executor: the same counters split by executor name.
        cached_models: models currently held in memory.
        compiling: background compiles queued or running.
    """

    compiles: int
    loads: int
    hits: int
    misses: int
    graph_builds: int
    executions: int
    tier0_executions: int
    per_executor: dict[str, ExecutorStats] = field(default_factory=dict)
    cached_models: int = 0
    compiling: int = 0


@dataclass
class CachedModel:
    """One entry of the in-memory model cache (see `cached_models()`).

    Attributes:
        executor: the executor that built it.
        ops: number of ops in its program.
        inputs: its input types, as (dtype, shape).
        state: "ready" (numpy, max), or for auto "tier0", "compiling", "compiled", "failed".
        runs: evaluations it answered (auto only; 0 elsewhere).
    """

    executor: str
    ops: int
    inputs: list
    state: str
    runs: int


class RecompileError(RuntimeError):
    """Raised inside `nabla.no_recompile()` when an evaluation would need a new model."""


class ComputeGraph:
    def __init__(self) -> None:
        self.epoch = 0  # evaluations so far
        self.host_reads = 0  # tensor values read into Python so far (`Tensor.numpy` and all that use it)
        # id(facade) -> weakref. Plain refs without callbacks (cheap on the per-op hot path);
        # dead and realized entries are pruned when pending tensors are collected. Keyed by id:
        # a WeakSet would compare facades with Tensor.__eq__, which is elementwise.
        self._pending: dict[int, weakref.ref] = {}
        self.sweep_min = 50_000  # pending entries that trigger a sweep of the dead ones (at least)
        self._sweep_at = self.sweep_min
        self._cache: OrderedDict = OrderedDict()  # (executor name, key) -> (program, prepared), LRU order
        self._recent: tuple | None = None  # (cache key, entry) of the most recently used model
        self._families: OrderedDict = OrderedDict()  # (executor name, family_key) -> _Family, LRU order
        self._no_recompile_depth = 0
        self._lock = threading.RLock()
        self.max_cache_size = CONFIG.model_cache_size

    # -- pending promise tensors ------------------------------------------------------------
    def add_unrealized(self, tensor: Any) -> None:
        """Track a user-visible promise tensor weakly: it is computed with the next evaluation
        unless the user drops it first."""
        if TRACE.state is None:  # not tracing (inlined: this runs for every op output)
            pending = self._pending
            pending[id(tensor)] = weakref.ref(tensor)
            if len(pending) > self._sweep_at:  # a long run of ops without evaluation: drop dead entries
                self.pending_impls()
                # next sweep when the table has doubled again: live entries stay (a long RNN's
                # backward holds them all), and a sweep per op would cost O(n^2)
                self._sweep_at = max(self.sweep_min, 2 * len(pending))

    def pending_impls(self) -> list:
        pending = self._pending
        live, dead = [], []
        for key, ref in list(pending.items()):
            t = ref()
            if t is None or t._impl.data is not None:
                dead.append(key)
            else:
                live.append(t._impl)
        for key in dead:
            del pending[key]
        return live

    # -- evaluation -------------------------------------------------------------------------
    def evaluate(self, impls: list) -> None:
        with self._lock:
            wanted = dict.fromkeys(i for i in impls if i.data is None)  # impls hash by identity
            if not wanted:
                return
            requested = len(wanted)
            if not tracing():  # while tracing, pending tensors may depend on placeholders
                wanted.update(dict.fromkeys(self.pending_impls()))
            try:
                self._evaluate(wanted)
            except Exception:
                if len(wanted) == requested:
                    raise
                # A pending tensor nobody asked for may be the one that fails (an index out of
                # range): it must not break every later evaluation. The others leave the pending
                # set (they stay recipes: reading one computes it, or raises its own error), and
                # the requested tensors are computed alone.
                extra = set(list(wanted)[requested:])
                for key, ref in list(self._pending.items()):
                    t = ref()
                    if t is not None and t._impl in extra:
                        del self._pending[key]
                self._evaluate(dict.fromkeys(list(wanted)[:requested]))

    def evaluate_on_host(self, impls: list) -> None:
        """Compute these impls, and nothing else pending, on the NumPy executor now: small values
        made outside a step (an optimizer's bfloat16 initial state, a cast) that must neither
        join the step's program nor cost a compile."""
        with self._lock:
            wanted = dict.fromkeys(i for i in impls if i.data is None)
            if wanted:
                self._evaluate(wanted, host=True, split=False)

    def _evaluate(self, wanted: dict, host: bool = False, split: bool = True) -> None:
        """Compute `wanted` (impls) as one program (`host`: on the NumPy executor; `split`:
        data-free targets of a new program may be computed first, see below)."""
        targets = sorted(wanted, key=_by_seq)
        collected = collect(targets)
        executor = get_executor_impl("numpy" if host else CONFIG.executor)
        if executor.makes_max_models and all(n.op.host_constant for n in collected.nodes):
            # Fills, ranges and random draws evaluated on their own (parameter init) are
            # computed on the host: compiling a model for them would cost seconds.
            executor = get_executor_impl("numpy")
        prepared = self._lookup_or_prepare(executor, collected, split_constants=split and not host)
        if isinstance(prepared, _Constants):
            # A new program whose targets include values that read no data (a buffer
            # `nb.tril(nb.ones(T, T))` made in __init__, a constant made before the loop): they
            # are computed first, on the host. Otherwise the first training step would fold
            # them in and the next read them as inputs: two programs, two compiles, for one loop.
            self._evaluate(dict.fromkeys(prepared.targets), host=True)
            self._evaluate(dict.fromkeys(t for t in targets if t.data is None), split=False)
            return
        inputs = collected.inputs
        device = collected.device
        data = input_buffers(inputs, device) if executor.makes_max_models else [i.data for i in inputs]
        results = run_prepared(executor, prepared, data)
        executor.stats.executions += 1
        if device is not CPU_DEVICE:  # CPU tensors computed with an accelerator's come back to the host
            results = [placed_storage(r, t.device) for r, t in zip(results, collected.targets, strict=True)]
        for impl, data in zip(collected.targets, results, strict=True):
            impl.set_realized(data)
        self.epoch += 1

    def prepare(self, executor: Executor, collected: Any, *, hot: bool = False) -> Any:
        """The runnable model for a collected program: from the cache, or built now. `hot`
        (compiled functions): the auto executor starts compiling at once."""
        with self._lock:
            return self._lookup_or_prepare(executor, collected, hot)

    def _lookup_or_prepare(
        self, executor: Executor, collected: Any, hot: bool = False, split_constants: bool = False
    ) -> Any:
        cache, cache_key = self._cache, (executor.name, collected.key)
        stats = executor.stats
        recent = self._recent
        # A training loop evaluates one key every step. Compared with the last key used (no
        # hashing: dtypes hash in Python, ~80 a step, twice with the LRU move), that entry is
        # found and is already the most recent.
        if recent is not None and recent[0] == cache_key:
            stats.hits += 1
            return recent[1][1]
        entry = cache.get(cache_key)
        if entry is not None:
            cache.move_to_end(cache_key)
            self._recent = (cache_key, entry)
            stats.hits += 1
            return entry[1]
        if split_constants and len(collected.targets) > 1:  # (a miss: `_evaluate` splits them off)
            constants = _constant_targets(collected)
            if constants and len(constants) < len(collected.targets):
                return _Constants(constants)
        symbolic = executor.makes_max_models and CONFIG.auto_dynamic
        family = self._family(executor, collected) if symbolic else None
        program = collected.to_program()
        if self._no_recompile_depth and not (family and family.plan and family.plan.matches(program)):
            raise RecompileError(self._explain_miss(executor, collected.key))
        stats.misses += 1
        stats.graph_builds += 1
        name = None
        if executor.makes_max_models:
            name = artifacts.digest(collected.key, lowered_ops((n.op, n.adapted_kwargs) for n in collected.nodes))
        prepared = self._sized(executor, family, program, name, hot) if family else None
        if prepared is None:
            prepared = executor.prepare(program, name=name, hot=hot)
        cache[cache_key] = (program, prepared)
        self._evict()
        return prepared

    def _family(self, executor: Executor, collected: Any) -> _Family:
        """The record of the evaluations that ran these ops at other sizes (a new one: this is
        the first)."""
        fkey = (executor.name, family_key(collected))
        family = self._families.get(fkey)
        if family is None:
            family = self._families[fkey] = _Family()
            while len(self._families) > self.max_cache_size:
                self._families.popitem(last=False)
        else:
            self._families.move_to_end(fkey)
        return family

    def _sized(self, executor: Executor, family: _Family, program: Any, name: Any, hot: bool) -> Any:
        """A symbolic model run at this evaluation's size, or None (compile this size): the
        first size of a family compiles its own model; the second merges the two traces into
        one symbolic model; later sizes use it when their trace is its instance."""
        if family.first is None:
            family.first = program
            return None
        if family.plan is None and family.reason is None:
            try:
                plan = make_symbolic_pair(family.first, program)
                family.prepared = plan.prepare(executor, hot=hot)
                family.plan = plan
            except SymbolicProgramError as err:
                family.reason = str(err)
                if CONFIG.log_recompiles:
                    print(f"nabla: a new input size compiles a model of its own: {err}", file=sys.stderr)
        if family.plan is None or not family.plan.matches(program):
            return None
        return SizedProgram(family.prepared, program, name)

    def _evict(self) -> None:
        """Drop the least recently used models beyond `max_cache_size`."""
        while len(self._cache) > self.max_cache_size:
            self._cache.popitem(last=False)
            self._recent = None

    def _explain_miss(self, executor: Executor, key: tuple) -> str:
        cache = [k for name, k in self._cache if name == executor.name]
        what = "compile a new MAX model" if executor.makes_max_models else "build a new program"
        if not cache:
            return f"no_recompile: this evaluation would {what}; nothing is cached yet"

        def ops_of(k: tuple) -> list:
            return [node[0][0] for node in k[0]]

        new_ops = ops_of(key)

        def similarity(old: tuple) -> tuple:
            # Same op sequence first (shape arguments differ when only shapes changed), then
            # the longest common prefix of ops, then the closest number of ops.
            old_ops = ops_of(old)
            prefix = next(
                (i for i, (a, b) in enumerate(zip(old_ops, new_ops, strict=False)) if a != b),
                min(len(old_ops), len(new_ops)),
            )
            return (old_ops == new_ops, prefix, -abs(len(old_ops) - len(new_ops)))

        closest = max(cache, key=similarity)
        return (
            f"no_recompile: this evaluation would {what}; closest cached model differs in "
            f"{describe_key_difference(key, closest)}"
        )

    # -- counters and the cache --------------------------------------------------------------
    def cache_info(self) -> CacheInfo:
        per = {e.name: ExecutorStats(**vars(e.stats)) for e in all_executors() if e.stats.used()}
        total = {f: sum(getattr(s, f) for s in per.values()) for f in vars(ExecutorStats())}
        return CacheInfo(
            **total,
            per_executor=per,
            cached_models=len(self._cache),
            compiling=_auto().service.pending(),
        )

    def reset_counters(self) -> None:
        for executor in all_executors():
            executor.stats = ExecutorStats()

    def clear_cache(self) -> None:
        self._cache.clear()
        self._recent = None
        self._families.clear()

    def set_cache_limit(self, models: int) -> None:
        if int(models) < 1:
            raise ValueError(f"set_cache_limit: models must be at least 1, got {models}")
        with self._lock:
            self.max_cache_size = int(models)
            self._evict()

    def cached_models(self) -> list[CachedModel]:
        return [
            CachedModel(
                name,
                len(program.steps),
                [(d, tuple(s)) for d, s in program.input_types],
                getattr(prepared, "state", "ready"),
                getattr(prepared, "runs", 0),
            )
            for (name, _), (program, prepared) in self._cache.items()
        ]


@dataclass
class _Family:
    """Evaluations of one program at different input sizes (see `ComputeGraph._sized`)."""

    first: Any = None  # the Program of the first size
    plan: DynamicPlan | None = None  # the symbolic program, once a second size merged
    prepared: Any = None  # its model
    reason: str | None = None  # why the sizes could not share a model


GRAPH = ComputeGraph()


@dataclass
class _Constants:
    """`_lookup_or_prepare`'s answer for a new program with data-free targets to split off."""

    targets: list


def _constant_targets(collected: Any) -> list:
    """The targets computed from no data: every input they (transitively) read is a random
    op's seed. (Walked only when a program is new, never on a cache hit.)"""
    data = {
        slot
        for slot, impl in zip(collected.input_slots, collected.inputs, strict=True)
        if not (impl.dtype == _dt.uint64 and impl.physical_shape == (1,))
    }
    for args, outs in zip(collected.node_arg_slots, collected.node_out_slots, strict=True):
        if any(a in data for a in args):
            data.update(outs)
    return [t for t, slot in zip(collected.targets, collected.output_slots, strict=True) if slot not in data]


_by_seq = operator.attrgetter("seq")


def _auto() -> TieredExecutor:
    return get_executor_impl("auto")


class no_recompile:
    """Context manager that raises `RecompileError` if anything inside needs a new model.

    The message names how the new evaluation differs from the closest cached one, e.g.
    `input 0: shape (32, 784) -> (16, 784)`.

    Example:
        >>> step(x0)                   # warm-up compiles once
        >>> with nabla.no_recompile():
        ...     for x in batches:
        ...         step(x)            # must hit the cache every time
    """

    def __enter__(self) -> no_recompile:
        GRAPH._no_recompile_depth += 1
        return self

    def __exit__(self, *exc: object) -> None:
        GRAPH._no_recompile_depth -= 1


def cache_info() -> CacheInfo:
    """Counters of compiles, disk loads, cache hits and misses, graph builds and executions."""
    return GRAPH.cache_info()


def cached_models() -> list[CachedModel]:
    """The compiled models held in memory, least recently used first."""
    return GRAPH.cached_models()


def set_cache_limit(models: int) -> None:
    """Keep at most `models` compiled models in memory; the least recently used go first."""
    GRAPH.set_cache_limit(models)


def wait_for_compiles(timeout: float | None = None) -> bool:
    """Block until every background compile has finished (benchmarks, tests).

    Models switch to their compiled tier at their next evaluation. Returns False if `timeout`
    seconds passed first.
    """
    return _auto().service.wait(timeout)


def model_store_info() -> artifacts.StoreInfo:
    """Where compiled models are stored on disk, how many, and their size."""
    return artifacts.STORE.info()


def clear_model_store() -> int:
    """Delete every compiled model stored on disk; returns how many were removed."""
    return artifacts.STORE.clear()


def set_model_store(directory: str | None = None, *, enabled: bool = True) -> None:
    """Store compiled models under `directory/models` (None: `NABLA_CACHE_DIR` or
    `~/.cache/nabla`), or stop reading and writing them (`enabled=False`)."""
    artifacts.STORE.set_directory(directory)
    artifacts.STORE.enabled = bool(enabled)
