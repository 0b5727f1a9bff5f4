"""Thread-local modes: `no_grad`, `enable_grad`, `set_grad_enabled`, anomaly detection,
autocast's dtype, and the vmap levels."""

from __future__ import annotations

import functools
import inspect
import threading
from collections.abc import Callable
from typing import Any


class _State(threading.local):
    def __init__(self) -> None:
        self.grad_enabled = True
        self.anomaly = False  # `nabla.autograd.detect_anomaly`
        self.autocast: tuple | None = None  # (dtype, device type) while `nabla.autocast` is active


_STATE = _State()


def is_grad_enabled() -> bool:
    return _STATE.grad_enabled


class set_grad_enabled:
    """Turns gradient recording on or off, as in PyTorch: at once when called
    (`nabla.set_grad_enabled(False)` at the top of an inference script), and back to the
    previous mode at the end of a `with` block or of a decorated function (each step of a
    decorated generator runs in the mode, as torch's)."""

    def __init__(self, mode: bool) -> None:
        self._mode = bool(mode)
        self._prev: list[bool] = []
        self._undo: bool | None = None  # the mode before a plain call took effect
        if type(self) is set_grad_enabled:  # no_grad()/enable_grad() act only when entered
            self._undo, _STATE.grad_enabled = _STATE.grad_enabled, self._mode

    def __enter__(self) -> None:
        if self._undo is not None:  # `with set_grad_enabled(m):` already applied at the call
            self._prev.append(self._undo)
            self._undo = None
            return
        self._prev.append(_STATE.grad_enabled)
        _STATE.grad_enabled = self._mode

    def __exit__(self, *exc: object) -> None:
        _STATE.grad_enabled = self._prev.pop()

    def _fresh(self) -> Any:
        """A new context of this mode, for one call (or generator step) of a decorated function."""
        return set_grad_enabled(self._mode)

    def __call__(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        if self._undo is not None:  # `@set_grad_enabled(m)` applies to the function only
            _STATE.grad_enabled, self._undo = self._undo, None
        return decorated(self._fresh, fn)


def decorated(context: Callable[[], Any], fn: Callable[..., Any]) -> Callable[..., Any]:
    """`fn` run inside a fresh `context()` at each call (each step, for a generator function):
    what a mode used as a decorator does (grad modes, autocast, detect_anomaly)."""
    if inspect.isgeneratorfunction(fn):
        return _generator_in(context, fn)

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        with context():
            return fn(*args, **kwargs)

    return wrapper


def _generator_in(context: Callable[[], Any], fn: Callable[..., Any]) -> Callable[..., Any]:
    """`fn`, a generator function, with each of its steps (start, send, throw, close) run
    inside a fresh `context()`: the caller's code between steps keeps its own mode."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        gen = fn(*args, **kwargs)
        try:
            with context():
                response = gen.send(None)
            while True:
                try:
                    request = yield response
                except GeneratorExit:
                    with context():
                        gen.close()
                    raise
                except BaseException as exc:  # noqa: BLE001 (passed into the generator, as torch)
                    with context():
                        response = gen.throw(exc)
                else:
                    with context():
                        response = gen.send(request)
        except StopIteration as stop:
            return stop.value

    return wrapper


class _NoParamDecorator:
    """`@no_grad` without parentheses decorates the function, as torch's."""

    def __new__(cls, orig_func: Callable[..., Any] | None = None) -> Any:
        if orig_func is None:
            return super().__new__(cls)
        return cls()(orig_func)


class no_grad(_NoParamDecorator, set_grad_enabled):
    """Disable gradient recording, like `torch.no_grad()` (a context manager, or a decorator
    with or without parentheses).

    Example:
        >>> with nabla.no_grad():
        ...     y = x * 2   # y.requires_grad is False
    """

    def __init__(self) -> None:
        super().__init__(False)


class enable_grad(_NoParamDecorator, set_grad_enabled):
    """Re-enable gradient recording inside a `no_grad` block."""

    def __init__(self) -> None:
        super().__init__(True)


def anomaly_enabled() -> bool:
    """Whether `nabla.autograd.detect_anomaly` is on: every backward rule's result is then
    computed and checked for nan at once (a debugging mode: no replay, one sync per op)."""
    return _STATE.anomaly


def set_anomaly_enabled(mode: bool) -> bool:
    previous, _STATE.anomaly = _STATE.anomaly, bool(mode)
    return previous


def autocast_dtype() -> Any:
    """The dtype an active `nabla.autocast` region runs matmuls and convolutions in (None
    outside one): the ops that read it cast their floating inputs (see `nabla/amp.py`)."""
    mode = _STATE.autocast
    return None if mode is None else mode[0]


def autocast_device() -> str | None:
    """The device type of the active `nabla.autocast` region ("cpu" or "cuda"), or None."""
    mode = _STATE.autocast
    return None if mode is None else mode[1]


def set_autocast(mode: tuple | None) -> tuple | None:
    """Enter (dtype, device type) or leave (None) autocast; returns the previous mode."""
    previous, _STATE.autocast = _STATE.autocast, mode
    return previous


class _VmapState(threading.local):
    def __init__(self) -> None:
        self.sizes: list[int] = []
        self.randomness: list[str] = []


_VMAP = _VmapState()


def vmap_sizes() -> tuple[int, ...]:
    """The sizes of the active vmap levels, outermost first. Level k (1-based) is physical
    dimension k-1 of every tensor batched over it: `batch_dims == k` means levels 1..k."""
    return tuple(_VMAP.sizes)


def vmap_depth() -> int:
    return len(_VMAP.sizes)


def vmap_randomness() -> tuple[str, ...]:
    """Per active vmap level: how random ops behave ("different", "same" or "error")."""
    return tuple(_VMAP.randomness)


class vmap_level:
    """Context manager entered by `vmap` for the duration of one batched call."""

    def __init__(self, size: int, randomness: str = "different") -> None:
        self.size = size
        self.randomness = randomness

    def __enter__(self) -> int:
        _VMAP.sizes.append(self.size)
        _VMAP.randomness.append(self.randomness)
        return len(_VMAP.sizes)

    def __exit__(self, *exc: object) -> None:
        _VMAP.sizes.pop()
        _VMAP.randomness.pop()
