"""nabla.distributions, the families, transforms, constraint registry and KL pairs added after
the first port (HalfNormal ... MixtureSameFamily, biject_to / transform_to, cross-family KLs):
values and gradients against torch.distributions (2.13) where torch is installed, NumPy
formulas and seeded sample moments everywhere; and the support validation of counts given
as Python numbers."""

from __future__ import annotations

import numpy as np
import pytest
from _distributions_helpers import TD, both, call, close, f32_sampler, to_np
from _oracle import needs_torch, torch

import nabla as nb
import nabla.distributions as D

RNG = np.random.default_rng(11)
_f32 = f32_sampler(RNG)


# -- validation of counts given as numbers -----------------------------------------------------------
@pytest.mark.parametrize("value", [6.0, -1.0, 2.5])
def test_binomial_python_count_validates_support(value):
    d = D.Binomial(5, probs=nb.tensor([0.3]))
    with pytest.raises(ValueError, match="support"):
        d.log_prob(nb.tensor([value]))
    expected = np.log(10 * 0.3**2 * 0.7**3)
    close(d.log_prob(nb.tensor([2.0])), np.array([expected], np.float32), 1e-5)


def test_number_bounds_broadcast_to_tensors_are_checked():
    with pytest.raises(ValueError, match="support"):
        D.Uniform(0.0, nb.tensor([1.0, 2.0])).log_prob(nb.tensor([0.5, 3.0]))
    D.Uniform(0.0, nb.tensor([1.0, 2.0])).log_prob(nb.tensor([0.5, 1.5]))  # (inside: no error)


# -- transforms ----------------------------------------------------------------------------------------
# (id, factory(T) with T a transforms module, x, whether log_abs_det_jacobian is defined)
_X23 = _f32(2, 3, low=-2, high=2)
_POS23 = _f32(2, 3, low=0.2, high=3)
_SQ = _f32(2, 3, 3, low=-1, high=1)
TRANSFORMS = [
    ("power", lambda T: T.PowerTransform(2.5), _POS23, True),
    ("power_neg", lambda T: T.PowerTransform(-1.0), _POS23, True),
    ("softplus", lambda T: T.SoftplusTransform(), _X23, True),
    ("softmax", lambda T: T.SoftmaxTransform(), _X23, False),
    ("stick_breaking", lambda T: T.StickBreakingTransform(), _X23, True),
    ("lower_cholesky", lambda T: T.LowerCholeskyTransform(), _SQ, False),
    ("positive_definite", lambda T: T.PositiveDefiniteTransform(), _SQ, False),
    ("independent_exp", lambda T: T.IndependentTransform(T.ExpTransform(), 1), _X23, True),
    ("reshape", lambda T: T.ReshapeTransform((3,), (3, 1)), _X23, True),
    ("abs", lambda T: T.AbsTransform(), _X23, False),
    ("cat", lambda T: T.CatTransform([T.ExpTransform(), T.SoftplusTransform()], dim=-1, lengths=[1, 2]), _X23, True),
    ("stack", lambda T: T.StackTransform([T.ExpTransform(), T.SigmoidTransform(), T.SoftplusTransform()], dim=1),
     _X23, True),
]  # fmt: skip


@needs_torch
@pytest.mark.parametrize("case", TRANSFORMS, ids=[c[0] for c in TRANSFORMS])
def test_transforms_match_torch(case):
    _, factory, x, has_ladj = case
    nt, tt = factory(D.transforms), factory(TD.transforms)
    nx, tx = nb.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    ny, ty = nt(nx), tt(tx)
    close(ny, ty, 1e-5)
    assert nt.forward_shape(x.shape) == tuple(tt.forward_shape(torch.Size(x.shape)))
    assert nt.domain.event_dim == tt.domain.event_dim and nt.codomain.event_dim == tt.codomain.event_dim
    assert nt.bijective == tt.bijective
    close(nt.inv(nb.tensor(to_np(ty))), tt.inv(ty.detach()), 1e-4)
    assert bool(np.all(to_np(nt.codomain.check(ny)))), nt.codomain
    if has_ladj:
        nl, tl = nt.log_abs_det_jacobian(nx, ny), tt.log_abs_det_jacobian(tx, ty)
        close(nl, tl, 1e-4)
        (ny.sum() + nl.sum()).backward()
        (ty.sum() + tl.sum()).backward()
    else:
        ny.pow(2).sum().backward()
        ty.pow(2).sum().backward()
    close(nx.grad, tx.grad, 1e-4)


