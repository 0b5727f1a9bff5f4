"""ComputeGraph (`GRAPH`): turns pending promise tensors into data, through the model cache.

evaluate(targets):
  1. collect    targets + every live pending tensor (tracked weakly), in creation order
  2. key        one walk of the trace gives the structural key and the input storages
  3. hit        run the cached model on the inputs: no Graph, no MLIR, no compile
  4. miss       Program -> executor.prepare (MAX: build graph in a Module, compile) -> cache
  5. store      write outputs into the targets, drop recipes nobody needs any more
"""

from __future__ import annotations

import threading
import weakref
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

from ..common.config import CONFIG
from .executors import Executor, get_executor_impl
from .program import collect, describe_key_difference
from .tracing import tracing


@dataclass
class ExecutorStats:
    compiles: int = 0
    hits: int = 0
    misses: int = 0
    graph_builds: int = 0
    executions: int = 0


@dataclass
class CacheInfo:
    """Counters that make model reuse visible.

    Attributes:
        compiles: MAX compilations performed.
        hits: evaluations answered by a cached model.
        misses: evaluations that had to build a new model (a compile on MAX).
        graph_builds: times a trace was replayed into an executable program or MAX graph.
        executions: models run.
        per_executor: the same counters split by executor name.
        cached_models: models currently held in memory.
    """

    compiles: int
    hits: int
    misses: int
    graph_builds: int
    executions: int
    per_executor: dict[str, ExecutorStats] = field(default_factory=dict)
    cached_models: int = 0


class RecompileError(RuntimeError):
    """Raised inside `nabla.no_recompile()` when an evaluation would need a new model."""


class ComputeGraph:
    def __init__(self) -> None:
        self.epoch = 0
        # id(facade) -> weakref. Plain refs without callbacks (cheap on the per-op hot path);
        # dead and realized entries are pruned when pending tensors are collected. Keyed by id:
        # a WeakSet would compare facades with Tensor.__eq__, which is elementwise.
        self._pending: dict[int, weakref.ref] = {}
        self._caches: dict[str, OrderedDict] = {}
        self._stats: dict[str, ExecutorStats] = {}
        self._no_recompile_depth = 0
        self._lock = threading.RLock()
        self.max_cache_size = 4096

    # -- pending promise tensors ------------------------------------------------------------
    def add_unrealized(self, tensor: Any) -> None:
        """Track a user-visible promise tensor weakly: it is computed with the next evaluation
        unless the user drops it first."""
        if not tracing():
            pending = self._pending
            pending[id(tensor)] = weakref.ref(tensor)
            if len(pending) > 50_000:  # a long run of ops without evaluation: drop dead entries
                self.pending_impls()

    def pending_impls(self) -> list:
        live, dead = [], []
        for key, ref in list(self._pending.items()):
            t = ref()
            if t is None or t._impl.is_realized:
                dead.append(key)
            else:
                live.append(t._impl)
        for key in dead:
            del self._pending[key]
        return live

    # -- evaluation -------------------------------------------------------------------------
    def evaluate(self, impls: list) -> None:
        with self._lock:
            wanted = {id(i): i for i in impls if not i.is_realized}
            if not wanted:
                return
            if not tracing():  # while tracing, pending tensors may depend on placeholders
                for impl in self.pending_impls():
                    wanted.setdefault(id(impl), impl)
            targets = sorted(wanted.values(), key=lambda i: i.seq)
            collected = collect(targets)
            executor = get_executor_impl(CONFIG.executor)
            if executor.compiles and all(n.op.host_constant for n in collected.nodes):
                # Fills, ranges and random draws evaluated on their own (parameter init) are
                # computed on the host: compiling a model for them would cost seconds.
                executor = get_executor_impl("numpy")
            prepared = self._lookup_or_prepare(executor, collected)
            stats = self._stats[executor.name]
            results = executor.run(prepared, [i.data for i in collected.inputs])
            stats.executions += 1
            for impl, data in zip(collected.targets, results, strict=True):
                impl.set_realized(data)
            self.epoch += 1

    def prepare(self, executor: Executor, collected: Any) -> Any:
        """The runnable model for a collected program: from the cache, or built (compiled) now."""
        with self._lock:
            return self._lookup_or_prepare(executor, collected)

    def _lookup_or_prepare(self, executor: Executor, collected: Any) -> Any:
        cache = self._caches.setdefault(executor.name, OrderedDict())
        stats = self._stats.setdefault(executor.name, ExecutorStats())
        prepared = cache.get(collected.key)
        if prepared is not None:
            cache.move_to_end(collected.key)
            stats.hits += 1
            return prepared
        if self._no_recompile_depth:
            raise RecompileError(self._explain_miss(executor, collected.key))
        stats.misses += 1
        program = collected.to_program()
        stats.graph_builds += 1
        prepared = executor.prepare(program)
        if executor.compiles:
            stats.compiles += 1
        cache[collected.key] = prepared
        while len(cache) > self.max_cache_size:
            cache.popitem(last=False)
        return prepared

    def _explain_miss(self, executor: Executor, key: tuple) -> str:
        cache = self._caches.get(executor.name) or {}
        what = "compile a new MAX model" if executor.compiles else "build a new program"
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

    # -- counters ---------------------------------------------------------------------------
    def cache_info(self) -> CacheInfo:
        per = {name: ExecutorStats(**vars(s)) for name, s in self._stats.items()}
        total = {f: sum(getattr(s, f) for s in per.values()) for f in vars(ExecutorStats())}
        return CacheInfo(**total, per_executor=per, cached_models=sum(len(c) for c in self._caches.values()))

    def reset_counters(self) -> None:
        self._stats.clear()

    def clear_cache(self) -> None:
        self._caches.clear()


GRAPH = ComputeGraph()


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
    """Counters of compiles, cache hits and misses, graph builds and executions."""
    return GRAPH.cache_info()
