"""Bit-level ops: `&`, `|`, `^`, `~` (torch's bitwise_and / or / xor / not), the integer shifts
(`bitwise_left_shift` / `bitwise_right_shift`, `<<` and `>>`) and `nextafter`.

MAX has no bitwise, shift or bitcast ops, so:
  and/or/xor on bool tensors are the logical ops; on integers a primitive whose MAX lowering
             takes the two's complement bits one at a time (x - 2 floor(x / 2), then x halved,
             the last one the sign), combines them with integer arithmetic and sums them back
             (one fused elementwise kernel); its NumPy kernel is NumPy's. `~x` is -x - 1.
  shifts     composites: `x << s` is x * 2^s (wrapping as the C shift of the unsigned value
             does) and `x >> s` is floor(x / 2^s), 2^s read from a table of the dtype's
             powers of two. Shifts outside [0, bits) give torch's results: 0 for `<<`, the
             sign fill (0 or -1) for `>>`.
  nextafter  a primitive. Its MAX lowering steps |x| by the spacing of floats there, 2^(e - p)
             for x in [2^(e-1), 2^e) with p mantissa bits (half of it when stepping down from a
             power of two, 2^emin among subnormals). e comes from log2, corrected exactly
             against a table of powers of two. Its NumPy kernel is `np.nextafter` (the same
             formula in float64 for bfloat16, which NumPy lacks). As torch: d/dx = 1, d/dy = 0.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from max.dtype import DType
from max.graph import ops

from ..core.common import dtypes as _dt
from ..core.tensor.tensor import Tensor
from . import control_flow as _cf
from . import unary as _un
from .base import AVal, public
from .binary import (
    BinaryOperation,
    binary_operands,
    floor_divide,
    greater_equal,
    less,
    logical_and,
    logical_or,
    logical_xor,
    mul,
)
from .creation import full_like, tensor, zeros_like
from .gather_scatter import take
from .special import _MaxMath, _NumpyMath

__all__ = [
    "bitwise_and",
    "bitwise_left_shift",
    "bitwise_not",
    "bitwise_or",
    "bitwise_right_shift",
    "bitwise_xor",
    "nextafter",
]


# -- and, or, xor, not -----------------------------------------------------------------------------
def _bit_combine(lib: Any, kind: str, a: Any, b: Any) -> Any:
    """One bit (0 or 1 in each operand) of a AND / OR / XOR b, in integer arithmetic."""
    both = lib.mul(a, b)
    if kind == "and":
        return both
    either = lib.add(a, b)
    return lib.sub(either, both) if kind == "or" else lib.sub(either, lib.mul(both, 2))


def _bitwise_formula(lib: Any, x: Any, y: Any, kind: str, bits: int) -> Any:
    """x `kind` y for two's complement integers of width `bits`, from integer arithmetic alone."""
    out = lib.mul(x, 0)
    weight = 1
    for _ in range(bits - 1):
        half_x, half_y = lib.floor_div(x, 2), lib.floor_div(y, 2)  # floor: -1 // 2 == -1
        bit = _bit_combine(lib, kind, lib.sub(x, lib.mul(half_x, 2)), lib.sub(y, lib.mul(half_y, 2)))
        out = lib.add(out, lib.mul(bit, weight))
        x, y, weight = half_x, half_y, weight * 2
    # x and y are now their sign bits: 0 or -1; the top bit weighs -2^(bits-1) (it wraps there)
    sign = _bit_combine(lib, kind, lib.neg(x), lib.neg(y))
    return lib.add(out, lib.mul(sign, -(2 ** (bits - 1))))


class _MaxInts:
    add, sub, mul, floor_div, neg = ops.add, ops.sub, ops.mul, ops.floor_div, ops.negate


class _NumpyInts:
    add, sub, mul, floor_div, neg = np.add, np.subtract, np.multiply, np.floor_divide, np.negative


