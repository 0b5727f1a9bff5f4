"""Convolution and pooling: PyTorch semantics at the edges, gradients of the rules (incl. higher
order), MAX shape inference of every primitive's rules, and error messages.

Value checks against generic references live in the registry (tests/op_registry/conv.py); the
expected values here are small hand-computed cases.
"""

from __future__ import annotations

import numpy as np
import pytest
from op_registry.conv import _avg_pool_ref, _conv_ref, _conv_transpose_ref, _max_pool_ref

import nabla as nb
import nabla_nn.functional as F

RNG = np.random.default_rng(7)


def _r(*shape: int) -> np.ndarray:
    return RNG.normal(size=shape)


def _t(a: np.ndarray) -> nb.Tensor:
    return nb.tensor(np.asarray(a, np.float64))


def _grads(fn, *arrays, cot=None):
    """Gradient of <fn(*arrays), cot> with respect to every array (float64)."""
    xs = [_t(a) for a in arrays]
    out, pullback = nb.vjp(fn, *xs)
    cot = np.ones(out.shape) if cot is None else cot
    return out, [g.numpy() for g in pullback(_t(cot))]


def _fd(fn, arrays, cot, eps=1e-6):
    """Central finite differences of <fn(*arrays), cot>, one entry at a time."""
    out = []
    for k, a in enumerate(arrays):
        g = np.zeros_like(a)
        for idx in np.ndindex(a.shape):
            plus, minus = [b.copy() for b in arrays], [b.copy() for b in arrays]
            plus[k][idx] += eps
            minus[k][idx] -= eps
            fp = np.sum(fn(*[_t(b) for b in plus]).numpy() * cot)
            fm = np.sum(fn(*[_t(b) for b in minus]).numpy() * cot)
            g[idx] = (fp - fm) / (2 * eps)
        out.append(g)
    return out


