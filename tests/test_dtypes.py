"""The dtype promotion table (`nabla.core.common.dtypes`) against PyTorch's, written out in full,
weakly typed Python scalars, and the dtypes binary ops actually produce on the NumPy executor."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import nabla as nb
from nabla.core.common import dtypes as _dt

B, U8, I8, I16, I32, I64, F16, BF16, F32, F64 = (
    _dt.bool_,
    _dt.uint8,
    _dt.int8,
    _dt.int16,
    _dt.int32,
    _dt.int64,
    _dt.float16,
    _dt.bfloat16,
    _dt.float32,
    _dt.float64,
)
DTYPES = (B, U8, I8, I16, I32, I64, F16, BF16, F32, F64)

# torch.promote_types(row, column) for every pair (PyTorch 2.x; JAX with x64 enabled agrees):
# category first (bool < integer < float), then width; float16 with bfloat16 gives float32,
# uint8 with int8 int16.
#            bool  uint8 int8  int16 int32 int64 f16   bf16  f32   f64
EXPECTED = {
    B: (B, U8, I8, I16, I32, I64, F16, BF16, F32, F64),
    U8: (U8, U8, I16, I16, I32, I64, F16, BF16, F32, F64),
    I8: (I8, I16, I8, I16, I32, I64, F16, BF16, F32, F64),
    I16: (I16, I16, I16, I16, I32, I64, F16, BF16, F32, F64),
    I32: (I32, I32, I32, I32, I32, I64, F16, BF16, F32, F64),
    I64: (I64, I64, I64, I64, I64, I64, F16, BF16, F32, F64),
    F16: (F16, F16, F16, F16, F16, F16, F16, F32, F32, F64),
    BF16: (BF16, BF16, BF16, BF16, BF16, BF16, F32, BF16, F32, F64),
    F32: (F32, F32, F32, F32, F32, F32, F32, F32, F32, F64),
    F64: (F64, F64, F64, F64, F64, F64, F64, F64, F64, F64),
}
PAIRS = list(itertools.product(DTYPES, DTYPES))


def _id(pair: tuple) -> str:
    return f"{pair[0].name}-{pair[1].name}"


def expected(a, b):
    return EXPECTED[a][DTYPES.index(b)]


def test_expected_table_is_symmetric():
    for a, b in PAIRS:
        assert expected(a, b) == expected(b, a), (a, b)


@pytest.mark.parametrize("pair", PAIRS, ids=_id)
def test_promote_types_matches_table(pair):
    a, b = pair
    assert _dt.promote_types(a, b) == expected(a, b)


# Python scalars are weak: they never widen a tensor's dtype within its category; a float scalar
# with an integer/bool tensor gives the default float (float32), an int scalar with a bool tensor
# the default int (int64). (PyTorch's rules for wrapped numbers.)
#                 True  2     2.5
SCALAR_EXPECTED = {
    B: (B, I64, F32),
    U8: (U8, U8, F32),
    I8: (I8, I8, F32),
    I16: (I16, I16, F32),
    I32: (I32, I32, F32),
    I64: (I64, I64, F32),
    F16: (F16, F16, F16),
    BF16: (BF16, BF16, BF16),
    F32: (F32, F32, F32),
    F64: (F64, F64, F64),
}
SCALARS = (True, 2, 2.5)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
def test_scalar_result_dtype(dtype):
    for scalar, want in zip(SCALARS, SCALAR_EXPECTED[dtype], strict=True):
        assert _dt.result_type((dtype,), (), (_dt.python_scalar_dtype(scalar),)) == want, (dtype, scalar)


def test_scalar_result_dtype_rejects_non_scalars():
    with pytest.raises(TypeError, match="unsupported scalar"):
        _dt.python_scalar_dtype("2")


def _tensor(dtype, values=(1, 2, 3)):
    return nb.tensor(np.array(values)).astype(dtype)


def _storage(dtype) -> np.dtype:
    return np.dtype(np.float32) if dtype == BF16 else np.dtype(dtype.to_numpy())


def _check(out, dtype):
    assert out.dtype == dtype, f"got {out.dtype.name}, expected {dtype.name}"
    assert out.numpy().dtype == _storage(dtype)


@pytest.mark.parametrize("pair", PAIRS, ids=_id)
def test_arithmetic_ops_produce_the_promoted_dtype(pair):
    a, b = pair
    x, y = _tensor(a, (1, 0, 1)), _tensor(b, (1, 1, 0))
    want = expected(a, b)
    _check(nb.add(x, y), want)
    _check(x * y, want)
    _check(nb.maximum(x, y), want)
    _check(nb.minimum(x, y), want)
    if want != B:
        _check(x - y, want)
        _check(nb.floor_divide(x, _tensor(b, (1, 1, 1))), want)
        _check(nb.remainder(x, _tensor(b, (1, 1, 1))), want)
        _check(nb.fmod(x, _tensor(b, (1, 1, 1))), want)
    float_want = want if _dt.is_float(want) else F32
    _check(x / _tensor(b, (1, 1, 1)), float_want)
    _check(nb.atan2(x, y), float_want)
    for cmp in (nb.eq, nb.less, nb.greater_equal, nb.logical_and, nb.logical_xor):
        _check(cmp(x, y), B)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
def test_ops_with_python_scalars_use_weak_typing(dtype):
    x = _tensor(dtype, (1, 0, 1))
    for scalar, want in zip(SCALARS, SCALAR_EXPECTED[dtype], strict=True):
        _check(x + scalar, want)
        _check(scalar + x, want)
        _check(x * scalar, want)
        _check(nb.maximum(x, scalar), want)
        if want != B:
            _check(x - scalar, want)
            _check(scalar - x, want)


def test_weak_scalar_examples():
    _check(_tensor(I32) * 2.5, F32)
    _check(_tensor(I64) * 2.5, F32)
    _check(_tensor(F16) * 2, F16)
    _check(_tensor(BF16) * 2.5, BF16)
    _check(_tensor(F64) + 1.0, F64)
    _check(_tensor(I32) + 2, I32)
    _check(_tensor(I32) + True, I32)
    _check(_tensor(B, (True, False)) + True, B)
    _check(_tensor(B, (True, False)) + 2, I64)
    _check(_tensor(B, (True, False)) * 2.5, F32)
    _check(_tensor(I32) / 2, F32)
    _check(_tensor(I32) // 2, I32)
    _check(_tensor(I32) % 2, I32)
    _check(_tensor(I32) // 2.5, F32)
    _check(nb.pow(_tensor(I32), 2), I32)
    _check(nb.pow(_tensor(F16), 2.5), F16)
    np.testing.assert_array_equal((_tensor(B, (True, False)) + True).numpy(), [True, True])


def test_numpy_scalars_are_weak_too():
    _check(_tensor(F16) * np.float64(2.0), F16)
    _check(_tensor(I32) + np.int64(3), I32)


def test_bool_arithmetic_values_follow_pytorch():
    t, f = nb.tensor([True, True, False]), nb.tensor([True, False, False])
    np.testing.assert_array_equal((t + f).numpy(), [True, True, False])  # logical or
    np.testing.assert_array_equal((t * f).numpy(), [True, False, False])  # logical and
    np.testing.assert_array_equal((t / f).numpy(), np.array([1.0, np.inf, np.nan], np.float32))


def test_mixed_dtype_values_are_computed_in_the_promoted_dtype():
    x = nb.tensor(np.array([7, -7], np.int32))
    y = nb.tensor(np.array([2.0, 2.0], np.float16))
    out = x / y
    assert out.dtype == F16
    np.testing.assert_array_equal(out.numpy(), np.array([3.5, -3.5], np.float16))
    big = nb.tensor(np.array([2**31 - 1], np.int32)) + nb.tensor(np.array([1], np.int64))
    assert big.dtype == I64 and big.numpy()[0] == 2**31


def test_python_types_as_dtypes_follow_torch():
    """torch maps a Python float to float64 whatever the default dtype (a schedule built with
    dtype=float wants doubles), int to int64 and bool to bool."""
    assert nb.zeros(2, dtype=float).dtype == nb.ones(2).to(float).dtype == nb.float64
    assert nb.tensor([1.0], dtype=float).dtype == nb.float64
    assert nb.zeros(2, dtype=int).dtype == nb.int64 and nb.zeros(2, dtype=bool).dtype == nb.bool_
    assert nb.zeros(2).dtype == nb.float32  # (the default float is unchanged)


def test_flip_takes_torchs_dims_keyword():
    x = nb.arange(6).reshape(2, 3)
    assert x.flip(dims=[1]).tolist() == x.flip(1).tolist() == [[2, 1, 0], [5, 4, 3]]
    assert x.flip(dims=(0, 1)).tolist() == x.flip(0, 1).tolist() == [[5, 4, 3], [2, 1, 0]]
    with pytest.raises(TypeError, match="flip\\(\\) takes the dims positionally or as dims="):
        x.flip(0, dims=[1])
