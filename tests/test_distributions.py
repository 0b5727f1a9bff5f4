"""nabla.distributions: log_prob, entropy, moments, cdf/icdf and KL divergences against
torch.distributions (2.13) where torch is installed and against NumPy formulas everywhere;
gradients of log_prob, entropy, kl and rsample with respect to the parameters; sample shapes,
seeded sample moments and reproducibility; argument validation."""

from __future__ import annotations

import math

import numpy as np
import pytest
from _distributions_helpers import TD, both, call, close, f32_sampler, to_np
from _oracle import needs_torch, torch

import nabla as nb
import nabla.distributions as D
from nabla.distributions import constraints

RNG = np.random.default_rng(7)
_f32 = f32_sampler(RNG)


# -- the cases: (id, factory(D, params), params, value, methods) --------------------------------------
# The same factory builds the nabla distribution (D = nabla.distributions, tensors nabla's) and the
# torch one (D = torch.distributions), so each case is written once.
_SIMPLEX = RNG.dirichlet([1.0, 2.0, 3.0, 1.5], size=(2,)).astype(np.float32)
_SPD = np.array(
    [[[2.0, 0.3, 0.1], [0.3, 1.0, -0.2], [0.1, -0.2, 1.5]], [[1.0, 0.0, 0.0], [0.0, 2.0, 0.5], [0.0, 0.5, 1.0]]],
    np.float32,
)
_TRIL = np.linalg.cholesky(_SPD).astype(np.float32)
_UNIT = _f32(2, 3, low=0.1, high=0.9)
_MOMENTS = ["mean", "variance", "stddev", "mode"]

