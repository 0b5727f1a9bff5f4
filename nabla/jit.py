"""torch.jit's names that ported model code carries, accepted so that code runs unchanged.

nabla compiles differently: its tensors are lazy, so everything pending runs as one compiled
graph when a value is read, and `nabla.compile(fn)` (or `module.compile()`) records a function
once and replays it. TorchScript has no counterpart, so `script` and `trace` return their
argument as it is, the decorators `ignore`, `unused` and `export` return the function,
`is_scripting()` / `is_tracing()` are False, `annotate` returns its value and `fork` runs its
function at once (`wait` returns the result).

Example:
    >>> @nabla.jit.script
    ... def gelu(x):
    ...     return x * nabla.sigmoid(1.702 * x)
    >>> model = nabla.jit.script(model)       # the same model, runs as before
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final, TypeVar  # Final: typing.Final, as torch.jit.Final

__all__ = ["Final", "Future", "annotate", "export", "fork", "ignore", "is_scripting", "is_tracing",
           "script", "trace", "unused", "wait"]  # fmt: skip

_T = TypeVar("_T")


def script(obj: _T, optimize: Any = None, _frames_up: int = 0, _rcb: Any = None, example_inputs: Any = None) -> _T:
    """torch.jit.script: returns `obj` (a function or module) unchanged; use `nabla.compile`
    to compile a function.

    Args:
        obj: the function, class or module to "script".
        optimize, _frames_up, _rcb, example_inputs: accepted for torch compatibility, unused.

    Example:
        >>> scripted = nabla.jit.script(model)    # scripted is model
    """
    return obj


def trace(func: _T, example_inputs: Any = None, *args: Any, **kwargs: Any) -> _T:
    """torch.jit.trace: returns `func` unchanged (nabla traces lazily on every call; use
    `nabla.compile(func)` to record it once and replay it).

    Args:
        func: the function or module to "trace".
        example_inputs: accepted for torch compatibility (nothing is run).
        *args, **kwargs: torch's other options (`check_trace`, `strict`, ...), accepted.

    Example:
        >>> traced = nabla.jit.trace(model, (x,))   # traced is model
    """
    return func


def ignore(drop: Any = False, **kwargs: Any) -> Any:
    """torch.jit.ignore: as `@ignore` or `@ignore(drop=True)`, returns the function unchanged.

    Example:
        >>> @nabla.jit.ignore
        ... def debug(x): ...
    """
    if callable(drop):
        return drop
    return lambda fn: fn


def unused(fn: _T) -> _T:
    """torch.jit.unused: returns `fn` unchanged."""
    return fn


def export(fn: _T) -> _T:
    """torch.jit.export: returns `fn` unchanged."""
    return fn


def is_scripting() -> bool:
    """torch.jit.is_scripting: False (nabla never runs code as TorchScript)."""
    return False


def is_tracing() -> bool:
    """torch.jit.is_tracing: False (no TorchScript tracer runs)."""
    return False


def annotate(the_type: Any, the_value: _T) -> _T:
    """torch.jit.annotate: returns `the_value` (the type is for TorchScript's checker).

    Example:
        >>> xs = nabla.jit.annotate(list[nabla.Tensor], [])
    """
    return the_value


class Future:
    """The result of `fork`: already computed; `wait()` returns it."""

    def __init__(self, value: Any) -> None:
        self._value = value

    def wait(self) -> Any:
        return self._value

    def value(self) -> Any:
        return self._value

    def done(self) -> bool:
        return True


def fork(func: Callable[..., Any], *args: Any, **kwargs: Any) -> Future:
    """torch.jit.fork: calls `func(*args, **kwargs)` at once and returns its `Future`.

    Example:
        >>> fut = nabla.jit.fork(lambda a: a * 2, x)
        >>> y = nabla.jit.wait(fut)
    """
    return Future(func(*args, **kwargs))


def wait(future: Future) -> Any:
    """torch.jit.wait: the result of a `fork`."""
    if not isinstance(future, Future):
        raise TypeError(f"wait: expected the Future that nabla.jit.fork returns, got {type(future).__name__}")
    return future.wait()
