"""Elementwise unary ops: one tensor in, one tensor of the same shape out (the activations,
built on `UnaryOperation` too, are in `activations.py`).

Each class holds the op's MAX lowering, NumPy kernel, VJP and JVP. Rules reuse the forward
output where that is cheaper (exp, sqrt, tanh), as JAX's lax does. Where MAX has no
primitive (tan, asin, acos, atan, sinh, cosh, expm1, sign, log2) the kernel lowers to a short,
numerically careful formula of MAX ops (`_mx_*` helpers below). Gradients follow PyTorch,
including its choices at kinks (abs'(0) = 0, clamp ties, ...).

`clamp` is the one op with several tensor inputs: its bounds broadcast with `x` through
`binary_operands` (scalar bounds are weakly typed, as in PyTorch).
"""

from __future__ import annotations

import builtins
import math
from typing import Any

import numpy as np
from max.graph import ops

from ..core.common import dtypes as _dt
from ..core.tensor.tensor import Tensor
from . import binary as _bin
from . import cast as _cast
from .base import AVal, Operation, public
from .creation import ones_like, zeros_like

__all__ = [
    "abs",
    "absolute",
    "acos",
    "acosh",
    "arccos",
    "arccosh",
    "arcsin",
    "arcsinh",
    "arctan",
    "arctanh",
    "asin",
    "asinh",
    "atan",
    "atanh",
    "deg2rad",
    "exp2",
    "fix",
    "isneginf",
    "isposinf",
    "isreal",
    "log10",
    "logit",
    "positive",
    "rad2deg",
    "sgn",
    "signbit",
    "sinc",
    "ceil",
    "clamp",
    "clip",
    "cos",
    "cosh",
    "erf",
    "exp",
    "expm1",
    "floor",
    "isfinite",
    "isinf",
    "isnan",
    "log",
    "log1p",
    "log2",
    "logical_not",
    "nan_to_num",
    "neg",
    "negative",
    "reciprocal",
    "round",
    "rsqrt",
    "sign",
    "sin",
    "sinh",
    "sqrt",
    "square",
    "tan",
    "tanh",
    "trunc",
]

# Which input dtypes an op accepts.
FLOAT, NUMERIC, ANY = "float", "numeric", "any"

_LN2 = math.log(2.0)
_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)
_BF16_MAX = 3.3895313892515355e38  # largest finite bfloat16


def _check_dtype(name: str, dtype: Any, kind: str) -> None:
    if kind == FLOAT and not _dt.is_float(dtype):
        raise TypeError(f"{name}: expected a floating-point tensor, got dtype {dtype.name}")
    if kind == NUMERIC and dtype == _dt.bool_:
        raise TypeError(f"{name}: expected an integer or floating-point tensor, got dtype bool")


def _check_tensor(x: Any, name: str, kind: str = ANY) -> None:
    if not isinstance(x, Tensor):
        raise TypeError(f"{name}: x must be a Tensor, got {type(x).__name__}")
    _check_dtype(name, x.dtype, kind)


def _check_number(value: Any, name: str, arg: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float | np.integer | np.floating):
        raise TypeError(f"{name}: {arg} must be a number, got {value!r}")
    return float(value)


def _wide(x: np.ndarray) -> np.ndarray:
    """NumPy kernels of composite formulas compute in float64 and round once at the end."""
    return x.astype(np.float64)


class UnaryOperation(Operation):
    """One tensor in, one tensor of the same shape and dtype out."""

    kind = FLOAT
    sharding_rule = "elementwise"

    def abstract_eval(self, x: AVal, **kwargs: Any) -> AVal:
        _check_dtype(self.name, x[1], self.kind)
        return x

    def jvp_rule(self, primals: list, tangents: list, outputs: list, **kwargs: Any) -> list:
        # Elementwise ops are their own linearisation: JVP = VJP applied to the tangent.
        return self.vjp_rule(primals, tangents, outputs, **kwargs)


class _ZeroGradOperation(UnaryOperation):
    """Piecewise-constant ops (sign, floor, ceil, round, trunc): the gradient is 0 everywhere."""

    kind = NUMERIC

    def vjp_rule(self, primals: list, cotangents: list, outputs: list, **kwargs: Any) -> list:
        return [zeros_like(cotangents[0])]


# -- MAX helpers: formulas for what MAX has no primitive for ------------------------------------
def _mx_const(value: float, like: Any) -> Any:
    return ops.constant(value, like.dtype, like.device)


def _mx_expm1(x: Any) -> Any:
    """exp(x) - 1 without cancellation: 2t / (1 - t) with t = tanh(x / 2) for |x| < 1."""
    t = ops.tanh(x * 0.5)
    small = (t * 2.0) / (_mx_const(1.0, x) - t)
    return _mx_keep_nan(x, ops.where(ops.abs(x) < 1.0, small, ops.exp(x) - 1.0))