CASES = [
    ("normal", lambda D, p: D.Normal(p["loc"], p["scale"]), {"loc": _f32(2, 3), "scale": _f32(2, 3, low=0.5, high=2)},
     _f32(2, 3, low=-2, high=2), ["log_prob", "entropy", "cdf", "icdf", *_MOMENTS]),
    ("uniform", lambda D, p: D.Uniform(p["low"], p["high"]), {"low": _f32(3, low=-2, high=0), "high": _f32(3, low=1, high=2)},
     _f32(3, low=0, high=1), ["log_prob", "entropy", "cdf", "icdf", "mean", "variance", "stddev"]),
    ("exponential", lambda D, p: D.Exponential(p["rate"]), {"rate": _f32(3, low=0.5, high=2)}, _f32(3, low=0.1, high=3),
     ["log_prob", "entropy", "cdf", "icdf", *_MOMENTS]),
    ("laplace", lambda D, p: D.Laplace(p["loc"], p["scale"]), {"loc": _f32(3), "scale": _f32(3, low=0.5, high=2)},
     _f32(3, low=-2, high=2), ["log_prob", "entropy", "cdf", "icdf", *_MOMENTS]),
    ("cauchy", lambda D, p: D.Cauchy(p["loc"], p["scale"]), {"loc": _f32(3), "scale": _f32(3, low=0.5, high=2)},
     _f32(3, low=-2, high=2), ["log_prob", "entropy", "cdf", "icdf", "mode"]),
    ("lognormal", lambda D, p: D.LogNormal(p["loc"], p["scale"]), {"loc": _f32(3), "scale": _f32(3, low=0.3, high=1)},
     _f32(3, low=0.2, high=3), ["log_prob", "entropy", "cdf", "icdf", *_MOMENTS]),
    ("gamma", lambda D, p: D.Gamma(p["c"], p["r"]), {"c": _f32(2, 3, low=0.5, high=4), "r": _f32(2, 3, low=0.5, high=2)},
     _f32(2, 3, low=0.1, high=4), ["log_prob", "entropy", *_MOMENTS]),
    ("chi2", lambda D, p: D.Chi2(p["df"]), {"df": _f32(3, low=1, high=5)}, _f32(3, low=0.1, high=4),
     ["log_prob", "entropy", "mean", "variance"]),
    ("beta", lambda D, p: D.Beta(p["a"], p["b"]), {"a": _f32(3, low=0.5, high=4), "b": _f32(3, low=0.5, high=4)},
     _f32(3, low=0.05, high=0.95), ["log_prob", "entropy", *_MOMENTS]),
    ("dirichlet", lambda D, p: D.Dirichlet(p["c"]), {"c": _f32(2, 4, low=1.2, high=3)}, _SIMPLEX,
     ["log_prob", "entropy", *_MOMENTS]),
    ("studentt", lambda D, p: D.StudentT(p["df"], p["loc"], p["scale"]),
     {"df": np.array([0.8, 1.5, 3.0, 6.0], np.float32), "loc": _f32(4), "scale": _f32(4, low=0.5, high=2)},
     _f32(4, low=-2, high=2), ["log_prob", "entropy", "mean", "variance", "mode"]),
    ("poisson", lambda D, p: D.Poisson(p["rate"]), {"rate": _f32(3, low=0.5, high=6)}, np.array([0.0, 2.0, 7.0], np.float32),
     ["log_prob", *_MOMENTS]),
    ("binomial", lambda D, p: D.Binomial(10, p["probs"]), {"probs": _f32(3, low=0.1, high=0.9)},
     np.array([0.0, 4.0, 10.0], np.float32), ["log_prob", "entropy", *_MOMENTS]),
    ("binomial_logits", lambda D, p: D.Binomial(p["n"], logits=p["logits"]),
     {"n": np.array([5.0, 8.0, 3.0], np.float32), "logits": _f32(3, low=-3, high=3)}, np.array([0.0, 4.0, 3.0], np.float32),
     ["log_prob", "mean", "variance", "mode"]),
    ("geometric", lambda D, p: D.Geometric(p["probs"]), {"probs": _f32(3, low=0.1, high=0.9)},
     np.array([0.0, 1.0, 5.0], np.float32), ["log_prob", "entropy", *_MOMENTS]),
    ("bernoulli_probs", lambda D, p: D.Bernoulli(p["probs"]), {"probs": _UNIT}, (RNG.random((2, 3)) < 0.5).astype(np.float32),
     ["log_prob", "entropy", *_MOMENTS]),
    ("bernoulli_logits", lambda D, p: D.Bernoulli(logits=p["logits"]), {"logits": _f32(2, 3, low=-3, high=3)},
     (RNG.random((2, 3)) < 0.5).astype(np.float32), ["log_prob", "entropy", "mean", "variance"]),
    ("categorical_probs", lambda D, p: D.Categorical(p["probs"]), {"probs": _f32(2, 5, low=0.1, high=2)},
     np.array([0, 4]), ["log_prob", "entropy", "mode"]),
    ("categorical_logits", lambda D, p: D.Categorical(logits=p["logits"]), {"logits": _f32(2, 5, low=-3, high=3)},
     np.array([[1, 3], [0, 4]]), ["log_prob", "entropy", "mode"]),
    ("onehot", lambda D, p: D.OneHotCategorical(logits=p["logits"]), {"logits": _f32(2, 4, low=-3, high=3)},
     np.eye(4, dtype=np.float32)[[1, 3]], ["log_prob", "entropy", "mean", "variance", "mode"]),
    ("mvn_cov", lambda D, p: D.MultivariateNormal(p["loc"], covariance_matrix=p["cov"]), {"loc": _f32(2, 3), "cov": _SPD},
     _f32(4, 2, 3), ["log_prob", "entropy", "mean", "variance"]),
    ("mvn_precision", lambda D, p: D.MultivariateNormal(p["loc"], precision_matrix=p["prec"]), {"loc": _f32(3), "prec": _SPD},
     _f32(2, 3), ["log_prob", "entropy", "variance"]),
    ("mvn_tril", lambda D, p: D.MultivariateNormal(p["loc"], scale_tril=p["tril"]), {"loc": _f32(2, 3), "tril": _TRIL},
     _f32(2, 3), ["log_prob", "entropy", "variance"]),
    ("independent", lambda D, p: D.Independent(D.Normal(p["loc"], p["scale"]), 1),
     {"loc": _f32(2, 3), "scale": _f32(2, 3, low=0.5, high=2)}, _f32(2, 3), ["log_prob", "entropy", "mean", "variance"]),
    ("relaxed_bernoulli", lambda D, p: D.RelaxedBernoulli(p["t"], logits=p["logits"]),
     {"t": np.array(0.7, np.float32), "logits": _f32(3, low=-2, high=2)}, _f32(3, low=0.1, high=0.9), ["log_prob"]),
    ("relaxed_onehot", lambda D, p: D.RelaxedOneHotCategorical(p["t"], probs=p["probs"]),
     {"t": np.array(0.7, np.float32), "probs": _SIMPLEX}, RNG.dirichlet([1.0] * 4, size=(2,)).astype(np.float32), ["log_prob"]),
    ("tanh_normal", lambda D, p: D.TransformedDistribution(D.Normal(p["loc"], p["scale"]),
                                                           [D.transforms.AffineTransform(0.5, 2.0), D.transforms.TanhTransform()]),
     {"loc": _f32(3), "scale": _f32(3, low=0.5, high=1)}, _f32(3, low=-0.9, high=0.9), ["log_prob"]),
    ("sigmoid_affine", lambda D, p: D.TransformedDistribution(D.Normal(p["loc"], p["scale"]),
                                                              [D.transforms.SigmoidTransform(), D.transforms.AffineTransform(p["shift"], -2.0)]),
     {"loc": _f32(3), "scale": _f32(3, low=0.5, high=1), "shift": _f32(3)}, None, ["log_prob", "cdf"]),
]  # fmt: skip


def _case(name: str):
    return next(c for c in CASES if c[0] == name)


def _value(case, lib: str):
    value = case[3]
    if value is None:  # (a value inside the support: a fixed draw of the nabla distribution)
        nb.manual_seed(3)
        value = to_np(case[1](D, {k: nb.tensor(v) for k, v in case[2].items()}).sample())
    return nb.tensor(value) if lib == "nabla" else torch.tensor(value)


@needs_torch
@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_values_match_torch(case):
    nd, td, _, _ = both(case)
    nv, tv = _value(case, "nabla"), _value(case, "torch")
    assert nd.batch_shape == tuple(td.batch_shape) and nd.event_shape == tuple(td.event_shape)
    assert nd.has_rsample == td.has_rsample
    for method in case[4]:
        a, b = call(nd, method, nv), call(td, method, tv)
        if method == "mode" and b.dtype == torch.int64:
            assert to_np(a).tolist() == to_np(b).tolist()
            continue
        close(a, b, 2e-4)


@needs_torch
@pytest.mark.parametrize("case", [c for c in CASES if c[0] not in ("poisson",)], ids=lambda c: c[0])
def test_log_prob_and_entropy_gradients_match_torch(case):
    nd, td, nbp, tp = both(case, requires_grad=True)
    nv, tv = _value(case, "nabla"), _value(case, "torch")
    has_entropy = "entropy" in case[4]
    nloss = nd.log_prob(nv).sum() + (nd.entropy().sum() if has_entropy else 0.0)
    tloss = td.log_prob(tv).sum() + (td.entropy().sum() if has_entropy else 0.0)
    nloss.backward()
    tloss.backward()
    for k in case[2]:
        if tp[k].grad is not None:
            close(nbp[k].grad, tp[k].grad, 5e-4)
        else:
            assert nbp[k].grad is None or not np.any(to_np(nbp[k].grad))


