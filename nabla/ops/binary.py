"""Elementwise binary ops: arithmetic (add sub mul div pow maximum minimum floor_divide remainder
fmod atan2), comparisons and logical ops (the bitwise ones are in bits.py).

`binary_operands` is the single place where operands meet: Python scalars become weakly
typed constants, dtypes are promoted with the one table in `dtypes`, and shapes are broadcast
through `broadcast_to` (whose VJP sums cotangents back). The op classes below therefore only
ever see operands of one shape and one dtype.

MAX has no atan2 and its `mod` does not document a sign convention, so `atan2`, `remainder`
and `fmod` lower to short formulas over MAX elementwise ops. The formulas are written once
against a small namespace of elementwise functions (`_MaxLib`, `_NumpyLib`), so the exact
MAX formula can be tested on NumPy without compiling.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from max.dtype import DType
from max.graph import ops

from ..core.common import dtypes as _dt
from ..core.tensor.tensor import Tensor, needs_python_value
from . import control_flow as _cf
from . import reduction as _red
from . import unary as _un
from .base import AVal, Operation, is_zero_tangent, public
from .cast import cast
from .creation import full, tensor
from .view import broadcast_shapes, broadcast_to

__all__ = [
    "add",
    "addcdiv",
    "addcmul",
    "arctan2",
    "atan2",
    "copysign",
    "div",
    "divide",
    "eq",
    "equal",
    "float_power",
    "floor_divide",
    "fmax",
    "fmin",
    "fmod",
    "gcd",
    "ge",
    "greater",
    "greater_equal",
    "gt",
    "heaviside",
    "hypot",
    "isclose",
    "lcm",
    "ldexp",
    "le",
    "less",
    "less_equal",
    "logaddexp",
    "logaddexp2",
    "logical_and",
    "logical_or",
    "logical_xor",
    "lt",
    "maximum",
    "minimum",
    "mul",
    "multiply",
    "ne",
    "not_equal",
    "pow",
    "remainder",
    "result_type",
    "sub",
    "subtract",
    "true_divide",
]

Operand = Tensor | int | float | bool


def binary_operands(op: str, *operands: Any, float_result: bool = False) -> tuple[Tensor, ...]:
    """Scalars to constants, promote dtypes, broadcast shapes. Raises naming `op` and the shapes."""
    if len(operands) == 2:
        fast = _fast_operands(op, operands[0], operands[1], float_result)
        if fast is not None:
            return fast
    tensors = [t if isinstance(t, Tensor) else (tensor(t) if isinstance(t, np.ndarray | list) else t) for t in operands]
    real = [t for t in tensors if isinstance(t, Tensor)]
    if not real:
        raise TypeError(f"{op}: at least one operand must be a Tensor")
    dtype = _result_dtype(op, tensors)
    if float_result and not _dt.is_float(dtype):
        dtype = _dt.DEFAULT_FLOAT
    shape = broadcast_shapes(*[t.shape for t in real], op=op)
    out = []
    for t in tensors:
        if isinstance(t, Tensor):
            out.append(broadcast_to(cast(t, dtype), shape))
        else:
            value = t.item() if isinstance(t, np.generic) else t
            if type(value) is int and _dt.is_integer(dtype):
                value = _dt.wrapped_int(value, dtype, op)
            out.append(full(shape, value, dtype))  # one op, at its shape
    return tuple(out)


def _result_dtype(op: str, operands: list) -> DType:
    """torch.result_type of the operands: tensors with dimensions, 0-d tensors and Python numbers
    promote as three groups, a group with fewer dimensions counting only where its category is
    higher (`f16_vector + tensor(2.5)` is float16, see `dtypes.result_type`)."""
    dimensioned, zero_dim, scalars = [], [], []
    for t in operands:
        if isinstance(t, Tensor):
            if t._impl.weak_type:  # a Python number turned into a compile input promotes as one
                scalars.append(t.dtype)
            else:
                (dimensioned if t.ndim else zero_dim).append(t.dtype)
        elif isinstance(t, bool | int | float | np.generic):
            scalars.append(_dt.python_scalar_dtype(t.item() if isinstance(t, np.generic) else t))
        else:
            for other in operands:  # (`(1,) * d`, d a Python int argument of nabla.compile)
                needs_python_value(other)
            raise TypeError(f"{op}: unsupported operand of type {type(t).__name__}")
    return _dt.result_type(dimensioned, zero_dim, scalars)


def result_type(*operands: Any) -> DType:
    """The dtype an elementwise op gives these operands, as `torch.result_type`: tensors with
    dimensions promote among themselves; 0-d tensors, then Python numbers, count only where their
    category (bool < int < float) is higher.

    Args:
        operands: Tensors and Python (or NumPy scalar) numbers, at least one.

    Example:
        >>> nabla.result_type(nabla.ones(3, dtype=nabla.float16), nabla.tensor(2.5))
        float16
        >>> nabla.result_type(nabla.ones(3, dtype=nabla.int32), 2.5)
        float32
    """
    if not operands:
        raise TypeError("result_type: expected at least one operand")
    return _result_dtype("result_type", list(operands))


def _fast_operands(op: str, x: Any, y: Any, float_result: bool) -> tuple[Tensor, Tensor] | None:
    """The common cases of `binary_operands`, without its general promotion walk: two tensors
    of one (non-weak) dtype, or a float tensor and a Python int or float. None otherwise."""
    if isinstance(x, Tensor):
        a = x._impl
        if isinstance(y, Tensor):
            b = y._impl
            if a.dtype != b.dtype or a.weak_type or b.weak_type or (float_result and not _dt.is_float(a.dtype)):
                return None
            sa, sb = a.physical_shape[a.batch_dims :], b.physical_shape[b.batch_dims :]
            if sa == sb:
                return x, y
            shape = broadcast_shapes(sa, sb, op=op)
            return broadcast_to(x, shape), broadcast_to(y, shape)
        if type(y) in (int, float) and not a.weak_type and _dt.is_float(a.dtype):
            return x, full(x.shape, y, a.dtype)  # a Python number takes the tensor's float dtype
        return None
    if isinstance(y, Tensor) and type(x) in (int, float):
        b = y._impl
        if not b.weak_type and _dt.is_float(b.dtype):
            return full(y.shape, x, b.dtype), y
    return None


def _no_bool(op: str, x: Tensor, hint: str = "") -> None:
    if x.dtype == _dt.bool_:
        raise TypeError(f"{op}: not supported for bool tensors{hint}")


class BinaryOperation(Operation):
    """Two operands of one shape and dtype in, one tensor out."""

    result_dtype: Any = None  # None: same as the operands (comparisons use bool)
    sharding_rule = "elementwise"

    def abstract_eval(self, x: AVal, y: AVal) -> AVal:
        return x[0], self.result_dtype or x[1]


def _zeros(like: Tensor) -> Tensor:
    return broadcast_to(full((), 0, like.dtype), like.shape)


# -- elementwise formulas shared by the MAX lowering and its NumPy twin --------------------------
class _MaxLib:
    """The elementwise functions the formulas below use, on MAX graph values."""

    abs = staticmethod(ops.abs)
    add = staticmethod(ops.add)
    sub = staticmethod(ops.sub)
    mul = staticmethod(ops.mul)
    div = staticmethod(ops.div)
    maximum = staticmethod(ops.max)
    minimum = staticmethod(ops.min)
    mod = staticmethod(ops.mod)
    equal = staticmethod(ops.equal)
    not_equal = staticmethod(ops.not_equal)
    greater = staticmethod(ops.greater)
    logical_and = staticmethod(ops.logical_and)
    logical_or = staticmethod(ops.logical_or)
    logical_xor = staticmethod(ops.logical_xor)
    where = staticmethod(ops.where)
    is_nan = staticmethod(ops.is_nan)
    is_inf = staticmethod(ops.is_inf)
    pow = staticmethod(ops.pow)

    @staticmethod
    def less(x: Any, y: Any) -> Any:
        return ops.greater(y, x)


class _NumpyLib:
    """NumPy twin of `_MaxLib` (tests run the MAX formulas on NumPy with it)."""

    abs = staticmethod(np.abs)
    add = staticmethod(np.add)
    sub = staticmethod(np.subtract)
    mul = staticmethod(np.multiply)
    div = staticmethod(np.divide)
    maximum = staticmethod(np.maximum)
    minimum = staticmethod(np.minimum)
    mod = staticmethod(np.fmod)  # either sign convention works: the formulas normalise it
    equal = staticmethod(np.equal)
    not_equal = staticmethod(np.not_equal)
    greater = staticmethod(np.greater)
    less = staticmethod(np.less)
    logical_and = staticmethod(np.logical_and)
    logical_or = staticmethod(np.logical_or)
    logical_xor = staticmethod(np.logical_xor)
    where = staticmethod(np.where)
    is_nan = staticmethod(np.isnan)
    is_inf = staticmethod(np.isinf)
    pow = staticmethod(np.power)


def _mod_with_sign_of(lib: Any, x: Any, y: Any, sign_of_divisor: bool) -> Any:
    """`lib.mod(x, y)` moved onto the sign convention asked for, whichever convention `lib.mod` has.

    remainder (Python/PyTorch): a nonzero result has the sign of the divisor `y`.
    fmod (C): a nonzero result has the sign of the dividend `x`.
    """
    r = lib.mod(x, y)
    ref = y if sign_of_divisor else x
    wrong = lib.logical_and(lib.not_equal(r, 0), lib.logical_xor(lib.less(r, 0), lib.less(ref, 0)))
    return lib.where(wrong, lib.add(r, y) if sign_of_divisor else lib.sub(r, y), r)


# Cephes atan: a rational approximation on [0, 0.66], with atan(a) = pi/4 + atan((a-1)/(a+1)) above.
_ATAN_P = (-8.750608600031904122785e-1, -1.615753718733365076637e1, -7.500855792314704667340e1,
           -1.228866684490136173410e2, -6.485021904942025371773e1)  # fmt: skip
_ATAN_Q = (2.485846490142306297962e1, 1.650270098316988542046e2, 4.328810604912902668951e2,
           4.853903996359136964868e2, 1.945506571482613964425e2)  # fmt: skip


def _atan_unit(lib: Any, a: Any) -> Any:
    """atan(a) for a in [0, 1] (nan passes through)."""
    big = lib.greater(a, 0.66)
    t = lib.where(big, lib.div(lib.sub(a, 1.0), lib.add(a, 1.0)), a)
    z = lib.mul(t, t)
    p = _ATAN_P[0]
    for c in _ATAN_P[1:]:
        p = lib.add(lib.mul(p, z), c)
    q = lib.add(z, _ATAN_Q[0])
    for c in _ATAN_Q[1:]:
        q = lib.add(lib.mul(q, z), c)
    r = lib.add(t, lib.mul(t, lib.div(lib.mul(z, p), q)))
    return lib.where(big, lib.add(r, math.pi / 4), r)


def _sign_bit(lib: Any, x: Any) -> Any:
    """x < 0, counting -0.0 as negative (1 / -0.0 is -inf)."""
    return lib.logical_or(lib.less(x, 0.0), lib.logical_and(lib.equal(x, 0.0), lib.less(lib.div(1.0, x), 0.0)))


def _atan2_formula(lib: Any, y: Any, x: Any) -> Any:
    """The angle of the point (x, y), in [-pi, pi], with C's signed-zero and infinity cases."""
    ax, ay = lib.abs(x), lib.abs(y)
    hi, lo = lib.maximum(ax, ay), lib.minimum(ax, ay)
    ratio = lib.div(lo, lib.where(lib.equal(hi, 0.0), 1.0, hi))
    ratio = lib.where(lib.equal(lo, math.inf), 1.0, ratio)  # both infinite: the diagonal
    theta = _atan_unit(lib, ratio)
    theta = lib.where(lib.greater(ay, ax), lib.sub(math.pi / 2, theta), theta)
    theta = lib.where(_sign_bit(lib, x), lib.sub(math.pi, theta), theta)
    theta = lib.where(_sign_bit(lib, y), lib.mul(theta, -1.0), theta)
    return lib.where(lib.logical_or(lib.is_nan(x), lib.is_nan(y)), lib.add(x, y), theta)


