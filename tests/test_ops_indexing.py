"""Indexing semantics beyond the registry: NumPy index rules, functional updates through the
Tensor facade, gradients with repeated indices, and errors that name the op, dim and values."""

from __future__ import annotations

import numpy as np
import pytest

import nabla as nb

X = np.arange(60, dtype=np.float32).reshape(3, 4, 5)


def t(a, **kw):
    return nb.tensor(a, **kw)


# -- getitem semantics ---------------------------------------------------------------------------
def test_an_int_is_a_select_applied_first_as_in_pytorch():
    # An int and an array separated by a slice: PyTorch applies the int first, so the array's dim
    # stays in place (shape (4, 2)); NumPy would broadcast them and put the dims first (2, 4).
    out = t(X)[1, :, [0, 4]]
    assert out.shape == (4, 2)
    np.testing.assert_array_equal(out.numpy(), X[1][:, [0, 4]])


def test_advanced_indices_separated_by_none_go_first():
    assert t(X)[[0, 2], None, [1, 1]].shape == X[[0, 2], None, [1, 1]].shape == (2, 1, 5)


def test_slices_clamp_like_python_and_negative_steps():
    x = t(X)
    for index in [(slice(-100, 100),), (slice(None, None, -1), slice(3, -100, -2)), (slice(5, 1),)]:
        np.testing.assert_array_equal(x[index].numpy(), X[index])


def test_a_second_ellipsis_stands_for_no_dims_as_in_pytorch():
    # torch: x[..., 0, ...] is x[..., 0]; NumPy raises.
    x = t(X)
    np.testing.assert_array_equal(x[..., 0, ...].numpy(), X[..., 0])
    assert x[..., None, ...].shape == (3, 4, 5, 1)
    assert x[None, ..., 1, ...].shape == (1, 3, 4)
    y = x.clone()
    y[..., 0, ...] = 7.0
    assert (y.numpy()[..., 0] == 7).all() and (y.numpy()[..., 1:] == X[..., 1:]).all()


def test_zero_d_int_tensor_index_acts_like_an_int():
    np.testing.assert_array_equal(t(X)[t(2)].numpy(), X[2])


def test_scalar_bool_index():
    assert t(X)[True].shape == (1, 3, 4, 5)
    assert t(X)[False].shape == (0, 3, 4, 5)
    assert t(X)[None, False, 1].shape == X[None, False, 1].shape == (1, 0, 4, 5)


def test_mask_from_a_lazy_tensor_is_realized():
    x = t(X)
    mask = x > 30.0  # a promise: getitem must read its values
    assert not mask.is_realized
    out = x[mask]
    assert mask.is_realized
    np.testing.assert_array_equal(out.numpy(), X[X > 30])


def test_lazy_integer_index_wraps_negatives():
    idx = nb.add(t(np.array([-1, 0], np.int64)), 0)
    np.testing.assert_array_equal(t(X)[:, idx].numpy(), X[:, [-1, 0]])


def test_new_index_data_reuses_the_compiled_program():
    x = t(X)
    x[t(np.array([0, 2], np.int64)), 1].numpy()
    with nb.no_recompile():
        out = x[t(np.array([1, 1], np.int64)), 1]
        np.testing.assert_array_equal(out.numpy(), X[[1, 1], 1])


# -- gradients -------------------------------------------------------------------------------------
def test_repeated_indices_accumulate_in_the_gradient():
    g = nb.grad(lambda x: x[[0, 0, 2, 0]].sum())(t([1.0, 2.0, 3.0]))
    np.testing.assert_array_equal(g.numpy(), [3.0, 0.0, 1.0])


def test_two_advanced_indices_gradient():
    g = nb.grad(lambda x: x[[0, 0, 1], [2, 2, 0]].sum())(t(np.zeros((2, 3), np.float32)))
    np.testing.assert_array_equal(g.numpy(), [[0, 0, 2], [1, 0, 0]])


def test_basic_slice_gradient_pads_with_zeros():
    g = nb.grad(lambda x: (x[1:, ::-2] * 2.0).sum())(t(np.ones((3, 4), np.float32)))
    np.testing.assert_array_equal(g.numpy(), [[0, 0, 0, 0], [0, 2, 0, 2], [0, 2, 0, 2]])  # cols 3, 1