# Cephes' double-precision atan: range reduction to |t| <= 0.66 and a rational approximation.
_ATAN_P = (-8.750608600031904122785e-1, -1.615753718733365076637e1, -7.500855792314704667340e1)
_ATAN_P += (-1.228866684490136173410e2, -6.485021904942025371773e1)
_ATAN_Q = (2.485846490142306297962e1, 1.650270098316988542046e2, 4.328810604912902668951e2)
_ATAN_Q += (4.853903996359136964868e2, 1.945506571482613964425e2)
_ATAN_MOREBITS = 6.123233995736765886130e-17  # pi/2 - fl(pi/2)
_TAN_3PI_8 = 2.414213562373095048802


def _mx_poly(z: Any, coeffs: tuple, monic: bool = False) -> Any:
    acc = z + coeffs[0] if monic else _mx_const(coeffs[0], z)
    for c in coeffs[1:]:
        acc = acc * z + c
    return acc


def _mx_atan(x: Any) -> Any:
    a = ops.abs(x)
    big = a > _TAN_3PI_8
    mid = ops.logical_and(a > 0.66, ops.logical_not(big))
    t = ops.where(big, _mx_const(-1.0, a) / a, ops.where(mid, (a - 1.0) / (a + 1.0), a))
    base = ops.where(big, math.pi / 2, ops.where(mid, math.pi / 4, _mx_const(0.0, a)))
    more = ops.where(big, _ATAN_MOREBITS, ops.where(mid, 0.5 * _ATAN_MOREBITS, _mx_const(0.0, a)))
    z = t * t
    r = base + ((t * z * _mx_poly(z, _ATAN_P) / _mx_poly(z, _ATAN_Q, monic=True) + t) + more)
    return ops.where(x < 0.0, -r, r)


def _mx_sign(x: Any) -> Any:
    # PyTorch: (0 < x) - (x < 0), so sign(nan) = 0 (MAX's comparisons need not be false on nan).
    out = ops.cast(x > 0, x.dtype) - ops.cast(x < 0, x.dtype)
    return ops.where(ops.is_nan(x), _mx_const(0, x), out) if _dt.is_float(x.dtype) else out


def _mx_keep_nan(x: Any, out: Any) -> Any:
    """nan in, nan out. Several MAX primitives (relu, sigmoid, exp, tanh, max, min) and its
    comparisons do not propagate nan on CPU (exp(nan) = inf, relu(nan) = 0), so kernels whose
    result must be nan (as in PyTorch) select it explicitly."""
    return ops.where(ops.is_nan(x), x, out)


# -- sign-like and rounding ops ------------------------------------------------------------------
class NegOp(UnaryOperation):
    saves_values = False  # (see Operation.saves_values)
    name = "neg"
    kind = NUMERIC
    partial_ok = "additive"

    def kernel(self, x: Any) -> Any:
        if x.dtype == _dt.uint8:  # MAX negates signed types only (and folds 0 - x into negate)
            return ops.cast(ops.negate(ops.cast(x, _dt.int16)), x.dtype)
        return ops.negate(x)

    def numpy_kernel(self, x: np.ndarray) -> np.ndarray:
        return -x

    def vjp_rule(self, primals: list, cotangents: list, outputs: list) -> list:
        return [neg(cotangents[0])]


class AbsOp(UnaryOperation):
    name = "abs"
    kind = NUMERIC

    def kernel(self, x: Any) -> Any:
        return x if x.dtype == _dt.uint8 else ops.abs(x)

    def numpy_kernel(self, x: np.ndarray) -> np.ndarray:
        return np.abs(x)

    def vjp_rule(self, primals: list, cotangents: list, outputs: list) -> list:
        return [_bin.mul(cotangents[0], sign(primals[0]))]  # abs'(0) = sign(0) = 0


class SignOp(_ZeroGradOperation):
    name = "sign"
    kind = ANY

    def kernel(self, x: Any) -> Any:
        return x if x.dtype == _dt.bool_ else _mx_sign(x)

    def numpy_kernel(self, x: np.ndarray) -> np.ndarray:
        if x.dtype == np.bool_:
            return x
        return (x > 0).astype(x.dtype) - (x < 0).astype(x.dtype)


class _RoundingOp(_ZeroGradOperation):
    """floor/ceil/trunc: identity on integers (as PyTorch), the MAX primitive on floats."""

    max_fn: Any = None
    np_fn: Any = None

    def kernel(self, x: Any) -> Any:
        return type(self).max_fn(x) if _dt.is_float(x.dtype) else x

    def numpy_kernel(self, x: np.ndarray) -> np.ndarray:
        return type(self).np_fn(x) if x.dtype.kind == "f" else x


class FloorOp(_RoundingOp):
    name = "floor"
    max_fn = ops.floor
    np_fn = np.floor


class CeilOp(_RoundingOp):
    name = "ceil"
    max_fn = ops.ceil
    np_fn = np.ceil


class TruncOp(_RoundingOp):
    name = "trunc"
    max_fn = ops.trunc
    np_fn = np.trunc