def _pow_formula(lib: Any, x: Any, y: Any) -> Any:
    """C's `pow` (what PyTorch computes for float tensors) from a `lib.pow` trusted on finite
    operands only. MAX's CPU pow is not C's on the others: nan ** 0.5 and 1 ** nan give inf,
    (-inf) ** 0.5 nan, 2 ** -inf 1, and such a lane can spoil its SIMD neighbours' results. So
    non-finite operands never reach `lib.pow`; their results are chosen here:
      x ** 0 = 1 ** y = 1, even for nan; otherwise a nan operand gives nan;
      (+-inf) ** y = 1 / (+-0) ** y for finite y (an odd integer y keeps the sign);
      x ** (+-inf) = 1 where |x| == 1, else inf or 0 as (|x| > 1) agrees with (y > 0) or not."""
    x_nan, y_nan, x_inf, y_inf = lib.is_nan(x), lib.is_nan(y), lib.is_inf(x), lib.is_inf(y)
    skip = lib.logical_or(lib.logical_or(x_nan, y_nan), y_inf)
    base = lib.where(skip, 1.0, lib.where(x_inf, lib.div(1.0, x), x))
    p = lib.pow(base, lib.where(skip, 1.0, y))
    p = lib.where(x_inf, lib.div(1.0, p), p)
    ax = lib.abs(x)
    grows = lib.logical_xor(lib.greater(ax, 1.0), lib.less(y, 0.0))
    p = lib.where(y_inf, lib.where(lib.equal(ax, 1.0), 1.0, lib.where(grows, lib.abs(y), 0.0)), p)
    p = lib.where(lib.logical_or(x_nan, y_nan), lib.add(x, y), p)
    return lib.where(lib.logical_or(lib.equal(y, 0.0), lib.equal(x, 1.0)), 1.0, p)