def test_setitem_gradients_reach_x_and_value():
    def f(x, v):
        return (nb.setitem(x, (slice(None), 1), v) * t([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])).sum()

    gx, gv = nb.grad(f, argnums=(0, 1))(t(np.ones((2, 3), np.float32)), t(7.0))
    np.testing.assert_array_equal(gx.numpy(), [[1, 0, 3], [4, 0, 6]])  # overwritten: zero
    assert gv.shape == () and gv.item() == 7.0  # broadcast value: summed


def test_second_order_through_advanced_indexing():
    def f(x):
        return (x[[0, 0, 1]] ** 3).sum()

    gg = nb.grad(lambda x: nb.grad(f)(x).sum())(t([1.0, 2.0]))
    np.testing.assert_allclose(gg.numpy(), [12.0, 12.0])  # d/dx of 2*3x^2 and 3x^2


# -- setitem / at through the Tensor facade ------------------------------------------------------
def test_tensor_setitem_rebinds_and_casts():
    x = t(np.zeros((2, 3), np.int64))
    x[1, ::2] = 2.7  # cast to x's dtype, as PyTorch
    assert x.dtype == nb.int64
    np.testing.assert_array_equal(x.numpy(), [[0, 0, 0], [2, 0, 2]])
    y = t(np.zeros((2, 3), np.float32))
    y[y == 0] = t(np.array(5))
    np.testing.assert_array_equal(y.numpy(), np.full((2, 3), 5.0))


def test_setitem_is_functional():
    x = t(np.zeros(3, np.float32))
    y = nb.setitem(x, [0, 2], t([1.0, 2.0]))
    np.testing.assert_array_equal(x.numpy(), [0, 0, 0])
    np.testing.assert_array_equal(y.numpy(), [1, 0, 2])


def test_at_modes_with_repeated_indices():
    x = t([1.0, 2.0, 3.0])
    idx = [0, 0, 2]
    np.testing.assert_array_equal(x.at[idx].add(t([1.0, 2.0, 3.0])).numpy(), [4, 2, 6])
    np.testing.assert_array_equal(x.at[idx].subtract(1.0).numpy(), [-1, 2, 2])
    np.testing.assert_array_equal(x.at[idx].multiply(t([2.0, 3.0, 4.0])).numpy(), [6, 2, 12])
    np.testing.assert_array_equal(x.at[idx].min(t([0.5, 3.0, 5.0])).numpy(), [0.5, 2, 3])
    np.testing.assert_array_equal(x.at[idx].max(t([0.5, 3.0, 5.0])).numpy(), [3, 2, 5])
    np.testing.assert_array_equal(x.at[1:].set(0.0).numpy(), [1, 0, 0])
    np.testing.assert_array_equal(x.at[::-1].get().numpy(), [3, 2, 1])
    np.testing.assert_array_equal(x.numpy(), [1, 2, 3])


def test_at_multiply_gradient_with_a_zero_update():
    # d/du0 of x0*u0*u1 is x0*u1 even though u0 == 0 (no division by zero in the rule)
    def f(x, u):
        return x.at[[0, 0]].multiply(u).sum()

    gx, gu = nb.grad(f, argnums=(0, 1))(t([2.0, 5.0]), t([0.0, 3.0]))
    np.testing.assert_array_equal(gx.numpy(), [0.0, 1.0])
    np.testing.assert_array_equal(gu.numpy(), [6.0, 0.0])


def test_at_max_ties_share_the_gradient():
    g = nb.grad(lambda u: t([1.0, 0.0]).at[[0, 0]].max(u).sum())(t([1.0, 1.0]))
    np.testing.assert_allclose(g.numpy(), [1 / 3, 1 / 3])  # x, u0, u1 tie


# -- gather / scatter family ---------------------------------------------------------------------
def test_gather_and_scatter_methods():
    x = t([[1.0, 2.0], [3.0, 4.0]])
    idx = t(np.array([[0, 0], [1, 0]], np.int64))
    np.testing.assert_array_equal(x.gather(1, idx).numpy(), [[1, 1], [4, 3]])
    np.testing.assert_array_equal(x.scatter(1, t(np.array([[1], [0]])), 9.0).numpy(), [[1, 9], [9, 4]])
    np.testing.assert_array_equal(
        nb.zeros(3).scatter_add(0, t(np.array([0, 2, 0])), t([1.0, 2.0, 3.0])).numpy(), [4, 0, 2]
    )
    np.testing.assert_array_equal(
        nb.scatter(t([1.0, 2.0]), 0, t(np.array([0, 0])), t([3.0, 4.0]), reduce="multiply").numpy(), [12, 2]
    )
    np.testing.assert_array_equal(x.index_select(0, t(np.array([1, 1]))).numpy(), [[3, 4], [3, 4]])