class RoundOp(_ZeroGradOperation):
    """Round half to even; with `decimals`, PyTorch's formula: rint(x * 10**d) / 10**d
    (for d < 0: rint(x / 10**-d) * 10**-d)."""

    name = "round"

    def kernel(self, x: Any, *, decimals: int) -> Any:
        if not _dt.is_float(x.dtype):
            return x
        if decimals == 0:
            return ops.round(x)
        scale = _mx_const(10.0 ** builtins.abs(decimals), x)
        return ops.round(x * scale) / scale if decimals > 0 else ops.round(x / scale) * scale

    def numpy_kernel(self, x: np.ndarray, *, decimals: int) -> np.ndarray:
        if x.dtype.kind != "f":
            return x
        if decimals == 0:
            return np.rint(x)
        scale = x.dtype.type(10.0 ** builtins.abs(decimals))
        with np.errstate(over="ignore", invalid="ignore"):
            return np.rint(x * scale) / scale if decimals > 0 else np.rint(x / scale) * scale


# -- powers, exponentials, logarithms ------------------------------------------------------------
class SquareOp(UnaryOperation):
    name = "square"
    kind = NUMERIC

    def kernel(self, x: Any) -> Any:
        return ops.mul(x, x)

    def numpy_kernel(self, x: np.ndarray) -> np.ndarray:
        return x * x

    def vjp_rule(self, primals: list, cotangents: list, outputs: list) -> list:
        return [_bin.mul(cotangents[0], _bin.mul(primals[0], 2.0))]


class ReciprocalOp(UnaryOperation):
    name = "reciprocal"

    def kernel(self, x: Any) -> Any:
        return _mx_const(1.0, x) / x

    def numpy_kernel(self, x: np.ndarray) -> np.ndarray:
        with np.errstate(divide="ignore"):
            return np.reciprocal(x)

    def vjp_rule(self, primals: list, cotangents: list, outputs: list) -> list:
        y = outputs[0]
        return [neg(_bin.mul(cotangents[0], _bin.mul(y, y)))]


class ExpOp(UnaryOperation):
    name = "exp"

    def kernel(self, x: Any) -> Any:
        return _mx_keep_nan(x, ops.exp(x))

    def numpy_kernel(self, x: np.ndarray) -> np.ndarray:
        with np.errstate(over="ignore"):
            return np.exp(x)

    def vjp_rule(self, primals: list, cotangents: list, outputs: list) -> list:
        return [_bin.mul(cotangents[0], outputs[0])]


class Expm1Op(UnaryOperation):
    name = "expm1"

    def kernel(self, x: Any) -> Any:
        return _mx_expm1(x)

    def numpy_kernel(self, x: np.ndarray) -> np.ndarray:
        with np.errstate(over="ignore"):
            return np.expm1(x)

    def vjp_rule(self, primals: list, cotangents: list, outputs: list) -> list:
        return [_bin.mul(cotangents[0], _bin.add(outputs[0], 1.0))]  # as PyTorch: g * (y + 1)


class LogOp(UnaryOperation):
    name = "log"

    def kernel(self, x: Any) -> Any:
        return ops.log(x)

    def numpy_kernel(self, x: np.ndarray) -> np.ndarray:
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.log(x)

    def vjp_rule(self, primals: list, cotangents: list, outputs: list) -> list:
        return [_bin.div(cotangents[0], primals[0])]


class Log1pOp(UnaryOperation):
    name = "log1p"

    def kernel(self, x: Any) -> Any:
        return ops.log1p(x)

    def numpy_kernel(self, x: np.ndarray) -> np.ndarray:
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.log1p(x)

    def vjp_rule(self, primals: list, cotangents: list, outputs: list) -> list:
        return [_bin.div(cotangents[0], _bin.add(primals[0], 1.0))]


class Log2Op(UnaryOperation):
    name = "log2"

    def kernel(self, x: Any) -> Any:
        return ops.log(x) * (1.0 / _LN2)

    def numpy_kernel(self, x: np.ndarray) -> np.ndarray:
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.log2(x)

    def vjp_rule(self, primals: list, cotangents: list, outputs: list) -> list:
        return [_bin.div(cotangents[0], _bin.mul(primals[0], _LN2))]


class SqrtOp(UnaryOperation):
    name = "sqrt"

    def kernel(self, x: Any) -> Any:
        return ops.sqrt(x)

    def numpy_kernel(self, x: np.ndarray) -> np.ndarray:
        with np.errstate(invalid="ignore"):
            return np.sqrt(x)

    def vjp_rule(self, primals: list, cotangents: list, outputs: list) -> list:
        return [_bin.div(cotangents[0], _bin.mul(outputs[0], 2.0))]


class RsqrtOp(UnaryOperation):
    name = "rsqrt"

    def kernel(self, x: Any) -> Any:
        return ops.rsqrt(x)

    def numpy_kernel(self, x: np.ndarray) -> np.ndarray:
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.reciprocal(np.sqrt(x))

    def vjp_rule(self, primals: list, cotangents: list, outputs: list) -> list:
        y = outputs[0]  # d/dx x**-0.5 = -0.5 * y**3
        return [_bin.mul(cotangents[0], _bin.mul(_bin.mul(y, _bin.mul(y, y)), -0.5))]