def test_poisson_log_prob_gradient_formula():
    rate = nb.tensor([0.5, 2.0, 6.0], requires_grad=True)
    k = nb.tensor([0.0, 2.0, 7.0])
    D.Poisson(rate).log_prob(k).sum().backward()
    close(rate.grad, np.array([0.0, 2.0, 7.0]) / np.array([0.5, 2.0, 6.0]) - 1.0, 1e-5)


# -- NumPy formulas (run without torch) ------------------------------------------------------------
def test_normal_against_formulas():
    loc, scale, x = _f32(4), _f32(4, low=0.5, high=2), _f32(4, low=-2, high=2)
    d = D.Normal(nb.tensor(loc), nb.tensor(scale))
    ref = -((x - loc) ** 2) / (2 * scale**2) - np.log(scale) - 0.5 * np.log(2 * np.pi)
    close(d.log_prob(nb.tensor(x)), ref, 1e-5)
    close(d.entropy(), 0.5 + 0.5 * np.log(2 * np.pi) + np.log(scale), 1e-5)
    erf = np.vectorize(math.erf)
    close(d.cdf(nb.tensor(x)), 0.5 * (1 + erf((x - loc) / (scale * np.sqrt(2)))), 1e-5)
    close(d.cdf(d.icdf(nb.tensor([0.1, 0.4, 0.6, 0.9]))), np.array([0.1, 0.4, 0.6, 0.9], np.float32), 1e-4)


def test_gamma_beta_poisson_against_lgamma_formulas():
    lg = np.vectorize(math.lgamma)
    c, r, x = np.float32([0.5, 2.0, 5.0]), np.float32([1.0, 0.5, 3.0]), np.float32([0.3, 1.0, 2.5])
    ref = c * np.log(r) + (c - 1) * np.log(x) - r * x - lg(c)
    close(D.Gamma(nb.tensor(c), nb.tensor(r)).log_prob(nb.tensor(x)), ref, 1e-5)
    a, b, y = np.float32([0.5, 2.0]), np.float32([3.0, 1.5]), np.float32([0.2, 0.7])
    ref = (a - 1) * np.log(y) + (b - 1) * np.log1p(-y) + lg(a + b) - lg(a) - lg(b)
    close(D.Beta(nb.tensor(a), nb.tensor(b)).log_prob(nb.tensor(y)), ref, 1e-5)
    rate, k = np.float32([0.5, 4.0]), np.float32([0.0, 3.0])
    close(D.Poisson(nb.tensor(rate)).log_prob(nb.tensor(k)), k * np.log(rate) - rate - lg(k + 1), 1e-5)


def test_categorical_normalizes_like_torch_and_matches_numpy():
    logits = _f32(2, 5, low=-3, high=3)
    d = D.Categorical(logits=nb.tensor(logits))
    logp = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    close(d.logits, logp, 1e-5)
    close(d.probs, np.exp(logp), 1e-5)
    close(d.log_prob(nb.tensor([1, 4])), logp[[0, 1], [1, 4]], 1e-5)
    close(d.entropy(), -(np.exp(logp) * logp).sum(-1), 1e-5)
    w = np.float32([1.0, 3.0, 0.0])
    dp = D.Categorical(probs=nb.tensor(w))
    close(dp.probs, w / w.sum(), 1e-6)
    assert np.isfinite(to_np(dp.entropy()))  # (a zero probability does not give nan)
    # (torch's logits of probs clamp them to eps first: log(eps), not -inf)
    assert dp.log_prob(nb.tensor(2)).item() == pytest.approx(math.log(np.finfo(np.float32).eps))


def test_mvn_against_numpy():
    loc, cov, x = _f32(3), _SPD[0], _f32(5, 3)
    d = D.MultivariateNormal(nb.tensor(loc), covariance_matrix=nb.tensor(cov))
    diff = x - loc
    maha = np.einsum("ni,ij,nj->n", diff, np.linalg.inv(cov), diff)
    ref = -0.5 * (3 * np.log(2 * np.pi) + maha + np.linalg.slogdet(cov)[1])
    close(d.log_prob(nb.tensor(x)), ref, 1e-4)
    close(d.entropy(), 0.5 * (3 * (1 + np.log(2 * np.pi)) + np.linalg.slogdet(cov)[1]), 1e-5)
    prec = D.MultivariateNormal(nb.tensor(loc), precision_matrix=nb.tensor(np.linalg.inv(cov).astype(np.float32)))
    close(prec.covariance_matrix, cov, 1e-4)
    close(prec.scale_tril, np.linalg.cholesky(cov), 1e-4)
    close(d.precision_matrix, np.linalg.inv(cov), 1e-4)


def test_kl_normal_against_closed_form_and_monte_carlo():
    p, q = (
        D.Normal(nb.tensor([0.0, 1.0]), nb.tensor([1.0, 0.5])),
        D.Normal(nb.tensor([1.0, 0.0]), nb.tensor([2.0, 1.0])),
    )
    mp, sp, mq, sq = np.float32([0, 1]), np.float32([1, 0.5]), np.float32([1, 0]), np.float32([2, 1])
    ref = np.log(sq / sp) + (sp**2 + (mp - mq) ** 2) / (2 * sq**2) - 0.5
    close(D.kl_divergence(p, q), ref, 1e-5)
    nb.manual_seed(0)
    x = p.sample((20000,))
    close((p.log_prob(x) - q.log_prob(x)).mean(0), ref, 0.03)


