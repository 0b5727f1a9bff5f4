"""The dtypes Nabla supports and the one promotion table that governs mixed-dtype ops.

Nabla uses MAX's `DType` directly so no conversion sits between our tensors and MAX graphs.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable

import numpy as np
from max.dtype import DType

bool_ = DType.bool
uint8 = DType.uint8
int8 = DType.int8
int16 = DType.int16
int32 = DType.int32
int64 = DType.int64
uint64 = DType.uint64
float16 = DType.float16
bfloat16 = DType.bfloat16
float32 = DType.float32
float64 = DType.float64

SUPPORTED_DTYPES: tuple[DType, ...] = (bool_, uint8, int8, int16, int32, int64, float16, bfloat16, float32, float64)
# uint64 is internal: RNG seeds are uint64 graph inputs.
_INTERNAL_DTYPES = (uint64,)

# Promotion ranks: a category (bool < integer < float) then a width. The result of mixing
# two dtypes is the larger in this order, except that float16 and bfloat16 promote to
# float32 together and uint8 and int8 to int16 (as in PyTorch).
_RANK = {
    bool_: (0, 1),
    uint8: (1, 8),
    int8: (1, 8),
    int16: (1, 16),
    int32: (1, 32),
    int64: (1, 64),
    uint64: (1, 65),
    float16: (2, 16),
    bfloat16: (2, 17),
    float32: (2, 32),
    float64: (2, 64),
}

_NUMPY_TO_DTYPE = {
    np.dtype(np.bool_): bool_,
    np.dtype(np.uint8): uint8,
    np.dtype(np.int8): int8,
    np.dtype(np.int16): int16,
    np.dtype(np.int32): int32,
    np.dtype(np.int64): int64,
    np.dtype(np.uint64): uint64,
    np.dtype(np.float16): float16,
    np.dtype(np.float32): float32,
    np.dtype(np.float64): float64,
}

_NAMES = {
    "bool": bool_,
    "uint8": uint8,
    "int8": int8,
    "int16": int16,
    "short": int16,
    "int32": int32,
    "int64": int64,
    "float16": float16,
    "half": float16,
    "bfloat16": bfloat16,
    "float32": float32,
    "float": float32,
    "float64": float64,
    "double": float64,
}

DEFAULT_FLOAT = float32  # Python floats' and float factories' dtype: `set_default_float` changes it
DEFAULT_INT = int64


def set_default_float(dtype: DType) -> None:
    """torch.set_default_dtype's state: read as `dtypes.DEFAULT_FLOAT` at each call (never
    imported by value), so factories, Python floats and layers follow it."""
    global DEFAULT_FLOAT
    if dtype not in (float16, bfloat16, float32, float64):
        raise TypeError(f"set_default_dtype: expected a floating dtype, got {dtype}")
    DEFAULT_FLOAT = dtype


# PyTorch's legacy tensor-type names (`x.type()` -> "torch.FloatTensor"), for Tensor.type.
_TENSOR_TYPES = {
    bool_: "BoolTensor",
    uint8: "ByteTensor",
    int8: "CharTensor",
    int16: "ShortTensor",
    int32: "IntTensor",
    int64: "LongTensor",
    float16: "HalfTensor",
    bfloat16: "BFloat16Tensor",
    float32: "FloatTensor",
    float64: "DoubleTensor",
}
_TYPE_NAMES = {name: dtype for dtype, name in _TENSOR_TYPES.items()}


def tensor_type_name(dtype: DType) -> str:
    """PyTorch's name for a CPU tensor of `dtype`, as `Tensor.type()` returns it."""
    return f"torch.{_TENSOR_TYPES[dtype]}"


def as_dtype_or_type_name(dtype: object, *, arg: str = "dtype") -> DType:
    """`as_dtype`, also reading PyTorch's tensor-type names ("torch.FloatTensor")."""
    if isinstance(dtype, str):
        base = dtype.removeprefix("torch.").removeprefix("cuda.").removeprefix("nabla.")
        if base in _TYPE_NAMES:
            return _TYPE_NAMES[base]
    return as_dtype(dtype, arg=arg)


def _supported_list() -> str:
    return ", ".join(d.name for d in SUPPORTED_DTYPES)


def as_dtype(dtype: object, *, arg: str = "dtype") -> DType:
    """Normalise a user-supplied dtype (DType, NumPy dtype, Python type, or name)."""
    if isinstance(dtype, DType):
        if dtype in SUPPORTED_DTYPES or dtype in _INTERNAL_DTYPES:
            return dtype
    elif isinstance(dtype, str) and dtype in _NAMES:
        return _NAMES[dtype]
    elif dtype is float:  # (torch's: a Python float is a double, whatever the default dtype)
        return float64
    elif dtype is int:
        return DEFAULT_INT
    elif dtype is bool:
        return bool_
    else:
        try:
            np_dtype = np.dtype(dtype)  # type: ignore[call-overload]
        except TypeError:
            np_dtype = None
        if np_dtype is not None and np_dtype in _NUMPY_TO_DTYPE:
            return _NUMPY_TO_DTYPE[np_dtype]
    raise TypeError(f"{arg}: unsupported dtype {dtype!r}; supported dtypes are {_supported_list()}")