def test_stick_breaking_round_trip_and_jacobian_without_torch():
    t = D.transforms.StickBreakingTransform()
    x = nb.tensor(_f32(4, 3, low=-2, high=2))
    y = t(x)
    close(y.sum(-1), np.ones(4, np.float32), 1e-5)
    close(t.inv(y), x, 1e-4)
    close(t(nb.zeros(3)), np.full(4, 0.25, np.float32), 1e-6)
    # log |det dy[:-1]/dx| by finite differences, one batch row
    x0 = to_np(x)[0].astype(np.float64)

    def f(v):
        return to_np(t(nb.tensor(v.astype(np.float32))))[:-1].astype(np.float64)

    eps = 1e-3
    jac = np.stack([(f(x0 + eps * e) - f(x0 - eps * e)) / (2 * eps) for e in np.eye(3)], 1)
    close(t.log_abs_det_jacobian(x, y)[0], np.float32(np.log(abs(np.linalg.det(jac)))), 2e-3)


def test_power_softplus_formulas_without_torch():
    x = _POS23
    t = D.transforms.PowerTransform(3.0)
    close(t(nb.tensor(x)), x**3, 1e-4)
    close(t.log_abs_det_jacobian(nb.tensor(x), t(nb.tensor(x))), np.log(3 * x**2), 1e-4)
    s = D.transforms.SoftplusTransform()
    close(s.inv(s(nb.tensor(_X23))), _X23, 1e-4)
    close(s.log_abs_det_jacobian(nb.tensor(_X23), None), -np.log1p(np.exp(-_X23)), 1e-5)
    assert t == D.transforms.PowerTransform(3.0) and t != D.transforms.PowerTransform(2.0)
    lc = D.transforms.LowerCholeskyTransform()(nb.tensor(_SQ))
    assert bool(np.all(to_np(D.constraints.lower_cholesky.check(lc))))


# -- biject_to / transform_to --------------------------------------------------------------------------
REGISTRY = [
    ("real", lambda C: C.real, _X23),
    ("positive", lambda C: C.positive, _X23),
    ("nonnegative", lambda C: C.nonnegative, _X23),
    ("greater_than", lambda C: C.greater_than(1.5), _X23),
    ("less_than", lambda C: C.less_than(-1.0), _X23),
    ("unit_interval", lambda C: C.unit_interval, _X23),
    ("interval", lambda C: C.interval(-1.0, 3.0), _X23),
    ("half_open_interval", lambda C: C.half_open_interval(0.0, 2.0), _X23),
    ("simplex", lambda C: C.simplex, _X23),
    ("real_vector", lambda C: C.real_vector, _X23),
    ("positive_vector", lambda C: C.independent(C.positive, 1), _X23),
    ("lower_cholesky", lambda C: C.lower_cholesky, _SQ),
    ("positive_definite", lambda C: C.positive_definite, _SQ),
    ("cat", lambda C: C.cat([C.positive, C.unit_interval], dim=-1, lengths=[2, 1]), _X23),
    ("stack", lambda C: C.stack([C.positive, C.real, C.interval(0.0, 2.0)], dim=1), _X23),
]


@needs_torch
@pytest.mark.parametrize("registry", ["biject_to", "transform_to"])
@pytest.mark.parametrize("case", REGISTRY, ids=[c[0] for c in REGISTRY])
def test_biject_to_transform_to_match_torch(case, registry):
    _, make, x = case
    nreg, treg = getattr(D, registry), getattr(TD, registry)
    nc, tc = make(D.constraints), make(TD.constraints)
    try:
        tt = treg(tc)
    except NotImplementedError:
        with pytest.raises(NotImplementedError):
            nreg(nc)
        return
    nt = nreg(nc)
    assert type(nt).__name__ == type(tt).__name__
    ny, ty = nt(nb.tensor(x)), tt(torch.tensor(x))
    close(ny, ty, 1e-5)
    assert bool(np.all(to_np(nc.check(ny))))
    if registry == "biject_to":
        close(nt.log_abs_det_jacobian(nb.tensor(x), ny), tt.log_abs_det_jacobian(torch.tensor(x), ty), 1e-4)
        close(nt.inv(ny), x, 1e-3)


