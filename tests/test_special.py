"""Special functions beyond the registry's samples: float64 accuracy over wide ranges against
mpmath, derivatives of every order (lgamma'' = polygamma(1, x)), torch.special's names, the
Tensor methods and their in-place forms, and the errors bad arguments get."""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest
from _oracle import torch

import nabla as nb

RNG = np.random.default_rng(7)


def _mp(fn, xs: np.ndarray, dps: int = 40) -> np.ndarray:
    with mpmath.workdps(dps):
        return np.array([float(fn(mpmath.mpf(float(v)))) for v in xs])


def _rel(got: np.ndarray, want: np.ndarray) -> float:
    return float(np.max(np.abs(got - want) / np.abs(want)))


def _f64(fn, xs: np.ndarray) -> np.ndarray:
    return fn(nb.tensor(xs)).numpy()


# -- float64 accuracy ------------------------------------------------------------------------
POSITIVE = np.concatenate([RNG.uniform(0.0, 3.0, 200), 10 ** RNG.uniform(-12, 12, 200), RNG.uniform(3, 40, 100)])
NEGATIVE = -(RNG.uniform(0.0, 30.0, 200) + 0.01)
NEGATIVE = NEGATIVE[np.abs(NEGATIVE - np.round(NEGATIVE)) > 0.01]


def test_lgamma_float64_relative_error_away_from_its_roots():
    xs = np.concatenate([POSITIVE, NEGATIVE])
    want = _mp(lambda v: mpmath.log(abs(mpmath.gamma(v))), xs)
    got = _f64(nb.lgamma, xs)
    far = np.abs(want) > 1e-2  # near a root the error is absolute: checked below
    assert _rel(got[far], want[far]) < 2e-13
    assert np.max(np.abs(got - want)) < 1e-13 * np.max(np.abs(want))
    near = np.array([1.0 - 1e-9, 1.0 + 1e-7, 2.0 - 1e-6, 2.0 + 1e-10, 0.99, 2.01])
    assert _rel(_f64(nb.lgamma, near), _mp(mpmath.loggamma, near)) < 1e-12  # relative, at the roots


def test_digamma_and_polygamma_float64_against_mpmath():
    xs = np.concatenate([POSITIVE[POSITIVE < 1e6], NEGATIVE[NEGATIVE > -6]])
    want = _mp(mpmath.digamma, xs)
    ok = np.abs(want) > 1e-2  # the root near 1.4616 has an absolute error of about 1e-16
    assert _rel(_f64(nb.digamma, xs)[ok], want[ok]) < 1e-12
    for n in (1, 2, 3, 4):
        want = _mp(lambda v, n=n: mpmath.psi(n, v), xs)
        assert _rel(_f64(lambda t, n=n: nb.polygamma(n, t), xs), want) < 1e-11, n


def test_zeta_float64_against_mpmath():
    s = RNG.uniform(1.05, 40.0, 300)
    q = 10 ** RNG.uniform(-3, 1.5, 300)  # mpmath's own zeta loses digits for large q and s
    with mpmath.workdps(60):
        want = np.array([float(mpmath.zeta(a, b)) for a, b in zip(s, q, strict=True)])
    got = nb.zeta(nb.tensor(s), nb.tensor(q)).numpy()
    assert _rel(got, want) < 1e-12
    # integer exponents at negative, non-integer q (polygamma's reflection does not need these)
    s, q = np.array([2.0, 3.0, 4.0, 5.0]), np.array([-2.5, -0.5, -3.25, -5.5])
    with mpmath.workdps(40):
        want = np.array([float(mpmath.zeta(a, b)) for a, b in zip(s, q, strict=True)])
    assert _rel(nb.zeta(nb.tensor(s), nb.tensor(q)).numpy(), want) < 1e-10  # terms of both signs cancel


def test_erfinv_and_ndtri_float64_down_to_the_tails():
    y = np.concatenate(
        [RNG.uniform(-1, 1, 300), 1 - 10 ** RNG.uniform(-16, -1, 100), -(1 - 10 ** RNG.uniform(-16, -1, 50))]
    )
    assert _rel(_f64(nb.erfinv, y), _mp(mpmath.erfinv, y)) < 1e-15
    p = np.concatenate([10 ** RNG.uniform(-300, 0, 200), RNG.uniform(0, 1, 100), 1 - 10 ** RNG.uniform(-15, -1, 50)])
    want = _mp(lambda v: mpmath.sqrt(2) * mpmath.erfinv(2 * v - 1), p, dps=700)
    assert _rel(_f64(nb.ndtri, p), want) < 1e-15
    # they are each other's inverses
    x = np.linspace(-5, 5, 41)
    np.testing.assert_allclose(nb.ndtri(nb.ndtr(nb.tensor(x))).numpy(), x, rtol=0, atol=2e-6)
    np.testing.assert_allclose(nb.erfinv(nb.erf(nb.tensor(x / 4))).numpy(), x / 4, rtol=1e-13, atol=1e-15)