def from_numpy_dtype(np_dtype: np.dtype, *, arg: str = "data") -> DType:
    """Map a NumPy dtype to ours; float64 data keeps float64 (NumPy semantics)."""
    if np_dtype in _NUMPY_TO_DTYPE:
        return _NUMPY_TO_DTYPE[np_dtype]
    if np_dtype.kind in "iu":
        return int64
    raise TypeError(f"{arg}: unsupported NumPy dtype {np_dtype}; supported dtypes are {_supported_list()}")


def to_numpy_dtype(dtype: DType) -> np.dtype:
    """NumPy storage dtype. bfloat16 has no NumPy dtype, so the NumPy path computes it in float32."""
    if dtype == bfloat16:
        return np.dtype(np.float32)
    return np.dtype(dtype.to_numpy())


# Tuples, not sets: `in` compares identity first, while hashing a DType calls Enum.__hash__
# in Python (these run on every op call).
_FLOATS = tuple(d for d, (kind, _) in _RANK.items() if kind == 2)
_INTEGERS = tuple(d for d, (kind, _) in _RANK.items() if kind == 1)


def is_float(dtype: DType) -> bool:
    return dtype in _FLOATS


def is_integer(dtype: DType) -> bool:
    return dtype in _INTEGERS


def promote_types(a: DType, b: DType) -> DType:
    """The one promotion table: category first (bool < int < float), then width."""
    if a == b:
        return a
    if {a, b} == {float16, bfloat16}:
        return float32
    if {a, b} == {uint8, int8}:
        return int16
    return a if _RANK[a] >= _RANK[b] else b


def _promote_all(dtypes: Iterable[DType]) -> DType | None:
    dtypes = tuple(dtypes)
    return functools.reduce(promote_types, dtypes) if dtypes else None


def _combine_categories(higher: DType | None, lower: DType | None) -> DType | None:
    """PyTorch's `combine_categories`: `lower` (operands with fewer dimensions) counts only when
    its category is above `higher`'s, so `f16_vector + f64_0d` stays float16 while
    `int_vector + f64_0d` is float64. A bool `higher` promotes normally (bool + int -> int)."""
    if higher is None:
        return lower
    if lower is None or is_float(higher):
        return higher
    if higher == bool_ or is_float(lower):
        return promote_types(higher, lower)
    return higher


def result_type(dimensioned: Iterable[DType], zero_dim: Iterable[DType] = (), scalars: Iterable[DType] = ()) -> DType:
    """The dtype of an elementwise op's result (`torch.result_type`).

    Operands promote in three groups: tensors with dimensions, 0-d tensors, and Python numbers
    (`scalars`, typed by `python_scalar_dtype`). Within a group the promotion table applies; a
    group with fewer dimensions only counts where its category (bool < int < float) is above the
    higher groups': `f16_vector + tensor(2.5)` is float16, `int32_vector + tensor(2.5)` float32,
    `int32_vector + tensor(10, dtype=int64)` int32. All-0-d operands promote among themselves.
    """
    dim, zero, scalar = (_promote_all(g) for g in (dimensioned, zero_dim, scalars))
    out = _combine_categories(dim, _combine_categories(zero, scalar))
    if out is None:
        raise ValueError("result_type: no operands")
    return out


def wrapped_int(value: int, dtype: DType, op: str) -> int:
    """A Python int operand in an integer dtype: wrapped modulo 2**bits, as torch converts it
    (an int32 tensor + 2**40 is the tensor + 0, a uint8 tensor + (-1) adds 255); beyond 64
    bits an error."""
    if not -(2**63) <= value < 2**64:
        raise OverflowError(f"{op}: Python int {value} is too big to convert to {dtype.name}")
    bits = 8 * to_numpy_dtype(dtype).itemsize
    if dtype == uint8:
        return value % 2**bits
    return (value + 2 ** (bits - 1)) % 2**bits - 2 ** (bits - 1)


def checked_int(value: int, dtype: DType, op: str) -> int:
    """A Python int stored into an integer dtype (full, fill_, setitem), with torch's check: in
    range, or for an unsigned dtype a negative down to -max, which wraps (uint8: -1 is 255)."""
    info = np.iinfo(to_numpy_dtype(dtype))
    low = -int(info.max) if info.min == 0 else int(info.min)
    if not low <= value <= info.max:
        raise RuntimeError(f"{op}: value {value} cannot be converted to {dtype.name} without overflow")
    return value % (int(info.max) + 1) if value < 0 and info.min == 0 else value


def python_scalar_dtype(value: object) -> DType:
    if isinstance(value, bool):
        return bool_
    if isinstance(value, int):
        return DEFAULT_INT
    if isinstance(value, float):
        return DEFAULT_FLOAT
    raise TypeError(f"unsupported scalar {value!r} of type {type(value).__name__}")