# =============================================================================================
# PyTorch semantics
# =============================================================================================
class TestConvSemantics:
    def test_same_padding_puts_the_odd_extra_after(self):
        x, w = _r(1, 2, 5, 6), _r(3, 2, 2, 4)
        out = nb.conv2d(_t(x), _t(w), padding="same")
        assert out.shape == (1, 3, 5, 6)
        # total padding (1, 3): before (0, 1), after (1, 2)
        xp = np.pad(x, [(0, 0), (0, 0), (0, 1), (1, 2)])
        np.testing.assert_allclose(out.numpy(), _conv_ref(xp, w), rtol=1e-12, atol=1e-12)

    def test_same_padding_with_dilation_keeps_the_size(self):
        out = nb.conv2d(_t(_r(2, 3, 7, 7)), _t(_r(4, 3, 3, 2)), padding="same", dilation=(2, 3))
        assert out.shape == (2, 4, 7, 7)

    def test_valid_padding_is_no_padding(self):
        x, w = _r(1, 2, 6, 6), _r(3, 2, 3, 3)
        np.testing.assert_array_equal(
            nb.conv2d(_t(x), _t(w), padding="valid").numpy(), nb.conv2d(_t(x), _t(w), padding=0).numpy()
        )

    def test_unbatched_input_gives_unbatched_output(self):
        x, w, b = _r(3, 5, 5), _r(4, 3, 3, 3), _r(4)
        out = nb.conv2d(_t(x), _t(w), _t(b), padding=1)
        assert out.shape == (4, 5, 5)
        np.testing.assert_allclose(out.numpy(), _conv_ref(x[None], w, b, padding=1)[0], rtol=1e-12, atol=1e-12)
        assert nb.conv1d(_t(_r(3, 8)), _t(_r(2, 3, 3))).shape == (2, 6)
        assert nb.conv_transpose2d(_t(_r(3, 4, 4)), _t(_r(3, 2, 3, 3)), stride=2).shape == (2, 9, 9)

    def test_depthwise_convolution_uses_one_filter_per_channel(self):
        x, w = _r(2, 3, 5, 5), _r(3, 1, 3, 3)
        out = nb.conv2d(_t(x), _t(w), groups=3).numpy()
        for c in range(3):
            np.testing.assert_allclose(out[:, c : c + 1], _conv_ref(x[:, c : c + 1], w[c : c + 1]), rtol=1e-12)

    def test_torch_keyword_names(self):
        x, w = _r(1, 2, 4, 4), _r(3, 2, 3, 3)
        out = nb.conv2d(input=_t(x), weight=_t(w), padding=1)
        np.testing.assert_allclose(out.numpy(), _conv_ref(x, w, padding=1), rtol=1e-12, atol=1e-12)

    def test_conv_transpose_output_size_formula(self):
        # (H - 1) * stride - 2 * padding + dilation * (k - 1) + output_padding + 1
        x = _t(np.ones((1, 1, 3, 3)))
        out = nb.conv_transpose2d(x, _t(np.ones((1, 1, 3, 3))), stride=2, padding=1, output_padding=1)
        assert out.shape == (1, 1, 6, 6)
        # the output_padding row/column only receives what the kernel reaches
        np.testing.assert_allclose(out.numpy()[0, 0, -1], [1, 2, 1, 2, 1, 1])
        out = nb.conv_transpose2d(x, _t(np.ones((1, 2, 2, 2))), stride=(1, 3), dilation=2, output_padding=(1, 0))
        assert out.shape == (1, 2, 6, 9)

    def test_conv_transpose_is_the_input_gradient_of_conv(self):
        x, w, g = _r(2, 4, 7, 6), _r(6, 2, 3, 3), None
        out, (dx,) = _grads(lambda a: nb.conv2d(a, _t(w), stride=2, padding=1, groups=2), x)
        g = RNG.normal(size=out.shape)
        _, (dx,) = _grads(lambda a: nb.conv2d(a, _t(w), stride=2, padding=1, groups=2), x, cot=g)
        # output_padding=(0, 1) recovers the 7x6 input shape, as in torch.nn.grad.conv2d_input
        want = _conv_transpose_ref(g, w, stride=2, padding=1, output_padding=(0, 1), groups=2)
        np.testing.assert_allclose(dx, want, rtol=1e-10, atol=1e-10)

    def test_bias_gradient_is_the_cotangent_summed_over_batch_and_space(self):
        x, w, b = _r(2, 3, 5, 5), _r(4, 3, 3, 3), _r(4)
        g = _r(2, 4, 3, 3)
        _, (_, _, db) = _grads(lambda a, c, d: nb.conv2d(a, c, d), x, w, b, cot=g)
        np.testing.assert_allclose(db, g.sum(axis=(0, 2, 3)), rtol=1e-12)
        g = _r(2, 4, 11, 11)
        _, (_, _, db) = _grads(lambda a, c, d: nb.conv_transpose2d(a, c, d, stride=2), x, _r(3, 4, 3, 3), b, cot=g)
        np.testing.assert_allclose(db, g.sum(axis=(0, 2, 3)), rtol=1e-12)

    def test_weight_gradient_with_strided_dilated_grouped_conv_matches_finite_differences(self):
        x, w = _r(1, 4, 7, 6), _r(2, 2, 2, 2)
        fn = lambda a, c: nb.conv2d(a, c, stride=(2, 3), padding=(1, 0), dilation=(2, 1), groups=2)  # noqa: E731
        out, grads = _grads(fn, x, w)
        cot = RNG.normal(size=out.shape)
        _, grads = _grads(fn, x, w, cot=cot)
        for got, want in zip(grads, _fd(fn, [x, w], cot), strict=True):
            np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)

    def test_second_order_gradient_of_conv(self):
        # f(x) = sum(conv(x, w)^2): Hessian-vector product in closed form is 2 * J^T J v.
        x, w, v = _r(1, 2, 5, 5), _r(3, 2, 3, 3), _r(1, 2, 5, 5)

        def grad_dot_v(a):
            g = nb.grad(lambda t: (nb.conv2d(t, _t(w), padding=1) ** 2).sum())(a)
            return (g * _t(v)).sum()

        hv = nb.grad(grad_dot_v)(_t(x)).numpy()
        jv = _conv_ref(v, w, padding=1)
        _, (jtjv,) = _grads(lambda a: nb.conv2d(a, _t(w), padding=1), x, cot=jv)
        np.testing.assert_allclose(hv, 2 * jtjv, rtol=1e-10, atol=1e-10)

    def test_jvp_is_bilinear_in_input_and_weight(self):
        x, w, dx, dw = _r(2, 2, 5, 5), _r(3, 2, 2, 2), _r(2, 2, 5, 5), _r(3, 2, 2, 2)
        fn = lambda a, c: nb.conv2d(a, c, stride=2)  # noqa: E731
        _, tangent = nb.jvp(fn, (_t(x), _t(w)), (_t(dx), _t(dw)))
        want = _conv_ref(dx, w, stride=2) + _conv_ref(x, dw, stride=2)
        np.testing.assert_allclose(tangent.numpy(), want, rtol=1e-12, atol=1e-12)