def test_error_function_family_float64_down_to_the_tails():
    x = np.concatenate([RNG.uniform(-6, 6, 200), RNG.uniform(-27, 27, 100), 10 ** RNG.uniform(-3, 1.4, 100)])
    assert _rel(_f64(nb.erfc, x), _mp(mpmath.erfc, x)) < 1e-13  # erfc(26) = 5.7e-296: no underflow
    big = np.concatenate([x, 10 ** RNG.uniform(1.5, 100, 50)])
    want = _mp(lambda v: mpmath.exp(v * v) * mpmath.erfc(v), big)
    assert _rel(_f64(nb.erfcx, big), want) < 1e-13  # erfcx(1e100) = 5.6e-101: no 0 * inf
    x = np.concatenate([-(10 ** RNG.uniform(-3, 3, 100)), RNG.uniform(-40, 8, 200)])
    assert _rel(_f64(nb.log_ndtr, x), _mp(lambda v: mpmath.log(mpmath.ncdf(v)), x, dps=400)) < 1e-13
    np.testing.assert_allclose(nb.log_ndtr(nb.tensor([-40.0])).numpy(), [-804.6084420137538], rtol=1e-6)
    np.testing.assert_allclose(_f64(nb.ndtr, x), _mp(mpmath.ncdf, x), rtol=2e-13, atol=1e-300)  # subnormals


def test_modified_bessel_functions_and_their_derivatives():
    x = np.concatenate([RNG.uniform(-30, 30, 200), 10 ** RNG.uniform(-6, 2.8, 100), [7.999, 8.0, 8.001, -8.0]])
    for name, n, scaled in (("i0", 0, False), ("i1", 1, False), ("i0e", 0, True), ("i1e", 1, True)):
        want = _mp(lambda v, n=n, s=scaled: mpmath.besseli(n, v) * (mpmath.exp(-abs(v)) if s else 1), x)
        assert _rel(_f64(getattr(nb, name), x), want) < 2e-15, name
    x = np.array([-3.0, -0.2, 0.0, 0.5, 9.0, 40.0])
    np.testing.assert_allclose(nb.grad(lambda t: nb.i0(t).sum())(nb.tensor(x)).numpy(), nb.i1(nb.tensor(x)).numpy())
    d = nb.grad(lambda t: nb.i1(t).sum())(nb.tensor(x)).numpy()  # i0 - i1 / x, 1/2 at 0
    want = _mp(lambda v: mpmath.besseli(0, v) - mpmath.besseli(1, v) / v if v else mpmath.mpf(0.5), x)
    np.testing.assert_allclose(d, want, rtol=1e-13)
    for name, fn, n in (("i0e", nb.i0e, 0), ("i1e", nb.i1e, 1)):
        d = nb.grad(lambda t, f=fn: f(t).sum())(nb.tensor(x[x != 0])).numpy()
        want = _mp(lambda v, n=n: mpmath.diff(lambda u: mpmath.besseli(n, u) * mpmath.exp(-abs(u)), v), x[x != 0])
        np.testing.assert_allclose(d, want, rtol=1e-12, err_msg=name)
    assert nb.grad(lambda t: nb.i1e(t).sum())(nb.tensor(np.array([0.0]))).numpy().tolist() == [0.5]


def test_special_values_follow_pytorch():
    inf, nan = math.inf, math.nan
    x = nb.tensor([0.0, -0.0, -1.0, -2.0, inf, -inf, nan])
    np.testing.assert_array_equal(nb.lgamma(x).numpy(), [inf, inf, inf, inf, inf, inf, nan])
    np.testing.assert_array_equal(nb.digamma(x).numpy(), [-inf, inf, nan, nan, inf, nan, nan])
    np.testing.assert_array_equal(nb.polygamma(2, x).numpy()[:4], [-inf, -inf, -inf, -inf])
    np.testing.assert_array_equal(nb.polygamma(3, x).numpy()[:4], [inf, inf, inf, inf])
    np.testing.assert_array_equal(nb.erfinv(nb.tensor([1.0, -1.0, 1.5, nan])).numpy(), [inf, -inf, nan, nan])
    np.testing.assert_array_equal(nb.ndtri(nb.tensor([0.0, 1.0, -0.1, nan])).numpy(), [-inf, inf, nan, nan])
    z = nb.zeta(nb.tensor([1.0, 0.5, 2.0, 2.0, 2.5]), nb.tensor([1.0, 1.0, 0.0, -3.0, -2.5])).numpy()
    np.testing.assert_array_equal(z, [inf, nan, inf, inf, nan])