def test_biject_to_positive_in_vi_without_torch():
    u = nb.tensor([-3.0, 0.0, 2.0], requires_grad=True)
    t = D.biject_to(D.constraints.positive)
    scale = t(u)
    close(scale, np.exp([-3.0, 0.0, 2.0]).astype(np.float32), 1e-5)
    scale.sum().backward()
    close(u.grad, np.exp([-3.0, 0.0, 2.0]).astype(np.float32), 1e-5)
    with pytest.raises(NotImplementedError, match="Cannot transform"):
        D.biject_to(D.constraints.lower_cholesky)
    p = D.transform_to(D.constraints.simplex)(nb.tensor([0.0, 0.0]))
    close(p, np.array([0.5, 0.5], np.float32), 1e-6)


# -- the new families against torch -------------------------------------------------------------------
# (id, factory(D, params), params, value, methods); the same factory builds both libraries' objects
_MOMENTS = ["mean", "variance", "stddev", "mode"]
_MIX_LOGITS = _f32(2, 3, low=-1, high=1)
FAMILIES = [
    ("half_normal", lambda D, p: D.HalfNormal(p["scale"]), {"scale": _f32(2, 3, low=0.5, high=2)},
     _f32(2, 3, low=0.05, high=3), ["log_prob", "entropy", "cdf", "icdf", *_MOMENTS]),
    ("half_cauchy", lambda D, p: D.HalfCauchy(p["scale"]), {"scale": _f32(3, low=0.5, high=2)},
     _f32(3, low=0.05, high=3), ["log_prob", "entropy", "cdf", "icdf", "mean", "variance", "mode"]),
    ("inverse_gamma", lambda D, p: D.InverseGamma(p["c"], p["r"]),
     {"c": np.array([0.8, 1.5, 2.5, 4.0], np.float32), "r": _f32(4, low=0.5, high=2)},
     _f32(4, low=0.1, high=3), ["log_prob", "entropy", *_MOMENTS]),
    ("gumbel", lambda D, p: D.Gumbel(p["loc"], p["scale"]), {"loc": _f32(2, 3), "scale": _f32(2, 3, low=0.5, high=2)},
     _f32(2, 3, low=-2, high=3), ["log_prob", "entropy", "cdf", "icdf", *_MOMENTS]),
    ("weibull", lambda D, p: D.Weibull(p["scale"], p["k"]),
     {"scale": _f32(4, low=0.5, high=2), "k": np.array([0.7, 1.0, 1.8, 3.0], np.float32)},
     _f32(4, low=0.1, high=3), ["log_prob", "entropy", "cdf", "mean", "variance", "mode"]),
    ("pareto", lambda D, p: D.Pareto(p["scale"], p["alpha"]),
     {"scale": _f32(4, low=0.5, high=1), "alpha": np.array([0.8, 1.5, 2.5, 4.0], np.float32)},
     _f32(4, low=1.0, high=4), ["log_prob", "entropy", "cdf", "icdf", *_MOMENTS]),
    ("negative_binomial", lambda D, p: D.NegativeBinomial(p["r"], probs=p["probs"]),
     {"r": _f32(4, low=0.5, high=6), "probs": _f32(4, low=0.1, high=0.9)}, np.array([0.0, 1.0, 4.0, 9.0], np.float32),
     ["log_prob", *_MOMENTS]),
    ("negative_binomial_logits", lambda D, p: D.NegativeBinomial(p["r"], logits=p["logits"]),
     {"r": _f32(2, 3, low=0.5, high=6), "logits": _f32(2, 3, low=-2, high=2)},
     np.array([[0.0, 2.0, 5.0], [1.0, 0.0, 7.0]], np.float32), ["log_prob", "mean", "variance", "mode"]),
    ("multinomial", lambda D, p: D.Multinomial(6, probs=p["probs"]), {"probs": _f32(2, 4, low=0.1, high=1)},
     np.array([[1.0, 2.0, 0.0, 3.0], [0.0, 0.0, 6.0, 0.0]], np.float32), ["log_prob", "entropy", "mean", "variance"]),
    ("multinomial_logits", lambda D, p: D.Multinomial(4, logits=p["logits"]), {"logits": _f32(3, low=-2, high=2)},
     np.array([[1.0, 2.0, 1.0], [4.0, 0.0, 0.0]], np.float32), ["log_prob", "entropy", "mean", "variance"]),
    ("mixture_normal", lambda D, p: D.MixtureSameFamily(D.Categorical(logits=p["w"]), D.Normal(p["loc"], p["scale"])),
     {"w": _MIX_LOGITS, "loc": _f32(2, 3, low=-2, high=2), "scale": _f32(2, 3, low=0.5, high=1.5)},
     _f32(4, 2, low=-3, high=3), ["log_prob", "cdf", "mean", "variance"]),
    ("mixture_mvn", lambda D, p: D.MixtureSameFamily(D.Categorical(logits=p["w"]),
                                                       D.Independent(D.Normal(p["loc"], p["scale"]), 1)),
     {"w": _f32(3), "loc": _f32(3, 2, low=-2, high=2), "scale": _f32(3, 2, low=0.5, high=1.5)},
     _f32(5, 2, low=-3, high=3), ["log_prob", "mean", "variance"]),
]  # fmt: skip


