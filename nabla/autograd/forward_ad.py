"""torch.autograd.forward_ad on nabla tensors: dual tensors made by hand inside `dual_level()`,
carried by the same forward-mode machinery as `nabla.jvp` (a tangent per jvp level on each
tensor, pushed through every op's jvp rule).

Within nabla: tensors computed inside the level keep its tangent after the level exits (their
values are right; later ops on them also push that tangent); the tensors made by `make_dual`,
the ones passed to `unpack_dual` and those between them in an autodiff trace are cleared, so
`unpack_dual` of them afterwards gives no tangent, as in torch. `nabla.func.jvp` frees every
tangent it made and is the cheaper choice for a function.

Example:
    >>> import nabla.autograd.forward_ad as fwAD
    >>> with fwAD.dual_level():
    ...     y = nabla.sin(fwAD.make_dual(x, nabla.ones_like(x)))
    ...     jvp = fwAD.unpack_dual(y).tangent          # cos(x)
"""

from __future__ import annotations

import functools
import threading
import weakref
from types import TracebackType
from typing import Any, NamedTuple

from ..core.common import dtypes as _dt
from ..core.tensor import Tensor
from ..ops.base import new_jvp_level
from ..ops.view import identity
from ..transforms.grad import _clear_tangents

__all__ = ["UnpackedDualTensor", "dual_level", "enter_dual_level", "exit_dual_level", "make_dual", "unpack_dual"]


class _Levels(threading.local):
    """The open dual level (torch allows one at a time) and the tensors to clear on exit."""

    def __init__(self) -> None:
        self.level: int | None = None
        self.touched: list[weakref.ref] = []  # (weak: the level does not keep tensors alive)


_STATE = _Levels()


class UnpackedDualTensor(NamedTuple):
    """`unpack_dual`'s result: the primal (without this level's tangent) and the tangent (or None)."""

    primal: Tensor
    tangent: Tensor | None


def enter_dual_level() -> int:
    """Open a forward-AD level and return it (torch: one at a time; prefer `dual_level()`).

    Example:
        >>> level = fwAD.enter_dual_level(); ...; fwAD.exit_dual_level()
    """
    if _STATE.level is not None:
        raise RuntimeError("Nested forward mode AD is not supported at the moment")
    _STATE.level = new_jvp_level()  # (above any jvp running now: its tangents nest inside ours)
    return _STATE.level


def exit_dual_level(*, level: int | None = None) -> None:
    """Close the open level: tensors made dual in it, and those unpacked, lose its tangent.

    Example:
        >>> fwAD.exit_dual_level()
    """
    current = _STATE.level
    if current is None or (level is not None and level != current):
        raise RuntimeError(
            f"Trying to exit a forward AD level that was not the last one that was created "
            f"(got level={level}, open level {current}). This is not supported."
        )
    refs, _STATE.level, _STATE.touched = _STATE.touched, None, []
    touched = [t for t in (r() for r in refs) if t is not None]
    if touched:
        _clear_tangents([t._impl for t in touched], min(t._impl.seq for t in touched), current)
    for t in touched:  # (untraced tensors have no trace to walk: clear them directly)
        _drop_tangent(t, current)


class dual_level:  # noqa: N801 (torch's name)
    """Context manager (and decorator) for a forward-AD level: `make_dual` and `unpack_dual`
    work inside it.

    Example:
        >>> with fwAD.dual_level():
        ...     out = fwAD.unpack_dual(f(fwAD.make_dual(x, v))).tangent
    """

    def __enter__(self) -> int:
        return enter_dual_level()

    def __exit__(self, kind: type | None, value: BaseException | None, tb: TracebackType | None) -> None:
        exit_dual_level()

    def __call__(self, fn: Any) -> Any:
        @functools.wraps(fn)
        def wrapped(*args: Any, **kwargs: Any) -> Any:
            with dual_level():
                return fn(*args, **kwargs)

        return wrapped


def _level(level: int | None, where: str) -> int | None:
    if level is not None and level != _STATE.level:
        raise RuntimeError(f"{where}: level={level} is not the open dual level ({_STATE.level})")
    return _STATE.level


def make_dual(tensor: Tensor, tangent: Tensor, *, level: int | None = None) -> Tensor:
    """A new tensor with `tensor`'s value (and autodiff history) carrying `tangent` at the open
    level; ops on it carry the tangent forward (`tensor` itself is left as it is).

    Args:
        tensor: the primal, a floating-point Tensor.
        tangent: its direction, same shape, floating point (cast to the primal's dtype).
        level: the open level (the default).

    Example:
        >>> with fwAD.dual_level():
        ...     d = fwAD.make_dual(x, nabla.ones_like(x))
    """
    lv = _level(level, "make_dual")
    if lv is None:
        raise RuntimeError(
            "Trying to create a dual Tensor for forward AD but no level exists, make sure to enter_dual_level() first."
        )
    for name, t in (("primal", tensor), ("tangent", tangent)):
        if not isinstance(t, Tensor):
            raise TypeError(f"make_dual: expected the {name} to be a Tensor, got {type(t).__name__}")
        if not _dt.is_float(t.dtype):
            raise ValueError(f"Expected {name} to be floating point or complex, but got: {t.dtype.name}")
    if tangent.shape != tensor.shape:
        raise RuntimeError(
            "Trying to set a forward gradient that has a different size than that of the original Tensor, "
            f"this is not supported. Tensor is of size {list(tensor.shape)} while the given forward gradient "
            f"is of size {list(tangent.shape)}."
        )
    dual = identity(tensor)  # carries the tangents of jvps around this level, if any
    tangent = tangent if tangent.dtype == tensor.dtype else tangent.to(tensor.dtype)
    dual._impl.tangent = {**(dual._impl.tangent or {}), lv: tangent._impl}
    _STATE.touched.append(weakref.ref(dual))
    return dual


def unpack_dual(tensor: Tensor, *, level: int | None = None) -> UnpackedDualTensor:
    """`(primal, tangent)` of a dual tensor at the open level: the primal is a copy without that
    tangent (autodiff history kept), the tangent None for a tensor without one (or outside a level).

    Args:
        tensor: any Tensor.
        level: the open level (the default).

    Example:
        >>> primal, tangent = fwAD.unpack_dual(y)
    """
    lv = _level(level, "unpack_dual")
    tangents = tensor._impl.tangent if isinstance(tensor, Tensor) else None
    if lv is None or not tangents or lv not in tangents:
        return UnpackedDualTensor(tensor, None)
    _STATE.touched.append(weakref.ref(tensor))
    primal = identity(tensor)
    _drop_tangent(primal, lv)
    return UnpackedDualTensor(primal, Tensor(tangents[lv]))


def _drop_tangent(t: Tensor, level: int) -> None:
    tangents = t._impl.tangent
    if tangents and level in tangents:
        del tangents[level]
        t._impl.tangent = tangents or None