class TestPoolSemantics:
    def test_max_pool_gradient_goes_to_the_first_maximum_of_a_window(self):
        x = np.array([[[[1.0, 3.0, 3.0], [3.0, 0.0, 1.0], [2.0, 3.0, 0.0]]]])
        _, (dx,) = _grads(lambda a: nb.max_pool2d(a, 2, stride=1), x)
        # windows (row-major): the first 3 of each window takes the gradient
        np.testing.assert_array_equal(dx[0, 0], [[0, 2, 0], [1, 0, 0], [0, 1, 0]])

    def test_max_pool_all_equal_values(self):
        x = np.full((1, 1, 3, 3), -1.0)
        out, (dx,) = _grads(lambda a: nb.max_pool2d(a, 3, stride=1, padding=1), x)
        np.testing.assert_array_equal(out.numpy(), np.full((1, 1, 3, 3), -1.0))  # -inf padding never wins
        # every window's first real element: (0,0) for the top-left 4 windows, then (0,1), (1,0), (1,1)
        np.testing.assert_array_equal(dx[0, 0], [[4, 2, 0], [2, 1, 0], [0, 0, 0]])

    def test_max_pool_propagates_nan(self):
        x = np.arange(16.0).reshape(1, 1, 4, 4)
        x[0, 0, 0, 1] = np.nan
        out, (dx,) = _grads(lambda a: nb.max_pool2d(a, 2), x)
        assert np.isnan(out.numpy()[0, 0, 0, 0])
        assert dx[0, 0, 0, 1] == 1 and dx[0, 0, 1, 1] == 0  # the NaN takes the gradient, as in PyTorch

    def test_ceil_mode_drops_a_window_that_starts_in_the_right_padding(self):
        x = np.arange(25.0).reshape(1, 1, 5, 5)
        out = nb.max_pool2d(_t(x), 2, stride=2, padding=1, ceil_mode=True)
        np.testing.assert_array_equal(out.numpy()[0, 0], [[0, 2, 4], [10, 12, 14], [20, 22, 24]])
        assert nb.max_pool2d(_t(np.ones((1, 1, 6, 6))), 3, stride=2, ceil_mode=True).shape == (1, 1, 3, 3)
        assert nb.max_pool2d(_t(np.ones((1, 1, 6, 6))), 3, stride=2).shape == (1, 1, 2, 2)

    def test_stride_defaults_to_kernel_size(self):
        x = _r(2, 3, 6, 9)
        assert nb.max_pool2d(_t(x), (2, 3)).shape == (2, 3, 3, 3)
        assert nb.avg_pool1d(_t(x[:, :, 0]), 4).shape == (2, 3, 2)

    def test_avg_pool_count_include_pad(self):
        o = np.ones((1, 1, 3, 3))
        np.testing.assert_allclose(
            nb.avg_pool2d(_t(o), 2, stride=2, padding=1).numpy()[0, 0], [[0.25, 0.5], [0.5, 1.0]]
        )
        np.testing.assert_allclose(
            nb.avg_pool2d(_t(o), 2, stride=2, padding=1, count_include_pad=False).numpy()[0, 0], np.ones((2, 2))
        )

    def test_avg_pool_ceil_window_past_the_padding_is_not_counted(self):
        # 1-D, size 4, kernel 3, stride 2, pad 1, ceil: windows [-1, 2), [1, 4), [3, 5) -> the last
        # spans one real element and the right pad; clipped to size + pad, divisor 2.
        x = np.array([[[1.0, 2.0, 3.0, 4.0]]])
        out = nb.avg_pool1d(_t(x), 3, stride=2, padding=1, ceil_mode=True)
        np.testing.assert_allclose(out.numpy()[0, 0], [3 / 3, 9 / 3, 4 / 2])

    def test_avg_pool_divisor_override(self):
        x = _r(1, 2, 4, 4)
        out = nb.avg_pool2d(_t(x), 2, divisor_override=3)
        np.testing.assert_allclose(out.numpy(), _avg_pool_ref(x, 2) * 4 / 3, rtol=1e-12)

    def test_avg_pool_gradient_spreads_evenly_respecting_the_divisor(self):
        x = np.zeros((1, 1, 3, 3))
        _, (dx,) = _grads(lambda a: nb.avg_pool2d(a, 2, stride=2, padding=1, count_include_pad=False), x)
        # windows hold 1, 2, 2 and 4 real elements
        np.testing.assert_allclose(dx[0, 0], [[1, 0.5, 0.5], [0.5, 0.25, 0.25], [0.5, 0.25, 0.25]])

    def test_adaptive_avg_pool_windows_overlap_like_torch(self):
        x = np.arange(5.0).reshape(1, 1, 1, 5)
        out = nb.adaptive_avg_pool2d(_t(x), (1, 3))
        # windows [0, 2), [1, 4), [3, 5)
        np.testing.assert_allclose(out.numpy()[0, 0, 0], [0.5, 2.0, 3.5])

    def test_adaptive_avg_pool_output_sizes(self):
        x = _t(_r(2, 3, 7, 5))
        assert nb.adaptive_avg_pool2d(x, 1).shape == (2, 3, 1, 1)
        assert nb.adaptive_avg_pool2d(x, (None, 2)).shape == (2, 3, 7, 2)
        assert nb.adaptive_avg_pool2d(x, (7, 5)) is x
        np.testing.assert_allclose(
            nb.adaptive_avg_pool2d(x, 1).numpy(), x.numpy().mean(axis=(2, 3), keepdims=True), rtol=1e-12
        )

    def test_max_pool_second_order_and_jvp(self):
        x, v = _r(1, 2, 6, 6), _r(1, 2, 6, 6)
        fn = lambda a: nb.max_pool2d(a, 3, stride=2, padding=1)  # noqa: E731
        # JVP reads the tangent at each window's maximum
        out, tangent = nb.jvp(fn, (_t(x),), (_t(v),))
        want = _max_pool_ref(x + 1e-7 * v, 3, stride=2, padding=1) - out.numpy()
        np.testing.assert_allclose(tangent.numpy(), want / 1e-7, rtol=1e-5, atol=1e-6)

        # Hessian of sum(maxpool(x)^2) times v is 2 * P^T P v (P: the routing to the maxima)
        def grad_dot_v(a):
            return (nb.grad(lambda t: (fn(t) ** 2).sum())(a) * _t(v)).sum()

        hv = nb.grad(grad_dot_v)(_t(x)).numpy()
        _, (ptpv,) = _grads(fn, x, cot=tangent.numpy())
        np.testing.assert_allclose(hv, 2 * ptpv, rtol=1e-12, atol=1e-12)

    def test_avg_pool_second_order(self):
        x, v = _r(1, 2, 5, 5), _r(1, 2, 5, 5)
        fn = lambda a: nb.avg_pool2d(a, 3, stride=2, padding=1, ceil_mode=True)  # noqa: E731

        def grad_dot_v(a):
            return (nb.grad(lambda t: (fn(t) ** 2).sum())(a) * _t(v)).sum()

        hv = nb.grad(grad_dot_v)(_t(x)).numpy()
        _, (ptpv,) = _grads(fn, x, cot=fn(_t(v)).numpy())
        np.testing.assert_allclose(hv, 2 * ptpv, rtol=1e-12, atol=1e-12)