@needs_torch
@pytest.mark.parametrize("case", FAMILIES, ids=[c[0] for c in FAMILIES])
def test_families_match_torch(case):
    nd, td, _, _ = both(case)
    nv, tv = nb.tensor(case[3]), torch.tensor(case[3])
    assert nd.batch_shape == tuple(td.batch_shape) and nd.event_shape == tuple(td.event_shape)
    assert nd.has_rsample == td.has_rsample
    for method in case[4]:
        close(call(nd, method, nv), call(td, method, tv), 2e-4)
    assert nd.sample((2,)).shape == tuple(td.sample((2,)).shape)
    expanded = nd.expand((5, *nd.batch_shape))
    assert expanded.batch_shape == (5, *nd.batch_shape)
    assert expanded.sample().shape == (5, *nd.batch_shape, *nd.event_shape)
    if nv.ndim == len(nd.batch_shape) + len(nd.event_shape):  # (no sample dims: broadcasts with 5)
        close(expanded.log_prob(nv), td.expand((5, *td.batch_shape)).log_prob(tv), 2e-4)


@needs_torch
@pytest.mark.parametrize("case", FAMILIES, ids=[c[0] for c in FAMILIES])
def test_family_gradients_match_torch(case):
    nd, td, nbp, tp = both(case, requires_grad=True)
    nv, tv = nb.tensor(case[3]), torch.tensor(case[3])
    with_entropy = "entropy" in case[4]
    nloss = nd.log_prob(nv).sum() + (nd.entropy().sum() if with_entropy else 0.0)
    tloss = td.log_prob(tv).sum() + (td.entropy().sum() if with_entropy else 0.0)
    nloss.backward()
    tloss.backward()
    for k in case[2]:
        if tp[k].grad is not None:
            close(nbp[k].grad, tp[k].grad, 5e-4)


@needs_torch
@pytest.mark.parametrize("value", [-1.0, 2.5])
def test_family_validation_matches_torch(value):
    makers = [lambda D, T: D.NegativeBinomial(2.0, probs=T([0.4]))]
    if value < 0:  # (2.5 is in the half-normal's support)
        makers.append(lambda D, T: D.HalfNormal(T([1.0])))
    for make in makers:
        with pytest.raises(ValueError):
            make(TD, torch.tensor).log_prob(torch.tensor([value]))
        with pytest.raises(ValueError):
            make(D, nb.tensor).log_prob(nb.tensor([value]))
    for bad in (lambda D, T: D.Pareto(T([1.0]), T([-1.0])), lambda D, T: D.NegativeBinomial(2.0, probs=T([1.0]))):
        with pytest.raises(ValueError):
            bad(TD, torch.tensor)
        with pytest.raises(ValueError):
            bad(D, nb.tensor)
    with pytest.raises(ValueError):
        D.Multinomial(3, probs=nb.tensor([0.5, 0.5])).log_prob(nb.tensor([2.0, 2.0]))