# -- trigonometric and hyperbolic ------------------------------------------------------------------
class SinOp(UnaryOperation):
    name = "sin"

    def kernel(self, x: Any) -> Any:
        return ops.sin(x)

    def numpy_kernel(self, x: np.ndarray) -> np.ndarray:
        return np.sin(x)

    def vjp_rule(self, primals: list, cotangents: list, outputs: list) -> list:
        return [_bin.mul(cotangents[0], cos(primals[0]))]


class CosOp(UnaryOperation):
    name = "cos"

    def kernel(self, x: Any) -> Any:
        return ops.cos(x)

    def numpy_kernel(self, x: np.ndarray) -> np.ndarray:
        return np.cos(x)

    def vjp_rule(self, primals: list, cotangents: list, outputs: list) -> list:
        return [neg(_bin.mul(cotangents[0], sin(primals[0])))]


class TanOp(UnaryOperation):
    name = "tan"

    def kernel(self, x: Any) -> Any:
        return ops.sin(x) / ops.cos(x)

    def numpy_kernel(self, x: np.ndarray) -> np.ndarray:
        return np.tan(x)

    def vjp_rule(self, primals: list, cotangents: list, outputs: list) -> list:
        y = outputs[0]
        return [_bin.mul(cotangents[0], _bin.add(_bin.mul(y, y), 1.0))]


class SinhOp(UnaryOperation):
    name = "sinh"

    def kernel(self, x: Any) -> Any:
        a = ops.abs(x)
        e = _mx_expm1(a)  # |x| < 1: (e + e / (e + 1)) / 2 adds positive terms only
        small = (e + e / (e + 1.0)) * 0.5
        h = ops.exp(a - _LN2)  # e**|x| / 2 without overflowing before sinh does
        r = ops.where(a < 1.0, small, h - _mx_const(0.25, h) / h)
        return ops.where(x < 0.0, -r, r)

    def numpy_kernel(self, x: np.ndarray) -> np.ndarray:
        with np.errstate(over="ignore"):
            return np.sinh(x)

    def vjp_rule(self, primals: list, cotangents: list, outputs: list) -> list:
        return [_bin.mul(cotangents[0], cosh(primals[0]))]


class CoshOp(UnaryOperation):
    name = "cosh"

    def kernel(self, x: Any) -> Any:
        h = ops.exp(ops.abs(x) - _LN2)
        return _mx_keep_nan(x, h + _mx_const(0.25, h) / h)

    def numpy_kernel(self, x: np.ndarray) -> np.ndarray:
        with np.errstate(over="ignore"):
            return np.cosh(x)

    def vjp_rule(self, primals: list, cotangents: list, outputs: list) -> list:
        return [_bin.mul(cotangents[0], sinh(primals[0]))]


def _one_minus_square(x: Tensor) -> Tensor:
    """1 - x**2 as (1 - x)(1 + x): exact factors near |x| = 1."""
    return _bin.mul(_bin.sub(1.0, x), _bin.add(x, 1.0))


class AsinOp(UnaryOperation):
    name = "asin"

    def kernel(self, x: Any) -> Any:
        # atan(x / sqrt(1 - x^2)); +-1 give +-inf and so +-pi/2, |x| > 1 gives nan.
        return _mx_atan(x / ops.sqrt((_mx_const(1.0, x) - x) * (x + 1.0)))

    def numpy_kernel(self, x: np.ndarray) -> np.ndarray:
        with np.errstate(invalid="ignore"):
            return np.arcsin(x)

    def vjp_rule(self, primals: list, cotangents: list, outputs: list) -> list:
        return [_bin.mul(cotangents[0], rsqrt(_one_minus_square(primals[0])))]


class AcosOp(UnaryOperation):
    name = "acos"

    def kernel(self, x: Any) -> Any:
        # 2 atan(sqrt((1 - x) / (1 + x))): accurate near both ends, nan outside [-1, 1].
        return _mx_atan(ops.sqrt((_mx_const(1.0, x) - x) / (x + 1.0))) * 2.0

    def numpy_kernel(self, x: np.ndarray) -> np.ndarray:
        with np.errstate(invalid="ignore"):
            return np.arccos(x)

    def vjp_rule(self, primals: list, cotangents: list, outputs: list) -> list:
        return [neg(_bin.mul(cotangents[0], rsqrt(_one_minus_square(primals[0]))))]


class AtanOp(UnaryOperation):
    name = "atan"

    def kernel(self, x: Any) -> Any:
        return _mx_atan(x)

    def numpy_kernel(self, x: np.ndarray) -> np.ndarray:
        return np.arctan(x)

    def vjp_rule(self, primals: list, cotangents: list, outputs: list) -> list:
        x = primals[0]
        return [_bin.div(cotangents[0], _bin.add(_bin.mul(x, x), 1.0))]


class TanhOp(UnaryOperation):
    name = "tanh"

    def kernel(self, x: Any) -> Any:
        return _mx_keep_nan(x, ops.tanh(x))

    def numpy_kernel(self, x: np.ndarray) -> np.ndarray:
        return np.tanh(x)

    def vjp_rule(self, primals: list, cotangents: list, outputs: list) -> list:
        y = outputs[0]
        return [_bin.mul(cotangents[0], _bin.sub(1.0, _bin.mul(y, y)))]