def _np_int_power(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """PyTorch's integer pow, where NumPy raises on negative exponents: x ** -n is the truncated
    1 / x ** n, so 1 for x == 1, -1 or 1 for x == -1 (as n is odd or even), else 0 (0 too)."""
    negative = y < 0
    p = np.power(x, np.where(negative, 0, y))
    odd = (y & 1).astype(bool)
    inverse = np.where(x == 1, 1, np.where(x == -1, np.where(odd, -1, 1), 0)).astype(x.dtype)
    return np.where(negative, inverse, p)


# -- arithmetic --------------------------------------------------------------------------------
class AddOp(BinaryOperation):
    saves_values = False  # (see Operation.saves_values)
    name = "add"
    partial_ok = "additive"

    def kernel(self, x: Any, y: Any) -> Any:
        return ops.logical_or(x, y) if x.dtype == DType.bool else ops.add(x, y)

    def numpy_kernel(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        return x + y

    def vjp_rule(self, primals: list, cotangents: list, outputs: list) -> list:
        return [cotangents[0], cotangents[0]]

    def jvp_rule(self, primals: list, tangents: list, outputs: list) -> list:
        return [add(tangents[0], tangents[1])]


class SubOp(BinaryOperation):
    saves_values = False  # (see Operation.saves_values)
    name = "sub"
    partial_ok = "additive"

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
    partial_ok = (0, 1)  # linear in each operand: one of them may hold partial sums
    scales_partials = True

    def kernel(self, x: Any, y: Any) -> Any:
        return ops.logical_and(x, y) if x.dtype == DType.bool else ops.mul(x, y)

    def numpy_kernel(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        return x * y

    def vjp_rule(self, primals: list, cotangents: list, outputs: list) -> list:
        x, y = primals
        g = cotangents[0]
        return [mul(g, y), mul(g, x)]

    def jvp_rule(self, primals: list, tangents: list, outputs: list) -> list:
        # A constant operand's term is left out, not multiplied by 0: x * 0 is nan at x = inf.
        x, y = primals
        if is_zero_tangent(tangents[1]):
            return [mul(tangents[0], y)]
        if is_zero_tangent(tangents[0]):
            return [mul(x, tangents[1])]
        return [add(mul(tangents[0], y), mul(x, tangents[1]))]


class DivOp(BinaryOperation):
    name = "div"
    partial_ok = (0,)
    scales_partials = True

    def partial_passes(self, position: int, constants: list[float | None]) -> bool:
        # (a1 + a2) / c = a1/c + a2/c needs a finite c other than 0 (1/0 + 0/0 is nan, not inf)
        c = constants[1]
        return c is not None and math.isfinite(c) and c != 0

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
        if is_zero_tangent(tangents[1]):  # (as mul's: inf / c has the tangent t / c, not nan)
            return [div(tangents[0], y)]
        return [div(sub(tangents[0], mul(outputs[0], tangents[1])), y)]


class PowOp(BinaryOperation):
    name = "pow"

    def kernel(self, x: Any, y: Any) -> Any:
        # MAX's integer pow already matches PyTorch's (2 ** -1 == 0, (-1) ** -1 == -1)
        return _pow_formula(_MaxLib, x, y) if _dt.is_float(x.dtype) else ops.pow(x, y)

    def numpy_kernel(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        if np.issubdtype(x.dtype, np.integer):
            return _np_int_power(x, y)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            p = np.power(x, y)
        # NumPy computes x ** 0.5 as sqrt(x) where the exponent is one value (0-d or broadcast):
        # -0.0 and nan at x = -0.0 and -inf, where C's pow gives +0.0 and +inf, i.e. -x.
        return np.where((y == 0.5) & np.signbit(x) & ((x == 0) | np.isinf(x)), -x, p)

    def vjp_rule(self, primals: list, cotangents: list, outputs: list) -> list:
        x, y = primals
        g = cotangents[0]
        return [mul(g, _pow_dx(x, y)), mul(g, _pow_dy(x, y, outputs[0]))]

    def jvp_rule(self, primals: list, tangents: list, outputs: list) -> list:
        # a constant operand adds no term (0 times an infinite or nan partial would be nan)
        x, y = primals
        dy = None if is_zero_tangent(tangents[1]) else mul(tangents[1], _pow_dy(x, y, outputs[0]))
        if is_zero_tangent(tangents[0]) and dy is not None:
            return [dy]
        dx = mul(tangents[0], _pow_dx(x, y))
        return [dx if dy is None else add(dx, dy)]


def _pow_dx(x: Tensor, y: Tensor) -> Tensor:
    """d/dx x**y = y * x**(y - 1), and 0 where y == 0 (PyTorch, JAX): x**0 is constant, also at
    x == 0 where the product would be 0 * 0**-1 = nan. x is replaced by 1 there before the power
    too, so that derivatives of this expression (higher orders) get no 0 * inf there either."""
    y_zero = equal(y, 0)
    power = pow(where_(y_zero, full((), 1, x.dtype), x), sub(y, 1))
    return where_(y_zero, full((), 0, x.dtype), mul(y, power))


def _pow_dy(x: Tensor, y: Tensor, out: Tensor) -> Tensor:
    """d/dy x**y = x**y * log(x), and 0 where x == 0 and y >= 0 (PyTorch: 0**y is 0 or 1 there;
    x == 0 with y < 0 gives inf * log(0) = -inf, as PyTorch)."""
    at_zero = logical_and(equal(x, 0), greater_equal(y, 0))
    return mul(out, _un.log(where_(at_zero, full((), 1, x.dtype), x)))


def _nan_propagating(x: Any, y: Any, out: Any) -> Any:
    """MAX: `out` (MAX's max/min, which skip a NaN) with NaN where x or y is NaN, as NumPy and torch."""
    if not _dt.is_float(x.dtype):
        return out
    return ops.where(ops.is_nan(x), x, ops.where(ops.is_nan(y), y, out))


class MaximumOp(BinaryOperation):
    name = "maximum"

    def kernel(self, x: Any, y: Any) -> Any:
        return _nan_propagating(x, y, ops.max(x, y))

    def numpy_kernel(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        return np.maximum(x, y)

    def vjp_rule(self, primals: list, cotangents: list, outputs: list) -> list:
        return _select_vjp(less(primals[0], primals[1]), greater(primals[0], primals[1]), primals, cotangents[0])

    def jvp_rule(self, primals: list, tangents: list, outputs: list) -> list:
        return [_select_jvp(greater(primals[0], primals[1]), primals, tangents)]


class MinimumOp(BinaryOperation):
    name = "minimum"

    def kernel(self, x: Any, y: Any) -> Any:
        return _nan_propagating(x, y, ops.min(x, y))

    def numpy_kernel(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        return np.minimum(x, y)

    def vjp_rule(self, primals: list, cotangents: list, outputs: list) -> list:
        return _select_vjp(greater(primals[0], primals[1]), less(primals[0], primals[1]), primals, cotangents[0])

    def jvp_rule(self, primals: list, tangents: list, outputs: list) -> list:
        return [_select_jvp(less(primals[0], primals[1]), primals, tangents)]


def _select_vjp(x_loses: Tensor, y_loses: Tensor, primals: list, g: Tensor) -> list:
    """Cotangent routing for maximum/minimum, as PyTorch: the losing side gets nothing, a tie
    splits evenly, and where a NaN makes every comparison false both sides get all of it."""
    tie = equal(primals[0], primals[1])
    share = where_(tie, mul(g, 0.5), g)
    zero = full((), 0, g.dtype)
    return [where_(x_loses, zero, share), where_(y_loses, zero, share)]


def _select_jvp(x_wins: Tensor, primals: list, tangents: list) -> Tensor:
    """As PyTorch's: the winner's tangent, the mean on a tie, y's tangent where a NaN is compared."""
    tie = equal(primals[0], primals[1])
    mean = mul(add(tangents[0], tangents[1]), 0.5)
    return where_(tie, mean, where_(x_wins, tangents[0], tangents[1]))


def _trapping_divisor(y: Any) -> Any:
    """The divisor for MAX's integer division, which traps (SIGFPE ends the process) on a zero
    divisor and on MIN // -1: 1 in those lanes. Callers give NumPy's results there (0 for a zero
    divisor, the wrapped -x for -1); x % 1 is already 0. Floats divide as they are."""
    if not y.dtype.is_integral():
        return y
    lanes = ops.equal(y, 0)
    if y.dtype.is_signed_integral():
        lanes = ops.logical_or(lanes, ops.equal(y, -1))
    return ops.where(lanes, 1, y)


class FloorDivideOp(BinaryOperation):
    """`x // y` rounded toward -inf; integers stay integers. Piecewise constant: zero derivative.
    An integer divided by zero gives 0 (NumPy's value); a Python 0 divisor raises, as torch."""

    name = "floor_divide"

    def kernel(self, x: Any, y: Any) -> Any:
        q = ops.floor_div(x, _trapping_divisor(y))
        if not y.dtype.is_integral():
            return q
        if y.dtype.is_signed_integral():
            q = ops.where(ops.equal(y, -1), ops.negate(x), q)
        return ops.where(ops.equal(y, 0), 0, q)

    def numpy_kernel(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.floor_divide(x, y)

    def vjp_rule(self, primals: list, cotangents: list, outputs: list) -> list:
        return [_zeros(cotangents[0]), _zeros(cotangents[0])]

    def jvp_rule(self, primals: list, tangents: list, outputs: list) -> list:
        return [_zeros(outputs[0])]


class RemainderOp(BinaryOperation):
    """`x - floor(x / y) * y`: the result has the sign of the divisor (Python, PyTorch)."""

    name = "remainder"

    def kernel(self, x: Any, y: Any) -> Any:  # (x % 0 and x % -1 are 0, as x % 1)
        return _mod_with_sign_of(_MaxLib, x, _trapping_divisor(y), sign_of_divisor=True)

    def numpy_kernel(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.remainder(x, y)

    def vjp_rule(self, primals: list, cotangents: list, outputs: list) -> list:
        x, y = primals
        g = cotangents[0]
        return [g, mul(_un.neg(g), floor_divide(x, y))]

    def jvp_rule(self, primals: list, tangents: list, outputs: list) -> list:
        x, y = primals
        return [sub(tangents[0], mul(tangents[1], floor_divide(x, y)))]


def _trunc_divide(x: Tensor, y: Tensor) -> Tensor:
    """x / y rounded toward zero, for operands of one dtype (PyTorch's div_trunc): trunc of the
    true quotient for floats; exact for integers, as x - fmod(x, y) is a multiple of y."""
    if _dt.is_float(x.dtype):
        return _un.trunc(div(x, y))
    return floor_divide(sub(x, fmod(x, y)), y)


class FmodOp(BinaryOperation):
    """`x - trunc(x / y) * y`: the result has the sign of the dividend (C's fmod)."""

    name = "fmod"

    def kernel(self, x: Any, y: Any) -> Any:
        return _mod_with_sign_of(_MaxLib, x, _trapping_divisor(y), sign_of_divisor=False)

    def numpy_kernel(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.fmod(x, y)

    def vjp_rule(self, primals: list, cotangents: list, outputs: list) -> list:
        x, y = primals
        g = cotangents[0]
        return [g, mul(_un.neg(g), _trunc_divide(x, y))]

    def jvp_rule(self, primals: list, tangents: list, outputs: list) -> list:
        x, y = primals
        return [sub(tangents[0], mul(tangents[1], _trunc_divide(x, y)))]


class Atan2Op(BinaryOperation):
    """atan2(x, y): the angle of the point (y, x), as torch.atan2(input, other)."""

    name = "atan2"

    def kernel(self, x: Any, y: Any) -> Any:
        dtype = x.dtype
        if dtype in (DType.float16, DType.bfloat16):  # evaluate the formula in float32
            x, y = ops.cast(x, DType.float32), ops.cast(y, DType.float32)
            return ops.cast(_atan2_formula(_MaxLib, x, y), dtype)
        return _atan2_formula(_MaxLib, x, y)

    def numpy_kernel(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        return np.arctan2(x, y)

    def _partials(self, x: Tensor, y: Tensor) -> tuple[Tensor, Tensor]:
        # d/dx = y / (x^2 + y^2), d/dy = -x / (x^2 + y^2); 0 at the origin (as PyTorch).
        r2 = add(mul(x, x), mul(y, y))
        r2 = where_(equal(r2, 0), full((), 1, r2.dtype), r2)
        return div(y, r2), div(_un.neg(x), r2)

    def vjp_rule(self, primals: list, cotangents: list, outputs: list) -> list:
        dx, dy = self._partials(*primals)
        g = cotangents[0]
        return [mul(g, dx), mul(g, dy)]

    def jvp_rule(self, primals: list, tangents: list, outputs: list) -> list:
        dx, dy = self._partials(*primals)
        return [add(mul(tangents[0], dx), mul(tangents[1], dy))]


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


def _reflexive(max_fn: Any) -> Any:
    """MAX: == or >=, false at a NaN (MAX folds `x == x` and `x >= x` to true)."""

    def compare(x: Any, y: Any) -> Any:
        out = max_fn(x, y)
        return ops.logical_and(out, ops.logical_not(ops.is_nan(x))) if _dt.is_float(x.dtype) else out

    return compare


_equal = _comparison("equal", _reflexive(ops.equal), np.equal)


def _mx_not_equal(x: Any, y: Any) -> Any:
    """MAX: x != y, true at a NaN (MAX's not_equal is ordered, and it folds `x == x` to true)."""
    ne = ops.logical_not(ops.equal(x, y))
    if not _dt.is_float(x.dtype):
        return ne
    return ops.logical_or(ne, ops.logical_or(ops.is_nan(x), ops.is_nan(y)))


_not_equal = _comparison("not_equal", _mx_not_equal, np.not_equal)
_greater = _comparison("greater", ops.greater, np.greater)
_greater_equal = _comparison("greater_equal", _reflexive(ops.greater_equal), np.greater_equal)
_less = _comparison("less", ops.greater, np.less, swap=True)
_less_equal = _comparison("less_equal", _reflexive(ops.greater_equal), np.less_equal, swap=True)
_logical_and = _comparison("logical_and", ops.logical_and, np.logical_and)
_logical_or = _comparison("logical_or", ops.logical_or, np.logical_or)
_logical_xor = _comparison("logical_xor", ops.logical_xor, np.logical_xor)

_add, _sub, _mul, _div, _pow = AddOp(), SubOp(), MulOp(), DivOp(), PowOp()
_maximum, _minimum = MaximumOp(), MinimumOp()
_floor_divide, _remainder, _fmod, _atan2 = FloorDivideOp(), RemainderOp(), FmodOp(), Atan2Op()


# -- public functions --------------------------------------------------------------------------
@public()
def add(x: Operand, y: Operand, *, alpha: Any = 1) -> Tensor:
    """Elementwise `x + alpha * y` with broadcasting (bool + bool is logical or, as in PyTorch)."""
    return _add(*binary_operands("add", x, _times_alpha(y, alpha)))


@public()
def sub(x: Operand, y: Operand, *, alpha: Any = 1) -> Tensor:
    """Elementwise `x - alpha * y` with broadcasting."""
    x, y = binary_operands("sub", x, _times_alpha(y, alpha))
    _no_bool("sub", x, " (use logical_xor or bitwise_xor)")
    return _sub(x, y)


def _times_alpha(y: Operand, alpha: Any) -> Operand:
    """torch's `alpha=` of add/sub: alpha * y (a Python product for a number)."""
    if alpha == 1:
        return y
    return mul(y, alpha) if isinstance(y, Tensor) else y * alpha


@public()
def mul(x: Operand, y: Operand) -> Tensor:
    """Elementwise `x * y` with broadcasting (bool * bool is logical and, as in PyTorch)."""
    return _mul(*binary_operands("mul", x, y))


@public()
def div(x: Operand, y: Operand, *, rounding_mode: str | None = None) -> Tensor:
    """Elementwise `x / y` (`torch.div`).

    Args:
        rounding_mode: None: true division, integer operands give a float result. "trunc": the
            quotient rounded toward zero, "floor": toward -inf (`floor_divide`); both keep the
            operands' promoted dtype (integers stay integers) and have zero gradients.

    Example:
        >>> nabla.div(nabla.tensor([7, -7]), 2, rounding_mode="trunc").tolist()
        [3, -3]
    """
    if rounding_mode is None:
        return _div(*binary_operands("div", x, y, float_result=True))
    if rounding_mode == "floor":
        return floor_divide(x, y)
    if rounding_mode == "trunc":
        return _trunc_divide(*_integer_division_operands("div", x, y, " with rounding_mode='trunc'"))
    raise ValueError(f"div: rounding_mode must be None, 'trunc' or 'floor', got {rounding_mode!r}")


# PyTorch computes a float tensor to these Python-number powers as square, sqrt and rsqrt; the
# roots differ from C's pow at -0.0 and -inf (torch.tensor(-inf) ** 0.5 is nan, pow(-inf, 0.5)
# inf). `x ** 2` as one multiply also spares the MAX graph `_pow_formula`'s special-value lanes.
_SCALAR_POWERS = {2: _un.square, 0.5: _un.sqrt, -0.5: _un.rsqrt}


@public()
def pow(x: Operand, y: Operand) -> Tensor:  # noqa: A001  (the op's name)
    """Elementwise `x ** y`, as C's pow (`torch.pow`): `(-inf) ** y` and `x ** inf` follow it
    and `x ** 0` is 1 even for nan. As in PyTorch, a float tensor to the Python number 2, 0.5 or
    -0.5 is `square`, `sqrt` or `rsqrt`, and an integer tensor to a negative Python int is an error, while
    an integer tensor exponent gives the truncated result (2 ** -1 == 0, (-1) ** -1 == -1)."""
    if isinstance(x, Tensor) and not x._impl.weak_type:
        if _dt.is_float(x.dtype) and isinstance(y, int | float | np.number) and y in _SCALAR_POWERS:
            return _SCALAR_POWERS[y](x)
        if not _dt.is_float(x.dtype) and isinstance(y, int | np.integer) and not isinstance(y, bool) and y < 0:
            raise RuntimeError(f"pow: integers to negative integer powers are not allowed (exponent {y})")
    x, y = binary_operands("pow", x, y)
    if x.dtype == _dt.bool_:  # (bools: 0 ** 0 is 1, so x ** y is x or not y)
        return logical_or(x, _un.logical_not(y))
    return _pow(x, y)


@public()
def maximum(x: Operand, y: Operand) -> Tensor:
    """Elementwise maximum; where x == y the gradient is split evenly (as PyTorch)."""
    return _maximum(*binary_operands("maximum", x, y))


@public()
def minimum(x: Operand, y: Operand) -> Tensor:
    """Elementwise minimum; where x == y the gradient is split evenly (as PyTorch)."""
    return _minimum(*binary_operands("minimum", x, y))


def _integer_division_operands(op: str, x: Operand, y: Operand, context: str = "") -> tuple[Tensor, Tensor]:
    """Promoted operands of an integer-valued division. As torch, a Python 0 divisor of an
    integer tensor raises ZeroDivisionError (a zero inside a tensor divisor gives 0)."""
    divisor = y
    x, y = binary_operands(op, x, y)
    _no_bool(op, x, context)
    if isinstance(divisor, int | np.integer) and divisor == 0 and not _dt.is_float(x.dtype):
        raise ZeroDivisionError(f"{op}: integer division by zero")
    return x, y


@public()
def floor_divide(x: Operand, y: Operand) -> Tensor:
    """Elementwise `x // y`, rounded toward -inf (Python, PyTorch); integers stay integers.

    The derivative is zero everywhere (PyTorch leaves it unimplemented).

    Example:
        >>> nabla.floor_divide(nabla.tensor([7, -7]), 2).tolist()
        [3, -4]
    """
    x, y = _integer_division_operands("floor_divide", x, y)
    return _floor_divide(x, y)


@public()
def remainder(x: Operand, y: Operand) -> Tensor:
    """Elementwise `x % y` with the sign of the divisor `y` (Python, PyTorch).

    Gradients: d/dx = 1, d/dy = -floor(x / y).

    Example:
        >>> nabla.remainder(nabla.tensor([5, -5]), -3).tolist()
        [-1, -2]
    """
    x, y = _integer_division_operands("remainder", x, y)
    return _remainder(x, y)


@public()
def fmod(x: Operand, y: Operand) -> Tensor:
    """Elementwise C `fmod`: the remainder of `x / y` with the sign of the dividend `x`.

    Gradients: d/dx = 1, d/dy = -trunc(x / y).

    Example:
        >>> nabla.fmod(nabla.tensor([5, -5]), -3).tolist()
        [2, -2]
    """
    x, y = _integer_division_operands("fmod", x, y)
    return _fmod(x, y)


@public()
def atan2(x: Operand, y: Operand) -> Tensor:
    """Elementwise arctangent of `x / y` using both signs (torch.atan2(input, other)).

    Returns the angle of the point `(y, x)` in [-pi, pi]; integer inputs give float32.
    """
    return _atan2(*binary_operands("atan2", x, y, float_result=True))


def _compare(op: Operation, name: str) -> Any:
    def fn(x: Operand, y: Operand) -> Tensor:
        return op(*binary_operands(name, x, y))

    fn.__name__ = name
    fn.__doc__ = f"Elementwise `{name}` comparison; returns a bool tensor."
    return public(name)(fn)


equal = _compare(_equal, "equal")
not_equal = _compare(_not_equal, "not_equal")
greater = _compare(_greater, "greater")
greater_equal = _compare(_greater_equal, "greater_equal")
less = _compare(_less, "less")
less_equal = _compare(_less_equal, "less_equal")
eq, ne, gt, ge, lt, le = equal, not_equal, greater, greater_equal, less, less_equal


def _logical(op: Operation, name: str, doc: str) -> Any:
    def fn(x: Operand, y: Operand) -> Tensor:
        return op(*(cast(t, _dt.bool_) for t in binary_operands(name, x, y)))

    fn.__name__ = name
    fn.__doc__ = f"Elementwise logical {doc} of the truth values (nonzero is True) of any dtype; a bool tensor."
    return public(name)(fn)


logical_and = _logical(_logical_and, "logical_and", "and")
logical_or = _logical(_logical_or, "logical_or", "or")
logical_xor = _logical(_logical_xor, "logical_xor", "exclusive or")


def where_(cond: Tensor, x: Operand, y: Operand) -> Tensor:
    return _cf.where(cond, x, y)


# -- composites: PyTorch's other two-operand functions -----------------------------------------
# Built from the ops above, so derivatives, MAX lowerings, vmap and sharding come with them.
# Where a branch of `where_` would see inf or nan on the side not taken, its input is made safe
# first (the unselected side's gradient is 0 times a finite number, never 0 * inf).
multiply, subtract, divide, true_divide, arctan2 = mul, sub, div, div, atan2
_LN2 = math.log(2.0)


def _logaddexp(name: str, x: Operand, y: Operand, base_e: bool) -> Tensor:
    x, y = binary_operands(name, x, y, float_result=True)
    same_inf = logical_and(_un.isinf(x), equal(x, y))  # both +inf or both -inf: that value
    gap = _un.neg(_un.abs(where_(same_inf, 0.0, sub(x, y))))
    tail = _un.log1p(_un.exp(gap)) if base_e else div(_un.log1p(_un.exp(mul(gap, _LN2))), _LN2)
    return where_(same_inf, x, add(maximum(x, y), tail))


@public()
def logaddexp(x: Operand, y: Operand) -> Tensor:
    """Elementwise log(e**x + e**y), computed stably: max(x, y) + log1p(e**-|x - y|)."""
    return _logaddexp("logaddexp", x, y, True)


@public()
def logaddexp2(x: Operand, y: Operand) -> Tensor:
    """Elementwise log2(2**x + 2**y), computed stably."""
    return _logaddexp("logaddexp2", x, y, False)


@public()
def hypot(x: Operand, y: Operand) -> Tensor:
    """Elementwise sqrt(x**2 + y**2) without overflow (as C's hypot: inf if either is infinite)."""
    x, y = binary_operands("hypot", x, y, float_result=True)
    ax, ay = _un.abs(x), _un.abs(y)
    hi, lo = maximum(ax, ay), minimum(ax, ay)
    r = div(lo, where_(equal(hi, 0.0), 1.0, hi))
    out = mul(hi, _un.sqrt(add(mul(r, r), 1.0)))
    return where_(logical_or(_un.isinf(x), _un.isinf(y)), math.inf, out)


@public()
def copysign(x: Operand, y: Operand) -> Tensor:
    """Elementwise |x| with the sign (bit) of y, so -0.0 counts as negative; float result. The
    gradient reaches x only (0 at x == 0, as PyTorch)."""
    x, y = binary_operands("copysign", x, y, float_result=True)
    return mul(_un.abs(x), where_(_un.signbit(y), full((), -1.0, x.dtype), full((), 1.0, x.dtype)))


@public()
def heaviside(x: Operand, values: Operand) -> Tensor:
    """Elementwise step function: 0 where x < 0, `values` where x == 0, 1 where x > 0 (nan: 0, as
    PyTorch, whose derivative of it is not implemented)."""
    x, values = binary_operands("heaviside", x, values)
    _no_bool("heaviside", x)
    return where_(equal(x, 0), values, cast(greater(x, 0), x.dtype))


def _nan_ignoring(name: str, x: Operand, y: Operand, keep_x: Any) -> Tensor:
    x, y = binary_operands(name, x, y)
    _no_bool(name, x)
    pick_x = keep_x(x, y)
    if _dt.is_float(x.dtype):  # a nan loses to a number (both nan: nan)
        pick_x = where_(_un.isnan(y), True, where_(_un.isnan(x), False, pick_x))
    return where_(pick_x, x, y)


@public()
def fmax(x: Operand, y: Operand) -> Tensor:
    """Elementwise maximum that ignores nan (the other value; nan only if both are). The gradient
    goes to x where x >= y, as PyTorch's (maximum splits ties)."""
    return _nan_ignoring("fmax", x, y, greater_equal)


@public()
def fmin(x: Operand, y: Operand) -> Tensor:
    """Elementwise minimum that ignores nan (the other value; nan only if both are). The gradient
    goes to x where x <= y, as PyTorch's."""
    return _nan_ignoring("fmin", x, y, less_equal)


@public()
def float_power(x: Operand, y: Operand) -> Tensor:
    """Elementwise x ** y computed in float64 (the result is float64 whatever the inputs)."""
    x, y = (cast(t, _dt.float64) if isinstance(t, Tensor) else float(t) for t in (x, y))
    return pow(x, y)


@public()
def isclose(x: Operand, y: Operand, rtol: float = 1e-5, atol: float = 1e-8, equal_nan: bool = False) -> Tensor:
    """Elementwise |x - y| <= atol + rtol * |y| (equal infinities are close; nan is close to nan
    only with `equal_nan`); a bool tensor."""
    x, y = binary_operands("isclose", x, y)
    if rtol < 0 or atol < 0:
        raise ValueError(f"isclose: rtol and atol must be non-negative, got rtol={rtol}, atol={atol}")
    close = equal(x, y)
    if x.dtype == _dt.bool_:
        return close
    fx, fy = (t if _dt.is_float(t.dtype) else cast(t, _dt.float64) for t in (x, y))
    error = _un.abs(sub(fx, fy))
    within = logical_and(_un.isfinite(error), less_equal(error, add(mul(_un.abs(fy), float(rtol)), float(atol))))
    close = logical_or(close, within)
    if equal_nan and _dt.is_float(x.dtype):
        close = logical_or(close, logical_and(_un.isnan(x), _un.isnan(y)))
    return close


def _integers(name: str, x: Operand, y: Operand) -> tuple[Tensor, Tensor]:
    x, y = binary_operands(name, x, y)
    if not _dt.is_integer(x.dtype):
        raise TypeError(f"{name}: expected integer tensors, got dtype {x.dtype.name}")
    return x, y


def _gcd(a: Tensor, b: Tensor) -> Tensor:
    """Euclid's algorithm on |a|, |b| (elementwise), looped until every remainder is 0."""

    def step(carry: tuple) -> tuple:
        u, v = carry
        nonzero = not_equal(v, 0)
        return where_(nonzero, v, u), where_(nonzero, remainder(u, where_(nonzero, v, 1)), 0)

    u, _ = _cf.while_loop(lambda c: _red.any(not_equal(c[1], 0)), step, (_un.abs(a), _un.abs(b)))
    return u


@public()
def gcd(x: Operand, y: Operand) -> Tensor:
    """Elementwise greatest common divisor of integers (non-negative; gcd(0, 0) == 0): Euclid's
    algorithm in a `while_loop`, whose predicate (any remainder left) is read on the host."""
    return _gcd(*_integers("gcd", x, y))


@public()
def lcm(x: Operand, y: Operand) -> Tensor:
    """Elementwise least common multiple of integers (non-negative; 0 if either is 0)."""
    x, y = _integers("lcm", x, y)
    g = _gcd(x, y)
    return _un.abs(mul(floor_divide(x, where_(equal(g, 0), 1, g)), y))


@public()
def ldexp(x: Operand, exponent: Operand) -> Tensor:
    """Elementwise x * 2**exponent; float result."""
    x, exponent = binary_operands("ldexp", x, exponent, float_result=True)
    return mul(x, pow(2.0, exponent))


def _value_check(name: str, operands: tuple, value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float | np.integer | np.floating):
        raise TypeError(f"{name}: value must be a number, got {value!r}")
    tensors = [t for t in operands if isinstance(t, Tensor)]
    if tensors and not any(_dt.is_float(t.dtype) for t in tensors) and isinstance(value, float | np.floating):
        raise TypeError(f"{name}: for integer tensors, value must not be a floating point number, got {value}")


@public()
def addcmul(x: Operand, tensor1: Operand, tensor2: Operand, value: Any = 1) -> Tensor:
    """Elementwise x + value * tensor1 * tensor2 (`torch.addcmul`), broadcasting all three."""
    _value_check("addcmul", (x, tensor1, tensor2), value)
    product = mul(tensor1, tensor2)
    return add(x, product if value == 1 else mul(product, value))


@public()
def addcdiv(x: Operand, tensor1: Operand, tensor2: Operand, value: Any = 1) -> Tensor:
    """Elementwise x + value * tensor1 / tensor2 (`torch.addcdiv`); integer tensor1 and tensor2
    are an error, as in PyTorch."""
    _value_check("addcdiv", (x, tensor1, tensor2), value)
    if all(not isinstance(t, Tensor) or not _dt.is_float(t.dtype) for t in (tensor1, tensor2)):
        raise TypeError("addcdiv: integer division of tensor1 by tensor2 is not supported; use floats")
    quotient = div(tensor1, tensor2)
    return add(x, quotient if value == 1 else mul(quotient, value))
