"""Op values against NumPy (and PyTorch when it is installed), on the NumPy executor."""

from __future__ import annotations

import numpy as np
import pytest
from _oracle import torch

import nabla as nb

RNG = np.random.default_rng(1234)


def _rand(*shape: int, low: float = -2.0, high: float = 2.0, dtype=np.float32) -> np.ndarray:
    return RNG.uniform(low, high, size=shape).astype(dtype)


def _np(t: nb.Tensor) -> np.ndarray:
    assert isinstance(t, nb.Tensor), type(t)
    return t.numpy()


def _close(t: nb.Tensor, expected, *, rtol: float = 1e-6, atol: float = 1e-6) -> None:
    actual = _np(t)
    expected = np.asarray(expected)
    assert actual.shape == expected.shape, (actual.shape, expected.shape)
    np.testing.assert_allclose(actual, expected, rtol=rtol, atol=atol)


# =============================================================================================
# creation
# =============================================================================================
class TestTensorCreation:
    def test_tensor_from_float_list_is_float32(self):
        t = nb.tensor([[1.0, 2.0], [3.0, 4.5]])
        assert t.shape == (2, 2)
        assert t.dtype == nb.float32
        assert t.is_realized
        np.testing.assert_array_equal(t.numpy(), np.array([[1.0, 2.0], [3.0, 4.5]], np.float32))

    def test_tensor_from_int_list_is_int64(self):
        t = nb.tensor([1, 2, 3])
        assert t.dtype == nb.int64
        np.testing.assert_array_equal(t.numpy(), [1, 2, 3])
        assert t.numpy().dtype == np.int64

    def test_tensor_from_bool_list(self):
        t = nb.tensor([True, False])
        assert t.dtype == nb.bool_
        np.testing.assert_array_equal(t.numpy(), [True, False])

    def test_tensor_mixed_int_float_list_is_float32(self):
        t = nb.tensor([1, 2.5])
        assert t.dtype == nb.float32
        np.testing.assert_array_equal(t.numpy(), np.array([1.0, 2.5], np.float32))

    @pytest.mark.parametrize(
        "value, dtype",
        [(3.5, nb.float32), (7, nb.int64), (True, nb.bool_)],
    )
    def test_tensor_from_python_scalar_is_0d(self, value, dtype):
        t = nb.tensor(value)
        assert t.shape == ()
        assert t.ndim == 0
        assert t.dtype == dtype
        assert t.item() == value

    @pytest.mark.parametrize(
        "np_dtype, nb_dtype",
        [
            (np.float64, nb.float64),
            (np.float32, nb.float32),
            (np.float16, nb.float16),
            (np.int32, nb.int32),
            (np.int64, nb.int64),
            (np.bool_, nb.bool_),
        ],
    )
    def test_tensor_from_numpy_keeps_dtype(self, np_dtype, nb_dtype):
        a = np.array([[0, 1, 2], [3, 4, 5]]).astype(np_dtype)
        t = nb.tensor(a)
        assert t.dtype == nb_dtype
        assert t.shape == (2, 3)
        np.testing.assert_array_equal(t.numpy(), a)
        assert t.numpy().dtype == a.dtype

    def test_tensor_with_explicit_dtype(self):
        t = nb.tensor([1.7, -2.2], dtype=nb.int32)
        assert t.dtype == nb.int32
        np.testing.assert_array_equal(t.numpy(), np.array([1.7, -2.2]).astype(np.int32))
        t2 = nb.tensor([1, 2], dtype="float64")
        assert t2.dtype == nb.float64
        t3 = nb.tensor([1, 2], dtype=np.float16)
        assert t3.dtype == nb.float16

    def test_tensor_copies_numpy_data(self):
        a = np.ones(3, np.float32)
        t = nb.tensor(a)
        a[0] = 100.0
        np.testing.assert_array_equal(t.numpy(), [1.0, 1.0, 1.0])

    def test_asarray_does_not_copy_fitting_numpy_array(self):
        a = np.arange(6, dtype=np.float32).reshape(2, 3)
        t = nb.asarray(a)
        assert t.dtype == nb.float32
        assert np.shares_memory(t.numpy(), a)

    def test_asarray_from_list_and_with_dtype(self):
        t = nb.asarray([[1.0, 2.0]])
        assert t.dtype == nb.float32 and t.shape == (1, 2)
        t2 = nb.asarray(np.array([1, 2], np.int64), dtype=nb.float32)
        assert t2.dtype == nb.float32
        np.testing.assert_array_equal(t2.numpy(), [1.0, 2.0])

    def test_asarray_of_tensor_is_identity(self):
        t = nb.tensor([1.0, 2.0])
        assert nb.asarray(t) is t
        assert nb.asarray(t, dtype=nb.float64).dtype == nb.float64

    def test_asarray_non_contiguous(self):
        a = np.arange(6.0).reshape(2, 3).T
        np.testing.assert_array_equal(nb.asarray(a).numpy(), a)

    def test_from_numpy(self):
        a = np.arange(4, dtype=np.int32)
        t = nb.from_numpy(a)
        assert t.dtype == nb.int32
        np.testing.assert_array_equal(t.numpy(), a)

    def test_tensor_from_tensor_copies_and_casts(self):
        src = nb.tensor([1, 2])
        t = nb.tensor(src, dtype=nb.float32)
        assert t.dtype == nb.float32
        np.testing.assert_array_equal(t.numpy(), [1.0, 2.0])


