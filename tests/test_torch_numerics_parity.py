"""PyTorch numerics at the edges: result dtypes with 0-d tensors and Python numbers, `div`'s
rounding modes, integer powers with negative exponents, softmax rows holding inf or nan, and
`pow`'s special values (C's pow, and torch's sqrt / rsqrt for the Python exponents 0.5 / -0.5).

Each behaviour is pinned by hard-coded expectations (PyTorch 2.13's answers) that run without
PyTorch, and compared with PyTorch itself where it is installed. The MAX lowering of float pow
is a formula over an elementwise namespace; it is checked here on NumPy with a pow that refuses
non-finite operands, the ones MAX's CPU pow gets wrong.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

import nabla as nb
from nabla import DeviceMesh, P
from nabla.core.common import dtypes as _dt
from nabla.ops import binary as _bin

inf, nan = math.inf, math.nan
B, I32, I64, F16, BF16, F32, F64 = _dt.bool_, _dt.int32, _dt.int64, _dt.float16, _dt.bfloat16, _dt.float32, _dt.float64
DTYPES = (B, I32, I64, F16, BF16, F32, F64)


def _vec(dtype, values=(1, 0, 1)):
    return nb.tensor(np.array(values)).astype(dtype)


def _zero_d(dtype, value=1):
    return nb.tensor(np.array(value)).astype(dtype)


def _torch():
    return pytest.importorskip("torch")


def _torch_dtype(torch, dtype):
    return getattr(torch, dtype.name)


def _same(got, want) -> bool:
    """Elementwise equality that counts nan == nan and tells -0.0 from 0.0."""
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    both_nan = np.isnan(got) & np.isnan(want)
    close = np.isclose(got, want, rtol=1e-6, atol=0) & (np.signbit(got) == np.signbit(want))
    return bool(np.all(both_nan | close))


def _assert_same(got, want):
    assert _same(got, want), f"\ngot  {np.asarray(got).tolist()}\nwant {np.asarray(want).tolist()}"


# -- result dtypes: dimensioned tensors, 0-d tensors, Python numbers --------------------------
# (left, right, torch's result dtype); ("v", dtype): a vector, ("0", dtype, value): a 0-d tensor, or a
# Python number. A 0-d tensor counts only when its category is higher than the vectors'.
PROMOTIONS = [
    (("v", F16), ("0", F32, 2.5), F16),
    (("v", F16), ("0", F64, 2.5), F16),
    (("v", BF16), ("0", F16, 1), BF16),
    (("v", I32), ("0", F32, 2.5), F32),
    (("v", I32), ("0", F64, 2.5), F64),
    (("v", I32), ("0", F16, 2.5), F16),
    (("v", I32), ("0", BF16, 2.5), BF16),
    (("v", I32), ("0", I64, 1000), I32),
    (("v", B), ("0", I32, 1), I32),
    (("v", B), ("0", I64, 1), I64),
    (("v", B), ("0", F32, 1), F32),
    (("v", B), ("0", B, 1), B),
    (("v", I64), ("0", I32, 1), I64),
    # all 0-d: the promotion table
    (("0", BF16, 1), ("0", F16, 1), F32),
    (("0", I32, 1), ("0", F16, 1), F16),
    (("0", I32, 1), ("0", I64, 1), I64),
    (("0", F16, 1), ("0", F64, 1), F64),
    # a 0-d tensor with a Python number: the number counts only when its category is higher
    (("0", I32, 1), 2.5, F32),
    (("0", F16, 1), 2.5, F16),
    (("0", B, 1), 2, I64),
    (("0", I32, 1), 2, I32),
]


def _operand(spec):
    if not isinstance(spec, tuple):
        return spec
    return _vec(spec[1]) if spec[0] == "v" else _zero_d(spec[1], spec[2])


def _spec_id(spec):
    if isinstance(spec, tuple):
        return f"{'vec' if spec[0] == 'v' else '0d'}_{spec[1].name}"
    return getattr(spec, "name", repr(spec))


@pytest.mark.parametrize("left,right,want", PROMOTIONS, ids=_spec_id)
def test_zero_d_tensors_promote_like_pytorch(left, right, want):
    left, right = _operand(left), _operand(right)
    assert (left * right).dtype == want
    assert (right * left).dtype == want
    assert nb.maximum(left, right).dtype == want
    assert nb.maximum(left, right).numpy().dtype == _dt.to_numpy_dtype(want)


def test_zero_d_operand_is_cast_to_the_result_dtype():
    out = _vec(I32, (1, 2)) + _zero_d(I64, 2**40 + 5)  # computed in int32, as torch: 2**40 + 5 wraps to 5
    assert out.dtype == I32
    np.testing.assert_array_equal(out.numpy(), np.array([6, 7], np.int32))
    half = _vec(F16, (1.0, 2.0)) * _zero_d(F32, 2.5)
    np.testing.assert_array_equal(half.numpy(), np.array([2.5, 5.0], np.float16))
    # comparisons are made in the result dtype: 1 and 2 against 2.5 in float32
    np.testing.assert_array_equal((_vec(I32, (1, 2)) < _zero_d(F32, 2.5)).numpy(), [True, True])
    np.testing.assert_array_equal((_vec(I32, (2, 3)) == _zero_d(F64, 2.5)).numpy(), [False, False])


def test_division_and_where_use_the_zero_d_rule():
    assert (_vec(I32) / _zero_d(I64, 2)).dtype == F32
    assert (_vec(I32) / _zero_d(F64, 2)).dtype == F64
    assert (_vec(F16) / _zero_d(I64, 2)).dtype == F16
    assert nb.where(_vec(B), _vec(I32), _zero_d(F64, 2.5)).dtype == F64
    assert nb.where(_vec(B), _vec(F16), _zero_d(F32, 2.5)).dtype == F16


def test_result_type_groups():
    assert _dt.result_type([F16], [F32], []) == F16
    assert _dt.result_type([I32], [I64], [F32]) == F32
    assert _dt.result_type([I32], [F16], [F32]) == F16  # the 0-d float outranks the Python float
    assert _dt.result_type([], [I32], [F32]) == F32
    assert _dt.result_type([B], [], [I64]) == I64
    assert _dt.result_type([], [BF16, F16]) == F32
    with pytest.raises(ValueError, match="no operands"):
        _dt.result_type([], [], [])


def test_gradient_reaches_a_zero_d_operand_in_its_own_dtype():
    x = _vec(F16, (1.0, 2.0, 3.0))
    g = nb.grad(lambda s: (x * s).sum().astype(F32))(_zero_d(F32, 2.0))
    assert g.dtype == F32
    np.testing.assert_allclose(g.numpy(), 6.0)


@pytest.mark.parametrize("dim,zero", list(itertools.product(DTYPES, DTYPES)), ids=lambda d: d.name)
def test_dim_and_zero_d_promotion_matches_torch(dim, zero):
    torch = _torch()
    a, b = _torch_dtype(torch, dim), _torch_dtype(torch, zero)
    want = torch.result_type(torch.ones(2, dtype=a), torch.tensor(1, dtype=b))
    assert (_vec(dim, (1, 1)) * _zero_d(zero)).dtype.name == str(want).removeprefix("torch.")
    both_0d = torch.result_type(torch.tensor(1, dtype=a), torch.tensor(1, dtype=b))
    assert (_zero_d(dim) * _zero_d(zero)).dtype.name == str(both_0d).removeprefix("torch.")


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
@pytest.mark.parametrize("scalar", [True, 2, 2.5])
def test_zero_d_and_python_number_promotion_matches_torch(dtype, scalar):
    torch = _torch()
    want = torch.result_type(torch.tensor(1, dtype=_torch_dtype(torch, dtype)), scalar)
    assert nb.maximum(_zero_d(dtype), scalar).dtype.name == str(want).removeprefix("torch.")


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
@pytest.mark.parametrize("other", ["vector-f16", "0d-f64", "0d-i64", True, 3, 2.5])
def test_public_result_type_matches_torch(dtype, other):
    torch = _torch()
    operands = {"vector-f16": (_vec(F16, (1, 1)), torch.ones(2, dtype=torch.float16))}
    operands |= {"0d-f64": (_zero_d(F64), torch.tensor(1, dtype=torch.float64))}
    operands |= {"0d-i64": (_zero_d(I64), torch.tensor(1, dtype=torch.int64))}
    ours, theirs = operands.get(other, (other, other))
    for x, tx in ((_vec(dtype, (1, 1)), torch.ones(2, dtype=_torch_dtype(torch, dtype))), (_zero_d(dtype), None)):
        tx = torch.tensor(1, dtype=_torch_dtype(torch, dtype)) if tx is None else tx
        want = str(torch.result_type(tx, theirs)).removeprefix("torch.")
        assert nb.result_type(x, ours).name == want
        assert nb.result_type(ours, x).name == want


def test_public_result_type_of_numbers_and_errors():
    assert nb.result_type(1, 2.0) == F32
    assert nb.result_type(True, 2) == I64
    with pytest.raises(TypeError, match="at least one operand"):
        nb.result_type()


# -- div(rounding_mode=) ---------------------------------------------------------------------
def test_div_rounding_modes():
    a, b = nb.tensor([7, -7, 7, -7]), nb.tensor([2, 2, -2, -2])
    trunc = nb.div(a, b, rounding_mode="trunc")
    assert trunc.dtype == I64
    np.testing.assert_array_equal(trunc.numpy(), [3, -3, -3, 3])
    np.testing.assert_array_equal(nb.div(a, b, rounding_mode="floor").numpy(), [3, -4, -4, 3])
    np.testing.assert_array_equal(nb.div(a, b).numpy(), [3.5, -3.5, -3.5, 3.5])
    np.testing.assert_array_equal(nb.div(a, 2.5, rounding_mode="trunc").numpy(), [2.0, -2.0, 2.0, -2.0])
    np.testing.assert_array_equal(nb.div(a, 2.5, rounding_mode="floor").numpy(), [2.0, -3.0, 2.0, -3.0])
    np.testing.assert_array_equal(nb.div(7, b, rounding_mode="trunc").numpy(), [3, 3, -3, -3])
    _assert_same(nb.div(nb.tensor([-0.5, 0.5]), 2, rounding_mode="trunc").numpy(), [-0.0, 0.0])
    _assert_same(nb.div(nb.tensor([1.0, -1.0]), 0.0, rounding_mode="trunc").numpy(), [inf, -inf])
    assert nb.div(_vec(I32), _zero_d(I64, 2), rounding_mode="trunc").dtype == I32


def test_div_rounding_mode_gradients_are_zero():
    gx, gy = nb.grad(lambda x, y: nb.div(x, y, rounding_mode="trunc").sum(), argnums=(0, 1))(
        nb.tensor([7.5, -7.5]), nb.tensor([2.0, 2.0])
    )
    np.testing.assert_array_equal(gx.numpy(), [0.0, 0.0])
    np.testing.assert_array_equal(gy.numpy(), [0.0, 0.0])


def test_div_rounding_mode_errors():
    with pytest.raises(ValueError, match="rounding_mode"):
        nb.div(nb.tensor([1.0]), 2.0, rounding_mode="round")
    with pytest.raises(TypeError, match="bool"):
        nb.div(nb.tensor([True]), nb.tensor([True]), rounding_mode="trunc")


@pytest.mark.parametrize("mode", [None, "trunc", "floor"])
@pytest.mark.parametrize("dtype", [I32, I64, F32, F64], ids=lambda d: d.name)
def test_div_matches_torch(mode, dtype):
    torch = _torch()
    a = np.array([7, -7, 7, -7, 0, 9, -9, 1], np.int64)
    b = np.array([2, 2, -2, -2, 3, 4, 4, -5], np.int64)
    if _dt.is_float(dtype):
        a, b = a + 0.25, b * 1.5
    na, nbb = nb.tensor(a).astype(dtype), nb.tensor(b).astype(dtype)
    td = _torch_dtype(torch, dtype)
    want = torch.div(torch.tensor(a, dtype=td), torch.tensor(b, dtype=td), rounding_mode=mode)
    got = nb.div(na, nbb, rounding_mode=mode)
    assert got.dtype.name == str(want.dtype).removeprefix("torch.")
    _assert_same(got.numpy(), want.numpy())


# -- integer powers ----------------------------------------------------------------------------
BASES = [2, 1, -1, -1, 0, 3, -3, 5, -2, 0]
EXPONENTS = [-1, -1, -1, -2, -1, -2, -3, 2, 3, 0]
INT_POWERS = [0, 1, -1, 1, 0, 0, 0, 25, -8, 1]  # torch: a negative exponent truncates 1 / x ** n


@pytest.mark.parametrize("dtype", [I32, I64], ids=lambda d: d.name)
def test_integer_tensor_to_negative_integer_tensor_powers(dtype):
    out = nb.tensor(BASES).astype(dtype) ** nb.tensor(EXPONENTS).astype(dtype)
    assert out.dtype == dtype
    np.testing.assert_array_equal(out.numpy(), INT_POWERS)
    np.testing.assert_array_equal((2 ** nb.tensor([-1, 2])).numpy(), [0, 4])
    np.testing.assert_array_equal((nb.tensor([2, 1, -1]).astype(dtype) ** _zero_d(I64, -1)).numpy(), [0, 1, -1])


def test_integer_tensor_to_negative_python_int_raises_like_torch():
    for x in (nb.tensor([2, 3]), nb.tensor([2, 3]).astype(I32), nb.tensor(2), nb.tensor([True, False])):
        with pytest.raises(RuntimeError, match="negative integer powers"):
            _ = x**-1
        with pytest.raises(RuntimeError, match="negative integer powers"):
            nb.pow(x, np.int64(-2))
    assert (nb.tensor([2, 4]) ** -1.0).dtype == F32  # a float exponent gives a float result
    np.testing.assert_array_equal((nb.tensor([2, 4]) ** -1.0).numpy(), [0.5, 0.25])


def test_integer_powers_match_torch():
    torch = _torch()
    x, y = np.meshgrid(np.arange(-4, 5), np.arange(-4, 5))
    want = torch.tensor(x) ** torch.tensor(y)
    np.testing.assert_array_equal((nb.tensor(x) ** nb.tensor(y)).numpy(), want.numpy())


# -- softmax / log_softmax of rows holding inf or nan -------------------------------------------
ROWS = [[inf, 1, 2], [inf, inf, 1], [-inf, 1, 2], [-inf, -inf, -inf], [nan, 1, 2], [1, nan, 2], [inf, nan, 1],
        [-inf, inf, 1], [1000, 0, -inf]]  # fmt: skip
SOFTMAX = [[nan] * 3, [nan] * 3, [0.0, 0.26894142, 0.73105858], [nan] * 3, [nan] * 3, [nan] * 3, [nan] * 3,
           [nan] * 3, [1.0, 0.0, 0.0]]  # fmt: skip
LOG_SOFTMAX = [[nan] * 3, [nan] * 3, [-inf, -1.31326169, -0.31326169], [nan] * 3, [nan] * 3, [nan] * 3, [nan] * 3,
               [nan] * 3, [0.0, -1000.0, -inf]]  # fmt: skip


def test_softmax_rows_with_inf_or_nan_follow_torch():
    x = nb.tensor(ROWS)
    _assert_same(nb.softmax(x, -1).numpy(), SOFTMAX)
    _assert_same(nb.log_softmax(x, -1).numpy(), LOG_SOFTMAX)
    _assert_same(nb.softmax(nb.tensor(np.array(ROWS).T), 0).numpy(), np.array(SOFTMAX).T)
    _assert_same(nb.log_softmax(nb.tensor(np.array(ROWS).T), 0).numpy(), np.array(LOG_SOFTMAX).T)
    safe = np.array(SOFTMAX)
    safe[3] = 0.0  # torch's _safe_softmax: an all -inf row gives zeros
    _assert_same(nb.softmax(x, -1, safe=True).numpy(), safe)


@pytest.mark.parametrize("fn", [nb.softmax, nb.log_softmax], ids=["softmax", "log_softmax"])
def test_softmax_over_a_split_axis_gives_the_same_nan_rows(fn):
    rows = np.zeros((5, 8), np.float32)
    rows[0, 2], rows[1, 5], rows[2, :] = inf, nan, -inf
    rows[3, :3] = -inf
    x = nb.shard(nb.tensor(rows), DeviceMesh("numerics4", (4,), ("x",)), P(None, "x"))
    with np.errstate(invalid="ignore"):  # inf - inf in the shift: the nan PyTorch gives too
        got, want = fn(x, 1).numpy(), fn(nb.tensor(rows), 1).numpy()
    _assert_same(got, want)
    assert np.isnan(got[:3]).all() and not np.isnan(got[3:]).any()


def test_softmax_gradient_of_finite_rows_is_unchanged():
    x = np.array([[1.0, 2.0, 3.0], [-inf, 0.0, 1.0]], np.float32)
    w = np.array([[0.3, -1.0, 2.0], [1.0, 0.5, -0.5]], np.float32)
    g = nb.grad(lambda t: (nb.softmax(t, -1) * nb.tensor(w)).sum())(nb.tensor(x)).numpy()
    p = np.exp(x - x.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    np.testing.assert_allclose(g, p * (w - (w * p).sum(-1, keepdims=True)), rtol=1e-5, atol=1e-7)


def test_softmax_matches_torch():
    torch = _torch()
    x = torch.tensor(ROWS)
    _assert_same(nb.softmax(nb.tensor(ROWS), -1).numpy(), torch.softmax(x, -1).numpy())
    _assert_same(nb.log_softmax(nb.tensor(ROWS), -1).numpy(), torch.log_softmax(x, -1).numpy())


# -- pow's special values ----------------------------------------------------------------------
SPECIAL_X = [-inf, -2.0, -1.0, -0.5, -0.0, 0.0, 0.5, 1.0, 2.0, inf, nan]
SPECIAL_Y = [-inf, -2.0, -1.5, -1.0, -0.5, -0.0, 0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 1 / 3, inf, nan]
GRID_X, GRID_Y = (np.array(v, np.float64) for v in zip(*itertools.product(SPECIAL_X, SPECIAL_Y), strict=True))

# x ** y for tensor exponents: C's pow (torch.pow(Tensor, Tensor))
C_POW = [
    ((-inf, 0.5), inf), ((-inf, 3.0), -inf), ((-inf, -1.0), -0.0), ((-inf, -0.5), 0.0), ((-0.0, 0.5), 0.0),
    ((-0.0, 3.0), -0.0), ((-0.0, -1.0), -inf), ((-0.0, -2.0), inf), ((0.0, -0.5), inf), ((nan, 0.0), 1.0),
    ((nan, -0.0), 1.0), ((1.0, nan), 1.0), ((1.0, inf), 1.0), ((-1.0, inf), 1.0), ((-1.0, -inf), 1.0),
    ((2.0, inf), inf), ((2.0, -inf), 0.0), ((0.5, inf), 0.0), ((0.5, -inf), inf), ((-2.0, 0.5), nan),
    ((nan, 1.0), nan), ((2.0, nan), nan), ((-1.0, nan), nan), ((inf, -2.0), 0.0), ((inf, 0.5), inf),
    ((-2.0, 3.0), -8.0), ((-2.0, -1.0), -0.5), ((4.0, 0.5), 2.0),
]  # fmt: skip
# float tensor ** Python number: torch uses square, sqrt and rsqrt for 2, 0.5 and -0.5
SCALAR_POW = {
    0.5: [nan, nan, nan, nan, -0.0, 0.0, 0.70710678, 1.0, 1.41421356, inf, nan],
    -0.5: [nan, nan, nan, nan, -inf, inf, 1.41421356, 1.0, 0.70710678, 0.0, nan],
    1.5: [inf, nan, nan, nan, 0.0, 0.0, 0.35355339, 1.0, 2.82842712, inf, nan],
    0.0: [1.0] * 11,
    2: [inf, 4.0, 1.0, 0.25, 0.0, 0.0, 0.25, 1.0, 4.0, inf, nan],  # x * x, as torch
}


@pytest.mark.parametrize("dtype", [F32, F64], ids=lambda d: d.name)
def test_tensor_pow_special_values_are_c_pow(dtype):
    x, y = (nb.tensor(np.array(v)).astype(dtype) for v in zip(*(xy for xy, _ in C_POW), strict=True))
    _assert_same((x**y).numpy(), [want for _, want in C_POW])
    # a 0-d exponent is a tensor too (NumPy would take its sqrt fast path for 0.5)
    _assert_same((nb.tensor([-inf, -0.0, 4.0]).astype(dtype) ** _zero_d(dtype, 0.5)).numpy(), [inf, 0.0, 2.0])
    _assert_same((_zero_d(dtype, -inf) ** _zero_d(dtype, 0.5)).numpy(), inf)


@pytest.mark.parametrize("exponent", sorted(SCALAR_POW))
def test_python_number_exponents_follow_torch(exponent):
    _assert_same((nb.tensor(SPECIAL_X) ** exponent).numpy(), SCALAR_POW[exponent])
    _assert_same(nb.pow(nb.tensor(SPECIAL_X), exponent).numpy(), SCALAR_POW[exponent])


def test_pow_gradients_at_python_root_exponents():
    x = nb.tensor([4.0, 0.25, 0.0])
    np.testing.assert_allclose(nb.grad(lambda t: (t**0.5).sum())(x).numpy(), [0.25, 1.0, inf])
    np.testing.assert_allclose(nb.grad(lambda t: (t**-0.5).sum())(x).numpy(), [-1 / 16, -4.0, -inf])
    np.testing.assert_allclose(nb.grad(lambda t: (t ** nb.tensor(0.5)).sum())(x).numpy(), [0.25, 1.0, inf])
    _, tangent = nb.jvp(lambda t: t**0.5, (nb.tensor([4.0]),), (nb.tensor([1.0]),))
    np.testing.assert_allclose(tangent.numpy(), [0.25])


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_pow_special_values_match_torch(dtype):
    torch = _torch()
    tx, ty = torch.tensor(GRID_X, dtype=getattr(torch, dtype)), torch.tensor(GRID_Y, dtype=getattr(torch, dtype))
    x, y = nb.tensor(GRID_X).astype(dtype), nb.tensor(GRID_Y).astype(dtype)
    _assert_same((x**y).numpy(), (tx**ty).numpy())
    xs, txs = nb.tensor(SPECIAL_X).astype(dtype), torch.tensor(SPECIAL_X, dtype=getattr(torch, dtype))
    for e in SPECIAL_Y:
        _assert_same((xs**e).numpy(), (txs**e).numpy())
        _assert_same((xs ** _zero_d(nb.float64, e)).numpy(), (txs ** torch.tensor(e, dtype=torch.float64)).numpy())


class _FinitePowLib(_bin._NumpyLib):
    """NumPy's elementwise functions, with a pow that refuses nan and inf operands: MAX's CPU pow
    gets those wrong (and can spoil neighbouring lanes), so the lowering must never pass one."""

    @staticmethod
    def pow(x, y):
        assert np.all(np.isfinite(x)) and np.all(np.isfinite(y)), "non-finite operand reached pow"
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            return np.power(x, y)


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_max_pow_formula_is_c_pow_without_non_finite_pow_calls(dtype):
    x, y = GRID_X.astype(dtype), GRID_Y.astype(dtype)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        got = _bin._pow_formula(_FinitePowLib, x, y)
        want = np.power(x, y.copy())  # full (not broadcast) exponents: NumPy's C pow
        ex, ey = np.array([-inf, nan, 1.0, -0.0], dtype), np.array([0.5, 0.0, nan, 0.5], dtype)
        edge = _bin._pow_formula(_FinitePowLib, ex, ey)
    _assert_same(got, want)
    _assert_same(edge, [inf, 1.0, 1.0, 0.0])
