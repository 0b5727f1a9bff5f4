"""Elementwise unary ops: neg exp log sqrt tanh relu sigmoid.

Each class holds the op's MAX lowering, NumPy kernel, VJP and JVP. Rules reuse the forward
output where that is cheaper (exp, sqrt, tanh, sigmoid), as JAX's lax does.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from max.graph import ops

from ..core.common import dtypes as _dt
from ..core.tensor.dispatch import register
from ..core.tensor.tensor import Tensor
from . import binary as _bin
from .base import AVal, Operation

__all__ = ["exp", "log", "neg", "negative", "relu", "sigmoid", "sqrt", "tanh"]


class UnaryOperation(Operation):
    """One tensor in, one tensor of the same shape and dtype out."""

    float_only = True

    def abstract_eval(self, x: AVal) -> AVal:
        if self.float_only and not _dt.is_float(x[1]):
            raise TypeError(f"{self.name}: expected a floating-point tensor, got dtype {x[1].name}")
        return x

    def jvp_rule(self, primals: list, tangents: list, outputs: list) -> list:
        # Elementwise ops are their own linearisation: JVP = VJP applied to the tangent.
        return self.vjp_rule(primals, tangents, outputs)


class NegOp(UnaryOperation):
    name = "neg"
    float_only = False

    def kernel(self, x: Any) -> Any:
        return ops.negate(x)

    def numpy_kernel(self, x: np.ndarray) -> np.ndarray:
        return -x

    def vjp_rule(self, primals: list, cotangents: list, outputs: list) -> list:
        return [neg(cotangents[0])]


class ExpOp(UnaryOperation):
    name = "exp"

    def kernel(self, x: Any) -> Any:
        return ops.exp(x)

    def numpy_kernel(self, x: np.ndarray) -> np.ndarray:
        return np.exp(x)

    def vjp_rule(self, primals: list, cotangents: list, outputs: list) -> list:
        return [_bin.mul(cotangents[0], outputs[0])]


class LogOp(UnaryOperation):
    name = "log"

    def kernel(self, x: Any) -> Any:
        return ops.log(x)

    def numpy_kernel(self, x: np.ndarray) -> np.ndarray:
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.log(x)

    def vjp_rule(self, primals: list, cotangents: list, outputs: list) -> list:
        return [_bin.div(cotangents[0], primals[0])]


class SqrtOp(UnaryOperation):
    name = "sqrt"

    def kernel(self, x: Any) -> Any:
        return ops.sqrt(x)

    def numpy_kernel(self, x: np.ndarray) -> np.ndarray:
        with np.errstate(invalid="ignore"):
            return np.sqrt(x)

    def vjp_rule(self, primals: list, cotangents: list, outputs: list) -> list:
        return [_bin.div(cotangents[0], _bin.mul(outputs[0], 2.0))]


class TanhOp(UnaryOperation):
    name = "tanh"

    def kernel(self, x: Any) -> Any:
        return ops.tanh(x)

    def numpy_kernel(self, x: np.ndarray) -> np.ndarray:
        return np.tanh(x)

    def vjp_rule(self, primals: list, cotangents: list, outputs: list) -> list:
        y = outputs[0]
        return [_bin.mul(cotangents[0], _bin.sub(1.0, _bin.mul(y, y)))]


class ReluOp(UnaryOperation):
    name = "relu"
    float_only = False

    def kernel(self, x: Any) -> Any:
        return ops.relu(x)

    def numpy_kernel(self, x: np.ndarray) -> np.ndarray:
        return np.maximum(x, np.zeros((), x.dtype))

    def vjp_rule(self, primals: list, cotangents: list, outputs: list) -> list:
        g = cotangents[0]
        return [_bin.where_(_bin.greater(primals[0], 0), g, 0)]


class SigmoidOp(UnaryOperation):
    name = "sigmoid"

    def kernel(self, x: Any) -> Any:
        return ops.sigmoid(x)

    def numpy_kernel(self, x: np.ndarray) -> np.ndarray:
        # Stable for large |x|: exp only ever sees non-positive arguments.
        e = np.exp(-np.abs(x))
        return np.where(x >= 0, 1 / (1 + e), e / (1 + e))

    def vjp_rule(self, primals: list, cotangents: list, outputs: list) -> list:
        y = outputs[0]
        return [_bin.mul(cotangents[0], _bin.mul(y, _bin.sub(1.0, y)))]


def _unary(op: UnaryOperation, doc: str) -> Any:
    def fn(x: Tensor) -> Tensor:
        if not isinstance(x, Tensor):
            raise TypeError(f"{op.name}: x must be a Tensor, got {type(x).__name__}")
        return op(x)

    fn.__name__ = op.name
    fn.__doc__ = doc
    return register(op.name)(fn)


neg = _unary(NegOp(), "Elementwise negation.")
negative = neg
exp = _unary(ExpOp(), "Elementwise e**x.")
log = _unary(LogOp(), "Elementwise natural logarithm.")
sqrt = _unary(SqrtOp(), "Elementwise square root.")
tanh = _unary(TanhOp(), "Elementwise hyperbolic tangent.")
relu = _unary(ReluOp(), "Elementwise max(x, 0).")
sigmoid = _unary(SigmoidOp(), "Elementwise 1 / (1 + e**-x).")
