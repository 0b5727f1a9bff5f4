"""Unary ops and activations: PyTorch semantics at edges, kinks, integer inputs, and errors.

Values in the expectations were checked against PyTorch 2.13; the registry
(`tests/op_registry/unary.py`) covers the generic forward/gradient checks.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from _oracle import torch

import nabla as nb

NAN, INF = float("nan"), float("inf")


def t(values, dtype=np.float32) -> nb.Tensor:
    return nb.tensor(np.array(values, dtype))


def grad_of(fn, *xs: nb.Tensor) -> list[np.ndarray]:
    """The gradient of sum(fn(*xs)) with respect to every input."""
    out, pullback = nb.vjp(fn, *xs)
    return [g.numpy() for g in pullback(nb.ones_like(out))]


def same(got: nb.Tensor, want, dtype=None) -> None:
    arr = got.numpy()
    if dtype is not None:
        assert got.dtype == dtype, f"dtype {got.dtype}, expected {dtype}"
    np.testing.assert_allclose(arr, np.asarray(want, arr.dtype), rtol=1e-6, atol=1e-7)


# -- Tensor methods and keyword names ------------------------------------------------------------
def test_tensor_methods_reach_the_ops():
    x = t([-1.5, 0.25, 2.0])
    same(x.abs(), [1.5, 0.25, 2.0])
    same(abs(x), [1.5, 0.25, 2.0])
    same(x.sign(), [-1.0, 1.0, 1.0])
    same(x.square(), [2.25, 0.0625, 4.0])
    same(x.clamp(-1.0, 1.0), [-1.0, 0.25, 1.0])
    same(x.clip(min=0.0), [0.0, 0.25, 2.0])
    same(x.round(), [-2.0, 0.0, 2.0])
    same(t([1.25, 1.35]).round(1), [1.2, 1.4])
    same(x.sin(), np.sin(np.array([-1.5, 0.25, 2.0], np.float32)))
    same(x.gelu(), nb.gelu(x).numpy())
    same(x.softplus(), nb.softplus(x).numpy())
    same(t([NAN, INF]).nan_to_num(), [0.0, np.finfo(np.float32).max])
    np.testing.assert_array_equal(t([NAN, 1.0]).isnan().numpy(), [True, False])
    np.testing.assert_array_equal(t([0.0, 1.0]).logical_not().numpy(), [True, False])


def test_clamp_in_place():
    x = t([-2.0, 0.5, 3.0])
    x.clamp_(0.0, 1.0)
    same(x, [0.0, 0.5, 1.0])


def test_torch_keyword_names():
    x = t([-2.0, 0.5])
    same(nb.clamp(input=x, min=-1.0), [-1.0, 0.5])
    same(nb.gelu(input=x, approximate="tanh"), nb.gelu(x, "tanh").numpy())
    same(nb.round(input=t([0.123]), decimals=2), [0.12])
    assert nb.clip is nb.clamp
    assert nb.negative is nb.neg


# -- integer and bool inputs ------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [np.int64, np.int32])
def test_integer_inputs_keep_their_dtype(dtype):
    x = t([-3, 0, 2], dtype)
    want_dtype = nb.int64 if dtype == np.int64 else nb.int32
    for fn, want in [
        (nb.abs, [3, 0, 2]),
        (nb.neg, [3, 0, -2]),
        (nb.sign, [-1, 0, 1]),
        (nb.square, [9, 0, 4]),
        (nb.floor, [-3, 0, 2]),
        (nb.ceil, [-3, 0, 2]),
        (nb.round, [-3, 0, 2]),
        (nb.trunc, [-3, 0, 2]),
        (nb.relu, [0, 0, 2]),
        (lambda a: nb.clamp(a, -1, 1), [-1, 0, 1]),
        (nb.nan_to_num, [-3, 0, 2]),
    ]:
        out = fn(x)
        assert out.dtype == want_dtype
        np.testing.assert_array_equal(out.numpy(), want)


def test_clamp_int_tensor_with_float_bound_is_float():
    out = nb.clamp(t([1, 5, -3], np.int64), 0.5)  # PyTorch: tensor([1.0, 5.0, 0.5])
    assert out.dtype == nb.float32
    same(out, [1.0, 5.0, 0.5])


def test_integer_predicates():
    x = t([1, -2], np.int64)
    for fn, want in [(nb.isnan, False), (nb.isinf, False), (nb.isfinite, True)]:
        out = fn(x)
        assert out.dtype == nb.bool_
        np.testing.assert_array_equal(out.numpy(), [want, want])


def test_sign_of_bool_is_identity_and_logical_not_of_numbers():
    np.testing.assert_array_equal(nb.sign(t([True, False], np.bool_)).numpy(), [True, False])
    out = nb.logical_not(t([0.0, -1.5, NAN]))
    assert out.dtype == nb.bool_
    np.testing.assert_array_equal(out.numpy(), [True, False, False])
    np.testing.assert_array_equal(nb.logical_not(t([0, 3], np.int64)).numpy(), [True, False])
    np.testing.assert_array_equal(nb.logical_not(t([True, False], np.bool_)).numpy(), [False, True])


# PyTorch's math functions compute integers and bools in the default float dtype; its
# activations reject them.
PROMOTED = [
    "exp", "expm1", "log", "log1p", "log2", "sqrt", "rsqrt", "reciprocal", "sin", "cos", "tan", "sinh", "cosh",
    "asin", "acos", "atan", "tanh", "erf", "sigmoid",
]  # fmt: skip
FLOAT_ONLY = [
    "leaky_relu", "elu", "gelu", "silu", "mish", "softplus", "logsigmoid", "hardsigmoid",
    "hardswish",
]  # fmt: skip


@pytest.mark.parametrize("name", PROMOTED)
def test_math_functions_compute_integers_in_the_default_float(name):
    for values, dtype in (([1, 2], np.int64), ([0, 3], np.int32), ([True, False], np.bool_)):
        out = getattr(nb, name)(t(values, dtype))
        assert out.dtype == nb.float32
        expected = getattr(nb, name)(t(values, np.float32))
        np.testing.assert_array_equal(out.numpy(), expected.numpy())
        if torch is not None:
            ref = getattr(torch, name)(torch.tensor(values))
            assert ref.dtype == torch.float32
            np.testing.assert_allclose(out.numpy(), ref.numpy(), rtol=1e-6)


@pytest.mark.parametrize("name", FLOAT_ONLY)
def test_float_only_ops_reject_integers(name):
    with pytest.raises(TypeError, match=rf"^{name}: expected a floating-point tensor, got dtype int64"):
        getattr(nb, name)(t([1, 2], np.int64))


@pytest.mark.parametrize(
    "name", ["abs", "neg", "square", "floor", "ceil", "round", "trunc", "relu", "relu6", "hardtanh", "nan_to_num"]
)
def test_numeric_ops_reject_bool(name):
    with pytest.raises(TypeError, match=rf"^{name}: expected an integer or floating-point tensor, got dtype bool"):
        getattr(nb, name)(t([True], np.bool_))


# -- rounding ---------------------------------------------------------------------------------------
def test_round_half_to_even():
    same(nb.round(t([0.5, 1.5, 2.5, -0.5, -2.5, 3.5])), [0.0, 2.0, 2.0, -0.0, -2.0, 4.0])


def test_round_decimals_matches_torch():
    same(nb.round(t([1.15, 2.675, -0.25, 125.0]), decimals=1), [1.2, 2.7, -0.2, 125.0])
    same(nb.round(t([125.0, 135.0, -15.0]), decimals=-1), [120.0, 140.0, -20.0])
    same(nb.round(t([0.12345], np.float64), decimals=3), [0.123])


def test_round_errors():
    with pytest.raises(TypeError, match="round: decimals must be an int, got 1.5"):
        nb.round(t([1.0]), decimals=1.5)
    with pytest.raises(TypeError, match="round: decimals=1 needs a floating-point tensor, got dtype int64"):
        nb.round(t([1], np.int64), decimals=1)


def test_sign_edges():
    same(nb.sign(t([NAN, -0.0, 0.0, INF, -INF, 1e-30])), [0.0, 0.0, 0.0, 1.0, -1.0, 1.0])  # torch: sign(nan) = 0


# -- gradients at kinks (PyTorch's choices) ------------------------------------------------------------
def test_gradients_at_kinks():
    x = t([0.0])
    assert grad_of(nb.abs, x)[0][0] == 0.0
    assert grad_of(nb.relu, x)[0][0] == 0.0
    assert grad_of(lambda a: nb.leaky_relu(a, 0.2), x)[0][0] == pytest.approx(0.2)
    assert grad_of(lambda a: nb.elu(a, 0.5), x)[0][0] == pytest.approx(0.5)
    np.testing.assert_array_equal(grad_of(nb.relu6, t([0.0, 6.0, 3.0, 7.0]))[0], [0.0, 0.0, 1.0, 0.0])
    np.testing.assert_array_equal(grad_of(nb.hardtanh, t([-1.0, 1.0, 0.5, -2.0]))[0], [0.0, 0.0, 1.0, 0.0])
    np.testing.assert_allclose(grad_of(nb.hardsigmoid, t([-3.0, 3.0, 0.0]))[0], [0.0, 0.0, 1 / 6])
    np.testing.assert_allclose(grad_of(nb.hardswish, t([-3.0, 3.0, 0.0, -4.0, 4.0]))[0], [0.0, 1.0, 0.5, 0.0, 1.0])


def test_gradients_of_piecewise_constant_ops_are_zero():
    x = t([-1.7, 0.2, 2.5])
    for fn in (nb.sign, nb.floor, nb.ceil, nb.round, nb.trunc, lambda a: nb.round(a, decimals=1)):
        np.testing.assert_array_equal(grad_of(fn, x)[0], [0.0, 0.0, 0.0])


def test_gradient_passes_nan_like_torch():
    # threshold/hardtanh/elu backward test `x <= bound`, which is false for nan.
    for fn in (nb.relu, nb.relu6, nb.hardtanh, nb.elu, nb.hardswish):
        assert grad_of(fn, t([NAN]))[0][0] == 1.0
    assert grad_of(nb.hardsigmoid, t([NAN]))[0][0] == 0.0


def test_clamp_scalar_bounds_gradient_is_inclusive():
    np.testing.assert_array_equal(
        grad_of(lambda a: nb.clamp(a, -1.0, 1.0), t([-1.0, 1.0, 0.0, 2.0, -2.0]))[0], [1.0, 1.0, 1.0, 0.0, 0.0]
    )
    np.testing.assert_array_equal(grad_of(lambda a: nb.clamp(a, min=0.0), t([0.0, -1.0, 1.0]))[0], [1.0, 0.0, 1.0])


def test_clamp_tensor_bounds_route_the_gradient():
    x = t([-2.0, 0.0, 0.5, 1.0, 3.0, 0.2])
    lo = t([-1.0, 0.0, 0.6, 0.0, 1.0, 0.5])
    hi = t([1.0, 1.0, 0.7, 1.0, 0.5, 0.1])  # the last two have min > max: the result is max
    same(nb.clamp(x, lo, hi), [-1.0, 0.0, 0.6, 1.0, 0.5, 0.1])
    gx, glo, ghi = grad_of(nb.clamp, x, lo, hi)
    np.testing.assert_array_equal(gx, [0, 1, 0, 1, 0, 0])
    np.testing.assert_array_equal(glo, [1, 0, 1, 0, 0, 0])
    np.testing.assert_array_equal(ghi, [0, 0, 0, 0, 1, 1])


def test_clamp_broadcasts_bounds_and_sums_their_gradient():
    x = t([0.5, -3.0])
    lo = t([[0.0], [1.0]])
    out = nb.clamp(x, lo)
    assert out.shape == (2, 2)
    same(out, [[0.5, 0.0], [1.0, 1.0]])
    gx, glo = grad_of(lambda a, b: nb.clamp(a, b), x, lo)
    np.testing.assert_array_equal(gx, [1.0, 0.0])
    np.testing.assert_array_equal(glo, [[1.0], [2.0]])


def test_clamp_nan_propagates():
    same(nb.clamp(t([NAN, 1.0, 0.5]), t([0.0, NAN, 0.0]), 2.0), [NAN, NAN, 0.5])


def test_nan_to_num_gradient_is_zero_where_not_finite():
    np.testing.assert_array_equal(grad_of(nb.nan_to_num, t([NAN, INF, -INF, 1.5]))[0], [0.0, 0.0, 0.0, 1.0])


def test_second_derivatives():
    x = t([0.3, -1.2], np.float64)
    d2 = nb.grad(lambda a: nb.sum(nb.grad(lambda b: nb.sum(nb.sin(b)))(a)))(x)
    np.testing.assert_allclose(d2.numpy(), -np.sin(x.numpy()), rtol=1e-12)
    d2 = nb.grad(lambda a: nb.sum(nb.grad(lambda b: nb.sum(nb.softplus(b)))(a)))(x)
    s = 1 / (1 + np.exp(-x.numpy()))
    np.testing.assert_allclose(d2.numpy(), s * (1 - s), rtol=1e-12)


# -- numerical stability and special values -------------------------------------------------------------
def test_softplus_and_logsigmoid_are_stable():
    sp = nb.softplus(t([100.0, -100.0, 1000.0, -1000.0])).numpy()
    assert sp[0] == 100.0 and sp[2] == 1000.0
    assert 0.0 <= sp[1] < 1e-40 and sp[3] == 0.0
    ls = nb.logsigmoid(t([-100.0, -1000.0, 100.0, 0.0])).numpy()
    np.testing.assert_allclose(ls, [-100.0, -1000.0, 0.0, -math.log(2.0)], rtol=1e-6, atol=1e-40)
    assert np.all(np.isfinite(grad_of(nb.softplus, t([100.0, -100.0]))[0]))
    np.testing.assert_allclose(grad_of(nb.logsigmoid, t([-100.0, 100.0]))[0], [1.0, 0.0], atol=1e-30)
    same(nb.sigmoid(t([-100.0, 100.0])), [0.0, 1.0])


def test_softplus_beta_and_threshold():
    # beta * x > threshold returns x itself; below, log1p(exp(beta x)) / beta.
    out = nb.softplus(t([1.0, 2.0], np.float64), beta=2.0, threshold=3.0).numpy()
    np.testing.assert_allclose(out, [math.log1p(math.exp(2.0)) / 2.0, 2.0], rtol=1e-12)


def test_small_arguments_keep_relative_precision():
    for fn, want in [(nb.expm1, 1e-10), (nb.log1p, 1e-10), (nb.sinh, 1e-10), (nb.asin, 1e-10), (nb.atan, 1e-10)]:
        np.testing.assert_allclose(fn(t([1e-10])).numpy(), [want], rtol=1e-6)


def test_inverse_trig_domain():
    same(nb.asin(t([1.0, -1.0, 1.5])), [math.pi / 2, -math.pi / 2, NAN])
    same(nb.acos(t([1.0, -1.0, -1.5])), [0.0, math.pi, NAN])
    same(nb.atan(t([INF, -INF])), [math.pi / 2, -math.pi / 2])


def test_gelu_forms():
    x = t([-1.0, 0.5, 2.0], np.float64)
    v = x.numpy()
    exact = 0.5 * v * (1 + np.array([math.erf(a / math.sqrt(2)) for a in v]))
    np.testing.assert_allclose(nb.gelu(x).numpy(), exact, rtol=1e-12)
    tanh_form = 0.5 * v * (1 + np.tanh(math.sqrt(2 / math.pi) * (v + 0.044715 * v**3)))
    np.testing.assert_allclose(nb.gelu(x, approximate="tanh").numpy(), tanh_form, rtol=1e-12)


def test_mish_and_silu_values():
    x = np.array([-2.0, 0.0, 1.5])
    same(nb.mish(t(x, np.float64)), x * np.tanh(np.log1p(np.exp(x))))
    same(nb.silu(t(x, np.float64)), x / (1 + np.exp(-x)))


def test_nan_to_num_defaults_follow_the_dtype():
    special = [NAN, INF, -INF, 1.0]
    same(nb.nan_to_num(t(special)), [0.0, np.finfo(np.float32).max, np.finfo(np.float32).min, 1.0])
    out = nb.nan_to_num(t(special, np.float16))
    assert out.dtype == nb.float16
    np.testing.assert_array_equal(out.numpy(), np.array([0.0, 65504.0, -65504.0, 1.0], np.float16))
    same(nb.nan_to_num(t(special), nan=1.0, posinf=2.0, neginf=-3.0), [1.0, 2.0, -3.0, 1.0])


def test_predicates_are_not_differentiable():
    x = t([NAN, 1.0]).requires_grad_()
    for fn in (nb.isnan, nb.isinf, nb.isfinite, nb.logical_not):
        out = fn(x)
        assert out.dtype == nb.bool_ and not out.requires_grad


# -- errors --------------------------------------------------------------------------------------------
def test_non_tensor_input():
    with pytest.raises(TypeError, match="sin: x must be a Tensor, got list"):
        nb.sin([1.0])
    with pytest.raises(TypeError, match="clamp: x must be a Tensor, got float"):
        nb.clamp(1.0, 0.0, 2.0)


def test_clamp_errors():
    x = t([1.0, 2.0])
    with pytest.raises(ValueError, match="clamp: at least one of min and max must be given"):
        nb.clamp(x)
    with pytest.raises(ValueError, match=r"clamp: shapes \(2,\), \(3,\) cannot be broadcast"):
        nb.clamp(x, t([0.0, 0.0, 0.0]))
    with pytest.raises(TypeError, match="clamp: expected an integer or floating-point tensor, got dtype bool"):
        nb.clamp(t([True], np.bool_), 0)
    with pytest.raises(TypeError, match="clamp: bounds must be numeric, got a bool tensor"):
        nb.clamp(x, t([True, False], np.bool_))


def test_activation_argument_errors():
    x = t([1.0])
    with pytest.raises(ValueError, match="gelu: approximate must be 'none' or 'tanh', got 'quick'"):
        nb.gelu(x, approximate="quick")
    with pytest.raises(ValueError, match="hardtanh: min_val=2.0 must not be greater than max_val=1.0"):
        nb.hardtanh(x, 2.0, 1.0)
    with pytest.raises(TypeError, match="leaky_relu: negative_slope must be a number, got 'a'"):
        nb.leaky_relu(x, "a")
    with pytest.raises(TypeError, match="elu: alpha must be a number, got None"):
        nb.elu(x, None)
    with pytest.raises(ValueError, match="softplus: beta must be nonzero"):
        nb.softplus(x, beta=0)
    with pytest.raises(TypeError, match="nan_to_num: posinf must be a number, got '1'"):
        nb.nan_to_num(x, posinf="1")