# -- derivatives -----------------------------------------------------------------------------
def test_derivatives_of_every_order_are_the_next_function():
    xs = np.array([0.3, 1.0, 2.5, 7.0, -0.5, -2.7])
    x = nb.tensor(xs)
    d1 = nb.grad(lambda t: nb.lgamma(t).sum())(x)
    np.testing.assert_allclose(d1.numpy(), _mp(mpmath.digamma, xs), rtol=1e-12)
    d2 = nb.grad(lambda t: nb.grad(lambda u: nb.lgamma(u).sum())(t).sum())(x)
    np.testing.assert_allclose(d2.numpy(), _mp(lambda v: mpmath.psi(1, v), xs), rtol=1e-11)
    d3 = nb.grad(lambda t: nb.polygamma(2, t).sum())(x)
    np.testing.assert_allclose(d3.numpy(), _mp(lambda v: mpmath.psi(3, v), xs), rtol=1e-10)
    _, tangent = nb.jvp(nb.digamma, (x,), (nb.ones_like(x),))
    np.testing.assert_allclose(tangent.numpy(), _mp(lambda v: mpmath.psi(1, v), xs), rtol=1e-11)


def test_inverse_error_function_gradients():
    y = np.array([-0.9, -0.2, 0.0, 0.5, 0.99])
    g = nb.grad(lambda t: nb.erfinv(t).sum())(nb.tensor(y)).numpy()
    np.testing.assert_allclose(
        g, [math.sqrt(math.pi) / 2 * math.exp(float(mpmath.erfinv(v)) ** 2) for v in y], rtol=1e-12
    )
    p = np.array([1e-5, 0.1, 0.5, 0.97])
    g = nb.grad(lambda t: nb.ndtri(t).sum())(nb.tensor(p)).numpy()
    z = _mp(lambda v: mpmath.sqrt(2) * mpmath.erfinv(2 * v - 1), p)
    np.testing.assert_allclose(g, math.sqrt(2 * math.pi) * np.exp(z**2 / 2), rtol=1e-12)


def test_zeta_is_differentiable_in_q_only():
    s, q = nb.tensor(np.array([2.0, 3.5])), nb.tensor(np.array([0.5, 2.0]))
    g = nb.grad(lambda t: nb.zeta(s, t).sum())(q).numpy()
    want = [-float(a) * float(mpmath.zeta(a + 1, b)) for a, b in ((2.0, 0.5), (3.5, 2.0))]
    np.testing.assert_allclose(g, want, rtol=1e-12)
    with pytest.raises(NotImplementedError, match="zeta: the derivative with respect to x"):
        nb.grad(lambda t: nb.zeta(t, q).sum())(s)
    with pytest.raises(NotImplementedError, match="zeta: the derivative with respect to x"):
        nb.jvp(lambda t: nb.zeta(t, q), (s,), (nb.ones_like(s),))


def test_vmap_and_compile_see_the_same_values():
    xs = nb.tensor(RNG.uniform(0.5, 4.0, (3, 4)))
    want = nb.polygamma(1, xs).numpy()
    np.testing.assert_allclose(nb.vmap(lambda r: nb.polygamma(1, r))(xs).numpy(), want, rtol=1e-14)
    np.testing.assert_allclose(nb.compile(lambda t: nb.polygamma(1, t))(xs).numpy(), want, rtol=1e-14)