# -- KL divergences ------------------------------------------------------------------------------------
KL_PAIRS = [
    ("normal", lambda D, a, b: (D.Normal(a[0], a[1] + 1.5), D.Normal(b[0], b[1] + 1.5))),
    ("bernoulli", lambda D, a, b: (D.Bernoulli(logits=a[0]), D.Bernoulli(logits=b[0]))),
    ("categorical", lambda D, a, b: (D.Categorical(logits=a), D.Categorical(logits=b))),
    ("onehot", lambda D, a, b: (D.OneHotCategorical(logits=a), D.OneHotCategorical(logits=b))),
    ("uniform", lambda D, a, b: (D.Uniform(a[0] - 2, a[1] + 2), D.Uniform(b[0] - 3, b[1] + 3))),
    ("exponential", lambda D, a, b: (D.Exponential(a[0] + 1.5), D.Exponential(b[0] + 1.5))),
    ("gamma", lambda D, a, b: (D.Gamma(a[0] + 2, a[1] + 1.5), D.Gamma(b[0] + 2, b[1] + 1.5))),
    ("beta", lambda D, a, b: (D.Beta(a[0] + 2, a[1] + 1.5), D.Beta(b[0] + 2, b[1] + 1.5))),
    ("dirichlet", lambda D, a, b: (D.Dirichlet(a + 2), D.Dirichlet(b + 2))),
    ("laplace", lambda D, a, b: (D.Laplace(a[0], a[1] + 1.5), D.Laplace(b[0], b[1] + 1.5))),
    ("poisson", lambda D, a, b: (D.Poisson(a[0] + 1.5), D.Poisson(b[0] + 1.5))),
    ("geometric", lambda D, a, b: (D.Geometric(logits=a[0]), D.Geometric(logits=b[0]))),
    ("independent", lambda D, a, b: (D.Independent(D.Normal(a, 1.0), 1), D.Independent(D.Normal(b, 2.0), 1))),
    ("mvn", lambda D, a, b: (D.MultivariateNormal(a[0, :3], covariance_matrix=a[:3, :3] @ a[:3, :3].mT + D_eye(D)),
                             D.MultivariateNormal(b[0, :3], scale_tril=(b[:3, :3] * 0.3).tril() + D_eye(D)))),
    ("lognormal", lambda D, a, b: (D.LogNormal(a[0], a[1] + 1.5), D.LogNormal(b[0], b[1] + 1.5))),
]  # fmt: skip


def D_eye(lib):  # noqa: N802
    return nb.eye(3) if lib is D else torch.eye(3)


@needs_torch
@pytest.mark.parametrize("pair", KL_PAIRS, ids=[p[0] for p in KL_PAIRS])
def test_kl_divergence_and_gradients_match_torch(pair):
    a, b = _f32(4, 4), _f32(4, 4)
    na, nb_ = nb.tensor(a, requires_grad=True), nb.tensor(b, requires_grad=True)
    ta, tb = torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)
    nkl, tkl = D.kl_divergence(*pair[1](D, na, nb_)), TD.kl_divergence(*pair[1](TD, ta, tb))
    close(nkl, tkl, 2e-4)
    nkl.sum().backward()
    tkl.sum().backward()
    close(na.grad, ta.grad, 5e-4)
    close(nb_.grad, tb.grad, 5e-4)


@needs_torch
def test_kl_infinite_cases_match_torch():
    for lib in (D, TD):
        t = nb.tensor if lib is D else torch.tensor
        out = [
            lib.kl_divergence(lib.Uniform(t([0.0, 0.0]), t([1.0, 1.0])), lib.Uniform(t([0.5, -1.0]), t([2.0, 2.0]))),
            lib.kl_divergence(lib.Bernoulli(t([0.0, 1.0, 0.5])), lib.Bernoulli(t([0.0, 0.0, 1.0]))),
            lib.kl_divergence(lib.Categorical(t([0.5, 0.5, 0.0])), lib.Categorical(t([0.5, 0.0, 0.5]))),
        ]
        if lib is D:
            mine = [to_np(o) for o in out]
        else:
            for m, o in zip(mine, out, strict=True):
                np.testing.assert_allclose(m, to_np(o), rtol=1e-5)


def test_kl_missing_pair_and_register_kl():
    with pytest.raises(NotImplementedError, match="p type Cauchy and q type Laplace"):
        D.kl_divergence(D.Cauchy(0.0, 1.0), D.Laplace(0.0, 1.0))

    class MyCauchy(D.Cauchy):
        pass

    assert D.kl_divergence(MyCauchy(0.0, 1.0), D.Cauchy(0.0, 1.0)).item() == 0.0  # (subclasses dispatch)

    @D.register_kl(MyCauchy, D.Laplace)
    def _kl(p, q):
        return p.loc * 0 + 42.0

    assert D.kl_divergence(MyCauchy(0.0, 1.0), D.Laplace(0.0, 1.0)).item() == 42.0
    with pytest.raises(NotImplementedError):
        D.kl_divergence(D.Cauchy(0.0, 1.0), D.Laplace(0.0, 1.0))
    with pytest.raises(TypeError, match="type_p"):
        D.register_kl(int, D.Normal)