class TestFills:
    @pytest.mark.parametrize("fn, value", [(nb.zeros, 0.0), (nb.ones, 1.0)])
    def test_zeros_ones_varargs_and_tuple(self, fn, value):
        a = fn(2, 3)
        b = fn((2, 3))
        c = fn([2, 3])
        for t in (a, b, c):
            assert t.shape == (2, 3)
            assert t.dtype == nb.float32
            np.testing.assert_array_equal(t.numpy(), np.full((2, 3), value, np.float32))

    @pytest.mark.parametrize("fn, value", [(nb.zeros, 0), (nb.ones, 1)])
    def test_zeros_ones_dtype(self, fn, value):
        t = fn(4, dtype=nb.int32)
        assert t.dtype == nb.int32
        np.testing.assert_array_equal(t.numpy(), np.full(4, value, np.int32))
        assert t.numpy().dtype == np.int32

    def test_zeros_scalar_shape(self):
        assert nb.zeros(()).shape == ()
        assert nb.ones().shape == ()
        assert nb.ones().item() == 1.0

    def test_full_infers_dtype_from_value(self):
        ti = nb.full((2, 2), 3)
        assert ti.dtype == nb.int64
        np.testing.assert_array_equal(ti.numpy(), np.full((2, 2), 3))
        tf = nb.full((2, 2), 3.5)
        assert tf.dtype == nb.float32
        np.testing.assert_array_equal(tf.numpy(), np.full((2, 2), 3.5, np.float32))
        tb = nb.full((3,), True)
        assert tb.dtype == nb.bool_
        np.testing.assert_array_equal(tb.numpy(), [True, True, True])

    def test_full_int_shape_and_dtype(self):
        t = nb.full(3, 2, dtype=nb.float64)
        assert t.shape == (3,)
        assert t.dtype == nb.float64
        np.testing.assert_array_equal(t.numpy(), [2.0, 2.0, 2.0])

    def test_like_functions(self):
        x = nb.tensor(np.arange(6, dtype=np.int32).reshape(2, 3))
        z = nb.zeros_like(x)
        o = nb.ones_like(x)
        f = nb.full_like(x, 7)
        for t, v in ((z, 0), (o, 1), (f, 7)):
            assert t.shape == (2, 3)
            assert t.dtype == nb.int32
            np.testing.assert_array_equal(t.numpy(), np.full((2, 3), v, np.int32))
        of = nb.ones_like(x, dtype=nb.float64)
        assert of.dtype == nb.float64
        # full_like keeps the int dtype: 2.5 becomes 2 (as torch.full_like)
        np.testing.assert_array_equal(nb.full_like(x, 2.5).numpy(), np.full((2, 3), 2, np.int32))

    def test_random_like_functions(self):
        x = nb.zeros(3, 4, dtype=nb.float64)
        for t in (nb.rand_like(x), nb.randn_like(x)):
            assert t.shape == (3, 4)
            assert t.dtype == nb.float64
        r = nb.rand_like(x).numpy()
        assert r.min() >= 0.0 and r.max() < 1.0


class TestArange:
    @pytest.mark.parametrize(
        "args",
        [(5,), (2, 7), (1, 10, 3), (5, 0, -1), (10, 0, -3), (5, 0), (0,)],
    )
    def test_int_arange(self, args):
        t = nb.arange(*args)
        expected = np.arange(*args)
        assert t.dtype == nb.int64
        assert t.shape == expected.shape
        np.testing.assert_array_equal(t.numpy(), expected)

    @pytest.mark.parametrize(
        "args",
        [(0, 1, 0.1), (-1.0, 1.0, 0.25), (0, 0.3, 0.1), (5, 0, -1.5), (0.5,), (2.5, 4), (1, 2, 0.5)],
    )
    def test_float_arange(self, args):
        t = nb.arange(*args)
        expected = np.arange(*args).astype(np.float32)
        assert t.dtype == nb.float32
        assert t.shape == expected.shape
        np.testing.assert_allclose(t.numpy(), expected, rtol=1e-6, atol=1e-7)
        if torch is not None:
            assert t.shape == tuple(torch.arange(*args).shape)

    def test_arange_dtype(self):
        t = nb.arange(1, 4, dtype=nb.float64)
        assert t.dtype == nb.float64
        np.testing.assert_array_equal(t.numpy(), [1.0, 2.0, 3.0])
        t2 = nb.arange(0, 5, 2, dtype=nb.int32)
        assert t2.dtype == nb.int32
        np.testing.assert_array_equal(t2.numpy(), [0, 2, 4])


class TestRandom:
    @pytest.mark.parametrize("fn", [nb.rand, nb.randn])
    def test_shape_and_dtype(self, fn):
        t = fn(3, 4)
        assert t.shape == (3, 4)
        assert t.dtype == nb.float32
        assert fn((2, 5)).shape == (2, 5)
        t64 = fn(6, dtype=nb.float64)
        assert t64.dtype == nb.float64
        assert t64.numpy().dtype == np.float64
        assert np.all(np.isfinite(t.numpy()))

    def test_rand_range(self):
        v = nb.rand(1000).numpy()
        assert v.min() >= 0.0 and v.max() < 1.0

    def test_uniform_range(self):
        v = nb.uniform((500,), -3.0, -1.0).numpy()
        assert v.shape == (500,)
        assert v.min() >= -3.0 and v.max() < -1.0
        assert v.max() - v.min() > 1.5  # actually spread over the interval
        assert nb.uniform(5).shape == (5,)

    def test_manual_seed_reproduces(self):
        for fn in (lambda: nb.rand(8), lambda: nb.randn(8), lambda: nb.uniform((8,), 2, 3), lambda: nb.normal((8,))):
            nb.manual_seed(42)
            a = fn().numpy()
            nb.manual_seed(42)
            b = fn().numpy()
            np.testing.assert_array_equal(a, b)
        nb.manual_seed(1)
        c = nb.randn(8).numpy()
        nb.manual_seed(2)
        d = nb.randn(8).numpy()
        assert not np.array_equal(c, d)

    def test_successive_draws_differ(self):
        nb.manual_seed(7)
        for fn in (nb.rand, nb.randn):
            a = fn(16).numpy()
            b = fn(16).numpy()
            assert not np.array_equal(a, b)
        # two draws pending in the same evaluation also differ
        x, y = nb.randn(16), nb.randn(16)
        assert not np.array_equal(x.numpy(), y.numpy())

    def test_randn_statistics(self):
        nb.manual_seed(0)
        v = nb.randn(10_000).numpy().astype(np.float64)
        assert abs(v.mean()) < 0.05
        assert abs(v.std() - 1.0) < 0.03
        # roughly symmetric
        assert 0.45 < (v > 0).mean() < 0.55

    def test_rand_statistics(self):
        nb.manual_seed(0)
        v = nb.rand(10_000).numpy().astype(np.float64)
        assert abs(v.mean() - 0.5) < 0.02
        assert abs(v.std() - np.sqrt(1 / 12)) < 0.02

    def test_normal_statistics(self):
        nb.manual_seed(0)
        v = nb.normal((10_000,), 5.0, 0.1, dtype=nb.float64).numpy()
        assert v.dtype == np.float64
        assert abs(v.mean() - 5.0) < 0.005
        assert abs(v.std() - 0.1) < 0.005


