"""Elementwise binary ops: add sub mul div pow maximum minimum, and the comparisons.

`binary_operands` is the single place where operands meet: Python scalars become weakly
typed constants, dtypes are promoted with the one table in `dtypes`, and shapes are broadcast
through `broadcast_to` (whose VJP sums cotangents back). The op classes below therefore only
ever see operands of one shape and one dtype.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from max.graph import ops

from ..core.common import dtypes as _dt
from ..core.tensor.dispatch import register
from ..core.tensor.tensor import Tensor
from . import control_flow as _cf
from . import unary as _un
from .base import AVal, Operation
from .cast import cast
from .creation import full, tensor
from .view import broadcast_shapes, broadcast_to

__all__ = [
    "add",
    "div",
    "eq",
    "equal",
    "ge",
    "greater",
    "greater_equal",
    "gt",
    "le",
    "less",
    "less_equal",
    "logical_and",
    "logical_or",
    "lt",
    "maximum",
    "minimum",
    "mul",
    "ne",
    "not_equal",
    "pow",
    "sub",
]

Operand = Tensor | int | float | bool


def binary_operands(op: str, *operands: Any, float_result: bool = False) -> tuple[Tensor, ...]:
    """Scalars to constants, promote dtypes, broadcast shapes. Raises naming `op` and the shapes."""
    tensors = [t if isinstance(t, Tensor) else (tensor(t) if isinstance(t, np.ndarray | list) else t) for t in operands]
    real = [t for t in tensors if isinstance(t, Tensor)]
    if not real:
        raise TypeError(f"{op}: at least one operand must be a Tensor")
    dtype = real[0].dtype
    for t in real[1:]:
        dtype = _dt.promote_types(dtype, t.dtype)
    for s in tensors:
        if not isinstance(s, Tensor):
            if not isinstance(s, bool | int | float | np.generic):
                raise TypeError(f"{op}: unsupported operand of type {type(s).__name__}")
            dtype = _dt.scalar_result_dtype(dtype, s.item() if isinstance(s, np.generic) else s)
    if float_result and not _dt.is_float(dtype):
        dtype = _dt.DEFAULT_FLOAT
    shape = broadcast_shapes(*[t.shape for t in real], op=op)
    out = []
    for t in tensors:
        if isinstance(t, Tensor):
            out.append(broadcast_to(cast(t, dtype), shape))
        else:
            out.append(broadcast_to(full((), t.item() if isinstance(t, np.generic) else t, dtype), shape))
    return tuple(out)


class BinaryOperation(Operation):
    """Two operands of one shape and dtype in, one tensor out."""

    result_dtype: Any = None  # None: same as the operands (comparisons use bool)

    def abstract_eval(self, x: AVal, y: AVal) -> AVal:
        return x[0], self.result_dtype or x[1]


# -- arithmetic --------------------------------------------------------------------------------
class AddOp(BinaryOperation):
    name = "add"

    def kernel(self, x: Any, y: Any) -> Any:
        return ops.add(x, y)

    def numpy_kernel(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        return x + y

    def vjp_rule(self, primals: list, cotangents: list, outputs: list) -> list:
        return [cotangents[0], cotangents[0]]

    def jvp_rule(self, primals: list, tangents: list, outputs: list) -> list:
        return [add(tangents[0], tangents[1])]


class SubOp(BinaryOperation):
    name = "sub"

    def kernel(self, x: Any, y: Any) -> Any:
        return ops.sub(x, y)

    def numpy_kernel(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        return x - y

    def vjp_rule(self, primals: list, cotangents: list, outputs: list) -> list:
        return [cotangents[0], _un.neg(cotangents[0])]

    def jvp_rule(self, primals: list, tangents: list, outputs: list) -> list:
        return [sub(tangents[0], tangents[1])]


class MulOp(BinaryOperation):
    name = "mul"

    def kernel(self, x: Any, y: Any) -> Any:
        return ops.mul(x, y)

    def numpy_kernel(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        return x * y

    def vjp_rule(self, primals: list, cotangents: list, outputs: list) -> list:
        x, y = primals
        g = cotangents[0]
        return [mul(g, y), mul(g, x)]

    def jvp_rule(self, primals: list, tangents: list, outputs: list) -> list:
        x, y = primals
        return [add(mul(tangents[0], y), mul(x, tangents[1]))]


class DivOp(BinaryOperation):
    name = "div"

    def kernel(self, x: Any, y: Any) -> Any:
        return ops.div(x, y)

    def numpy_kernel(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        with np.errstate(divide="ignore", invalid="ignore"):
            return x / y

    def vjp_rule(self, primals: list, cotangents: list, outputs: list) -> list:
        _, y = primals
        g = cotangents[0]
        return [div(g, y), _un.neg(div(mul(g, outputs[0]), y))]

    def jvp_rule(self, primals: list, tangents: list, outputs: list) -> list:
        _, y = primals
        return [div(sub(tangents[0], mul(outputs[0], tangents[1])), y)]


class PowOp(BinaryOperation):
    name = "pow"

    def kernel(self, x: Any, y: Any) -> Any:
        return ops.pow(x, y)

    def numpy_kernel(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.power(x, y)

    def vjp_rule(self, primals: list, cotangents: list, outputs: list) -> list:
        x, y = primals
        g = cotangents[0]
        dx = mul(g, mul(y, pow(x, sub(y, 1))))
        # d/dy x**y = x**y * log(x); defined as 0 where x == 0 (as PyTorch does).
        safe_log = _un.log(where_(equal(x, 0), full((), 1, x.dtype), x))
        return [dx, mul(g, mul(outputs[0], safe_log))]

    def jvp_rule(self, primals: list, tangents: list, outputs: list) -> list:
        x, y = primals
        dx = mul(tangents[0], mul(y, pow(x, sub(y, 1))))
        safe_log = _un.log(where_(equal(x, 0), full((), 1, x.dtype), x))
        return [add(dx, mul(tangents[1], mul(outputs[0], safe_log)))]


class MaximumOp(BinaryOperation):
    name = "maximum"

    def kernel(self, x: Any, y: Any) -> Any:
        return ops.max(x, y)

    def numpy_kernel(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        return np.maximum(x, y)

    def vjp_rule(self, primals: list, cotangents: list, outputs: list) -> list:
        return _select_vjp(greater(primals[0], primals[1]), primals, cotangents[0])

    def jvp_rule(self, primals: list, tangents: list, outputs: list) -> list:
        return [_select_jvp(greater(primals[0], primals[1]), primals, tangents)]


class MinimumOp(BinaryOperation):
    name = "minimum"

    def kernel(self, x: Any, y: Any) -> Any:
        return ops.min(x, y)

    def numpy_kernel(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        return np.minimum(x, y)

    def vjp_rule(self, primals: list, cotangents: list, outputs: list) -> list:
        return _select_vjp(less(primals[0], primals[1]), primals, cotangents[0])

    def jvp_rule(self, primals: list, tangents: list, outputs: list) -> list:
        return [_select_jvp(less(primals[0], primals[1]), primals, tangents)]


def _select_vjp(x_wins: Tensor, primals: list, g: Tensor) -> list:
    """Cotangent routing for maximum/minimum: ties split the gradient evenly (as PyTorch)."""
    tie = equal(primals[0], primals[1])
    share = where_(tie, mul(g, 0.5), g)
    zero = full((), 0, g.dtype)
    return [where_(logical_or(x_wins, tie), share, zero), where_(logical_or(x_wins, tie), where_(tie, share, zero), g)]


def _select_jvp(x_wins: Tensor, primals: list, tangents: list) -> Tensor:
    tie = equal(primals[0], primals[1])
    mean = mul(add(tangents[0], tangents[1]), 0.5)
    return where_(tie, mean, where_(x_wins, tangents[0], tangents[1]))


# -- comparisons and logic ---------------------------------------------------------------------
class ComparisonOperation(BinaryOperation):
    result_dtype = _dt.bool_
    differentiable = False

    def vjp_rule(self, primals: list, cotangents: list, outputs: list) -> list:
        return [None, None]

    def jvp_rule(self, primals: list, tangents: list, outputs: list) -> list:
        return [None]


def _comparison(name: str, max_fn: Any, np_fn: Any, swap: bool = False) -> ComparisonOperation:
    def kernel(self: Any, x: Any, y: Any) -> Any:
        return max_fn(y, x) if swap else max_fn(x, y)

    def numpy_kernel(self: Any, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        return np_fn(x, y)

    cls = type(
        f"{name.title().replace('_', '')}Op",
        (ComparisonOperation,),
        {"name": name, "kernel": kernel, "numpy_kernel": numpy_kernel},
    )
    return cls()


_equal = _comparison("equal", ops.equal, np.equal)
_not_equal = _comparison("not_equal", ops.not_equal, np.not_equal)
_greater = _comparison("greater", ops.greater, np.greater)
_greater_equal = _comparison("greater_equal", ops.greater_equal, np.greater_equal)
_less = _comparison("less", ops.greater, np.less, swap=True)
_less_equal = _comparison("less_equal", ops.greater_equal, np.less_equal, swap=True)
_logical_and = _comparison("logical_and", ops.logical_and, np.logical_and)
_logical_or = _comparison("logical_or", ops.logical_or, np.logical_or)

_add, _sub, _mul, _div, _pow = AddOp(), SubOp(), MulOp(), DivOp(), PowOp()
_maximum, _minimum = MaximumOp(), MinimumOp()


# -- public functions --------------------------------------------------------------------------
@register()
def add(x: Operand, y: Operand) -> Tensor:
    """Elementwise `x + y` with broadcasting."""
    return _add(*binary_operands("add", x, y))


@register()
def sub(x: Operand, y: Operand) -> Tensor:
    """Elementwise `x - y` with broadcasting."""
    return _sub(*binary_operands("sub", x, y))


@register()
def mul(x: Operand, y: Operand) -> Tensor:
    """Elementwise `x * y` with broadcasting."""
    return _mul(*binary_operands("mul", x, y))


@register()
def div(x: Operand, y: Operand) -> Tensor:
    """True division: integer operands give a float result, as in PyTorch."""
    return _div(*binary_operands("div", x, y, float_result=True))


@register()
def pow(x: Operand, y: Operand) -> Tensor:  # noqa: A001  (the op's name)
    """Elementwise `x ** y`."""
    return _pow(*binary_operands("pow", x, y))


@register()
def maximum(x: Operand, y: Operand) -> Tensor:
    return _maximum(*binary_operands("maximum", x, y))


@register()
def minimum(x: Operand, y: Operand) -> Tensor:
    return _minimum(*binary_operands("minimum", x, y))


def _compare(op: Operation, name: str) -> Any:
    def fn(x: Operand, y: Operand) -> Tensor:
        return op(*binary_operands(name, x, y))

    fn.__name__ = name
    fn.__doc__ = f"Elementwise `{name}` comparison; returns a bool tensor."
    return register(name)(fn)


equal = _compare(_equal, "equal")
not_equal = _compare(_not_equal, "not_equal")
greater = _compare(_greater, "greater")
greater_equal = _compare(_greater_equal, "greater_equal")
less = _compare(_less, "less")
less_equal = _compare(_less_equal, "less_equal")
eq, ne, gt, ge, lt, le = equal, not_equal, greater, greater_equal, less, less_equal


def logical_or(x: Operand, y: Operand) -> Tensor:
    return _logical_or(*(cast(t, _dt.bool_) for t in binary_operands("logical_or", x, y)))


def logical_and(x: Operand, y: Operand) -> Tensor:
    return _logical_and(*(cast(t, _dt.bool_) for t in binary_operands("logical_and", x, y)))


def where_(cond: Tensor, x: Operand, y: Operand) -> Tensor:
    return _cf.where(cond, x, y)