# -- sampling --------------------------------------------------------------------------------------------
def _nabla_dist(name: str):
    case = _case(name)
    return case[1](D, {k: nb.tensor(v) for k, v in case[2].items()})


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_sample_shapes(case):
    d = _nabla_dist(case[0])
    for shape in [(), (5,), (2, 3)]:
        expected = tuple(shape) + tuple(d.batch_shape) + tuple(d.event_shape)
        s = d.sample(shape)
        assert s.shape == expected and not s.requires_grad
        if d.has_rsample:
            assert d.rsample(shape).shape == expected
        else:
            with pytest.raises(NotImplementedError):
                d.rsample(shape)
    with pytest.warns(UserWarning, match="sample_n"):
        assert d.sample_n(4).shape == (4, *d.batch_shape, *d.event_shape)
    e = d.expand((7, *d.batch_shape))
    assert e.batch_shape == (7, *d.batch_shape) and e.sample().shape == (7, *d.batch_shape, *d.event_shape)
    assert e.log_prob(e.sample()).shape == (7, *d.batch_shape)


MOMENT_CASES = [
    ("normal", lambda: D.Normal(nb.tensor([0.0, 3.0]), nb.tensor([1.0, 0.5]))),
    ("uniform", lambda: D.Uniform(nb.tensor([0.0, -2.0]), nb.tensor([1.0, 4.0]))),
    ("exponential", lambda: D.Exponential(nb.tensor([0.5, 3.0]))),
    ("laplace", lambda: D.Laplace(nb.tensor([1.0, -1.0]), nb.tensor([0.5, 2.0]))),
    ("lognormal", lambda: D.LogNormal(nb.tensor([0.0, 0.5]), nb.tensor([0.3, 0.5]))),
    ("gamma", lambda: D.Gamma(nb.tensor([0.3, 1.0, 4.5]), nb.tensor([1.0, 2.0, 0.5]))),
    ("beta", lambda: D.Beta(nb.tensor([0.5, 3.0]), nb.tensor([0.7, 2.0]))),
    ("dirichlet", lambda: D.Dirichlet(nb.tensor([0.5, 1.0, 4.0]))),
    ("chi2", lambda: D.Chi2(nb.tensor([1.0, 6.0]))),
    ("studentt", lambda: D.StudentT(nb.tensor([6.0]), nb.tensor([1.0]), nb.tensor([2.0]))),
    ("poisson", lambda: D.Poisson(nb.tensor([0.5, 4.0, 30.0]))),
    ("binomial", lambda: D.Binomial(nb.tensor([5.0, 20.0]), nb.tensor([0.3, 0.8]))),
    ("geometric", lambda: D.Geometric(nb.tensor([0.3, 0.8]))),
    ("bernoulli", lambda: D.Bernoulli(nb.tensor([0.2, 0.9]))),
    ("categorical", lambda: D.OneHotCategorical(nb.tensor([0.1, 0.6, 0.3]))),
    ("mvn", lambda: D.MultivariateNormal(nb.tensor([1.0, -1.0, 0.0]), covariance_matrix=nb.tensor(_SPD[0]))),
]


@pytest.mark.parametrize("make", [m[1] for m in MOMENT_CASES], ids=[m[0] for m in MOMENT_CASES])
def test_sample_moments(make):
    nb.manual_seed(123)
    d = make()
    s = to_np(d.sample((20000,))).astype(np.float64)
    mean, var = to_np(d.mean), to_np(d.variance)
    np.testing.assert_allclose(s.mean(0), mean, rtol=0.05, atol=0.03 * np.sqrt(var).max())
    np.testing.assert_allclose(s.var(0), var, rtol=0.1, atol=1e-3)
    support = d.support.check(nb.tensor(s.astype(np.float32)))
    assert bool(support.all())
    if isinstance(d, D.MultivariateNormal):
        np.testing.assert_allclose(np.cov(s.T), _SPD[0], atol=0.06)


@pytest.mark.parametrize("make", [m[1] for m in MOMENT_CASES], ids=[m[0] for m in MOMENT_CASES])
def test_samples_repeat_with_manual_seed(make):
    nb.manual_seed(5)
    a = to_np(make().sample((50,)))
    nb.manual_seed(5)
    b = to_np(make().sample((50,)))
    c = to_np(make().sample((50,)))
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)


def test_categorical_sample_frequencies():
    nb.manual_seed(0)
    probs = np.float32([[0.1, 0.2, 0.7], [0.5, 0.0, 0.5]])
    s = to_np(D.Categorical(nb.tensor(probs)).sample((20000,)))
    assert s.dtype == np.int64 and s.shape == (20000, 2)
    freq = np.stack([np.bincount(s[:, i], minlength=3) / 20000 for i in range(2)])
    np.testing.assert_allclose(freq, probs, atol=0.015)


# -- gradients through rsample ---------------------------------------------------------------------------
def test_normal_rsample_gradients():
    loc, scale = nb.tensor([0.5, -1.0], requires_grad=True), nb.tensor([2.0, 0.5], requires_grad=True)
    nb.manual_seed(1)
    z = D.Normal(loc, scale).rsample((3,))
    z.sum().backward()
    eps = (to_np(z) - to_np(loc)) / to_np(scale)
    close(loc.grad, np.float32([3.0, 3.0]), 1e-6)
    close(scale.grad, eps.sum(0), 1e-5)
    g = nb.grad(lambda m: D.Normal(m, 1.0).log_prob(nb.tensor([1.0, 2.0])).sum())(nb.tensor([0.0, 0.0]))
    close(g, np.float32([1.0, 2.0]), 1e-6)  # d log N(x; m, 1) / dm = x - m