# -- the new families without torch: formulas and seeded sample moments --------------------------------
def test_half_normal_and_gumbel_formulas():
    scale, x = _f32(3, low=0.5, high=2), _f32(3, low=0.1, high=3)
    d = D.HalfNormal(nb.tensor(scale))
    ref = np.log(2) - x**2 / (2 * scale**2) - np.log(scale) - 0.5 * np.log(2 * np.pi)
    close(d.log_prob(nb.tensor(x)), ref, 1e-5)
    close(d.mean, scale * np.sqrt(2 / np.pi), 1e-5)
    below = D.HalfNormal(nb.tensor(scale), validate_args=False).log_prob(nb.tensor(-x))
    assert np.all(np.isneginf(to_np(below)))
    g = D.Gumbel(nb.tensor(0.5), nb.tensor(2.0))
    z = (0.5 - x) / 2.0
    close(g.log_prob(nb.tensor(x)), z - np.exp(z) - np.log(2.0), 1e-5)


@pytest.mark.parametrize(
    "make, mean, var",
    [
        (lambda: D.HalfNormal(nb.tensor(2.0)), 2 * np.sqrt(2 / np.pi), 4 * (1 - 2 / np.pi)),
        (lambda: D.InverseGamma(nb.tensor(5.0), nb.tensor(2.0)), 0.5, 4 / (16 * 3)),
        (lambda: D.Gumbel(nb.tensor(1.0), nb.tensor(0.5)), 1 + 0.5 * 0.5772157, (np.pi * 0.5) ** 2 / 6),
        (lambda: D.Weibull(nb.tensor(1.5), nb.tensor(2.0)), 1.5 * 0.8862269, 2.25 * (1 - 0.8862269**2)),
        (lambda: D.Pareto(nb.tensor(1.0), nb.tensor(5.0)), 1.25, 5 / (16 * 3)),
        (lambda: D.NegativeBinomial(3.0, probs=nb.tensor(0.4)), 2.0, 2.0 / 0.6),
    ],
)
def test_sample_moments(make, mean, var):
    nb.manual_seed(0)
    d = make()
    x = to_np(d.sample((20000,))).astype(np.float64)
    assert x.shape == (20000,)
    assert abs(x.mean() - mean) < 0.05 * max(1.0, abs(mean))
    assert abs(x.var() - var) < 0.12 * max(0.2, var)
    close(d.mean, np.float32(mean), 1e-4)
    close(d.variance, np.float32(var), 1e-4)


def test_rsample_gradients_flow():
    scale = nb.tensor([1.5], requires_grad=True)
    nb.manual_seed(1)
    x = D.HalfNormal(scale).rsample((1000,))
    x.mean().backward()  # d E|N(0, s)| / ds = sqrt(2 / pi)
    assert abs(float(to_np(scale.grad)[0]) - np.sqrt(2 / np.pi)) < 0.08
    c = nb.tensor(4.0, requires_grad=True)
    nb.manual_seed(2)
    D.InverseGamma(c, 3.0).rsample((4000,)).mean().backward()  # d (3 / (c - 1)) / dc = -1/3
    assert abs(float(to_np(c.grad)) + 1 / 3) < 0.06


def test_multinomial_sample_and_log_prob():
    nb.manual_seed(3)
    p = np.array([0.2, 0.3, 0.5], np.float32)
    d = D.Multinomial(10, probs=nb.tensor(p))
    x = to_np(d.sample((4000,)))
    assert x.shape == (4000, 3) and np.all(x.sum(-1) == 10)
    np.testing.assert_allclose(x.mean(0), 10 * p, atol=0.15)
    ref = np.log(10 * 9 * 8 * 7 * 6 / 120 * 5 * 4 * 3 / 6) + 2 * np.log(0.2) + 3 * np.log(0.3) + 5 * np.log(0.5)
    close(d.log_prob(nb.tensor([2.0, 3.0, 5.0])), np.float32(ref), 1e-4)


