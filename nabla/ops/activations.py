"""Activations: elementwise ops that shape a layer's output (relu, gelu, sigmoid, softplus,
...), in the same form as `unary.py`'s ops: each class holds the MAX lowering, NumPy kernel,
VJP and JVP. Gradients follow PyTorch at the kinks (relu'(0) = 0, leaky_relu'(0) = slope,
hardtanh and hardsigmoid pass none at their bounds), and nan passes through as in PyTorch.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from max.graph import ops

from ..core.common import dtypes as _dt
from ..core.tensor.tensor import Tensor
from . import binary as _bin
from .base import public
from .unary import (
    FLOAT,
    NUMERIC,
    UnaryOperation,
    _check_number,
    _check_tensor,
    _mx_expm1,
    _mx_keep_nan,
    _np_erfc,
    _unary,
    _wide,
    clamp,
    erf,
    exp,
    neg,
    tanh,
)

_SQRT1_2 = math.sqrt(0.5)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
_GELU_K = math.sqrt(2.0 / math.pi)  # PyTorch's kBeta
_GELU_C = 0.044715  # PyTorch's kKappa

__all__ = [
    "elu",
    "gelu",
    "hardsigmoid",
    "hardswish",
    "hardtanh",
    "leaky_relu",
    "logsigmoid",
    "mish",
    "relu",
    "relu6",
    "sigmoid",
    "silu",
    "softplus",
]


# -- activations -------------------------------------------------------------------------------------
class ReluOp(UnaryOperation):
    name = "relu"
    kind = NUMERIC

    def kernel(self, x: Any) -> Any:
        return _mx_keep_nan(x, ops.relu(x)) if _dt.is_float(x.dtype) else ops.relu(x)

    def numpy_kernel(self, x: np.ndarray) -> np.ndarray:
        return np.maximum(x, np.zeros((), x.dtype))  # keeps nan, as PyTorch

    def vjp_rule(self, primals: list, cotangents: list, outputs: list) -> list:
        g = cotangents[0]  # PyTorch's threshold_backward: 0 where x <= 0 (nan passes the gradient)
        return [_bin.where_(_bin.less_equal(primals[0], 0), 0, g)]


class SigmoidOp(UnaryOperation):
    name = "sigmoid"

    def kernel(self, x: Any) -> Any:
        return _mx_keep_nan(x, ops.sigmoid(x))

    def numpy_kernel(self, x: np.ndarray) -> np.ndarray:
        # Stable for large |x|: exp only ever sees non-positive arguments.
        e = np.exp(-np.abs(x))
        return np.where(x >= 0, 1 / (1 + e), e / (1 + e))

    def vjp_rule(self, primals: list, cotangents: list, outputs: list) -> list:
        y = outputs[0]
        return [_bin.mul(cotangents[0], _bin.mul(y, _bin.sub(1.0, y)))]


def _inside(x: Tensor, low: float, high: float) -> Tensor:
    """low < x < high (open: PyTorch's hardsigmoid passes no gradient at the bounds, nor at nan)."""
    return _bin.logical_and(_bin.greater(x, low), _bin.less(x, high))


def _outside(x: Tensor, low: float, high: float) -> Tensor:
    """x <= low or x >= high (PyTorch's hardtanh_backward zeroes these; nan passes the gradient)."""
    return _bin.logical_or(_bin.less_equal(x, low), _bin.greater_equal(x, high))


class HardtanhOp(UnaryOperation):
    """min(max(x, min_val), max_val); relu6 is hardtanh(x, 0, 6)."""

    name = "hardtanh"

    def kernel(self, x: Any, *, min_val: float, max_val: float) -> Any:
        return _mx_keep_nan(x, ops.min(ops.max(x, min_val), max_val))

    def numpy_kernel(self, x: np.ndarray, *, min_val: float, max_val: float) -> np.ndarray:
        return np.minimum(np.maximum(x, min_val), max_val).astype(x.dtype)

    def vjp_rule(self, primals: list, cotangents: list, outputs: list, *, min_val: float, max_val: float) -> list:
        return [_bin.where_(_outside(primals[0], min_val, max_val), 0, cotangents[0])]


class LeakyReluOp(UnaryOperation):
    name = "leaky_relu"

    def kernel(self, x: Any, *, negative_slope: float) -> Any:
        return ops.where(x > 0.0, x, x * negative_slope)

    def numpy_kernel(self, x: np.ndarray, *, negative_slope: float) -> np.ndarray:
        return np.where(x > 0, x, x * x.dtype.type(negative_slope))

    def vjp_rule(self, primals: list, cotangents: list, outputs: list, *, negative_slope: float) -> list:
        g = cotangents[0]  # at 0 the negative side, as PyTorch
        return [_bin.where_(_bin.greater(primals[0], 0.0), g, _bin.mul(g, negative_slope))]


class EluOp(UnaryOperation):
    name = "elu"

    def kernel(self, x: Any, *, alpha: float) -> Any:
        return _mx_keep_nan(x, ops.where(x > 0.0, x, _mx_expm1(ops.min(x, 0.0)) * alpha))

    def numpy_kernel(self, x: np.ndarray, *, alpha: float) -> np.ndarray:
        return np.where(x > 0, x, alpha * np.expm1(np.minimum(_wide(x), 0.0))).astype(x.dtype)

    def vjp_rule(self, primals: list, cotangents: list, outputs: list, *, alpha: float) -> list:
        x, g = primals[0], cotangents[0]  # x <= 0: alpha * e**x (PyTorch uses this side at 0)
        return [_bin.where_(_bin.less_equal(x, 0.0), _bin.mul(g, _bin.mul(exp(x), alpha)), g)]


class GeluOp(UnaryOperation):
    name = "gelu"

    def kernel(self, x: Any, *, approximate: str) -> Any:
        return ops.gelu(x, approximate=approximate)

    def numpy_kernel(self, x: np.ndarray, *, approximate: str) -> np.ndarray:
        w = _wide(x)
        if approximate == "tanh":
            out = 0.5 * w * (1.0 + np.tanh(_GELU_K * (w + _GELU_C * w**3)))
        else:
            out = 0.5 * w * _np_erfc(-w * _SQRT1_2)
        return out.astype(x.dtype)

    def vjp_rule(self, primals: list, cotangents: list, outputs: list, *, approximate: str) -> list:
        x, g = primals[0], cotangents[0]
        if approximate == "tanh":
            x2 = _bin.mul(x, x)
            t = tanh(_bin.mul(_bin.add(x, _bin.mul(_bin.mul(x2, x), _GELU_C)), _GELU_K))
            left = _bin.mul(_bin.add(t, 1.0), 0.5)
            inner = _bin.mul(_bin.add(_bin.mul(x2, 3.0 * _GELU_C), 1.0), _GELU_K)
            right = _bin.mul(_bin.mul(_bin.mul(x, 0.5), _bin.sub(1.0, _bin.mul(t, t))), inner)
            return [_bin.mul(g, _bin.add(left, right))]
        cdf = _bin.mul(_bin.add(erf(_bin.mul(x, _SQRT1_2)), 1.0), 0.5)
        pdf = _bin.mul(exp(_bin.mul(_bin.mul(x, x), -0.5)), _INV_SQRT_2PI)
        return [_bin.mul(g, _bin.add(cdf, _bin.mul(x, pdf)))]


class SiluOp(UnaryOperation):
    name = "silu"

    def kernel(self, x: Any) -> Any:
        return ops.silu(x)

    def numpy_kernel(self, x: np.ndarray) -> np.ndarray:
        w = _wide(x)
        e = np.exp(-np.abs(w))
        return (w * np.where(w >= 0, 1 / (1 + e), e / (1 + e))).astype(x.dtype)

    def vjp_rule(self, primals: list, cotangents: list, outputs: list) -> list:
        x = primals[0]
        s = sigmoid(x)
        return [_bin.mul(cotangents[0], _bin.mul(s, _bin.add(_bin.mul(x, _bin.sub(1.0, s)), 1.0)))]


class SoftplusOp(UnaryOperation):
    """log(1 + e**(beta x)) / beta, computed as (max(z, 0) + log1p(e**-|z|)) / beta (never
    overflows); x itself where beta x > threshold, as PyTorch."""

    name = "softplus"

    def kernel(self, x: Any, *, beta: float, threshold: float) -> Any:
        z = x * beta
        soft = (ops.max(z, 0.0) + ops.log1p(ops.exp(-ops.abs(z)))) / beta
        return _mx_keep_nan(x, ops.where(z > threshold, x, soft))

    def numpy_kernel(self, x: np.ndarray, *, beta: float, threshold: float) -> np.ndarray:
        z = _wide(x) * beta
        soft = (np.maximum(z, 0.0) + np.log1p(np.exp(-np.abs(z)))) / beta
        return np.where(z > threshold, x, soft).astype(x.dtype)

    def vjp_rule(self, primals: list, cotangents: list, outputs: list, *, beta: float, threshold: float) -> list:
        x, g = primals[0], cotangents[0]
        z = _bin.mul(x, beta)
        return [_bin.where_(_bin.greater(z, threshold), g, _bin.mul(g, sigmoid(z)))]


class LogsigmoidOp(UnaryOperation):
    """log(sigmoid(x)) = min(x, 0) - log1p(e**-|x|): finite for every finite x."""

    name = "logsigmoid"

    def kernel(self, x: Any) -> Any:
        return _mx_keep_nan(x, ops.min(x, 0.0) - ops.log1p(ops.exp(-ops.abs(x))))

    def numpy_kernel(self, x: np.ndarray) -> np.ndarray:
        w = _wide(x)
        return (np.minimum(w, 0.0) - np.log1p(np.exp(-np.abs(w)))).astype(x.dtype)

    def vjp_rule(self, primals: list, cotangents: list, outputs: list) -> list:
        return [_bin.mul(cotangents[0], sigmoid(neg(primals[0])))]


class HardsigmoidOp(UnaryOperation):
    name = "hardsigmoid"

    def kernel(self, x: Any) -> Any:
        return _mx_keep_nan(x, ops.min(ops.max(x + 3.0, 0.0), 6.0) / 6.0)

    def numpy_kernel(self, x: np.ndarray) -> np.ndarray:
        return (np.minimum(np.maximum(_wide(x) + 3.0, 0.0), 6.0) / 6.0).astype(x.dtype)

    def vjp_rule(self, primals: list, cotangents: list, outputs: list) -> list:
        return [_bin.where_(_inside(primals[0], -3.0, 3.0), _bin.div(cotangents[0], 6.0), 0)]


class HardswishOp(UnaryOperation):
    name = "hardswish"

    def kernel(self, x: Any) -> Any:
        return x * ops.min(ops.max(x + 3.0, 0.0), 6.0) / 6.0

    def numpy_kernel(self, x: np.ndarray) -> np.ndarray:
        w = _wide(x)
        return (w * np.minimum(np.maximum(w + 3.0, 0.0), 6.0) / 6.0).astype(x.dtype)

    def vjp_rule(self, primals: list, cotangents: list, outputs: list) -> list:
        x, g = primals[0], cotangents[0]  # PyTorch: 0 for x <= -3, x/3 + 1/2 for -3 < x < 3, 1 above
        mid = _bin.mul(g, _bin.add(_bin.div(x, 3.0), 0.5))
        return [_bin.where_(_bin.less_equal(x, -3.0), 0, _bin.where_(_bin.less(x, 3.0), mid, g))]


# -- public functions --------------------------------------------------------------------------------
relu = _unary(ReluOp(), "Elementwise max(x, 0).")
sigmoid = _unary(SigmoidOp(), "Elementwise 1 / (1 + e**-x).")
silu = _unary(SiluOp(), "Elementwise x * sigmoid(x) (swish).", promote=False)
logsigmoid = _unary(LogsigmoidOp(), "Elementwise log(sigmoid(x)), stable for large |x|.", promote=False)
hardsigmoid = _unary(HardsigmoidOp(), "Elementwise relu6(x + 3) / 6.", promote=False)
hardswish = _unary(HardswishOp(), "Elementwise x * relu6(x + 3) / 6.", promote=False)

_hardtanh, _leaky_relu, _elu = HardtanhOp(), LeakyReluOp(), EluOp()
_gelu, _softplus = GeluOp(), SoftplusOp()


@public()
def hardtanh(x: Tensor, min_val: float = -1.0, max_val: float = 1.0) -> Tensor:
    """Clamp to [min_val, max_val]; the gradient is 0 outside the open interval (as PyTorch).
    Integer tensors are clamped to the bounds truncated to integers, as PyTorch's."""
    _check_tensor(x, "hardtanh", NUMERIC)
    lo, hi = _check_number(min_val, "hardtanh", "min_val"), _check_number(max_val, "hardtanh", "max_val")
    if lo > hi:
        raise ValueError(f"hardtanh: min_val={min_val} must not be greater than max_val={max_val}")
    if not _dt.is_float(x.dtype):
        return clamp(x, int(lo), int(hi))
    return _hardtanh(x, min_val=lo, max_val=hi)


@public()
def relu6(x: Tensor) -> Tensor:
    """Elementwise min(max(x, 0), 6) (hardtanh(x, 0, 6))."""
    _check_tensor(x, "relu6", NUMERIC)
    return hardtanh(x, 0.0, 6.0)


@public()
def leaky_relu(x: Tensor, negative_slope: float = 0.01) -> Tensor:
    """x where x > 0, else negative_slope * x. The gradient at 0 is negative_slope (as PyTorch)."""
    _check_tensor(x, "leaky_relu", FLOAT)
    return _leaky_relu(x, negative_slope=_check_number(negative_slope, "leaky_relu", "negative_slope"))


@public()
def elu(x: Tensor, alpha: float = 1.0) -> Tensor:
    """x where x > 0, else alpha * (e**x - 1)."""
    _check_tensor(x, "elu", FLOAT)
    return _elu(x, alpha=_check_number(alpha, "elu", "alpha"))


@public()
def gelu(x: Tensor, approximate: str = "none") -> Tensor:
    """Gaussian error linear unit: x * Phi(x) (`approximate="none"`) or PyTorch's tanh form.

    Args:
        x: a floating-point tensor.
        approximate: "none" (exact, with erf) or "tanh".
    """
    _check_tensor(x, "gelu", FLOAT)
    if approximate not in ("none", "tanh"):
        raise ValueError(f"gelu: approximate must be 'none' or 'tanh', got {approximate!r}")
    return _gelu(x, approximate=approximate)


@public()
def mish(x: Tensor) -> Tensor:
    """Elementwise x * tanh(softplus(x))."""
    _check_tensor(x, "mish", FLOAT)
    return _bin.mul(x, tanh(softplus(x)))


@public()
def softplus(x: Tensor, beta: float = 1.0, threshold: float = 20.0) -> Tensor:
    """log(1 + e**(beta * x)) / beta, reverting to x where beta * x > threshold (as PyTorch).

    Never overflows: softplus(100.0) is 100.0 and softplus(-100.0) a tiny positive number.
    """
    _check_tensor(x, "softplus", FLOAT)
    b = _check_number(beta, "softplus", "beta")
    if b == 0:
        raise ValueError("softplus: beta must be nonzero, got 0")
    return _softplus(x, beta=b, threshold=_check_number(threshold, "softplus", "threshold"))