@pytest.mark.parametrize(
    "name, make, dx",
    [
        ("exponential", lambda p: D.Exponential(p), lambda x, p: -x / p),  # x = -log1p(-u) / rate
        ("uniform_high", lambda p: D.Uniform(0.0, p), lambda x, p: x / p),  # x = u * high
        ("laplace_scale", lambda p: D.Laplace(1.0, p), lambda x, p: (x - 1.0) / p),
        ("cauchy_scale", lambda p: D.Cauchy(1.0, p), lambda x, p: (x - 1.0) / p),
        ("lognormal_loc", lambda p: D.LogNormal(p, 0.5), lambda x, p: x),  # x = exp(loc + ...)
    ],
)
def test_rsample_pathwise_derivatives(name, make, dx):
    p = nb.tensor([0.7, 1.5, 3.0], requires_grad=True)
    nb.manual_seed(2)
    x = make(p).rsample()
    x.sum().backward()
    close(p.grad, dx(to_np(x), to_np(p)), 1e-4)


def test_mvn_rsample_gradient_and_relaxed_rsample_gradient():
    loc = nb.tensor([1.0, 2.0], requires_grad=True)
    tril = nb.tensor([[1.0, 0.0], [0.5, 2.0]], requires_grad=True)
    nb.manual_seed(0)
    x = D.MultivariateNormal(loc, scale_tril=tril).rsample((4,))
    x.sum().backward()
    close(loc.grad, np.float32([4.0, 4.0]))
    eps = np.linalg.solve(to_np(tril), (to_np(x) - to_np(loc)).T).T  # x = loc + L eps
    close(tril.grad, np.ones((2, 1)) * eps.sum(0)[None, :], 1e-4)  # (as torch: the upper half too)
    logits = nb.tensor([0.0, 1.0, -1.0], requires_grad=True)
    y = D.RelaxedOneHotCategorical(nb.tensor(0.5), logits=logits).rsample()
    (y * nb.tensor([1.0, 0.0, 0.0])).sum().backward()
    assert np.all(np.isfinite(to_np(logits.grad))) and np.any(to_np(logits.grad) != 0)


@needs_torch
def test_gamma_rsample_gradient_matches_torch_for_the_same_draws():
    alpha, rate = nb.tensor([0.4, 2.0, 12.0], requires_grad=True), nb.tensor([1.0, 2.0, 0.5], requires_grad=True)
    nb.manual_seed(6)
    x = D.Gamma(alpha, rate).rsample((300,))
    x.sum().backward()
    xs, a, r = to_np(x).astype(np.float64), to_np(alpha).astype(np.float64), to_np(rate).astype(np.float64)
    dxda = torch._standard_gamma_grad(torch.tensor(a).expand(300, 3), torch.tensor(xs * r)).numpy() / r
    close(alpha.grad, dxda.sum(0), 2e-3)
    close(rate.grad, (-xs / r).sum(0), 1e-3)
    grid_a, grid_x = np.meshgrid(
        np.float32([0.3, 1.5, 7.9, 9.0, 100.0]), np.float32([0.05, 0.5, 0.81, 3, 9.5, 95, 105])
    )
    mine = D.gamma.standard_gamma_grad(nb.tensor(grid_a), nb.tensor(grid_x))
    ref = torch._standard_gamma_grad(
        torch.tensor(grid_a, dtype=torch.float64), torch.tensor(grid_x, dtype=torch.float64)
    )
    close(mine, ref.float(), 1e-3)


@pytest.mark.parametrize(
    "make, param, expected",
    [  # d E[x] / d param, estimated by the mean of the pathwise gradients
        (lambda c: D.Gamma(c, nb.tensor([2.0, 0.5])), nb.tensor([0.5, 3.0]), [0.5, 2.0]),  # E = c / rate
        (lambda c: D.Beta(c, nb.tensor([2.0, 2.0])), nb.tensor([0.5, 3.0]), [2 / 2.5**2, 2 / 25]),  # E = a / (a + b)
        (lambda c: D.Dirichlet(c), nb.tensor([[2.0, 3.0, 4.0]]), [[7 / 81, -2 / 81, -2 / 81]]),  # E[x0] = c0 / sum
    ],
    ids=["gamma", "beta", "dirichlet"],
)
def test_gamma_family_rsample_gradients_are_unbiased(make, param, expected):
    param.requires_grad_()
    nb.manual_seed(8)
    x = make(param).rsample((20000,))
    first = x[..., 0] if isinstance(make(param), D.Dirichlet) else x
    (first.sum() / 20000).backward()
    np.testing.assert_allclose(to_np(param.grad), np.float32(expected), rtol=0.05, atol=4e-3)


def test_studentt_rsample_is_differentiable_in_every_parameter():
    df, loc, scale = (nb.tensor(v, requires_grad=True) for v in ([4.0, 9.0], [0.5, -1.0], [2.0, 1.0]))
    nb.manual_seed(9)
    x = D.StudentT(df, loc, scale).rsample((5,))
    x.sum().backward()
    close(loc.grad, np.float32([5.0, 5.0]), 1e-6)
    close(scale.grad, ((to_np(x) - to_np(loc)) / to_np(scale)).sum(0), 1e-4)
    assert np.all(np.isfinite(to_np(df.grad))) and np.all(to_np(df.grad) != 0)