def test_mixture_same_family_log_prob_and_sample():
    w = np.array([0.2, 0.8], np.float32)
    loc, scale = np.array([-3.0, 2.0], np.float32), np.array([0.5, 1.0], np.float32)
    d = D.MixtureSameFamily(D.Categorical(probs=nb.tensor(w)), D.Normal(nb.tensor(loc), nb.tensor(scale)))
    x = np.array([-3.0, 0.0, 2.5], np.float32)
    dens = (w / (scale * np.sqrt(2 * np.pi)) * np.exp(-((x[:, None] - loc) ** 2) / (2 * scale**2))).sum(-1)
    close(d.log_prob(nb.tensor(x)), np.log(dens), 1e-5)
    nb.manual_seed(4)
    s = to_np(d.sample((20000,)))
    mean = (w * loc).sum()
    var = (w * (scale**2 + loc**2)).sum() - mean**2
    close(d.mean, np.float32(mean), 1e-5)
    close(d.variance, np.float32(var), 1e-4)
    assert abs(s.mean() - mean) < 0.1 and abs(s.var() - var) < 0.3
    assert abs((s < -1).mean() - 0.2) < 0.02  # (the left component's share)
    with pytest.raises(ValueError):
        D.MixtureSameFamily(D.Categorical(probs=nb.tensor([0.5, 0.5])), D.Normal(nb.zeros(3), 1.0))


# -- kl_divergence: the new families and cross-family pairs ---------------------------------------------
_P3 = _f32(3, low=0.5, high=2)
_Q3 = _f32(3, low=0.5, high=2)
_LOC = _f32(3)
_MAKERS = {
    "normal": lambda D, T, a, b: D.Normal(T(_LOC), T(a)),
    "laplace": lambda D, T, a, b: D.Laplace(T(_LOC * 0.5), T(a)),
    "cauchy": lambda D, T, a, b: D.Cauchy(T(_LOC), T(a)),
    "gumbel": lambda D, T, a, b: D.Gumbel(T(_LOC * 0.3), T(a)),
    "exponential": lambda D, T, a, b: D.Exponential(T(a)),
    "gamma": lambda D, T, a, b: D.Gamma(T(a + 0.5), T(b)),
    "beta": lambda D, T, a, b: D.Beta(T(a + 0.5), T(b + 0.5)),
    "uniform": lambda D, T, a, b: D.Uniform(T(a * 0.1), T(a * 0.1 + b * 0.4)),
    "pareto": lambda D, T, a, b: D.Pareto(T(a * 0.5), T(np.array([0.8, 1.6, 3.0], np.float32) * b)),
    "half_normal": lambda D, T, a, b: D.HalfNormal(T(a)),
    "binomial": lambda D, T, a, b: D.Binomial(T(np.array([5.0, 7.0, 6.0], np.float32)), probs=T(a / 2.5)),
    "binomial_q": lambda D, T, a, b: D.Binomial(T(np.array([5.0, 7.0, 6.0], np.float32)), probs=T(b / 2.5)),
    "bernoulli": lambda D, T, a, b: D.Bernoulli(T(a / 2.5)),
    "poisson": lambda D, T, a, b: D.Poisson(T(a * 2)),
}
KL_PAIRS = [
    ("half_normal", "half_normal"), ("gumbel", "gumbel"), ("pareto", "pareto"), ("binomial", "binomial_q"),
    ("cauchy", "cauchy"), ("bernoulli", "poisson"), ("poisson", "poisson"),
    ("beta", "pareto"), ("beta", "exponential"), ("beta", "gamma"), ("beta", "normal"), ("beta", "uniform"),
    ("exponential", "beta"), ("exponential", "pareto"), ("exponential", "uniform"), ("exponential", "gamma"),
    ("exponential", "gumbel"), ("exponential", "normal"),
    ("gamma", "beta"), ("gamma", "pareto"), ("gamma", "uniform"), ("gamma", "exponential"), ("gamma", "gumbel"),
    ("gamma", "normal"),
    ("gumbel", "beta"), ("gumbel", "exponential"), ("gumbel", "gamma"), ("gumbel", "pareto"), ("gumbel", "uniform"),
    ("gumbel", "normal"),
    ("laplace", "beta"), ("laplace", "exponential"), ("laplace", "gamma"), ("laplace", "pareto"),
    ("laplace", "uniform"), ("laplace", "normal"),
    ("normal", "beta"), ("normal", "exponential"), ("normal", "gamma"), ("normal", "pareto"), ("normal", "uniform"),
    ("normal", "gumbel"), ("normal", "laplace"),
    ("pareto", "beta"), ("pareto", "uniform"), ("pareto", "exponential"), ("pareto", "gamma"), ("pareto", "normal"),
    ("poisson", "bernoulli"), ("poisson", "binomial"),
    ("uniform", "beta"), ("uniform", "exponential"), ("uniform", "gamma"), ("uniform", "gumbel"),
    ("uniform", "normal"), ("uniform", "pareto"),
]  # fmt: skip