# -- names, methods, errors --------------------------------------------------------------------
def test_torch_special_names_and_tensor_methods():
    x = nb.tensor([0.4, 1.7, 3.2])
    assert nb.special.gammaln is nb.lgamma and nb.special.psi is nb.digamma
    assert nb.special.multigammaln is nb.mvlgamma and nb.special.expit is nb.sigmoid
    np.testing.assert_array_equal(x.lgamma().numpy(), nb.lgamma(x).numpy())
    np.testing.assert_array_equal(x.digamma().numpy(), nb.digamma(x).numpy())
    np.testing.assert_array_equal(x.polygamma(2).numpy(), nb.polygamma(2, x).numpy())
    np.testing.assert_array_equal((x / 4).erfinv().numpy(), nb.erfinv(x / 4).numpy())
    np.testing.assert_array_equal((x + 1).mvlgamma(2).numpy(), nb.mvlgamma(x + 1, 2).numpy())
    for method, fn in (("lgamma_", nb.lgamma), ("digamma_", nb.digamma), ("erfinv_", nb.erfinv)):
        y = nb.tensor([0.1, 0.3])
        assert getattr(y, method)() is y
        np.testing.assert_array_equal(y.numpy(), fn(nb.tensor([0.1, 0.3])).numpy())
    y = nb.tensor([1.5, 2.5])
    y.polygamma_(1)
    np.testing.assert_array_equal(y.numpy(), nb.polygamma(1, nb.tensor([1.5, 2.5])).numpy())
    y = nb.tensor([2.5, 4.0])
    y.mvlgamma_(3)
    np.testing.assert_array_equal(y.numpy(), nb.mvlgamma(nb.tensor([2.5, 4.0]), 3).numpy())
    ints = nb.tensor([1, 2, 5])
    assert nb.lgamma(ints).dtype == nb.float32  # PyTorch's float result
    with pytest.raises(RuntimeError, match="lgamma_: result type float32 can't be cast"):
        ints.lgamma_()


def test_bad_arguments_name_the_argument():
    x = nb.tensor([1.0, 2.0])
    with pytest.raises(ValueError, match="polygamma: n must be non-negative, got -1"):
        nb.polygamma(-1, x)
    with pytest.raises(TypeError, match="polygamma: n must be an int, got 1.5"):
        nb.polygamma(1.5, x)
    with pytest.raises(ValueError, match="mvlgamma: p must be a positive int, got 0"):
        nb.mvlgamma(x, 0)
    with pytest.raises(ValueError, match=r"mvlgamma: all elements must be greater than \(p-1\)/2 = 1.0, got 1.0"):
        nb.mvlgamma(x, 3)
    with pytest.raises(TypeError, match="lgamma: x must be a Tensor, got list"):
        nb.lgamma([1.0])
    with pytest.raises(ValueError, match="zeta"):
        nb.zeta(nb.ones((2,)), nb.ones((3,)))


@pytest.mark.skipif(torch is None, reason="PyTorch is not installed (optional oracle)")
def test_float32_values_and_gradients_match_torch():
    xs = np.concatenate([RNG.uniform(0.05, 8, 60), -RNG.uniform(0.05, 5, 20) - 0.02]).astype(np.float32)
    xs = xs[np.abs(xs - np.round(xs)) > 0.02]
    for name, tfn, nfn in (
        ("lgamma", torch.lgamma, nb.lgamma),
        ("digamma", torch.digamma, nb.digamma),
        ("polygamma1", lambda t: torch.polygamma(1, t), lambda t: nb.polygamma(1, t)),
        ("polygamma3", lambda t: torch.polygamma(3, t), lambda t: nb.polygamma(3, t)),
    ):
        t = torch.tensor(xs, requires_grad=name != "polygamma3")
        want = tfn(t)
        np.testing.assert_allclose(
            nfn(nb.tensor(xs)).numpy(), want.detach().numpy(), rtol=1e-4, atol=1e-4, err_msg=name
        )
        if t.requires_grad:
            want.sum().backward()
            got = nb.grad(lambda u, f=nfn: f(u).sum())(nb.tensor(xs)).numpy()
            np.testing.assert_allclose(got, t.grad.numpy(), rtol=1e-4, atol=1e-4, err_msg=name)
    y = RNG.uniform(-0.999, 0.999, 50).astype(np.float32)
    np.testing.assert_allclose(nb.erfinv(nb.tensor(y)).numpy(), torch.erfinv(torch.tensor(y)).numpy(), rtol=1e-5)
    x = RNG.uniform(-5, 5, 200).astype(np.float32)  # beyond, torch's float32 ndtr underflows early
    for name in ("erfc", "erfcx", "log_ndtr", "ndtr", "i0", "i0e", "i1", "i1e"):
        fn = getattr(nb, name)
        t = torch.tensor(x, requires_grad=True)
        want = getattr(torch.special, name)(t)
        # torch's float32 ndtr is 1 + erf(x / sqrt 2) in the lower tail: 4% off at -5 (ours: 1e-6)
        atol = 1e-7 if name == "ndtr" else 0
        got = fn(nb.tensor(x)).numpy()
        np.testing.assert_allclose(got, want.detach().numpy(), rtol=2e-5, atol=atol, err_msg=name)
        want.sum().backward()
        got = nb.grad(lambda u, f=fn: f(u).sum())(nb.tensor(x)).numpy()
        np.testing.assert_allclose(got, t.grad.numpy(), rtol=2e-4, atol=1e-7, err_msg=name)  # float32 rounding