_np_erf_py = np.frompyfunc(math.erf, 1, 1)
_np_erfc_py = np.frompyfunc(math.erfc, 1, 1)


def _np_erf(x: np.ndarray) -> np.ndarray:
    return np.asarray(_np_erf_py(_wide(x)), np.float64)


def _np_erfc(x: np.ndarray) -> np.ndarray:
    return np.asarray(_np_erfc_py(_wide(x)), np.float64)


class ErfOp(UnaryOperation):
    name = "erf"

    def kernel(self, x: Any) -> Any:
        return ops.erf(x)

    def numpy_kernel(self, x: np.ndarray) -> np.ndarray:
        return _np_erf(x).astype(x.dtype)

    def vjp_rule(self, primals: list, cotangents: list, outputs: list) -> list:
        x = primals[0]
        return [_bin.mul(cotangents[0], _bin.mul(exp(neg(_bin.mul(x, x))), _TWO_OVER_SQRT_PI))]


# -- clamp -----------------------------------------------------------------------------------------
class ClampOp(Operation):
    """min(max(x, lo), hi) on operands of one shape and dtype: `bounds` says which of lo/hi follow x."""

    name = "clamp"
    sharding_rule = "elementwise"

    def abstract_eval(self, x: AVal, *bounds: AVal, bounds_given: str) -> AVal:
        _check_dtype("clamp", x[1], NUMERIC)
        return x

    def kernel(self, x: Any, *bounds: Any, bounds_given: str) -> Any:
        lo, hi = _split_bounds(bounds, bounds_given)
        out = x if lo is None else ops.max(x, lo)
        out = out if hi is None else ops.min(out, hi)
        if not _dt.is_float(x.dtype):
            return out
        for value in (hi, lo, x):  # a nan operand gives nan, as in PyTorch (MAX's max/min drop it)
            out = out if value is None else _mx_keep_nan(value, out)
        return out

    def numpy_kernel(self, x: np.ndarray, *bounds: np.ndarray, bounds_given: str) -> np.ndarray:
        lo, hi = _split_bounds(bounds, bounds_given)
        out = x if lo is None else np.maximum(x, lo)
        return out if hi is None else np.minimum(out, hi)

    def vjp_rule(self, primals: list, cotangents: list, outputs: list, *, bounds_given: str) -> list:
        g = cotangents[0]
        return [None if m is None else _bin.where_(m, g, 0) for m in _clamp_masks(primals, bounds_given)]

    def jvp_rule(self, primals: list, tangents: list, outputs: list, *, bounds_given: str) -> list:
        out = None
        for m, t in zip(_clamp_masks(primals, bounds_given), tangents, strict=True):
            if m is not None:
                term = _bin.where_(m, t, 0)
                out = term if out is None else _bin.add(out, term)
        return [out]


def _split_bounds(bounds: tuple, bounds_given: str) -> tuple:
    if bounds_given == "both":
        return bounds[0], bounds[1]
    return (bounds[0], None) if bounds_given == "min" else (None, bounds[0])


def _clamp_masks(primals: list, bounds_given: str) -> list:
    """Where each input receives the gradient (PyTorch's clamp_backward_min_max)."""
    x = primals[0]
    lo, hi = _split_bounds(tuple(primals[1:]), bounds_given)
    if lo is not None and hi is not None:
        return [
            _bin.logical_and(_bin.greater_equal(x, lo), _bin.less_equal(x, hi)),
            _bin.logical_and(_bin.less(x, lo), _bin.less(lo, hi)),
            _bin.logical_or(_bin.greater(x, hi), _bin.less(hi, lo)),
        ]
    if lo is not None:
        return [_bin.greater_equal(x, lo), _bin.less(x, lo)]
    return [_bin.less_equal(x, hi), _bin.greater(x, hi)]


# -- predicates and cleanup ------------------------------------------------------------------------
class _PredicateOp(UnaryOperation):
    """A bool tensor of x's shape; integer and bool inputs are never nan/inf."""

    kind = ANY
    differentiable = False
    int_value = False  # the answer for integer/bool inputs

    def abstract_eval(self, x: AVal, **kwargs: Any) -> AVal:
        _check_dtype(self.name, x[1], self.kind)
        return x[0], _dt.bool_

    def kernel(self, x: Any) -> Any:
        if _dt.is_float(x.dtype):
            return self.float_kernel(x)
        const = ops.constant(self.int_value, _dt.bool_, x.device)
        return ops.broadcast_to(const, x.shape)

    def float_kernel(self, x: Any) -> Any:
        raise NotImplementedError

    def vjp_rule(self, primals: list, cotangents: list, outputs: list) -> list:
        return [None]

    def jvp_rule(self, primals: list, tangents: list, outputs: list) -> list:
        return [None]


class IsnanOp(_PredicateOp):
    name = "isnan"

    def float_kernel(self, x: Any) -> Any:
        return ops.is_nan(x)

    def numpy_kernel(self, x: np.ndarray) -> np.ndarray:
        return np.isnan(x)