@needs_torch
@pytest.mark.parametrize("pair", KL_PAIRS, ids=[f"{a}-{b}" for a, b in KL_PAIRS])
def test_kl_pairs_match_torch(pair):
    a, b = _P3, _Q3
    na, nb_ = nb.tensor(a, requires_grad=True), nb.tensor(b, requires_grad=True)
    ta, tb = torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)
    it = iter([na, nb_, ta, tb])
    n_params = {id(a): next(it), id(b): next(it)}
    t_params = {id(a): next(it), id(b): next(it)}

    def nt(x):  # (the shared parameters as leaves, so both libraries' gradients can be compared)
        return n_params.get(id(x)) if id(x) in n_params else nb.tensor(x)

    def tt(x):
        return t_params.get(id(x)) if id(x) in t_params else torch.tensor(x)

    p_name, q_name = pair
    nkl = D.kl_divergence(_MAKERS[p_name](D, nt, a, b), _MAKERS[q_name](D, nt, b, a))
    tkl = TD.kl_divergence(_MAKERS[p_name](TD, tt, a, b), _MAKERS[q_name](TD, tt, b, a))
    close(nkl, tkl, 2e-4)
    finite = np.isfinite(to_np(tkl))
    if finite.any() and tkl.requires_grad:  # (a pair whose makers derive all their parameters has no leaf)
        (nkl * nb.tensor(finite.astype(np.float32))).sum().backward()
        torch.where(torch.tensor(finite), tkl, 0.0).sum().backward()
        for n, t in ((na, ta), (nb_, tb)):
            if t.grad is not None and np.isfinite(to_np(t.grad)).all():
                close(n.grad, t.grad, 1e-3)