@needs_torch
def test_tanh_normal_sac_log_prob_matches_torch_with_cache():
    loc, scale = _f32(4), _f32(4, low=0.5, high=1.0)
    nd = D.TransformedDistribution(D.Normal(nb.tensor(loc), nb.tensor(scale)), [D.TanhTransform(cache_size=1)])
    nb.manual_seed(4)
    a = nd.rsample()
    pre = nd.transforms[0].inv(a)  # (the cached pre-tanh sample, exactly)
    td = TD.TransformedDistribution(TD.Normal(torch.tensor(loc), torch.tensor(scale)), [TD.TanhTransform()])
    close(nd.log_prob(a), td.log_prob(torch.tanh(torch.tensor(to_np(pre)))), 2e-4)
    big = nb.tensor([30.0])  # tanh rounds to 1: only the cache keeps log_prob finite
    t = D.TanhTransform(cache_size=1)
    assert t.inv(t(big)) is big
    assert np.isfinite(to_np(t.log_abs_det_jacobian(big, t(big)))).all()


def test_transforms_round_trip_and_jacobians():
    x = nb.tensor([-1.5, 0.2, 2.0])
    parts = [D.AffineTransform(1.0, -2.0), D.SigmoidTransform(), D.AffineTransform(0.0, 3.0), D.ExpTransform()]
    t = D.ComposeTransform(parts)
    y = t(x)
    close(t.inv(y), to_np(x), 1e-4)
    xs = to_np(x).astype(np.float64)
    ref_y = np.exp(3.0 / (1.0 + np.exp(-(1.0 - 2.0 * xs))))
    close(y, ref_y.astype(np.float32), 1e-4)
    h = 1e-3  # (central differences in float64 of the same map)
    dydx = (
        np.exp(3.0 / (1.0 + np.exp(-(1.0 - 2.0 * (xs + h))))) - np.exp(3.0 / (1.0 + np.exp(-(1.0 - 2.0 * (xs - h)))))
    ) / (2 * h)
    close(t.log_abs_det_jacobian(x, y), np.log(np.abs(dydx)).astype(np.float32), 1e-3)
    assert t.sign == -1 and t.inv.inv is t and t.codomain is constraints.positive


# -- validation --------------------------------------------------------------------------------------------
def test_bad_parameters_raise_naming_the_parameter():
    with pytest.raises(ValueError, match=r"Expected parameter scale .* GreaterThan\(lower_bound=0.0\)"):
        D.Normal(nb.tensor([0.0, 1.0]), nb.tensor([1.0, -1.0]))
    with pytest.raises(ValueError, match="Expected parameter scale"):
        D.Normal(nb.zeros(3), -1.0)  # (a number broadcast to the loc's shape is checked too)
    with pytest.raises(ValueError, match="Expected parameter probs"):
        D.Bernoulli(nb.tensor([0.5, 1.5]))
    with pytest.raises(ValueError, match="Expected parameter probs"):
        D.Categorical(nb.tensor([0.5, -0.1, 0.6]))
    with pytest.raises(ValueError, match="Expected parameter covariance_matrix"):
        D.MultivariateNormal(nb.zeros(2), covariance_matrix=nb.tensor([[1.0, 2.0], [2.0, 1.0]]))
    with pytest.raises(ValueError, match="Expected parameter scale_tril"):
        D.MultivariateNormal(nb.zeros(2), scale_tril=nb.tensor([[1.0, 1.0], [0.0, 1.0]]))
    with pytest.raises(ValueError, match="Expected parameter concentration1"):
        D.Beta(nb.tensor([-1.0]), nb.tensor([1.0]))
    with pytest.raises(ValueError, match="Expected parameter concentration"):
        D.Dirichlet(nb.tensor([1.0, 0.0]))
    with pytest.raises(ValueError, match="Expected parameter total_count"):
        D.Binomial(nb.tensor([2.5]), nb.tensor([0.5]))
    with pytest.raises(ValueError, match="Expected parameter probs .* positive"):
        D.Geometric(nb.tensor([0.0, 0.5]))
    with pytest.raises(ValueError, match="low >= high"):
        D.Uniform(nb.tensor([1.0]), nb.tensor([0.0]))
    with pytest.raises(ValueError, match="Either `probs` or `logits`"):
        D.Bernoulli(probs=nb.tensor(0.5), logits=nb.tensor(0.0))
    with pytest.raises(ValueError, match="Exactly one of"):
        D.MultivariateNormal(nb.zeros(2))
    with pytest.raises(ValueError, match="at least one-dimensional"):
        D.Categorical(logits=nb.tensor(1.0))
    with pytest.raises(ValueError, match="reinterpreted_batch_ndims"):
        D.Independent(D.Normal(nb.zeros(3), 1.0), 2)
    D.Normal(nb.tensor([0.0]), nb.tensor([-1.0]), validate_args=False)  # (no check asked for)


def test_log_prob_checks_value_support_and_shape():
    d = D.Exponential(nb.tensor([1.0, 2.0]))
    with pytest.raises(ValueError, match="to be within the support"):
        d.log_prob(nb.tensor([1.0, -1.0]))
    with pytest.raises(ValueError, match="not broadcastable"):
        d.log_prob(nb.tensor([1.0, 1.0, 1.0]))
    with pytest.raises(ValueError, match="must be a Tensor"):
        d.log_prob(1.0)
    with pytest.raises(ValueError, match="within the support"):
        D.Categorical(logits=nb.zeros(3)).log_prob(nb.tensor([3]))
    with pytest.raises(ValueError, match="right-most size"):
        D.Dirichlet(nb.ones(3)).log_prob(nb.tensor([0.5, 0.5]))
    assert D.Exponential(nb.tensor([1.0]), validate_args=False).log_prob(nb.tensor([-1.0])).shape == (1,)


