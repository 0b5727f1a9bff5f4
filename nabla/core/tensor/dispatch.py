"""The table through which `Tensor` methods reach ops defined in higher layers.

`Tensor.__add__` is defined statically on the class but the `add` op lives in `nabla.ops`,
above the tensor layer. Ops register themselves here when their module is imported, so the
core never imports upward.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


class _OpTable:
    def __getattr__(self, name: str) -> Any:
        raise AttributeError(f"op {name!r} is not registered: import nabla (not only nabla.core) before using tensors")


OPS: Any = _OpTable()


def register(name: str | None = None) -> Callable[[Callable], Callable]:
    """Decorator: make `fn` reachable from Tensor methods as `OPS.<name>`."""

    def deco(fn: Callable) -> Callable:
        setattr(OPS, name or fn.__name__, fn)
        return fn

    return deco


def register_value(name: str, fn: Callable) -> None:
    setattr(OPS, name, fn)