class IsinfOp(_PredicateOp):
    name = "isinf"

    def float_kernel(self, x: Any) -> Any:
        return ops.is_inf(x)

    def numpy_kernel(self, x: np.ndarray) -> np.ndarray:
        return np.isinf(x)


class IsfiniteOp(_PredicateOp):
    name = "isfinite"
    int_value = True

    def float_kernel(self, x: Any) -> Any:
        return ops.logical_not(ops.logical_or(ops.is_nan(x), ops.is_inf(x)))

    def numpy_kernel(self, x: np.ndarray) -> np.ndarray:
        return np.isfinite(x)


class LogicalNotOp(_PredicateOp):
    name = "logical_not"

    def kernel(self, x: Any) -> Any:
        if x.dtype == _dt.bool_:
            return ops.logical_not(x)
        return ops.equal(x, ops.constant(0, x.dtype, x.device))

    def numpy_kernel(self, x: np.ndarray) -> np.ndarray:
        return np.logical_not(x)


class NanToNumOp(UnaryOperation):
    """nan, +inf and -inf replaced by finite values; the gradient flows where x is finite."""

    name = "nan_to_num"
    kind = NUMERIC

    def kernel(self, x: Any, *, nan: float, posinf: float, neginf: float) -> Any:
        if not _dt.is_float(x.dtype):
            return x
        inf = ops.where(x > 0.0, _mx_const(posinf, x), _mx_const(neginf, x))
        return ops.where(ops.is_nan(x), _mx_const(nan, x), ops.where(ops.is_inf(x), inf, x))

    def numpy_kernel(self, x: np.ndarray, *, nan: float, posinf: float, neginf: float) -> np.ndarray:
        return np.nan_to_num(x, nan=nan, posinf=posinf, neginf=neginf)

    def vjp_rule(self, primals: list, cotangents: list, outputs: list, **kwargs: Any) -> list:
        return [_bin.where_(isfinite(primals[0]), cotangents[0], 0)]


# -- public functions --------------------------------------------------------------------------------
def _unary(op: UnaryOperation, doc: str, *, promote: bool = True) -> Any:
    """The public function of `op`. `promote`: a float-only op computes integers and bools in
    the default float dtype, as PyTorch's math functions (`exp`, `sqrt`, `sigmoid`) do; its
    activations (`silu`, `hardswish`) reject them instead."""
    floating = promote and op.kind == FLOAT

    def fn(x: Tensor) -> Tensor:
        _check_tensor(x, op.name)  # a Tensor; its dtype is checked by the op's abstract_eval
        if floating and not _dt.is_float(x._impl.dtype):  # PyTorch: integers and bools compute in the default float
            x = _cast.cast(x, _dt.DEFAULT_FLOAT)
        return op(x)

    fn.__name__ = fn.__qualname__ = op.name
    fn.__doc__ = doc
    return public(op.name)(fn)


neg = _unary(NegOp(), "Elementwise negation (integers and floats).")
negative = neg
abs = _unary(AbsOp(), "Elementwise absolute value; the gradient at 0 is 0, as in PyTorch.")  # noqa: A001
sign = _unary(SignOp(), "Elementwise sign: -1, 0 or 1 (0 for nan, as PyTorch); gradient 0.")
square = _unary(SquareOp(), "Elementwise x * x (integers and floats).")
reciprocal = _unary(ReciprocalOp(), "Elementwise 1 / x.")
exp = _unary(ExpOp(), "Elementwise e**x.")
expm1 = _unary(Expm1Op(), "Elementwise e**x - 1, accurate for small x.")
log = _unary(LogOp(), "Elementwise natural logarithm.")
log1p = _unary(Log1pOp(), "Elementwise log(1 + x), accurate for small x.")
log2 = _unary(Log2Op(), "Elementwise base-2 logarithm.")
sqrt = _unary(SqrtOp(), "Elementwise square root.")
rsqrt = _unary(RsqrtOp(), "Elementwise 1 / sqrt(x).")
sin = _unary(SinOp(), "Elementwise sine.")
cos = _unary(CosOp(), "Elementwise cosine.")
tan = _unary(TanOp(), "Elementwise tangent.")
sinh = _unary(SinhOp(), "Elementwise hyperbolic sine.")
cosh = _unary(CoshOp(), "Elementwise hyperbolic cosine.")
asin = _unary(AsinOp(), "Elementwise arcsine (nan outside [-1, 1]).")
acos = _unary(AcosOp(), "Elementwise arccosine (nan outside [-1, 1]).")
atan = _unary(AtanOp(), "Elementwise arctangent.")
tanh = _unary(TanhOp(), "Elementwise hyperbolic tangent.")
erf = _unary(ErfOp(), "Elementwise Gauss error function.")
floor = _unary(FloorOp(), "Elementwise floor (identity on integers); gradient 0.")
ceil = _unary(CeilOp(), "Elementwise ceiling (identity on integers); gradient 0.")
trunc = _unary(TruncOp(), "Elementwise rounding toward zero (identity on integers); gradient 0.")
isnan = _unary(IsnanOp(), "Elementwise test for nan; a bool tensor (all False for integers).")
isinf = _unary(IsinfOp(), "Elementwise test for +-inf; a bool tensor (all False for integers).")
isfinite = _unary(IsfiniteOp(), "Elementwise test for finite values; a bool tensor (all True for integers).")
logical_not = _unary(LogicalNotOp(), "Elementwise logical NOT; nonzero counts as True. Returns bool.")