# =============================================================================================
# MAX shape inference of the rules the registry checks do not reach (JVP, second order)
# =============================================================================================
@pytest.fixture
def eager_max_shapes():
    nb.set_eager_max_graph(True, verify_shapes=True)
    try:
        yield
    finally:
        nb.set_eager_max_graph(False, verify_shapes=False)


CASES = [
    (lambda a, c: nb.conv2d(a, c, stride=2, padding=1, groups=2), (2, 4, 7, 6), (4, 2, 3, 3)),
    (lambda a, c: nb.conv_transpose2d(a, c, stride=2, padding=1, output_padding=1), (2, 4, 5, 5), (4, 3, 3, 3)),
    (lambda a, c: nb.conv_transpose2d(a, c, stride=(2, 1), groups=2, dilation=2), (2, 4, 5, 5), (4, 1, 2, 3)),
    (lambda a: nb.max_pool2d(a, 3, stride=2, padding=1, ceil_mode=True), (2, 3, 6, 6)),
    (lambda a: nb.avg_pool2d(a, 3, stride=2, padding=1, ceil_mode=True, count_include_pad=False), (2, 3, 6, 6)),
]


@pytest.mark.usefixtures("eager_max_shapes")
@pytest.mark.parametrize("case", CASES, ids=["conv2d", "conv_transpose2d", "conv_transpose2d-grouped", "max", "avg"])
def test_max_shapes_of_jvp_and_second_order_rules(case):
    fn, *shapes = case
    xs = [nb.tensor(RNG.normal(size=s).astype(np.float32)) for s in shapes]
    out, tangent = nb.jvp(fn, tuple(xs), tuple(nb.tensor(RNG.normal(size=s).astype(np.float32)) for s in shapes))
    assert tangent.shape == out.shape

    def loss(*a):
        return (fn(*a) ** 2).sum()

    def grad_norm(*a):
        gs = nb.grad(loss, argnums=tuple(range(len(a))))(*a)
        gs = gs if isinstance(gs, tuple) else (gs,)
        total = (gs[0] ** 2).sum()
        for g in gs[1:]:
            total = total + (g**2).sum()
        return total

    second = nb.grad(grad_norm, argnums=tuple(range(len(xs))))(*xs)
    second = second if isinstance(second, tuple) else (second,)
    assert [g.shape for g in second] == [x.shape for x in xs]


