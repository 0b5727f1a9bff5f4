"""Binary elementwise ops and linear algebra: PyTorch semantics at edge cases, the MAX lowering
formulas (run on NumPy), gradients at special points, and errors that name op, argument and values."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import nabla as nb
from nabla.ops import binary as _bin

T = nb.tensor


def _np(x):
    return x.numpy()


# -- floor_divide / remainder / fmod ---------------------------------------------------------
A = [5, -5, 5, -5, 6, -6, 0]
D = [3, 3, -3, -3, 3, -3, -3]


def test_integer_floor_divide_remainder_fmod_match_python_and_c():
    x, y = T(np.array(A, np.int32)), T(np.array(D, np.int32))
    np.testing.assert_array_equal(_np(nb.floor_divide(x, y)), [a // d for a, d in zip(A, D, strict=True)])
    np.testing.assert_array_equal(_np(nb.remainder(x, y)), [a % d for a, d in zip(A, D, strict=True)])
    np.testing.assert_array_equal(_np(nb.fmod(x, y)), [2, -2, 2, -2, 0, 0, 0])
    assert nb.remainder(x, y).dtype == nb.int32 and nb.fmod(x, y).dtype == nb.int32
    np.testing.assert_array_equal(_np(x // y), _np(nb.floor_divide(x, y)))
    np.testing.assert_array_equal(_np(x % y), _np(nb.remainder(x, y)))
    np.testing.assert_array_equal(_np(7 // T([2, -2])), [3, -4])
    np.testing.assert_array_equal(_np(7 % T([2, -2])), [1, -1])


def test_integer_division_by_a_python_zero_raises_and_a_zero_element_gives_zero():
    x = T(np.array([7, -7], np.int64))
    for f in (lambda: x // 0, lambda: x % 0, lambda: nb.fmod(x, 0), lambda: nb.div(x, 0, rounding_mode="trunc")):
        with pytest.raises(ZeroDivisionError, match="integer division by zero"):  # as torch
            f()
    x //= 1
    np.testing.assert_array_equal(_np(T([7.0]) // 0), [np.inf])  # floats divide by zero
    # A zero inside an integer divisor cannot raise in a graph: it gives 0 (NumPy's value), and
    # on MAX it no longer ends the process (test_int_division_max).
    y = T(np.array([0, -1], np.int64))
    np.testing.assert_array_equal(_np(x // y), [0, 7])
    np.testing.assert_array_equal(_np(x % y), [0, 0])


def test_float_remainder_has_the_sign_of_the_divisor():
    x = T([5.5, -5.5, 5.5, -5.5, 0.0])
    y = T([2.0, 2.0, -2.0, -2.0, -2.0])
    np.testing.assert_allclose(_np(nb.remainder(x, y)), [1.5, 0.5, -0.5, -1.5, 0.0])
    np.testing.assert_allclose(_np(nb.fmod(x, y)), [1.5, -1.5, 1.5, -1.5, 0.0])
    np.testing.assert_allclose(_np(nb.floor_divide(x, y)), [2.0, -3.0, -3.0, 2.0, -0.0])
    np.testing.assert_allclose(_np(T([5.5, -5.5]).remainder(-2.0)), [-0.5, -1.5])


def test_float_division_by_zero_follows_pytorch():
    out = nb.floor_divide(T([1.0, -1.0, 0.0]), 0.0)
    np.testing.assert_array_equal(_np(out), [np.inf, -np.inf, np.nan])
    assert np.isnan(_np(nb.remainder(T([1.0, -1.0]), 0.0))).all()
    assert np.isnan(_np(nb.fmod(T([1.0, -1.0]), 0.0))).all()


def test_remainder_and_fmod_gradients_match_pytorch():
    x, y = T([5.0, -5.0, 5.0, -5.0]), T([3.0, 3.0, -3.0, -3.0])
    gx, gy = nb.grad(lambda a, b: nb.remainder(a, b).sum(), argnums=(0, 1))(x, y)
    np.testing.assert_array_equal(_np(gx), [1, 1, 1, 1])
    np.testing.assert_array_equal(_np(gy), [-1, 2, 2, -1])  # -floor(x / y)
    gx, gy = nb.grad(lambda a, b: nb.fmod(a, b).sum(), argnums=(0, 1))(x, y)
    np.testing.assert_array_equal(_np(gx), [1, 1, 1, 1])
    np.testing.assert_array_equal(_np(gy), [-1, 1, 1, -1])  # -trunc(x / y)


def test_floor_divide_gradient_is_zero():
    gx, gy = nb.grad(lambda a, b: nb.floor_divide(a, b).sum(), argnums=(0, 1))(T([5.0, -2.5]), T([2.0, 0.5]))
    np.testing.assert_array_equal(_np(gx), [0, 0])
    np.testing.assert_array_equal(_np(gy), [0, 0])


@pytest.mark.parametrize("op", [nb.floor_divide, nb.remainder, nb.fmod])
def test_bool_division_ops_raise_naming_the_op(op):
    with pytest.raises(TypeError, match=f"{op.__name__}: not supported for bool"):
        op(T([True]), T([True]))


def test_bool_subtraction_raises_like_pytorch():
    with pytest.raises(TypeError, match="sub: not supported for bool tensors.*logical_xor"):
        T([True]) - T([False])


# -- the MAX lowering formulas, run on NumPy ---------------------------------------------------
@pytest.mark.parametrize("dtype, tol", [(np.float32, 3e-7), (np.float64, 5e-16)])
def test_max_atan2_formula_is_accurate(dtype, tol):
    rng = np.random.default_rng(0)
    y = (rng.normal(size=20000) * np.exp(rng.uniform(-30, 30, 20000))).astype(dtype)
    x = (rng.normal(size=20000) * np.exp(rng.uniform(-30, 30, 20000))).astype(dtype)
    with np.errstate(all="ignore"):
        got = _bin._atan2_formula(_bin._NumpyLib, y, x)
    want = np.arctan2(y, x)
    assert got.dtype == dtype
    assert np.max(np.abs(got - want) / np.maximum(np.abs(want), np.finfo(dtype).tiny)) < tol


def test_max_atan2_formula_special_values():
    inf, nan = np.inf, np.nan
    y = np.array([0.0, -0.0, 0.0, -0.0, inf, -inf, inf, 1, nan, 1, -1, 1e-30, 1e30, -3, 2, -2])
    x = np.array([0.0, 0.0, -0.0, -0.0, inf, inf, -inf, inf, 1, nan, -inf, 1, 1e-30, inf, -0.0, 0.0])
    with np.errstate(all="ignore"):
        got = _bin._atan2_formula(_bin._NumpyLib, y, x)
    want = np.arctan2(y, x)
    np.testing.assert_allclose(got, want, rtol=1e-15)
    np.testing.assert_array_equal(np.signbit(got), np.signbit(want))


@pytest.mark.parametrize("convention", [np.fmod, np.remainder], ids=["C-mod", "floor-mod"])
def test_max_mod_formulas_do_not_depend_on_the_mod_sign_convention(convention):
    class Lib(_bin._NumpyLib):
        mod = staticmethod(convention)

    xi, yi = np.array(A, np.int64), np.array(D, np.int64)
    np.testing.assert_array_equal(_bin._mod_with_sign_of(Lib, xi, yi, True), np.remainder(xi, yi))
    np.testing.assert_array_equal(_bin._mod_with_sign_of(Lib, xi, yi, False), np.fmod(xi, yi))
    rng = np.random.default_rng(1)
    xf, yf = rng.normal(size=1000) * 10, rng.normal(size=1000)
    np.testing.assert_allclose(_bin._mod_with_sign_of(Lib, xf, yf, True), np.remainder(xf, yf), atol=1e-12)
    np.testing.assert_allclose(_bin._mod_with_sign_of(Lib, xf, yf, False), np.fmod(xf, yf), atol=1e-12)


# -- atan2 -------------------------------------------------------------------------------------
def test_atan2_argument_order_and_signed_zeros():
    np.testing.assert_allclose(_np(nb.atan2(T([1.0]), T([0.0]))), [np.pi / 2])  # atan2(input=y, other=x)
    out = _np(nb.atan2(T([0.0, -0.0, 0.0, -0.0]), T([0.0, 0.0, -0.0, -0.0])))
    np.testing.assert_array_equal(out, np.array([0.0, -0.0, np.pi, -np.pi], np.float32))
    np.testing.assert_array_equal(np.signbit(out), [False, True, False, True])
    np.testing.assert_allclose(_np(T([1.0, -1.0]).atan2(T([-1.0, -1.0]))), [3 * np.pi / 4, -3 * np.pi / 4])


def test_atan2_of_integers_is_float32():
    out = nb.atan2(T([3, -4]), T([0, -2]))
    assert out.dtype == nb.float32
    np.testing.assert_allclose(_np(out), np.arctan2([3.0, -4.0], [0.0, -2.0]).astype(np.float32))


def test_atan2_gradient_is_zero_at_the_origin_like_pytorch():
    gx, gy = nb.grad(lambda a, b: nb.atan2(a, b).sum(), argnums=(0, 1))(T([0.0, 1.0]), T([0.0, 2.0]))
    np.testing.assert_allclose(_np(gx), [0.0, 2.0 / 5.0])
    np.testing.assert_allclose(_np(gy), [0.0, -1.0 / 5.0])


# -- maximum / minimum ties --------------------------------------------------------------------
@pytest.mark.parametrize("op", [nb.maximum, nb.minimum])
def test_maximum_minimum_split_the_gradient_on_ties(op):
    x, y = T([1.0, 2.0, 3.0]), T([1.0, 0.0, 4.0])
    gx, gy = nb.grad(lambda a, b: op(a, b).sum(), argnums=(0, 1))(x, y)
    if op is nb.maximum:
        np.testing.assert_array_equal(_np(gx), [0.5, 1.0, 0.0])
        np.testing.assert_array_equal(_np(gy), [0.5, 0.0, 1.0])
    else:
        np.testing.assert_array_equal(_np(gx), [0.5, 0.0, 1.0])
        np.testing.assert_array_equal(_np(gy), [0.5, 1.0, 0.0])


@pytest.mark.parametrize("op", [nb.maximum, nb.minimum])
def test_maximum_minimum_derivatives_at_nan_are_pytorchs(op):
    # Values from torch 2.13: where a NaN is compared, both sides get the whole cotangent
    # (neither loses), while the forward derivative is y's tangent.
    nan = float("nan")
    x, y = T([nan, 2.0, 3.0, 1.0, nan]), T([1.0, nan, 3.0, 2.0, nan])
    g = T([1.0, 2.0, 4.0, 8.0, 16.0])
    _, pullback = nb.vjp(op, x, y)
    gx, gy = pullback(g)
    lost = [1.0, 2.0, 2.0, 0.0, 16.0]
    won = [1.0, 2.0, 2.0, 8.0, 16.0]
    np.testing.assert_array_equal(_np(gx), lost if op is nb.maximum else won)
    np.testing.assert_array_equal(_np(gy), won if op is nb.maximum else lost)
    _, tangent = nb.jvp(op, (x, y), (nb.ones(5), nb.full((5,), 10.0)))
    np.testing.assert_array_equal(_np(tangent), [10.0, 10.0, 5.5, 10.0 if op is nb.maximum else 1.0, 10.0])


# -- logical and bitwise -----------------------------------------------------------------------
def test_logical_ops_accept_any_dtype_nonzero_is_true():
    x = T([0.0, 1.5, -2.0, 0.0])
    y = T(np.array([0, 0, 3, 7], np.int32))
    for op, want in [
        (nb.logical_and, [False, False, True, False]),
        (nb.logical_or, [False, True, True, True]),
        (nb.logical_xor, [False, True, False, True]),
    ]:
        out = op(x, y)
        assert out.dtype == nb.bool_
        np.testing.assert_array_equal(_np(out), want)
    np.testing.assert_array_equal(_np(x.logical_xor(y)), [False, True, False, True])
    np.testing.assert_array_equal(_np(nb.logical_and(x, 2)), [False, True, True, False])


def test_logical_ops_have_no_gradient():
    x = T([0.5, 0.0]).requires_grad_()
    assert not nb.logical_xor(x, x).requires_grad


def test_bool_dunders_are_logical_ops():
    a, b = T([True, True, False, False]), T([True, False, True, False])
    np.testing.assert_array_equal(_np(a & b), [True, False, False, False])
    np.testing.assert_array_equal(_np(a | b), [True, True, True, False])
    np.testing.assert_array_equal(_np(a ^ b), [False, True, True, False])
    np.testing.assert_array_equal(_np(~a), [False, False, True, True])
    np.testing.assert_array_equal(_np(True & b), [True, False, True, False])
    np.testing.assert_array_equal(_np(~T(True)), False)


@pytest.mark.parametrize(
    "call, name",
    [
        (lambda x: x & x, "bitwise_and"),
        (lambda x: x | 1, "bitwise_or"),
        (lambda x: x ^ x, "bitwise_xor"),
        (lambda x: ~x, "bitwise_not"),
    ],
)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_bitwise_ops_on_floats_raise_naming_op_and_dtype(call, name, dtype):
    x = T(np.array([1, 2], dtype))
    with pytest.raises(TypeError, match=rf"{name}: floating-point .*dtype {np.dtype(dtype).name}"):
        call(x)


def test_bool_plus_bool_scalar_stays_bool():
    out = T([True, False]) + True
    assert out.dtype == nb.bool_
    np.testing.assert_array_equal(_np(out), [True, True])


# -- keyword aliases ---------------------------------------------------------------------------
def test_pytorch_keyword_input_is_accepted():
    np.testing.assert_array_equal(_np(nb.remainder(input=T([5]), y=3)), [2])
    np.testing.assert_allclose(_np(nb.atan2(input=T([1.0]), y=T([1.0]))), [np.pi / 4])


# -- matmul / dot / outer / tensordot ----------------------------------------------------------
def test_dot_and_outer_values():
    x, y = T([1.0, 2.0, 3.0]), T([4.0, -5.0, 6.0])
    out = nb.dot(x, y)
    assert out.shape == () and float(out) == 12.0
    assert float(x.dot(y)) == 12.0
    np.testing.assert_array_equal(_np(nb.outer(x, y)), np.outer(_np(x), _np(y)))
    np.testing.assert_array_equal(_np(x.outer(T([1.0, 2.0]))), [[1, 2], [2, 4], [3, 6]])
    np.testing.assert_array_equal(_np(nb.outer(T([True, False]), T([True, True]))), [[True, True], [False, False]])


def test_dot_and_outer_errors_name_the_shapes():
    with pytest.raises(ValueError, match=r"dot: expected two 1-D tensors, got shapes \(2, 3\) and \(3,\)"):
        nb.dot(nb.ones(2, 3), nb.ones(3))
    with pytest.raises(ValueError, match=r"dot: x and y must have the same length, got shapes \(3,\) and \(4,\)"):
        nb.dot(nb.ones(3), nb.ones(4))
    with pytest.raises(ValueError, match=r"outer: expected two 1-D tensors, got shapes \(\) and \(3,\)"):
        nb.outer(nb.ones(()), nb.ones(3))


def test_tensordot_values_and_errors():
    rng = np.random.default_rng(2)
    a, b = rng.normal(size=(2, 3, 4)).astype(np.float32), rng.normal(size=(4, 3, 5)).astype(np.float32)
    out = nb.tensordot(T(a), T(b), dims=([1, 2], [1, 0]))
    np.testing.assert_allclose(_np(out), np.tensordot(a, b, axes=([1, 2], [1, 0])), rtol=1e-5, atol=1e-5)
    with pytest.raises(
        ValueError, match=r"tensordot: contracted dimensions differ: x dim 2 has size 4, y dim 0 has size 3"
    ):
        nb.tensordot(T(a), T(b[:3]), 1)
    with pytest.raises(ValueError, match=r"tensordot: dims \(\[0\], \[0, 1\]\) must list as many dimensions of x"):
        nb.tensordot(T(a), T(b), ([0], [0, 1]))
    with pytest.raises(ValueError, match="tensordot: dims=4 must be between 0 and the smaller rank"):
        nb.tensordot(T(a), T(b), 4)
    with pytest.raises(TypeError, match="tensordot: dims must be an int or a pair"):
        nb.tensordot(T(a), T(b), "x")


def test_matmul_gradients_broadcast_batch_dims():
    x, y = T(np.ones((2, 1, 3, 4), np.float32)), T(np.ones((5, 4, 2), np.float32))
    gx, gy = nb.grad(lambda a, b: (a @ b).sum(), argnums=(0, 1))(x, y)
    assert gx.shape == (2, 1, 3, 4) and gy.shape == (5, 4, 2)
    np.testing.assert_array_equal(_np(gx), np.full((2, 1, 3, 4), 10.0))  # 5 batches x 2 columns
    np.testing.assert_array_equal(_np(gy), np.full((5, 4, 2), 6.0))  # 2 batches x 3 rows


# -- einsum ------------------------------------------------------------------------------------
def _rand(*shape, seed=0):
    return np.random.default_rng(seed).normal(size=shape).astype(np.float32)


def _last_op(x):
    return x._impl.output_refs.op.name if x._impl.output_refs is not None else None


@pytest.mark.parametrize(
    "eq, shapes",
    [
        ("bhqd,bhkd->bhqk", [(2, 3, 4, 5), (2, 3, 6, 5)]),
        ("bhqk,bhkd->bhqd", [(2, 3, 4, 6), (2, 3, 6, 5)]),
        ("ij,jk->ik", [(2, 3), (3, 4)]),
        ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),
    ],
)
def test_einsum_contractions_are_one_matmul(eq, shapes):
    out = nb.einsum(eq, *[T(_rand(*s, seed=i)) for i, s in enumerate(shapes)])
    assert _last_op(out) == "matmul"
    np.testing.assert_allclose(_np(out), np.einsum(eq, *[_rand(*s, seed=i) for i, s in enumerate(shapes)]), 1e-5, 1e-5)


def test_einsum_bilinear_uses_two_matmuls():
    x1, w, x2 = _rand(4, 3), _rand(5, 3, 2, seed=1), _rand(4, 2, seed=2)
    out = nb.einsum("bi,oij,bj->bo", T(x1), T(w), T(x2))
    assert out.shape == (4, 5)
    assert _last_op(out) == "reshape" and _last_op(Tensor_input(out)) == "matmul"
    np.testing.assert_allclose(_np(out), np.einsum("bi,oij,bj->bo", x1, w, x2), rtol=1e-5, atol=1e-5)


def Tensor_input(x):  # noqa: N802  (the input of x's op, as a Tensor)
    return nb.Tensor(x._impl.output_refs.args[0])


def test_einsum_diagonal_trace_and_their_gradients():
    a = _rand(3, 3)
    np.testing.assert_allclose(_np(nb.einsum("ii->i", T(a))), np.diag(a))
    np.testing.assert_allclose(float(nb.einsum("ii->", T(a))), np.trace(a), rtol=1e-6)
    np.testing.assert_allclose(_np(nb.einsum("ii", T(a))), np.trace(a), rtol=1e-6)  # implicit: a trace
    g = nb.grad(lambda x: nb.einsum("ii->", x))(T(a))
    np.testing.assert_array_equal(_np(g), np.eye(3))
    g = nb.grad(lambda x: (nb.einsum("ii->i", x) * T([1.0, 2.0, 3.0])).sum())(T(a))
    np.testing.assert_array_equal(_np(g), np.diag([1.0, 2.0, 3.0]))


def test_einsum_gradients_match_matmul():
    a, b = T(_rand(2, 3)), T(_rand(3, 4, seed=1))
    ga, gb = nb.grad(lambda x, y: (nb.einsum("ij,jk->ik", x, y) ** 2).sum(), argnums=(0, 1))(a, b)
    ha, hb = nb.grad(lambda x, y: ((x @ y) ** 2).sum(), argnums=(0, 1))(a, b)
    np.testing.assert_allclose(_np(ga), _np(ha), rtol=1e-6)
    np.testing.assert_allclose(_np(gb), _np(hb), rtol=1e-6)


def test_einsum_implicit_output_is_alphabetical_with_ellipsis_first():
    x = T(_rand(2, 3, 4))
    assert nb.einsum("...ba", x).shape == (2, 4, 3)
    assert nb.einsum("cb", nb.ones(2, 3)).shape == (3, 2)
    assert nb.einsum("Ba,aC", nb.ones(2, 3), nb.ones(3, 4)).shape == (2, 4)  # uppercase sorts first


def test_einsum_size_one_dimensions_broadcast_like_pytorch():
    x, y = _rand(2, 1), _rand(1, 3, seed=1)
    np.testing.assert_allclose(_np(nb.einsum("ij,ij->ij", T(x), T(y))), x * y)
    np.testing.assert_allclose(_np(nb.einsum("ij,ij->i", T(x), T(y))), (x * y).sum(1), rtol=1e-6)
    np.testing.assert_allclose(_np(nb.einsum("i,i->", T(_rand(3)), T(np.ones(1, np.float32)))), _rand(3).sum(), 1e-6)


def test_einsum_ellipsis_summed_when_missing_from_explicit_output():
    x = _rand(2, 3, 4)
    np.testing.assert_allclose(_np(nb.einsum("...i->i", T(x))), x.sum((0, 1)), rtol=1e-5)


def test_einsum_accepts_an_operand_list_and_keeps_integer_dtypes():
    a = T(np.arange(6, dtype=np.int32).reshape(2, 3))
    out = nb.einsum("ij,jk->ik", [a, T(np.ones((3, 2), np.int32))])
    assert out.dtype == nb.int32
    np.testing.assert_array_equal(_np(out), [[3, 3], [12, 12]])
    assert nb.einsum("ij->", a).dtype == nb.int32


@pytest.mark.parametrize(
    "eq, shapes, match",
    [
        ("ij,jk->ik", [(2, 3)], r"einsum: equation 'ij,jk->ik' names 2 operand\(s\) but 1 tensor\(s\) were given"),
        ("ij->i", [(2, 3, 4)], r"operand 0 has shape \(2, 3, 4\) \(rank 3\) but subscripts 'ij' name 2 dimension"),
        ("ij,jk->ik", [(2, 3), (4, 5)], r"subscript 'j' has size 4 for operand 1 \(dim 0\) but size 3 for operand 0"),
        ("ii->i", [(2, 3)], r"subscript 'i' is repeated in operand 0 .* different sizes 2 and 3"),
        ("ij->ik", [(2, 3)], r"output subscript 'k' in 'ij->ik' does not appear in any input operand"),
        ("ij->ii", [(2, 3)], r"output subscripts 'ii' name a subscript more than once"),
        ("i1->i", [(2, 3)], r"invalid subscript '1'"),
        ("...i...->i", [(2, 3)], r"at most one ellipsis"),
        ("ij...->i", [(2,)], r"operand 0 has shape \(2,\) \(rank 1\) but subscripts 'ij...' name 2"),
    ],
)
def test_einsum_errors_name_what_is_wrong(eq, shapes, match):
    with pytest.raises(ValueError, match=match):
        nb.einsum(eq, *[nb.ones(*s) for s in shapes])


def test_einsum_type_errors():
    with pytest.raises(TypeError, match="einsum: equation must be a string, got int"):
        nb.einsum(3, nb.ones(2))
    with pytest.raises(TypeError, match="einsum: the sublist of operand 0 must be a list of dims, got str"):
        nb.einsum(nb.ones(2), "i->")  # (a tensor first: torch's sublist form)
    with pytest.raises(ValueError, match=r"einsum: the output sublist holds 'i'; dims are ints in \[0, 52\)"):
        nb.einsum(nb.ones(2), [0], ["i"])
    with pytest.raises(TypeError, match="einsum: bool operands are not supported"):
        nb.einsum("i->", T([True]))


def test_numpy_path_gives_inf_and_nan_without_warnings():
    """Overflow and 0/0 give inf and nan silently, as MAX and PyTorch do (the NumPy reference
    path used to print RuntimeWarnings the compiled path cannot)."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        big = nb.tensor(np.array([1e38, -1e38, 0.0], np.float32))
        scaled = (big * 10.0).numpy()
        ratio = (big * 0.0 / 0.0).numpy()
    assert np.isposinf(scaled[0]) and np.isneginf(scaled[1]) and scaled[2] == 0
    assert np.isnan(ratio).all()


def test_forward_derivative_by_a_constant_at_inf_is_finite():
    # d(x * c) = c dx and d(x / c) = dx / c; the constant's zero tangent times inf gave nan.
    x = T([float("inf"), 1.0])
    np.testing.assert_array_equal(_np(nb.jvp(lambda a: a * 2.0, (x,), (nb.ones(2),))[1]), [2.0, 2.0])
    np.testing.assert_array_equal(_np(nb.jvp(lambda a: a / 4.0, (x,), (nb.ones(2),))[1]), [0.25, 0.25])
    np.testing.assert_array_equal(_np(nb.jvp(lambda a: 3.0 * a, (x,), (nb.ones(2),))[1]), [3.0, 3.0])


def test_bool_to_a_bool_power_is_logical_as_torch():
    a = T([True, False, True, False])
    assert (a**True).tolist() == [True, False, True, False] and (a**True).dtype == nb.bool_
    assert (a**False).tolist() == [True, True, True, True]  # 0 ** 0 is 1
    assert (a**2).tolist() == [1, 0, 1, 0] and (a**2).dtype == nb.int64