# =============================================================================================
# elementwise
# =============================================================================================
SHAPE_PAIRS = [
    ((3, 1), (1, 4)),
    ((2, 3, 4), (4,)),
    ((4,), (2, 3, 4)),
    ((2, 1, 3), (4, 1)),
    ((), (3,)),
    ((2, 3), ()),
    ((), ()),
    ((5,), (5,)),
]

BINARY = {
    "add": (nb.add, np.add, lambda a, b: a + b),
    "sub": (nb.sub, np.subtract, lambda a, b: a - b),
    "mul": (nb.mul, np.multiply, lambda a, b: a * b),
    "div": (nb.div, np.divide, lambda a, b: a / b),
    "pow": (nb.pow, np.power, lambda a, b: a**b),
    "maximum": (nb.maximum, np.maximum, None),
    "minimum": (nb.minimum, np.minimum, None),
}


def _operands(name: str, sx: tuple, sy: tuple) -> tuple[np.ndarray, np.ndarray]:
    if name == "pow":
        return _rand(*sx, low=0.5, high=2.0), _rand(*sy, low=-2.0, high=2.0)
    if name == "div":
        y = _rand(*sy, low=0.5, high=2.0) * np.where(_rand(*sy) > 0, 1, -1).astype(np.float32)
        return _rand(*sx), y
    return _rand(*sx), _rand(*sy)