_round = RoundOp()
_clamp, _nan_to_num = ClampOp(), NanToNumOp()


@public()
def round(x: Tensor, decimals: int = 0) -> Tensor:  # noqa: A001
    """Round to the nearest value with `decimals` decimal places, halves to even (as PyTorch).

    Example:
        >>> nabla.round(nabla.tensor([0.5, 1.5, 1.25]), decimals=1)  # [0.5, 1.5, 1.2]
    """
    _check_tensor(x, "round", NUMERIC)
    if isinstance(decimals, bool) or not isinstance(decimals, int | np.integer):
        raise TypeError(f"round: decimals must be an int, got {decimals!r}")
    if decimals != 0 and not _dt.is_float(x.dtype):
        raise TypeError(f"round: decimals={decimals} needs a floating-point tensor, got dtype {x.dtype.name}")
    return _round(x, decimals=int(decimals))


@public()
def clamp(x: Tensor, min: Any = None, max: Any = None) -> Tensor:  # noqa: A002
    """Clamp `x` to [min, max]; bounds are scalars or tensors that broadcast with `x`.

    Where min > max the result is max (as PyTorch). The gradient flows to x where
    min <= x <= max, and to a tensor bound where that bound is the result.

    Example:
        >>> nabla.clamp(nabla.tensor([-2.0, 0.5, 3.0]), min=-1.0, max=1.0)  # [-1.0, 0.5, 1.0]
    """
    _check_tensor(x, "clamp", NUMERIC)
    if min is None and max is None:
        raise ValueError("clamp: at least one of min and max must be given, got min=None and max=None")
    given = [b for b in (min, max) if b is not None]
    for b in given:
        if isinstance(b, Tensor) and b.dtype == _dt.bool_:
            raise TypeError("clamp: bounds must be numeric, got a bool tensor")
    operands = _bin.binary_operands("clamp", x, *given)
    which = "both" if len(given) == 2 else ("min" if min is not None else "max")
    return _clamp(*operands, bounds_given=which)


clip = clamp


def _finfo_max(dtype: Any) -> float:
    return _BF16_MAX if dtype == _dt.bfloat16 else float(np.finfo(_dt.to_numpy_dtype(dtype)).max)


@public()
def nan_to_num(x: Tensor, nan: float = 0.0, posinf: float | None = None, neginf: float | None = None) -> Tensor:
    """Replace nan by `nan`, +inf by `posinf` and -inf by `neginf` (None: the dtype's largest /
    lowest finite value, as PyTorch). Integer tensors are returned unchanged."""
    _check_tensor(x, "nan_to_num", NUMERIC)
    big = _finfo_max(x.dtype) if _dt.is_float(x.dtype) else 0.0
    values = {
        "nan": _check_number(nan, "nan_to_num", "nan"),
        "posinf": big if posinf is None else _check_number(posinf, "nan_to_num", "posinf"),
        "neginf": -big if neginf is None else _check_number(neginf, "nan_to_num", "neginf"),
    }
    return _nan_to_num(x, **values)


# -- composites: PyTorch's other elementwise functions ------------------------------------------
# Built from the primitives above (their derivatives, MAX lowerings, vmap and sharding rules
# come with them). Branches of a `where` get inputs made safe for the branch not taken, so no
# inf or nan reaches a gradient through the unselected side. Integer inputs give float32
# where PyTorch gives a float result.
absolute = abs
fix = trunc
sgn = sign
arccos, arcsin, arctan = acos, asin, atan
_LN10 = math.log(10.0)


def _float_input(x: Any, name: str) -> Tensor:
    """x checked to be a tensor; integers and bools as float32 (PyTorch's float result)."""
    _check_tensor(x, name)
    return x if _dt.is_float(x.dtype) else x.astype(_dt.DEFAULT_FLOAT)


def _mirror(x: Tensor) -> tuple[Tensor, Tensor]:
    """(x < 0, |x|) with d|x|/dx = -1 or 1 (never 0): odd functions f(x) = sign * f(|x|) keep
    their slope at 0."""
    negative = _bin.less(x, 0.0)
    return negative, _bin.where_(negative, neg(x), x)


@public()
def positive(x: Tensor) -> Tensor:
    """x itself (`torch.positive`, unary plus); bool tensors are an error, as in PyTorch."""
    _check_tensor(x, "positive")
    if x.dtype == _dt.bool_:
        raise TypeError("positive: not supported for bool tensors")
    return x