def test_set_default_validate_args():
    try:
        D.Distribution.set_default_validate_args(False)
        d = D.Normal(nb.tensor([0.0]), nb.tensor([-1.0]))
        assert not d._validate_args
        with pytest.raises(ValueError, match="scale"):
            D.Normal(0.0, -1.0, validate_args=True)
    finally:
        D.Distribution.set_default_validate_args(True)
    with pytest.raises(ValueError, match="scale"):
        D.Normal(0.0, -1.0)
    with pytest.raises(ValueError, match="True or False"):
        D.Distribution.set_default_validate_args("yes")


def test_pending_parameters_are_not_evaluated_by_validation():
    raw = nb.tensor([0.3, 0.7], requires_grad=True)
    before = nb.cache_info().executions
    d = D.Normal(raw * 2, nb.exp(raw))  # (promises: checking them would run the graph)
    lp = d.log_prob(nb.tensor([0.0, 1.0])).sum()
    assert nb.cache_info().executions == before and d.loc._impl.data is None
    lp.backward()
    r, x = np.float32([0.3, 0.7]), np.float32([0.0, 1.0])
    e = np.exp(-2 * r)  # d/dr of -(x - 2r)^2 e^(-2r) / 2 - r
    close(raw.grad, 2 * (x - 2 * r) * e + (x - 2 * r) ** 2 * e - 1, 1e-5)


def test_compile_and_vmap():
    def vae_terms(mu, log_std, x):
        q = D.Normal(mu, log_std.exp())
        z = q.rsample()
        return (q.log_prob(x) + D.kl_divergence(q, D.Normal(0.0, 1.0))).sum() + z.sum()

    mu, log_std, x = nb.zeros(3), nb.zeros(3), nb.ones(3)
    f = nb.compile(vae_terms)
    a, b = f(mu, log_std, x).item(), f(mu, log_std, x).item()
    fixed = 3 * (-0.5 - 0.5 * math.log(2 * math.pi))  # (log_prob at distance 1 plus KL 0: the rest is z)
    assert a != b  # (a fresh draw on every call)
    assert abs(a - fixed) < 20 and abs(b - fixed) < 20
    logp = nb.vmap(lambda lg, k: D.Categorical(logits=lg).log_prob(k))(
        nb.tensor(np.log([[0.2, 0.8], [0.5, 0.5]])), nb.tensor([1, 0])
    )
    close(logp, np.log(np.float32([0.8, 0.5])), 1e-5)
    g = nb.grad(lambda lg: D.Categorical(logits=lg).log_prob(nb.tensor(1)))(nb.zeros(3))
    close(g, np.float32([-1 / 3, 2 / 3, -1 / 3]), 1e-6)  # (policy gradient: onehot - softmax)


def test_constraints_check():
    x = nb.tensor([-1.0, 0.0, 0.5, 1.0, 2.0])
    assert to_np(constraints.positive.check(x)).tolist() == [False, False, True, True, True]
    assert to_np(constraints.unit_interval.check(x)).tolist() == [False, True, True, True, False]
    assert to_np(constraints.nonnegative_integer.check(x)).tolist() == [False, True, False, True, True]
    assert to_np(constraints.integer_interval(0, 1).check(x)).tolist() == [False, True, False, True, False]
    assert to_np(constraints.simplex.check(nb.tensor([[0.2, 0.8], [0.5, 0.6]]))).tolist() == [True, False]
    spd = nb.tensor(np.stack([_SPD[0], -_SPD[0]]))
    assert to_np(constraints.positive_definite.check(spd)).tolist() == [True, False]
    assert constraints.positive_definite.check(to_np(spd)).tolist() == [True, False]
    assert to_np(constraints.lower_cholesky.check(nb.tensor(_TRIL))).tolist() == [True, True]
    assert constraints.real_vector.event_dim == 1 and constraints.boolean.is_discrete
    assert constraints.is_dependent(constraints.dependent) and not constraints.is_dependent(constraints.real)


@needs_torch
def test_enumerate_support_matches_torch():
    for name in ("bernoulli_probs", "categorical_probs", "onehot", "binomial"):
        nd, td, _, _ = both(_case(name))
        for expand in (True, False):
            close(nd.enumerate_support(expand).astype(nb.float32), td.enumerate_support(expand).float())
    with pytest.raises(NotImplementedError, match="Inhomogeneous"):
        D.Binomial(nb.tensor([2.0, 3.0]), nb.tensor([0.5, 0.5])).entropy()


def test_batch_and_event_shapes():
    d = D.Independent(D.Normal(nb.zeros(4, 3, 2), 1.0), 2)
    assert d.batch_shape == (4,) and d.event_shape == (3, 2)
    assert d.log_prob(nb.zeros(5, 4, 3, 2)).shape == (5, 4)
    m = D.MultivariateNormal(nb.zeros(3), covariance_matrix=nb.tensor(_SPD))
    assert m.batch_shape == (2,) and m.event_shape == (3,) and m.loc.shape == (2, 3)
    assert m.log_prob(nb.zeros(6, 1, 3)).shape == (6, 2)
    c = D.Categorical(logits=nb.zeros(2, 3, 5))
    assert c.batch_shape == (2, 3) and c.param_shape == (2, 3, 5)
    assert D.Bernoulli(0.3).batch_shape == () and D.Normal(0.0, 1.0).sample((4,)).shape == (4,)