@pytest.mark.parametrize("name", list(BINARY))
@pytest.mark.parametrize("sx, sy", SHAPE_PAIRS)
def test_binary_broadcasting(name, sx, sy):
    nb_fn, np_fn, operator = BINARY[name]
    x, y = _operands(name, sx, sy)
    expected = np_fn(x, y)
    out = nb_fn(nb.tensor(x), nb.tensor(y))
    assert out.shape == expected.shape
    assert out.dtype == nb.float32
    _close(out, expected, rtol=1e-5)
    if operator is not None:
        _close(operator(nb.tensor(x), nb.tensor(y)), expected, rtol=1e-5)
    if torch is not None:
        tv = getattr(torch, {"sub": "sub", "div": "div", "pow": "pow"}.get(name, name))(
            torch.from_numpy(np.asarray(x)), torch.from_numpy(np.asarray(y))
        )
        np.testing.assert_allclose(out.numpy(), tv.numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", list(BINARY))
def test_binary_python_scalar_on_either_side(name):
    nb_fn, np_fn, _ = BINARY[name]
    x = _rand(2, 3, low=0.5, high=2.0)
    t = nb.tensor(x)
    for s in (2.5, 3):
        left = nb_fn(s, t)
        right = nb_fn(t, s)
        assert left.dtype == nb.float32 and right.dtype == nb.float32
        assert left.shape == (2, 3) and right.shape == (2, 3)
        _close(left, np_fn(np.float32(s), x), rtol=1e-5)
        _close(right, np_fn(x, np.float32(s)), rtol=1e-5)


def test_operator_scalars_both_sides():
    x = _rand(3, low=0.5, high=2.0)
    t = nb.tensor(x)
    _close(t + 2.0, x + 2.0)
    _close(2.0 + t, 2.0 + x)
    _close(t - 2.0, x - 2.0)
    _close(1 - t, 1 - x)
    _close(t * 3, x * 3)
    _close(3 * t, 3 * x)
    _close(t / 4.0, x / 4.0)
    _close(1 / t, 1 / x)
    _close(t**2, x**2, rtol=1e-5)
    _close(2**t, 2**x, rtol=1e-5)
    _close(-t, -x)
    _close(+t, x)


def test_binary_with_numpy_array_operand():
    x = _rand(2, 3)
    y = _rand(3)
    _close(nb.tensor(x) + y, x + y)
    _close(y + nb.tensor(x), y + x)  # NumPy defers to the Tensor (__array_priority__)


def test_zero_dim_tensors():
    a = nb.tensor(2.0)
    b = nb.tensor([1.0, 2.0, 3.0])
    _close(a + b, [3.0, 4.0, 5.0])
    _close(b * a, [2.0, 4.0, 6.0])
    c = a * nb.tensor(4.0)
    assert c.shape == ()
    assert c.item() == 8.0


UNARY = {
    "neg": (nb.neg, np.negative, -3.0, 3.0),
    "exp": (nb.exp, np.exp, -3.0, 3.0),
    "log": (nb.log, np.log, 0.1, 5.0),
    "sqrt": (nb.sqrt, np.sqrt, 0.0, 5.0),
    "tanh": (nb.tanh, np.tanh, -3.0, 3.0),
    "relu": (nb.relu, lambda a: np.maximum(a, 0), -3.0, 3.0),
    "sigmoid": (nb.sigmoid, lambda a: 1 / (1 + np.exp(-a.astype(np.float64))), -8.0, 8.0),
}


@pytest.mark.parametrize("name", list(UNARY))
@pytest.mark.parametrize("shape", [(), (5,), (2, 3, 4)])
def test_unary(name, shape):
    nb_fn, np_fn, low, high = UNARY[name]
    x = _rand(*shape, low=low, high=high)
    out = nb_fn(nb.tensor(x))
    assert out.dtype == nb.float32
    assert out.shape == shape
    _close(out, np_fn(x), rtol=1e-5, atol=1e-6)
    if name != "neg":
        _close(getattr(nb.tensor(x), name)(), np_fn(x), rtol=1e-5, atol=1e-6)
    if torch is not None:
        np.testing.assert_allclose(out.numpy(), getattr(torch, name)(torch.from_numpy(x)).numpy(), rtol=1e-5, atol=1e-6)


def test_unary_float64_keeps_dtype():
    x = _rand(4, low=0.1, high=2.0, dtype=np.float64)
    for fn, np_fn in ((nb.exp, np.exp), (nb.log, np.log), (nb.sqrt, np.sqrt), (nb.tanh, np.tanh)):
        out = fn(nb.tensor(x))
        assert out.dtype == nb.float64
        np.testing.assert_allclose(out.numpy(), np_fn(x), rtol=1e-12)


def test_negative_alias_and_int_neg_relu():
    t = nb.tensor([-2, 3])
    assert nb.negative is nb.neg
    n = -t
    assert n.dtype == nb.int64
    np.testing.assert_array_equal(n.numpy(), [2, -3])
    r = nb.relu(t)
    assert r.dtype == nb.int64
    np.testing.assert_array_equal(r.numpy(), [0, 3])


def test_sigmoid_extremes_are_stable():
    out = nb.sigmoid(nb.tensor([-1000.0, 0.0, 1000.0])).numpy()
    np.testing.assert_array_equal(out, np.array([0.0, 0.5, 1.0], np.float32))


def test_division_by_zero_and_log_of_nonpositive():
    np.testing.assert_array_equal((nb.tensor([1.0, -1.0]) / 0.0).numpy(), [np.inf, -np.inf])
    assert np.isnan((nb.tensor([0.0]) / 0.0).item())
    out = nb.log(nb.tensor([-1.0, 0.0])).numpy()
    assert np.isnan(out[0]) and out[1] == -np.inf


# =============================================================================================
# comparisons
# =============================================================================================
COMPARISONS = {
    "equal": (nb.ops.equal, np.equal, lambda a, b: a == b, nb.eq),  # (nb.equal is torch.equal: a bool)
    "not_equal": (nb.not_equal, np.not_equal, lambda a, b: a != b, nb.ne),
    "greater": (nb.greater, np.greater, lambda a, b: a > b, nb.gt),
    "greater_equal": (nb.greater_equal, np.greater_equal, lambda a, b: a >= b, nb.ge),
    "less": (nb.less, np.less, lambda a, b: a < b, nb.lt),
    "less_equal": (nb.less_equal, np.less_equal, lambda a, b: a <= b, nb.le),
}


@pytest.mark.parametrize("name", list(COMPARISONS))
@pytest.mark.parametrize("sx, sy", [((3, 1), (1, 4)), ((2, 3, 4), (4,)), ((), (5,)), ((6,), (6,))])
def test_comparisons(name, sx, sy):
    nb_fn, np_fn, operator, alias = COMPARISONS[name]
    # small integers as floats so that ties occur
    x = RNG.integers(-2, 3, size=sx).astype(np.float32)
    y = RNG.integers(-2, 3, size=sy).astype(np.float32)
    expected = np_fn(x, y)
    for out in (
        nb_fn(nb.tensor(x), nb.tensor(y)),
        operator(nb.tensor(x), nb.tensor(y)),
        alias(nb.tensor(x), nb.tensor(y)),
    ):
        assert out.dtype == nb.bool_
        assert out.shape == expected.shape
        assert out.numpy().dtype == np.bool_
        np.testing.assert_array_equal(out.numpy(), expected)
    assert out.requires_grad is False


@pytest.mark.parametrize("name", list(COMPARISONS))
def test_comparisons_with_scalars_and_mixed_dtypes(name):
    nb_fn, np_fn, operator, _ = COMPARISONS[name]
    xi = np.array([1, 2, 3, 4])
    yf = np.array([1.5, 2.0, 2.5, 4.5], np.float32)
    np.testing.assert_array_equal(nb_fn(nb.tensor(xi), nb.tensor(yf)).numpy(), np_fn(xi, yf))
    np.testing.assert_array_equal(operator(nb.tensor(xi), 2).numpy(), np_fn(xi, 2))
    np.testing.assert_array_equal(nb_fn(2.5, nb.tensor(xi)).numpy(), np_fn(2.5, xi))


# =============================================================================================
# matmul
# =============================================================================================
MATMUL_SHAPES = [
    ((3, 4), (4, 5)),
    ((4,), (4, 5)),
    ((3, 4), (4,)),
    ((4,), (4,)),
    ((2, 3, 4), (4, 5)),
    ((2, 3, 4), (2, 4, 5)),
    ((4, 5), (2, 5, 3)),
    ((2, 1, 3, 4), (5, 4, 2)),
    ((4,), (2, 4, 5)),
    ((2, 3, 4), (4,)),
]


@pytest.mark.parametrize("sx, sy", MATMUL_SHAPES)
def test_matmul(sx, sy):
    x, y = _rand(*sx), _rand(*sy)
    expected = np.matmul(x, y)
    out = nb.matmul(nb.tensor(x), nb.tensor(y))
    assert out.shape == expected.shape
    assert out.dtype == nb.float32
    _close(out, expected, rtol=1e-5, atol=1e-5)
    _close(nb.tensor(x) @ nb.tensor(y), expected, rtol=1e-5, atol=1e-5)
    _close(nb.tensor(x).matmul(nb.tensor(y)), expected, rtol=1e-5, atol=1e-5)
    if torch is not None:
        np.testing.assert_allclose(
            out.numpy(), torch.matmul(torch.from_numpy(x), torch.from_numpy(y)).numpy(), rtol=1e-5, atol=1e-5
        )


def test_matmul_int_and_mixed_dtypes():
    out = nb.tensor([[1, 2]]) @ nb.tensor([[3], [4]])
    assert out.dtype == nb.int64
    np.testing.assert_array_equal(out.numpy(), [[11]])
    mixed = nb.tensor([[1, 2]]) @ nb.tensor([[3.0], [4.0]])
    assert mixed.dtype == nb.float32
    np.testing.assert_array_equal(mixed.numpy(), [[11.0]])


def test_matmul_with_list_and_numpy_operands():
    x = _rand(2, 2)
    _close(nb.tensor(x) @ [[1.0, 0.0], [0.0, 1.0]], x)
    eye = np.eye(2, dtype=np.float32)
    _close(eye @ nb.tensor(x), x)


# =============================================================================================
# reductions
# =============================================================================================
REDUCE_AXES = [None, 0, 1, -1, (0, 2), (-1, -3), (1,), (0, 1, 2)]
REDUCTIONS = {
    "sum": (nb.sum, np.sum),
    "mean": (nb.mean, np.mean),
    "max": (nb.max, np.max),
    "min": (nb.min, np.min),
}


@pytest.mark.parametrize("name", list(REDUCTIONS))
@pytest.mark.parametrize("axis", REDUCE_AXES)
@pytest.mark.parametrize("keepdims", [False, True])
def test_reductions(name, axis, keepdims):
    nb_fn, np_fn = REDUCTIONS[name]
    x = _rand(2, 3, 4)
    expected = np_fn(x, axis=axis, keepdims=keepdims)
    out = nb_fn(nb.tensor(x), axis=axis, keepdims=keepdims)
    assert out.shape == expected.shape
    assert out.dtype == nb.float32
    _close(out, expected, rtol=1e-5, atol=1e-6)
    # method with NumPy keywords
    t = nb.tensor(x)
    if name in ("sum", "mean"):
        m = getattr(t, name)(axis=axis, keepdims=keepdims)
        _close(m, expected, rtol=1e-5, atol=1e-6)
        m2 = getattr(t, name)(dim=axis, keepdim=keepdims)
        _close(m2, expected, rtol=1e-5, atol=1e-6)
    else:
        m = getattr(t, name)(axis=axis, keepdims=keepdims)
        _close(m, expected, rtol=1e-5, atol=1e-6)


def test_sum_dim_keepdim_and_axis_keepdims_agree():
    x = _rand(3, 4)
    t = nb.tensor(x)
    a = t.sum(dim=1, keepdim=True)
    b = t.sum(axis=1, keepdims=True)
    assert a.shape == b.shape == (3, 1)
    np.testing.assert_array_equal(a.numpy(), b.numpy())
    _close(a, x.sum(axis=1, keepdims=True), rtol=1e-6)
    m1 = t.mean(dim=0, keepdim=True)
    m2 = t.mean(axis=0, keepdims=True)
    assert m1.shape == m2.shape == (1, 4)
    _close(m1, x.mean(axis=0, keepdims=True))
    _close(m2, x.mean(axis=0, keepdims=True))
    if torch is not None:
        np.testing.assert_allclose(a.numpy(), torch.from_numpy(x).sum(dim=1, keepdim=True).numpy(), rtol=1e-6)


@pytest.mark.parametrize("name", ["argmax", "argmin"])
@pytest.mark.parametrize("axis", [None, 0, 1, -1, -3])
@pytest.mark.parametrize("keepdims", [False, True])
def test_arg_reductions(name, axis, keepdims):
    x = RNG.integers(-3, 4, size=(2, 3, 4)).astype(np.float32)  # with ties: first occurrence wins
    np_fn = getattr(np, name)
    expected = np_fn(x, axis=axis, keepdims=keepdims)
    out = getattr(nb, name)(nb.tensor(x), axis, keepdims)
    assert out.dtype == nb.int64
    assert out.shape == expected.shape
    np.testing.assert_array_equal(out.numpy(), expected)
    m = getattr(nb.tensor(x), name)(dim=axis, keepdim=keepdims)
    np.testing.assert_array_equal(m.numpy(), expected)
    assert out.requires_grad is False


def test_argmax_ties_first_occurrence():
    t = nb.tensor([[1.0, 3.0, 3.0], [2.0, 2.0, 1.0]])
    np.testing.assert_array_equal(t.argmax(dim=1).numpy(), [1, 0])
    np.testing.assert_array_equal(t.argmin(dim=1).numpy(), [0, 2])
    assert t.argmax().item() == 1


@pytest.mark.parametrize("keepdim", [False, True])
def test_tensor_max_min_dim_returns_values_and_indices(keepdim):
    x = np.array([[1.0, 5.0, 3.0], [7.0, 2.0, 7.0]], np.float32)
    t = nb.tensor(x)
    res = t.max(dim=1, keepdim=keepdim)
    assert isinstance(res, tuple) and hasattr(res, "_fields")
    assert res._fields == ("values", "indices")
    values, indices = res
    np.testing.assert_array_equal(values.numpy(), x.max(axis=1, keepdims=keepdim))
    np.testing.assert_array_equal(indices.numpy(), np.argmax(x, axis=1, keepdims=keepdim))
    assert res.values is values and res.indices is indices
    assert indices.dtype == nb.int64
    mn = t.min(dim=0, keepdim=keepdim)
    np.testing.assert_array_equal(mn.values.numpy(), x.min(axis=0, keepdims=keepdim))
    np.testing.assert_array_equal(mn.indices.numpy(), np.argmin(x, axis=0, keepdims=keepdim))
    # positional dim, negative dim
    v2, i2 = t.max(-1)
    np.testing.assert_array_equal(v2.numpy(), x.max(axis=-1))
    np.testing.assert_array_equal(i2.numpy(), x.argmax(axis=-1))
    if torch is not None:
        tv, ti = torch.from_numpy(x).max(dim=1, keepdim=keepdim)
        np.testing.assert_array_equal(values.numpy(), tv.numpy())
        np.testing.assert_array_equal(indices.numpy(), ti.numpy())


def test_tensor_max_without_dim_and_with_axis_return_values():
    x = np.array([[1.0, 5.0, 3.0], [7.0, 2.0, 7.0]], np.float32)
    t = nb.tensor(x)
    assert t.max().item() == 7.0
    assert t.min().item() == 1.0
    v = t.max(axis=1)
    assert isinstance(v, nb.Tensor)
    np.testing.assert_array_equal(v.numpy(), [5.0, 7.0])
    np.testing.assert_array_equal(nb.amax(t, 0).numpy(), x.max(axis=0))
    np.testing.assert_array_equal(nb.amin(t, 0).numpy(), x.min(axis=0))
    # Tensor argument: elementwise maximum, as torch.max(a, b)
    np.testing.assert_array_equal(t.max(nb.tensor(4.0)).numpy(), np.maximum(x, 4.0))


def test_reduction_dtypes():
    b = nb.tensor([True, False, True])
    s = b.sum()
    assert s.dtype == nb.int64
    assert s.item() == 2
    i32 = nb.tensor(np.array([1, 2, 3], np.int32))
    assert i32.sum().dtype == nb.int64
    assert i32.sum().item() == 6
    assert i32.max().dtype == nb.int32
    # As torch: mean of integers or bools needs dtype= (torch: "could not infer output dtype").
    for x in (nb.tensor([[1, 2], [3, 4]]), nb.tensor([True, False])):
        with pytest.raises(TypeError, match=f"mean: expected a floating-point tensor, got dtype {x.dtype.name}"):
            x.mean()
    m = nb.tensor([[1, 2], [3, 4]]).mean(axis=1, dtype=nb.float32)
    assert m.dtype == nb.float32
    np.testing.assert_array_equal(m.numpy(), [1.5, 3.5])
    assert nb.mean(nb.tensor([True, False]), dtype=nb.float64).item() == 0.5
    f16 = nb.ones(3, dtype=nb.float16)
    assert f16.sum().dtype == nb.float16
    assert f16.mean().dtype == nb.float16
    f64 = nb.ones(3, dtype=nb.float64)
    assert f64.mean().dtype == nb.float64


def test_reduction_over_empty_and_zero_dim():
    np.testing.assert_array_equal(nb.zeros(0, 3).sum(axis=0).numpy(), np.zeros(3, np.float32))
    assert np.isnan(nb.zeros(0, 3).mean().item())
    s = nb.tensor(3.0)
    assert s.sum().item() == 3.0
    assert s.max().item() == 3.0
    assert s.argmax().item() == 0


def test_zero_dim_reduction_with_dim_0():
    # PyTorch accepts dim=0 on a 0-d tensor: torch.tensor(3.).sum(dim=0) == 3.0, argmax(0) == 0.
    s = nb.tensor(3.0)
    out = s.sum(dim=0)
    assert out.shape == ()
    assert out.item() == 3.0
    assert s.max(axis=0).item() == 3.0
    assert s.argmax(dim=0).item() == 0
    if torch is not None:
        assert torch.tensor(3.0).sum(dim=0).item() == out.item()


# =============================================================================================
# shape ops
# =============================================================================================
def test_reshape():
    x = _rand(2, 3, 4)
    t = nb.tensor(x)
    np.testing.assert_array_equal(nb.reshape(t, (4, 6)).numpy(), x.reshape(4, 6))
    np.testing.assert_array_equal(t.reshape(-1, 2).numpy(), x.reshape(-1, 2))
    np.testing.assert_array_equal(t.reshape((3, -1)).numpy(), x.reshape(3, -1))
    np.testing.assert_array_equal(t.reshape(-1).numpy(), x.reshape(-1))
    np.testing.assert_array_equal(t.view(24).numpy(), x.reshape(24))
    assert t.reshape(2, -1, 2).shape == (2, 6, 2)
    assert nb.tensor(3.0).reshape(1, 1).shape == (1, 1)
    assert nb.ones(1, 1).reshape(()).shape == ()


def test_flatten():
    x = _rand(2, 3, 4)
    np.testing.assert_array_equal(nb.tensor(x).flatten().numpy(), x.reshape(-1))
    np.testing.assert_array_equal(nb.flatten(nb.tensor(x), 1).numpy(), x.reshape(2, 12))
    assert nb.flatten(nb.tensor(x), 0, 1).shape == (6, 4)


@pytest.mark.parametrize("dims", [(0, 1), (0, 2), (1, 2), (-1, 0), (2, 2)])
def test_transpose(dims):
    x = _rand(2, 3, 4)
    out = nb.transpose(nb.tensor(x), *dims)
    np.testing.assert_array_equal(out.numpy(), np.swapaxes(x, *dims))
    np.testing.assert_array_equal(nb.tensor(x).transpose(*dims).numpy(), np.swapaxes(x, *dims))
    np.testing.assert_array_equal(nb.swapaxes(nb.tensor(x), *dims).numpy(), np.swapaxes(x, *dims))


def test_transpose_defaults_T_and_mT():
    x = _rand(2, 3, 4)
    t = nb.tensor(x)
    np.testing.assert_array_equal(t.transpose().numpy(), np.swapaxes(x, -1, -2))
    np.testing.assert_array_equal(t.T.numpy(), x.T)
    np.testing.assert_array_equal(t.mT.numpy(), np.swapaxes(x, -1, -2))
    v = nb.tensor([1.0, 2.0])
    assert v.transpose().shape == (2,)


@pytest.mark.parametrize("dims", [(2, 0, 1), (0, 1, 2), (1, 0, 2), (-1, 0, 1)])
def test_permute(dims):
    x = _rand(2, 3, 4)
    expected = np.transpose(x, dims)
    np.testing.assert_array_equal(nb.permute(nb.tensor(x), dims).numpy(), expected)
    np.testing.assert_array_equal(nb.tensor(x).permute(*dims).numpy(), expected)
    np.testing.assert_array_equal(nb.tensor(x).permute(dims).numpy(), expected)


@pytest.mark.parametrize(
    "shape, target",
    [((3,), (2, 3)), ((3, 1), (3, 4)), ((1, 4), (2, 3, 4)), ((), (2, 2)), ((2, 3), (2, 3))],
)
def test_broadcast_to(shape, target):
    x = _rand(*shape)
    expected = np.broadcast_to(x, target)
    out = nb.broadcast_to(nb.tensor(x), target)
    assert out.shape == target
    np.testing.assert_array_equal(out.numpy(), expected)
    np.testing.assert_array_equal(nb.tensor(x).broadcast_to(target).numpy(), expected)


def test_expand_and_expand_as():
    x = _rand(3, 1)
    np.testing.assert_array_equal(nb.tensor(x).expand(-1, 4).numpy(), np.broadcast_to(x, (3, 4)))
    np.testing.assert_array_equal(nb.tensor(x).expand_as(nb.zeros(2, 3, 5)).numpy(), np.broadcast_to(x, (2, 3, 5)))


def test_squeeze():
    x = _rand(1, 3, 1, 2)
    t = nb.tensor(x)
    np.testing.assert_array_equal(t.squeeze().numpy(), np.squeeze(x))
    assert t.squeeze().shape == (3, 2)
    assert t.squeeze(0).shape == (3, 1, 2)
    assert t.squeeze(-2).shape == (1, 3, 2)
    assert nb.squeeze(t, (0, 2)).shape == (3, 2)
    assert t.squeeze(axis=2).shape == (1, 3, 2)
    # PyTorch: a named dimension whose size is not 1 is left alone
    assert t.squeeze(1).shape == (1, 3, 1, 2)
    np.testing.assert_array_equal(t.squeeze(0).numpy(), np.squeeze(x, 0))
    assert nb.tensor(1.0).squeeze().shape == ()


@pytest.mark.parametrize(
    "dim, expected", [(0, (1, 2, 3)), (1, (2, 1, 3)), (2, (2, 3, 1)), (-1, (2, 3, 1)), (-3, (1, 2, 3))]
)
def test_unsqueeze(dim, expected):
    x = _rand(2, 3)
    out = nb.unsqueeze(nb.tensor(x), dim)
    assert out.shape == expected
    np.testing.assert_array_equal(out.numpy(), np.expand_dims(x, dim))
    np.testing.assert_array_equal(nb.tensor(x).unsqueeze(dim).numpy(), np.expand_dims(x, dim))
    assert nb.expand_dims(nb.tensor(x), dim).shape == expected


def test_identity_and_clone():
    x = _rand(2, 2)
    np.testing.assert_array_equal(nb.identity(nb.tensor(x)).numpy(), x)
    c = nb.tensor(x).clone()
    np.testing.assert_array_equal(c.numpy(), x)


# =============================================================================================
# where
# =============================================================================================
def test_where_broadcasting():
    cond = np.array([[True], [False]])
    x = _rand(3)
    y = _rand(2, 1)
    expected = np.where(cond, x, y)
    out = nb.where(nb.tensor(cond), nb.tensor(x), nb.tensor(y))
    assert out.shape == expected.shape == (2, 3)
    np.testing.assert_array_equal(out.numpy(), expected)


def test_where_with_scalar_and_from_comparison():
    x = _rand(4, 3)
    t = nb.tensor(x)
    out = nb.where(t > 0, t, 0.0)
    np.testing.assert_array_equal(out.numpy(), np.where(x > 0, x, np.float32(0.0)))
    assert out.dtype == nb.float32
    out2 = nb.where(t > 0, -1, t)
    np.testing.assert_array_equal(out2.numpy(), np.where(x > 0, np.float32(-1), x))


def test_where_with_two_scalars():
    # torch.where(cond, 1.0, 0.0) and np.where(cond, 1.0, 0.0) both work (PyTorch: float32 result).
    cond = nb.tensor([True, False, True])
    out = nb.where(cond, 1.0, 0.0)
    assert out.shape == (3,)
    assert out.dtype == nb.float32
    np.testing.assert_array_equal(out.numpy(), [1.0, 0.0, 1.0])


def test_where_promotes_and_accepts_non_bool_condition():
    out = nb.where(nb.tensor([True, False]), nb.tensor([1, 2]), nb.tensor([0.5, 0.5]))
    assert out.dtype == nb.float32
    np.testing.assert_array_equal(out.numpy(), [1.0, 0.5])
    out2 = nb.where(nb.tensor([1, 0]), nb.tensor([1.0, 2.0]), nb.tensor([3.0, 4.0]))
    np.testing.assert_array_equal(out2.numpy(), [1.0, 4.0])
    out3 = nb.where(nb.tensor(True), nb.tensor(1.0), nb.tensor([2.0, 3.0]))
    np.testing.assert_array_equal(out3.numpy(), [1.0, 1.0])


# =============================================================================================
# cast and dtype promotion
# =============================================================================================
@pytest.mark.parametrize(
    "target, np_target",
    [
        (nb.int32, np.int32),
        (nb.int64, np.int64),
        (nb.float64, np.float64),
        (nb.float16, np.float16),
        (nb.bool_, np.bool_),
        ("int32", np.int32),
        ("float64", np.float64),
        ("double", np.float64),
        ("half", np.float16),
        ("bool", np.bool_),
        (np.float64, np.float64),
        (np.int32, np.int32),
        (float, np.float64),  # (a Python float is a double, as in torch and NumPy)
        (int, np.int64),
        (bool, np.bool_),
    ],
)
def test_cast(target, np_target):
    x = np.array([1.7, -1.7, 0.0, 2.5, -0.2], np.float32)
    expected = x.astype(np_target)
    for out in (nb.cast(nb.tensor(x), target), nb.astype(nb.tensor(x), target), nb.tensor(x).astype(target)):
        assert out.numpy().dtype == expected.dtype
        np.testing.assert_array_equal(out.numpy(), expected)


def test_cast_to_same_dtype_is_noop_and_methods():
    t = nb.tensor([1.5, 2.5])
    assert nb.cast(t, nb.float32) is t
    assert t.double().dtype == nb.float64
    assert t.half().dtype == nb.float16
    assert t.long().dtype == nb.int64
    assert t.int().dtype == nb.int32
    assert t.bool().dtype == nb.bool_
    assert t.to(nb.float64).dtype == nb.float64
    assert t.type(nb.int64).dtype == nb.int64
    # torch's tensor-type names: the query without an argument and the cast by name
    assert t.type() == "torch.FloatTensor" and t.long().type() == "torch.LongTensor"
    assert t.type("torch.DoubleTensor").dtype == nb.float64 and t.type("torch.BoolTensor").dtype == nb.bool_
    assert t.type("torch.ByteTensor").dtype == nb.uint8
    with pytest.raises(TypeError, match="unsupported dtype 'torch.ComplexFloatTensor'"):
        t.type("torch.ComplexFloatTensor")
    assert nb.tensor([1, 2]).float().dtype == nb.float32
    np.testing.assert_array_equal(t.long().numpy(), [1, 2])


def test_bfloat16_roundtrip():
    t = nb.tensor([1.5, 2.25, -3.0], dtype=nb.bfloat16)
    assert t.dtype == nb.bfloat16
    np.testing.assert_array_equal(t.numpy(), np.array([1.5, 2.25, -3.0], np.float32))
    s = t + 1
    assert s.dtype == nb.bfloat16
    np.testing.assert_array_equal(s.numpy(), [2.5, 3.25, -2.0])


@pytest.mark.parametrize(
    "a, b, expected",
    [
        (nb.int32, nb.int64, nb.int64),
        (nb.int64, nb.int32, nb.int64),
        (nb.int32, nb.float32, nb.float32),
        (nb.int64, nb.float32, nb.float32),
        (nb.int64, nb.float16, nb.float16),
        (nb.float16, nb.bfloat16, nb.float32),
        (nb.bfloat16, nb.float16, nb.float32),
        (nb.float16, nb.float32, nb.float32),
        (nb.float32, nb.float64, nb.float64),
        (nb.bool_, nb.int32, nb.int32),
        (nb.bool_, nb.float16, nb.float16),
        (nb.bool_, nb.bool_, nb.bool_),
        (nb.bfloat16, nb.float32, nb.float32),
    ],
)
def test_promote_types(a, b, expected):
    assert nb.promote_types(a, b) == expected
    if torch is not None:
        names = {nb.int32: torch.int32, nb.int64: torch.int64, nb.float16: torch.float16, nb.bfloat16: torch.bfloat16}
        names.update({nb.float32: torch.float32, nb.float64: torch.float64, nb.bool_: torch.bool})
        assert torch.promote_types(names[a], names[b]) == names[expected]


def test_op_result_dtypes():
    i32 = nb.tensor(np.array([1, 2], np.int32))
    i64 = nb.tensor([3, 4])
    f32 = nb.tensor([0.5, 1.5])
    f16 = nb.tensor(np.array([1, 2], np.float16))
    bf16 = nb.tensor([1.0, 2.0], dtype=nb.bfloat16)
    assert (i32 + i64).dtype == nb.int64
    np.testing.assert_array_equal((i32 + i64).numpy(), [4, 6])
    assert (i64 + f32).dtype == nb.float32
    np.testing.assert_array_equal((i64 + f32).numpy(), [3.5, 5.5])
    assert (i32 * f32).dtype == nb.float32
    assert (f16 + bf16).dtype == nb.float32
    np.testing.assert_array_equal((f16 + bf16).numpy(), [2.0, 4.0])
    # weakly typed Python scalars
    assert (2.5 * i64).dtype == nb.float32
    np.testing.assert_array_equal((2.5 * i64).numpy(), [7.5, 10.0])
    assert (i32 * 2).dtype == nb.int32
    assert (f16 * 2.5).dtype == nb.float16
    assert (nb.tensor([True]) * 2).dtype == nb.int64
    # true division of integers is float32
    q = i64 / nb.tensor([2, 8])
    assert q.dtype == nb.float32
    np.testing.assert_array_equal(q.numpy(), [1.5, 0.5])
    assert (i64 / i32).dtype == nb.float32
    assert (1 / i64).dtype == nb.float32
    np.testing.assert_allclose((1 / i64).numpy(), [1 / 3, 1 / 4], rtol=1e-6)
    # integer pow stays integer
    p = i64**2
    assert p.dtype == nb.int64
    np.testing.assert_array_equal(p.numpy(), [9, 16])
    assert (2.0**i64).dtype == nb.float32
    # maximum of int and float
    mx = nb.maximum(nb.tensor([1, 5]), nb.tensor([2.5, 3.0]))
    assert mx.dtype == nb.float32
    np.testing.assert_array_equal(mx.numpy(), [2.5, 5.0])
    # bool sum
    assert nb.tensor([True, True, False]).sum().dtype == nb.int64
    if torch is not None:
        assert (torch.tensor([3, 4]) / torch.tensor([2, 8])).dtype == torch.float32
        assert (2.5 * torch.tensor([3, 4])).dtype == torch.float32


# =============================================================================================
# Tensor API
# =============================================================================================
def test_tensor_metadata():
    t = nb.tensor(np.zeros((2, 3, 4), np.float32))
    assert t.shape == (2, 3, 4)
    assert isinstance(t.shape, tuple)
    assert t.dtype == nb.float32
    assert t.ndim == 3
    assert t.dim() == 3
    assert t.numel() == 24
    assert t.size() == (2, 3, 4)
    assert t.size(1) == 3
    assert len(t) == 2
    assert isinstance(t.device, nb.Device)
    assert str(t.device) == "cpu:0"
    assert t.device.kind == "cpu"


def test_numpy_item_tolist_float_int():
    x = np.array([[1.5, 2.0], [3.0, 4.25]], np.float32)
    t = nb.tensor(x)
    a = t.numpy()
    assert isinstance(a, np.ndarray)
    assert a.dtype == np.float32
    np.testing.assert_array_equal(a, x)
    assert t.tolist() == [[1.5, 2.0], [3.0, 4.25]]
    assert nb.tensor([[3]]).tolist() == [[3]]
    s = t.sum()
    assert s.item() == pytest.approx(10.75)
    assert isinstance(s.item(), float)
    assert isinstance(nb.tensor(3).item(), int)
    assert float(nb.tensor(3.5)) == 3.5
    assert float(nb.tensor([[2.0]])) == 2.0
    assert int(nb.tensor(3.7)) == 3
    assert bool(nb.tensor([0.0])) is False
    assert bool(nb.tensor(2)) is True
    assert [10, 20, 30][nb.tensor(1)] == 20


def test_np_asarray():
    x = np.array([1.0, 2.0], np.float32)
    t = nb.tensor(x) * 2
    a = np.asarray(t)
    assert isinstance(a, np.ndarray)
    np.testing.assert_array_equal(a, x * 2)
    a64 = np.asarray(t, dtype=np.float64)
    assert a64.dtype == np.float64
    np.testing.assert_array_equal(a64, [2.0, 4.0])
    np.testing.assert_array_equal(np.array(nb.tensor([1, 2])), [1, 2])


def test_repr_shows_values_and_dtype():
    r = repr(nb.tensor([1.5, -2.0]))
    assert r.startswith("Tensor(")
    assert "1.5" in r and "-2." in r
    assert "float32" in r
    r2 = repr(nb.tensor([[1, 2], [3, 4]]) * 10)
    assert "40" in r2 and "int64" in r2
    assert "requires_grad=True" in repr(nb.tensor([1.0], requires_grad=True))
    assert "requires_grad" not in repr(nb.tensor([1.0]))
    assert str(nb.tensor([7.0])) == repr(nb.tensor([7.0]))


def test_len_of_0d_raises():
    with pytest.raises(TypeError):
        len(nb.tensor(1.0))


def test_item_of_many_elements_raises():
    with pytest.raises(ValueError, match=r"\(2,\)"):
        nb.ones(2).item()
    with pytest.raises(RuntimeError, match="ambiguous"):
        bool(nb.ones(2))


def test_reading_a_bfloat16_value_runs_no_graph():
    x = nb.tensor([1.5, 2.25, -3.0]).to(nb.bfloat16)
    nb.evaluate(x)
    nb.reset_cache_info()
    assert x.numpy().tolist() == [1.5, 2.25, -3.0] and x.numpy().dtype == np.float32 and x[1:2].sum().item() == 2.25
    assert nb.cache_info().executions == 1  # the slice-and-sum; the reads widen on the host