def test_kl_formulas_without_torch():
    # KL(Exp(l) || Gamma(1, m)) is KL between exponentials: log(l / m) + m / l - 1
    lam, mu = np.array([0.5, 2.0], np.float32), np.array([1.5, 0.7], np.float32)
    kl = D.kl_divergence(D.Exponential(nb.tensor(lam)), D.Gamma(nb.tensor([1.0, 1.0]), nb.tensor(mu)))
    close(kl, np.log(lam / mu) + mu / lam - 1, 1e-5)
    kl = D.kl_divergence(D.Gamma(nb.tensor([1.0, 1.0]), nb.tensor(lam)), D.Exponential(nb.tensor(mu)))
    close(kl, np.log(lam / mu) + mu / lam - 1, 1e-5)
    # KL(U(0, 1) || N(0, 1)) = 0.5 log(2 pi) + 1/6
    close(D.kl_divergence(D.Uniform(0.0, 1.0), D.Normal(0.0, 1.0)), np.float32(0.5 * np.log(2 * np.pi) + 1 / 6))
    # Cauchy: log((s1 + s2)^2 + d^2) - log(4 s1 s2)
    kl = D.kl_divergence(D.Cauchy(nb.tensor(1.0), nb.tensor(2.0)), D.Cauchy(nb.tensor(0.0), nb.tensor(1.0)))
    close(kl, np.float32(np.log(10.0) - np.log(8.0)), 1e-6)
    # the support mismatches are infinite, and Binomial pairs with a larger q count are refused
    assert np.isinf(to_np(D.kl_divergence(D.Normal(0.0, 1.0), D.Exponential(1.0))))
    assert np.isinf(to_np(D.kl_divergence(D.Uniform(-1.0, 1.0), D.Gamma(2.0, 1.0))))
    with pytest.raises(NotImplementedError, match="total_count"):
        D.kl_divergence(D.Binomial(3, probs=nb.tensor(0.5)), D.Binomial(5, probs=nb.tensor(0.5)))
    # a Monte Carlo estimate of KL(HalfNormal(1) || HalfNormal(2)) agrees with the closed form
    nb.manual_seed(5)
    p, q = D.HalfNormal(nb.tensor(1.0)), D.HalfNormal(nb.tensor(2.0))
    x = p.sample((20000,))
    mc = float(to_np((p.log_prob(x) - q.log_prob(x)).mean()))
    assert abs(mc - float(to_np(D.kl_divergence(p, q)))) < 0.02


# -- LowRankMultivariateNormal -------------------------------------------------------------------------
_LR_LOC, _LR_W, _LR_D = _f32(2, 4), _f32(2, 4, 2), _f32(4, low=0.5, high=1.5)


@needs_torch
def test_lowrank_mvn_matches_torch():
    n_args = [nb.tensor(a, requires_grad=True) for a in (_LR_LOC, _LR_W, _LR_D)]
    t_args = [torch.tensor(a, requires_grad=True) for a in (_LR_LOC, _LR_W, _LR_D)]
    nd, td = D.LowRankMultivariateNormal(*n_args), TD.LowRankMultivariateNormal(*t_args)
    assert nd.batch_shape == tuple(td.batch_shape) and nd.event_shape == tuple(td.event_shape)
    x = _f32(3, 2, 4, low=-2, high=2)
    for name in ("variance", "scale_tril", "covariance_matrix", "precision_matrix", "mean"):
        close(getattr(nd, name), getattr(td, name), 1e-4)
    nl, tl = nd.log_prob(nb.tensor(x)), td.log_prob(torch.tensor(x))
    close(nl, tl, 1e-4)
    close(nd.entropy(), td.entropy(), 1e-4)
    (nl.sum() + nd.entropy().sum()).backward()
    (tl.sum() + td.entropy().sum()).backward()
    for n, t in zip(n_args, t_args, strict=True):
        close(n.grad, t.grad, 5e-4)
    close(nd.expand((3, 2)).log_prob(nb.tensor(x)), tl, 1e-4)


def test_lowrank_mvn_agrees_with_full_mvn_without_torch():
    loc, w, d = nb.tensor(_LR_LOC), nb.tensor(_LR_W), nb.tensor(_LR_D)
    low = D.LowRankMultivariateNormal(loc, w, d)
    cov = _LR_W @ np.swapaxes(_LR_W, -1, -2) + np.diag(_LR_D)
    full = D.MultivariateNormal(loc, covariance_matrix=nb.tensor(cov))
    x = nb.tensor(_f32(5, 2, 4, low=-2, high=2))
    close(low.log_prob(x), full.log_prob(x), 1e-4)
    close(low.entropy(), full.entropy(), 1e-4)
    close(low.covariance_matrix, cov, 1e-5)
    nb.manual_seed(6)
    s = to_np(low.rsample((20000,)))
    assert s.shape == (20000, 2, 4)
    emp = np.einsum("sbi,sbj->bij", s - _LR_LOC, s - _LR_LOC) / 20000
    np.testing.assert_allclose(emp, cov, atol=0.12)
    with pytest.raises(ValueError, match="cov_factor"):
        D.LowRankMultivariateNormal(loc, nb.tensor(_f32(3, 2)), d)