def test_take_along_axis_with_argmax_and_negative_indices():
    x = t([[10.0, 30.0, 20.0], [5.0, 1.0, 7.0]])
    np.testing.assert_array_equal(nb.take_along_axis(x, nb.argmax(x, 1, keepdims=True), 1).numpy(), [[30], [7]])
    np.testing.assert_array_equal(nb.take_along_axis(x, t(np.array([[-1], [-3]])), dim=1).numpy(), [[20], [5]])


def test_scatter_add_gradient_gathers_the_cotangent():
    gsrc = nb.grad(lambda s: (nb.scatter_add(nb.zeros(2), 0, t(np.array([1, 1, 0])), s) * t([1.0, 5.0])).sum())(
        t([1.0, 1.0, 1.0])
    )
    np.testing.assert_array_equal(gsrc.numpy(), [5, 5, 1])


def test_one_hot():
    out = nb.one_hot(t(np.array([[0, 3], [1, 1]])))
    assert out.dtype == nb.int64 and out.shape == (2, 2, 4)
    np.testing.assert_array_equal(out.numpy()[0, 1], [0, 0, 0, 1])


def test_masked_fill_keeps_dtype_and_differentiates_value():
    x = t(np.array([1, 2, 3], np.int64))
    out = x.masked_fill(t([True, False, True]), 7.9)
    assert out.dtype == nb.int64
    np.testing.assert_array_equal(out.numpy(), [7, 2, 7])

    def f(v):
        return nb.masked_fill(t([1.0, 2.0, 3.0]), t([True, False, True]), v).sum()

    assert nb.grad(f)(t(0.5)).item() == 2.0


def test_masked_fill_in_place_method():
    x = t([1.0, 2.0, 3.0])
    x.masked_fill_(x > 1.5, 0.0)
    np.testing.assert_array_equal(x.numpy(), [1, 0, 0])


# -- errors: at the call, naming op, dim, size and index -----------------------------------------
@pytest.mark.parametrize(
    "index, exc, message",
    [
        ((0, 5), IndexError, "getitem: index 5 is out of bounds for dim 1 with size 4"),
        ((-4,), IndexError, "getitem: index -4 is out of bounds for dim 0 with size 3"),
        ((0, 0, 0, 0), IndexError, "getitem: too many indices for a tensor of rank 3: 4"),
        ((1.5,), TypeError, "getitem: index 1.5 of type float is not supported"),
        (("a",), TypeError, "getitem: index 'a' of type str is not supported"),
        ((slice(0, 2.0),), TypeError, "getitem: slice stop must be an int or None, got 2.0"),
        ((slice(None, None, 0),), ValueError, "getitem: slice step cannot be zero"),
        ((slice(None), [0, 4]), IndexError, "getitem: index 4 is out of bounds for dim 1 with size 4"),
        ((np.array([-4]),), IndexError, "getitem: index -4 is out of bounds for dim 0 with size 3"),
        ((np.array([True, False]),), IndexError, "getitem: boolean mask of shape (2,) does not match"),
        ((np.array([0.5]),), TypeError, "getitem: index array([0.5]) of dtype float64 is not supported"),
    ],
)
def test_getitem_errors(index, exc, message):
    with pytest.raises(exc) as info:
        nb.getitem(t(X), index)
    assert message in str(info.value)


def test_getitem_rejects_float_tensor_and_checks_realized_tensor_indices():
    with pytest.raises(TypeError, match="getitem: tensors used as indices must be integer or bool, got dtype float32"):
        t(X)[t([0.0])]
    with pytest.raises(IndexError, match="getitem: index 7 is out of bounds for dim 2 with size 5"):
        t(X)[..., t(np.array([1, 7]))]


def test_setitem_value_shape_error():
    with pytest.raises(
        ValueError, match=r"setitem: value of shape \(3,\) cannot be broadcast to the indexed shape \(4, 5\)"
    ):
        nb.setitem(t(X), 0, t([1.0, 2.0, 3.0]))