# =============================================================================================
# errors
# =============================================================================================
def _x(*shape: int) -> nb.Tensor:
    return nb.zeros(*shape)


@pytest.mark.parametrize(
    "call, error, pattern",
    [
        (
            lambda: nb.conv2d(_x(1, 3, 5, 5), _x(4, 2, 3, 3)),
            ValueError,
            r"conv2d: expected input with 2 channels .*got 3",
        ),
        (lambda: nb.conv2d(_x(1, 4, 5, 5), _x(3, 2, 3, 3), groups=2), ValueError, r"conv2d: out_channels=3 .*groups=2"),
        (lambda: nb.conv2d(_x(1, 3, 5, 5), _x(4, 1, 3, 3), groups=2), ValueError, r"conv2d: in_channels=3 .*groups=2"),
        (lambda: nb.conv2d(_x(1, 4, 5, 5), _x(4, 4, 3, 3), groups=0), ValueError, r"conv2d: groups must be a positive"),
        (lambda: nb.conv2d(_x(1, 3, 2, 2), _x(4, 3, 3, 3)), ValueError, r"conv2d: kernel size \(3, 3\).*\(2, 2\)"),
        (
            lambda: nb.conv2d(_x(1, 3, 2, 2), _x(4, 3, 3, 3), dilation=2, padding=1),
            ValueError,
            r"conv2d: kernel size \(5, 5\) \(after dilation\) is larger than the padded input size \(4, 4\)",
        ),
        (lambda: nb.conv2d(_x(1, 3, 5, 5), _x(4, 3, 3, 3), padding="full"), ValueError, r"conv2d: padding must be"),
        (
            lambda: nb.conv2d(_x(1, 3, 5, 5), _x(4, 3, 3, 3), padding="same", stride=2),
            ValueError,
            r"conv2d: padding='same' is not supported for strided convolutions",
        ),
        (lambda: nb.conv2d(_x(1, 3, 5, 5), _x(4, 3, 3, 3), stride=0), ValueError, r"conv2d: stride must be positive"),
        (
            lambda: nb.conv2d(_x(1, 3, 5, 5), _x(4, 3, 3, 3), stride=(1, 1, 1)),
            TypeError,
            r"conv2d: stride must be an int",
        ),
        (lambda: nb.conv2d(_x(1, 3, 5, 5), _x(4, 3, 3, 3), padding=-1), ValueError, r"conv2d: padding must be non-neg"),
        (
            lambda: nb.conv2d(_x(1, 1, 3, 5, 5), _x(4, 3, 3, 3)),
            ValueError,
            r"conv2d: expected a 3-D .* 4-D .*\(1, 1, 3",
        ),
        (lambda: nb.conv2d(_x(1, 3, 5, 5), _x(4, 3, 3)), ValueError, r"conv2d: weight must have rank 4, got shape"),
        (lambda: nb.conv2d(_x(1, 3, 5, 5), _x(4, 3, 3, 3), _x(3)), ValueError, r"conv2d: bias must have shape \(4,\)"),
        (
            lambda: nb.conv2d(_x(1, 3, 5, 5), _x(4, 3, 3, 3).astype(nb.float64)),
            TypeError,
            r"conv2d: input dtype float32 and weight dtype float64 differ",
        ),
        (lambda: nb.conv2d(nb.zeros(1, 3, 5, 5, dtype=nb.int64), _x(4, 3, 3, 3)), TypeError, r"conv2d: input must"),
        (lambda: nb.conv2d(np.zeros((1, 3, 5, 5)), _x(4, 3, 3, 3)), TypeError, r"conv2d: input must be a Tensor"),
        (lambda: nb.conv1d(_x(2, 3, 5), _x(4, 2, 3)), ValueError, r"conv1d: expected input with 2 channels"),
        (lambda: nb.conv1d(_x(2, 3, 5, 5), _x(4, 3, 3)), ValueError, r"conv1d: expected a 2-D .* 3-D"),
        (lambda: nb.conv1d(_x(2, 3, 5), _x(4, 3, 3), padding="circular"), ValueError, r"conv1d: padding must be"),
        (
            lambda: nb.conv_transpose2d(_x(1, 3, 5, 5), _x(4, 2, 3, 3)),
            ValueError,
            r"conv_transpose2d: expected input with 4 channels \(weight.shape\[0\]\), got 3",
        ),
        (
            lambda: nb.conv_transpose2d(_x(1, 3, 5, 5), _x(3, 2, 3, 3), groups=2),
            ValueError,
            r"conv_transpose2d: in_channels=3 is not divisible by groups=2",
        ),
        (
            lambda: nb.conv_transpose2d(_x(1, 3, 5, 5), _x(3, 2, 3, 3), stride=2, output_padding=2),
            ValueError,
            r"conv_transpose2d: output_padding \(2, 2\) must be smaller than either stride \(2, 2\) or dilation",
        ),
        (
            lambda: nb.conv_transpose2d(_x(1, 3, 1, 1), _x(3, 2, 1, 1), padding=1),
            ValueError,
            r"conv_transpose2d: calculated output size \(-1, -1\)",
        ),
        (lambda: nb.conv_transpose2d(_x(1, 3, 5, 5), _x(3, 2, 3, 3), padding="same"), ValueError, r"padding must be"),
        (lambda: nb.max_pool2d(_x(1, 1, 5, 5), 2, padding=2), ValueError, r"max_pool2d: padding \(2, 2\) should be at"),
        (lambda: nb.max_pool2d(_x(1, 1, 5, 5), 0), ValueError, r"max_pool2d: kernel_size must be positive, got 0"),
        (lambda: nb.max_pool2d(_x(1, 1, 5, 5), 2, stride=0), ValueError, r"max_pool2d: stride must be positive, got 0"),
        (lambda: nb.max_pool2d(_x(1, 1, 2, 2), 3), ValueError, r"max_pool2d: input size \(2, 2\) with kernel_size \(3"),
        (lambda: nb.max_pool2d(_x(5, 5), 2), ValueError, r"max_pool2d: expected a 3-D .* 4-D .* got shape \(5, 5\)"),
        (lambda: nb.max_pool1d(_x(1, 5, 5, 5), 2), ValueError, r"max_pool1d: expected a 2-D"),
        (lambda: nb.avg_pool2d(_x(1, 1, 5, 5), 3, padding=2), ValueError, r"avg_pool2d: padding \(2, 2\) should be at"),
        (lambda: nb.avg_pool2d(_x(1, 1, 5, 5), 2, divisor_override=0), ValueError, r"avg_pool2d: divisor_override"),
        (
            lambda: nb.avg_pool1d(_x(1, 1, 5), (2, 2)),
            TypeError,
            r"avg_pool1d: kernel_size must be an int or a tuple of 1",
        ),
        (lambda: nb.adaptive_avg_pool2d(_x(1, 5, 5, 5, 1), 2), ValueError, r"adaptive_avg_pool2d: expected a 3-D"),
        (lambda: nb.adaptive_avg_pool2d(_x(1, 1, 5, 5), (2, 0)), ValueError, r"adaptive_avg_pool2d: output_size must"),
        (lambda: nb.adaptive_avg_pool2d(_x(1, 1, 5, 5), (1, 2, 3)), TypeError, r"adaptive_avg_pool2d: output_size"),
    ],
)
def test_errors_name_the_op_argument_and_values(call, error, pattern):
    with pytest.raises(error, match=pattern):
        call()


def test_one_element_sequences_count_for_every_dim_and_1d_transpose_errors_name_itself():
    x, w = nb.tensor(RNG.normal(size=(1, 2, 6, 6)).astype(np.float32)), nb.ones(3, 2, 3, 3)
    np.testing.assert_array_equal(F.conv2d(x, w, padding=(1,)).numpy(), F.conv2d(x, w, padding=1).numpy())
    np.testing.assert_array_equal(F.conv2d(x, w, stride=[2]).numpy(), F.conv2d(x, w, stride=2).numpy())
    assert F.conv_transpose2d(x, nb.ones(2, 3, 3, 3), stride=(2,), output_padding=(1,)).shape == (1, 3, 14, 14)
    with pytest.raises(ValueError, match=r"conv_transpose1d: .* got 5 channels \(input shape \(1, 5, 4\)"):
        F.conv_transpose1d(nb.ones(1, 5, 4), nb.ones(2, 3, 3))