@public()
def asinh(x: Tensor) -> Tensor:
    """Elementwise inverse hyperbolic sine; never overflows (log(|x|) + log1p(sqrt(1 + x**-2)))."""
    x = _float_input(x, "asinh")
    negative, a = _mirror(x)
    small = _bin.less(a, 1.0)
    s = _bin.where_(small, a, 0.0)  # |x| < 1: log1p(a + a^2 / (1 + sqrt(1 + a^2)))
    s2 = _bin.mul(s, s)
    near = log1p(_bin.add(s, _bin.div(s2, _bin.add(sqrt(_bin.add(s2, 1.0)), 1.0))))
    b = _bin.where_(small, 1.0, a)
    inv = reciprocal(b)
    far = _bin.add(log(b), log1p(sqrt(_bin.add(_bin.mul(inv, inv), 1.0))))
    r = _bin.where_(small, near, far)
    return _bin.where_(negative, neg(r), r)


@public()
def acosh(x: Tensor) -> Tensor:
    """Elementwise inverse hyperbolic cosine (nan below 1); accurate near 1 and never overflows."""
    x = _float_input(x, "acosh")
    near_one = _bin.less(x, 2.0)
    t = _bin.sub(_bin.where_(near_one, x, 1.5), 1.0)  # x < 2: log1p(t + sqrt(2t + t^2)), t = x - 1
    near = log1p(_bin.add(t, sqrt(_bin.mul(t, _bin.add(t, 2.0)))))
    b = _bin.where_(near_one, 2.0, x)
    inv = reciprocal(b)
    far = _bin.add(log(b), log1p(sqrt(_bin.sub(1.0, _bin.mul(inv, inv)))))
    return _bin.where_(_bin.less(x, 1.0), math.nan, _bin.where_(near_one, near, far))


@public()
def atanh(x: Tensor) -> Tensor:
    """Elementwise inverse hyperbolic tangent: 0.5 * log1p(2x / (1 - x)) (nan outside [-1, 1])."""
    x = _float_input(x, "atanh")
    return _bin.mul(log1p(_bin.div(_bin.mul(x, 2.0), _bin.sub(1.0, x))), 0.5)


arccosh, arcsinh, arctanh = acosh, asinh, atanh


@public()
def log10(x: Tensor) -> Tensor:
    """Elementwise base-10 logarithm (integers give float32)."""
    return _bin.div(log(_float_input(x, "log10")), _LN10)


@public()
def exp2(x: Tensor) -> Tensor:
    """Elementwise 2**x (integers give float32)."""
    return _bin.pow(2.0, _float_input(x, "exp2"))


@public()
def sinc(x: Tensor) -> Tensor:
    """Elementwise normalized sinc: sin(pi x) / (pi x), and 1 (with slope 0) at 0."""
    x = _float_input(x, "sinc")
    zero = _bin.equal(x, 0.0)
    y = _bin.mul(_bin.where_(zero, 1.0, x), math.pi)
    return _bin.where_(zero, 1.0, _bin.div(sin(y), y))


@public()
def deg2rad(x: Tensor) -> Tensor:
    """Degrees to radians: x * pi / 180 (integers give float32)."""
    return _bin.mul(_float_input(x, "deg2rad"), math.pi / 180.0)


@public()
def rad2deg(x: Tensor) -> Tensor:
    """Radians to degrees: x * 180 / pi (integers give float32)."""
    return _bin.mul(_float_input(x, "rad2deg"), 180.0 / math.pi)


@public()
def signbit(x: Tensor) -> Tensor:
    """Whether the sign bit is set: x < 0, and True for -0.0 (a bool tensor; a nan gives False)."""
    _check_tensor(x, "signbit")
    if x.dtype == _dt.bool_:
        return zeros_like(x)
    below = _bin.less(x, 0)
    if not _dt.is_float(x.dtype):
        return below
    negative_zero = _bin.logical_and(_bin.equal(x, 0.0), _bin.less(_bin.div(1.0, x), 0.0))  # 1 / -0.0 = -inf
    return _bin.logical_or(below, negative_zero)


@public()
def isposinf(x: Tensor) -> Tensor:
    """Elementwise test for +inf; a bool tensor."""
    _check_tensor(x, "isposinf")
    return _bin.logical_and(isinf(x), _bin.greater(x, 0))


@public()
def isneginf(x: Tensor) -> Tensor:
    """Elementwise test for -inf; a bool tensor."""
    _check_tensor(x, "isneginf")
    return _bin.logical_and(isinf(x), _bin.less(x, 0))


@public()
def isreal(x: Tensor) -> Tensor:
    """True everywhere: nabla has no complex dtypes (a bool tensor of x's shape)."""
    _check_tensor(x, "isreal")
    return ones_like(x, _dt.bool_)


@public()
def logit(x: Tensor, eps: float | None = None) -> Tensor:
    """log(x / (1 - x)); with `eps`, x is first clamped to [eps, 1 - eps] (zero gradient outside)."""
    x = _float_input(x, "logit")
    if eps is not None:
        e = _check_number(eps, "logit", "eps")
        x = clamp(x, e, 1.0 - e)
    return log(_bin.div(x, _bin.sub(1.0, x)))
