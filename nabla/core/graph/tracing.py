"""Trace mode: what `nabla.compile` switches on while it runs a function on placeholders.

A placeholder is a TensorImpl with neither data nor a recipe: it stands for an input of the
compiled function. While a trace is active
  - promise tensors are not registered as pending (they must never join a later evaluation),
  - evaluating anything that depends on a placeholder raises `ConcretizationError` (a value
    read by `.item()`, `.numpy()`, `bool()`... cannot be known while tracing),
  - random ops register their seed tensors, so every call of the compiled function feeds
    fresh seeds,
  - in-place updates of tensors (`p.sub_(...)`, `x[i] = v`) and `.grad` assignments are
    recorded, so the compiled function can replay them as extra outputs,
  - reads of a `.grad` the function has not assigned yet are recorded: its value before the
    call (None or a tensor, e.g. the gradient `backward()` accumulates into) is an input,
  - code whose ops depend on a Python value it reads (an optimizer's weight decay) registers a
    guard, and the compiled function traces again when that value changes.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

CONCRETIZATION_MESSAGE = (
    "nabla.compile: the function needs the value of a tensor that depends on its inputs "
    "(through .item(), .numpy(), .tolist(), bool(), int(), float(), a boolean mask or a data-dependent "
    "shape), but values are not known while the function is traced. Compute it outside the compiled "
    "function, pass it as a static argument (static_argnums), or use nabla.where / nabla.cond."
)


class ConcretizationError(RuntimeError):
    """A traced (compiled) function asked for the value of a tensor that depends on its inputs."""

    def __init__(self, message: str = CONCRETIZATION_MESSAGE) -> None:
        super().__init__(message)


class TraceState:
    """Side records of one trace."""

    def __init__(self) -> None:
        self.seeds: list[Any] = []  # impls of random-op seed tensors created during the trace
        self.seed_sources: dict[int, Callable[[], Any]] = {}  # id(seed impl) -> its generator's next seed
        self.mutated: dict[int, tuple] = {}  # id(facade) -> (facade, its impl before the first update)
        self.grads: dict[int, tuple] = {}  # id(facade) -> (facade, its .grad before the first assignment)
        self.grad_reads: dict[int, tuple] = {}  # id(facade) -> (facade, its .grad before the call), if read
        self.facades: dict[int, Any] = {}  # id(input impl) -> a Tensor seen holding it
        self.guards: list[tuple] = []  # (getter, its value at trace time, label): see `note_guard`
        self.module_depth = 0  # nabla_nn modules being called: the outermost one registers a guard
        # Impls created before this seq (the caller sets it) are the trace's inputs; one still
        # pending (`model.weight.mul_(2)` before the call) is computed first, not inlined.
        self.start_seq = 0


class _Trace(threading.local):
    def __init__(self) -> None:
        self.state: TraceState | None = None


TRACE = _Trace()


def tracing() -> bool:
    return TRACE.state is not None


class trace_scope:
    """Context manager: run the body in trace mode, returning its TraceState."""

    def __enter__(self) -> TraceState:
        self._prev = TRACE.state
        TRACE.state = TraceState()
        return TRACE.state

    def __exit__(self, *exc: object) -> None:
        TRACE.state = self._prev


def note_seed(impl: Any, source: Callable[[], Any]) -> None:
    """While tracing: `impl` is a random op's seed input, which a compiled function refills
    with `source()` (its generator's next seed) on every call."""
    if TRACE.state is not None:
        TRACE.state.seeds.append(impl)
        TRACE.state.seed_sources[id(impl)] = source


def note_guard(getter: Callable[[], Any], label: str) -> None:
    """While tracing: the ops being recorded depend on the Python value `getter()` returns (it
    must be cheap and compare with ==); the compiled function traces again when it changes,
    and `label` says what changed."""
    if TRACE.state is not None:
        TRACE.state.guards.append((getter, getter(), label))


def note_mutation(facade: Any) -> None:
    """Called before `facade._impl` is replaced."""
    if TRACE.state is not None:
        TRACE.state.mutated.setdefault(id(facade), (facade, facade._impl))


def note_grad_read(facade: Any) -> bool:
    """Called before `facade._grad` is read (whether None or its value); True if what is read
    is the caller's `.grad` (the trace has not assigned it)."""
    state = TRACE.state
    if state is None or id(facade) in state.grads:
        return False
    state.grad_reads.setdefault(id(facade), (facade, facade._grad))
    return True


def note_grad(facade: Any) -> None:
    """Called before `facade._grad` is assigned."""
    if TRACE.state is not None:
        TRACE.state.grads.setdefault(id(facade), (facade, facade._grad))