class IntegerBitwiseOp(BinaryOperation):
    """x & y, x | y or x ^ y (`kind`) of two integer tensors of one dtype."""

    name = "integer_bitwise"
    differentiable = False

    def abstract_eval(self, x: AVal, y: AVal, *, kind: str) -> AVal:
        return x

    def kernel(self, x: Any, y: Any, *, kind: str) -> Any:
        if x.dtype in (DType.int32, DType.int64):
            return _bitwise_formula(_MaxInts, x, y, kind, 32 if x.dtype == DType.int32 else 64)
        # 8 and 16 bits: in int32 (sign- or zero-extended, so 16 bits hold every value and its
        # sign), then narrowed back
        wide = _bitwise_formula(_MaxInts, ops.cast(x, DType.int32), ops.cast(y, DType.int32), kind, 16)
        return ops.cast(wide, x.dtype)

    def numpy_kernel(self, x: np.ndarray, y: np.ndarray, *, kind: str) -> np.ndarray:
        return {"and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor}[kind](x, y)


_integer_bitwise = IntegerBitwiseOp()
_LOGICAL = {"and": logical_and, "or": logical_or, "xor": logical_xor}


def _bitwise(kind: str, x: Any, y: Any) -> Tensor:
    name = f"bitwise_{kind}"
    x, y = binary_operands(name, x, y)
    if x.dtype == _dt.bool_:
        return _LOGICAL[kind](x, y)
    if not _dt.is_integer(x.dtype):
        raise TypeError(
            f"{name}: floating-point operands (dtype {x.dtype.name}) are not supported; use bool or integers"
        )
    return _integer_bitwise(x, y, kind=kind)


@public()
def bitwise_and(x: Any, y: Any) -> Tensor:
    """Elementwise `x & y` of bool (logical and) or integer tensors (torch.bitwise_and).

    Example:
        >>> nabla.bitwise_and(nabla.tensor([12, -1]), 10).tolist()
        [8, 10]
    """
    return _bitwise("and", x, y)


@public()
def bitwise_or(x: Any, y: Any) -> Tensor:
    """Elementwise `x | y` of bool (logical or) or integer tensors (torch.bitwise_or)."""
    return _bitwise("or", x, y)


@public()
def bitwise_xor(x: Any, y: Any) -> Tensor:
    """Elementwise `x ^ y` of bool (logical xor) or integer tensors (torch.bitwise_xor)."""
    return _bitwise("xor", x, y)


@public()
def bitwise_not(x: Tensor) -> Tensor:
    """Elementwise `~x`: logical not of a bool tensor, -x - 1 of an integer one (torch.bitwise_not)."""
    if not isinstance(x, Tensor):
        raise TypeError(f"bitwise_not: x must be a Tensor, got {type(x).__name__}")
    if x.dtype == _dt.bool_:
        return logical_xor(x, True)
    if not _dt.is_integer(x.dtype):
        raise TypeError(
            f"bitwise_not: floating-point tensors (dtype {x.dtype.name}) are not supported; use bool or integers"
        )
    return _un.neg(x) - 1


# -- shifts ----------------------------------------------------------------------------------------
_POWERS: dict[DType, Tensor] = {}  # dtype -> its powers of two 2^0 .. 2^(bits-1) (a graph input)


def _powers_of_two(dtype: DType) -> Tensor:
    table = _POWERS.get(dtype)
    if table is None:
        np_dtype = _dt.to_numpy_dtype(dtype)
        bits = np_dtype.itemsize * 8
        # 2^(bits-1) wraps to the minimum of a signed type: x * it is still x << (bits-1)
        powers = (np.uint64(1) << np.arange(bits, dtype=np.uint64)).astype(np_dtype)
        table = _POWERS[dtype] = tensor(powers, dtype=dtype)
    return table


def _shift_operands(op: str, x: Any, y: Any) -> tuple[Tensor, Tensor, int, bool]:
    """(x, y) promoted as torch promotes them, the dtype's width, whether it is signed."""
    x, y = binary_operands(op, x, y)
    if not _dt.is_integer(x.dtype):
        raise TypeError(f"{op}: expected integer operands, got dtype {x.dtype.name}")
    np_dtype = _dt.to_numpy_dtype(x.dtype)
    return x, y, np_dtype.itemsize * 8, np.issubdtype(np_dtype, np.signedinteger)


def _power_at(x: Tensor, shift: Tensor, top: int) -> Tensor:
    """2^shift in x's dtype, shift clipped into [0, top]."""
    return take(_powers_of_two(x.dtype), _un.clamp(shift, 0, top).astype(_dt.int64))


@public()
def bitwise_left_shift(x: Any, y: Any) -> Tensor:
    """Elementwise `x << y` of integers (torch.bitwise_left_shift): the bits of x moved up by y,
    wrapping in x's width; 0 where y < 0 or y >= the width.

    Example:
        >>> nabla.bitwise_left_shift(nabla.tensor([1, -3], dtype=nabla.int32), 2).tolist()
        [4, -12]
    """
    x, y, bits, _ = _shift_operands("bitwise_left_shift", x, y)
    valid = logical_and(greater_equal(y, 0), less(y, bits))
    return _cf.where(valid, mul(x, _power_at(x, y, bits - 1)), zeros_like(x))


@public()
def bitwise_right_shift(x: Any, y: Any) -> Tensor:
    """Elementwise `x >> y` of integers (torch.bitwise_right_shift): arithmetic for signed types
    (rounds toward -inf), logical for unsigned ones; where y < 0 or y is past the width, the
    sign fill (-1 for negative x, else 0), as torch.

    Example:
        >>> nabla.bitwise_right_shift(nabla.tensor([-7, 200]), 1).tolist()
        [-4, 100]
    """
    x, y, bits, signed = _shift_operands("bitwise_right_shift", x, y)
    top = bits - 1 if signed else bits  # (2^(bits-1) is not a positive signed value)
    valid = logical_and(greater_equal(y, 0), less(y, top))
    shifted = floor_divide(x, _power_at(x, y, top - 1))
    fill = _cf.where(less(x, 0), full_like(x, -1), zeros_like(x)) if signed else zeros_like(x)
    return _cf.where(valid, shifted, fill)


# -- nextafter -------------------------------------------------------------------------------------
# Per float dtype: (mantissa bits p with the implicit one, exponent of the smallest subnormal,
# largest binary exponent).
_FORMAT = {
    DType.float16: (11, -24, 15),
    DType.bfloat16: (8, -133, 127),
    DType.float32: (24, -149, 127),
    DType.float64: (53, -1074, 1023),
}


def _nextafter_formula(lib: Any, x: Any, y: Any, fmt: tuple[int, int, int]) -> Any:
    """The float after x toward y in the format `fmt`, computed in x's (wider or equal) type."""
    p, emin, emax = fmt
    ax = lib.abs(x)
    finite = lib.logical_and(lib.greater(ax, 0.0), lib.logical_not(lib.is_inf(ax)))
    safe = lib.where(finite, ax, 1.0)
    # the binary exponent e: 2^(e-1) <= |x| < 2^e (log2 may be one off near a power of two)
    e = lib.add(lib.floor(lib.log2(safe)), 1.0)
    e = lib.where(lib.less(safe, lib.pow2(lib.sub(e, 1.0), emin, emax)), lib.sub(e, 1.0), e)
    e = lib.where(lib.greater_equal(safe, lib.pow2(e, emin, emax)), lib.add(e, 1.0), e)
    up = lib.pow2(lib.maximum(lib.sub(e, float(p)), float(emin)), emin, emax)
    at_power = lib.equal(safe, lib.pow2(lib.sub(e, 1.0), emin, emax))
    down = lib.where(at_power, lib.pow2(lib.maximum(lib.sub(e, float(p + 1)), float(emin)), emin, emax), up)
    away = lib.equal(lib.greater(y, x), lib.greater(x, 0.0))  # |x| grows
    magnitude = lib.where(away, lib.add(ax, up), lib.sub(ax, down))
    r = lib.where(lib.less(x, 0.0), lib.neg(magnitude), magnitude)
    largest = lib.const(x, math.ldexp(2.0 - math.ldexp(1.0, 1 - p), emax))
    r = lib.where(lib.is_inf(x), lib.where(lib.greater(x, 0.0), largest, lib.neg(largest)), r)
    tiny = lib.const(x, math.ldexp(1.0, emin))
    r = lib.where(lib.equal(x, 0.0), lib.where(lib.greater(y, 0.0), tiny, lib.neg(tiny)), r)
    r = lib.where(lib.equal(x, y), y, r)
    return lib.where(lib.logical_or(lib.is_nan(x), lib.is_nan(y)), lib.const(x, math.nan), r)


def _powers_table(emin: int, emax: int) -> np.ndarray:
    """2^k for k in [emin, emax + 1], exactly (in float64; the largest overflows a narrower type
    to inf, which no finite value reaches)."""
    return np.ldexp(1.0, np.arange(emin, emax + 2))


class _MaxBits(_MaxMath):
    neg = staticmethod(ops.negate)

    @staticmethod
    def greater_equal(x: Any, y: Any) -> Any:
        return ops.logical_not(ops.greater(y, x))

    @staticmethod
    def log2(x: Any) -> Any:
        return ops.mul(ops.log(x), 1.0 / math.log(2.0))

    @staticmethod
    def const(like: Any, value: float) -> Any:
        return ops.constant(value, like.dtype, like.device)

    @staticmethod
    def pow2(k: Any, emin: int, emax: int) -> Any:
        with np.errstate(over="ignore"):  # 2^(emax+1) is inf in the format's own type
            powers = _powers_table(emin, emax).astype(k.dtype.to_numpy())
        table = ops.constant(powers, k.dtype, k.device)
        index = ops.cast(ops.sub(ops.min(ops.max(k, float(emin)), float(emax + 1)), float(emin)), DType.int64)
        return ops.gather(table, index, axis=0)


class _NumpyBits(_NumpyMath):
    neg = staticmethod(np.negative)
    greater_equal = staticmethod(np.greater_equal)
    log2 = staticmethod(np.log2)

    @staticmethod
    def const(like: Any, value: float) -> Any:
        return np.asarray(value, like.dtype)

    @staticmethod
    def pow2(k: Any, emin: int, emax: int) -> Any:
        return _powers_table(emin, emax)[(np.clip(k, emin, emax + 1) - emin).astype(np.int64)]


class NextafterOp(BinaryOperation):
    """`fmt` (a static argument): the float format of the operands, (p, emin, emax)."""

    name = "nextafter"

    def abstract_eval(self, x: AVal, y: AVal, *, fmt: tuple) -> AVal:
        return x

    def kernel(self, x: Any, y: Any, *, fmt: tuple) -> Any:
        dtype = x.dtype
        if dtype in (DType.float16, DType.bfloat16):  # computed in float32: x +- spacing is exact there
            wide = [ops.cast(v, DType.float32) for v in (x, y)]
            return ops.cast(_nextafter_formula(_MaxBits, *wide, fmt), dtype)
        return _nextafter_formula(_MaxBits, x, y, fmt)

    def numpy_kernel(self, x: np.ndarray, y: np.ndarray, *, fmt: tuple) -> np.ndarray:
        if fmt[0] == {np.float16: 11, np.float32: 24, np.float64: 53}.get(x.dtype.type):
            with np.errstate(over="ignore"):
                return np.nextafter(x, y)
        with np.errstate(all="ignore"):  # bfloat16, stored as float32
            return _nextafter_formula(_NumpyBits, x.astype(np.float64), y.astype(np.float64), fmt).astype(x.dtype)

    def vjp_rule(self, primals: list, cotangents: list, outputs: list, *, fmt: tuple) -> list:
        return [cotangents[0], zeros_like(primals[1])]

    def jvp_rule(self, primals: list, tangents: list, outputs: list, *, fmt: tuple) -> list:
        return [tangents[0]]


_nextafter = NextafterOp()


@public()
def nextafter(x: Any, y: Any) -> Tensor:
    """Elementwise the next float after x toward y (torch.nextafter, C's nextafter), in the
    operands' promoted float dtype; y where x == y, nan where either is nan.

    Example:
        >>> nabla.nextafter(nabla.tensor([1.0]), 2.0).item() - 1.0  # 2^-23
        1.1920928955078125e-07
    """
    x, y = binary_operands("nextafter", x, y)
    if not _dt.is_float(x.dtype):
        raise TypeError(f"nextafter: expected floating-point operands, got dtype {x.dtype.name}")
    return _nextafter(x, y, fmt=_FORMAT[x.dtype])