def test_setitem_on_leaf_requiring_grad_raises():
    x = t([1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="__setitem__: a leaf tensor that requires grad"):
        x[0] = 3.0


@pytest.mark.parametrize(
    "call, exc, message",
    [
        (lambda: nb.gather(t(X), 3, t(np.zeros((1, 1, 1), np.int64))), ValueError, "gather: dim=3 is out of range"),
        (
            lambda: nb.gather(t(X), 0, t(np.zeros((1, 1), np.int64))),
            ValueError,
            "gather: index must have the same number",
        ),
        (
            lambda: nb.gather(t(X), 0, t(np.zeros((1, 5, 1), np.int64))),
            ValueError,
            "exceeds x shape (3, 4, 5) at dim 1",
        ),
        (
            lambda: nb.gather(t(X), 0, t(np.full((1, 1, 1), 3))),
            IndexError,
            "gather: index 3 is out of bounds for dim 0",
        ),
        (lambda: nb.gather(t(X), 0, t(np.full((1, 1, 1), -1))), IndexError, "gather: index -1 is out of bounds"),
        (lambda: nb.gather(t(X), 0, t(np.zeros((1, 1, 1)))), TypeError, "gather: index must be an integer tensor"),
        (
            lambda: nb.index_select(t(X), 1, t(np.array([4]))),
            IndexError,
            "index_select: index 4 is out of bounds for dim 1",
        ),
        (
            lambda: nb.index_select(t(X), 0, t(np.zeros((2, 2), np.int64))),
            IndexError,
            "index_select: index must be 0-d or 1-d",
        ),
        (
            lambda: nb.scatter(t(X), 0, t(np.zeros((1, 1, 1), np.int64)), "a"),
            TypeError,
            "scatter: src must be a Tensor",
        ),
        (
            lambda: nb.scatter(t(X), 0, t(np.zeros((1, 1, 1), np.int64)), 1.0, reduce="max"),
            ValueError,
            "scatter: reduce",
        ),
        (
            lambda: nb.scatter_add(t(X), 0, t(np.zeros((1, 2, 1), np.int64)), t(np.ones((1, 1, 1)))),
            ValueError,
            "scatter_add: index shape (1, 2, 1) exceeds src shape (1, 1, 1) at dim 1",
        ),
        (
            lambda: nb.take_along_axis(t(X), t(np.zeros((3,), np.int64)), 1),
            ValueError,
            "take_along_axis: indices has 1 dims",
        ),
        (
            lambda: nb.take_along_axis(t(X), t(np.full((1, 1, 1), 5)), 2),
            IndexError,
            "take_along_axis: index 5 is out of",
        ),
        (lambda: nb.one_hot(t([0.0, 1.0])), TypeError, "one_hot: indices must be an integer tensor"),
        (lambda: nb.one_hot(t([0, 3]), 3), ValueError, "one_hot: class value 3 is out of range for num_classes=3"),
        (lambda: nb.one_hot(t([-1, 0]), 3), ValueError, "one_hot: class values must be non-negative, got -1"),
        (lambda: nb.one_hot(t(np.zeros(0, np.int64))), ValueError, "one_hot: cannot infer num_classes"),
        (
            lambda: nb.masked_fill(t(X), t(X), 0.0),
            TypeError,
            "masked_fill: mask must be a bool tensor, got dtype float32",
        ),
        (
            lambda: nb.masked_fill(t(X), t(X) > 1, t([1.0, 2.0])),
            ValueError,
            "masked_fill: value must be a Python scalar or a 0-d",
        ),
        (lambda: nb.getitem(X, 0), TypeError, "getitem: x must be a Tensor, got ndarray"),
    ],
)
def test_gather_scatter_errors(call, exc, message):
    with pytest.raises(exc) as info:
        call()
    assert message in str(info.value)


def test_float16_scatter_add_accumulates_in_float32():
    # As torch: in float16 a running sum of ones stops at 2048 (2048 + 1 rounds back).
    index = nb.tensor(np.zeros(5000, np.int64))
    ones = nb.ones(5000).half()
    assert nb.zeros(1).half().scatter_add(0, index, ones).tolist() == [5000.0]
    mean = nb.zeros(1).half().scatter_reduce(0, index, ones * 1.5, "mean", include_self=False)
    assert mean.tolist() == [1.5] and mean.dtype == nb.float16
