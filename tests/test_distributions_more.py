"""nabla.distributions, the families, transforms, constraint registry and KL pairs added after
the first port (HalfNormal ... MixtureSameFamily, biject_to / transform_to, cross-family KLs):
values and gradients against torch.distributions (2.13) where torch is installed, NumPy
formulas and seeded sample moments everywhere; and the support validation of counts given
as Python numbers."""

from __future__ import annotations

import numpy as np
import pytest
from _oracle import needs_torch, torch

import nabla as nb
import nabla.distributions as D

if torch is not None:
    import torch.distributions as TD
else:  # (the torch-marked tests are skipped)
    TD = None

RNG = np.random.default_rng(11)


def _f32(*shape: int, low: float = -1.0, high: float = 1.0) -> np.ndarray:
    return RNG.uniform(low, high, shape).astype(np.float32)


def _np(x) -> np.ndarray:
    if isinstance(x, nb.Tensor):
        return x.numpy()
    if torch is not None and isinstance(x, torch.Tensor):
        return x.detach().numpy()
    return np.asarray(x)


def _close(a, b, tol: float = 1e-4) -> None:
    a, b = _np(a), _np(b)
    assert a.shape == b.shape, (a.shape, b.shape)
    np.testing.assert_allclose(a, b, rtol=tol, atol=tol)


# -- validation of counts given as numbers -----------------------------------------------------------
@pytest.mark.parametrize("value", [6.0, -1.0, 2.5])
def test_binomial_python_count_validates_support(value):
    d = D.Binomial(5, probs=nb.tensor([0.3]))
    with pytest.raises(ValueError, match="support"):
        d.log_prob(nb.tensor([value]))
    expected = np.log(10 * 0.3**2 * 0.7**3)
    _close(d.log_prob(nb.tensor([2.0])), np.array([expected], np.float32), 1e-5)


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
    _close(ny, ty, 1e-5)
    assert nt.forward_shape(x.shape) == tuple(tt.forward_shape(torch.Size(x.shape)))
    assert nt.domain.event_dim == tt.domain.event_dim and nt.codomain.event_dim == tt.codomain.event_dim
    assert nt.bijective == tt.bijective
    _close(nt.inv(nb.tensor(_np(ty))), tt.inv(ty.detach()), 1e-4)
    assert bool(np.all(_np(nt.codomain.check(ny)))), nt.codomain
    if has_ladj:
        nl, tl = nt.log_abs_det_jacobian(nx, ny), tt.log_abs_det_jacobian(tx, ty)
        _close(nl, tl, 1e-4)
        (ny.sum() + nl.sum()).backward()
        (ty.sum() + tl.sum()).backward()
    else:
        ny.pow(2).sum().backward()
        ty.pow(2).sum().backward()
    _close(nx.grad, tx.grad, 1e-4)


def test_stick_breaking_round_trip_and_jacobian_without_torch():
    t = D.transforms.StickBreakingTransform()
    x = nb.tensor(_f32(4, 3, low=-2, high=2))
    y = t(x)
    _close(y.sum(-1), np.ones(4, np.float32), 1e-5)
    _close(t.inv(y), x, 1e-4)
    _close(t(nb.zeros(3)), np.full(4, 0.25, np.float32), 1e-6)
    # log |det dy[:-1]/dx| by finite differences, one batch row
    x0 = _np(x)[0].astype(np.float64)

    def f(v):
        return _np(t(nb.tensor(v.astype(np.float32))))[:-1].astype(np.float64)

    eps = 1e-3
    jac = np.stack([(f(x0 + eps * e) - f(x0 - eps * e)) / (2 * eps) for e in np.eye(3)], 1)
    _close(t.log_abs_det_jacobian(x, y)[0], np.float32(np.log(abs(np.linalg.det(jac)))), 2e-3)


def test_power_softplus_formulas_without_torch():
    x = _POS23
    t = D.transforms.PowerTransform(3.0)
    _close(t(nb.tensor(x)), x**3, 1e-4)
    _close(t.log_abs_det_jacobian(nb.tensor(x), t(nb.tensor(x))), np.log(3 * x**2), 1e-4)
    s = D.transforms.SoftplusTransform()
    _close(s.inv(s(nb.tensor(_X23))), _X23, 1e-4)
    _close(s.log_abs_det_jacobian(nb.tensor(_X23), None), -np.log1p(np.exp(-_X23)), 1e-5)
    assert t == D.transforms.PowerTransform(3.0) and t != D.transforms.PowerTransform(2.0)
    lc = D.transforms.LowerCholeskyTransform()(nb.tensor(_SQ))
    assert bool(np.all(_np(D.constraints.lower_cholesky.check(lc))))


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
    _close(ny, ty, 1e-5)
    assert bool(np.all(_np(nc.check(ny))))
    if registry == "biject_to":
        _close(nt.log_abs_det_jacobian(nb.tensor(x), ny), tt.log_abs_det_jacobian(torch.tensor(x), ty), 1e-4)
        _close(nt.inv(ny), x, 1e-3)


def test_biject_to_positive_in_vi_without_torch():
    u = nb.tensor([-3.0, 0.0, 2.0], requires_grad=True)
    t = D.biject_to(D.constraints.positive)
    scale = t(u)
    _close(scale, np.exp([-3.0, 0.0, 2.0]).astype(np.float32), 1e-5)
    scale.sum().backward()
    _close(u.grad, np.exp([-3.0, 0.0, 2.0]).astype(np.float32), 1e-5)
    with pytest.raises(NotImplementedError, match="Cannot transform"):
        D.biject_to(D.constraints.lower_cholesky)
    p = D.transform_to(D.constraints.simplex)(nb.tensor([0.0, 0.0]))
    _close(p, np.array([0.5, 0.5], np.float32), 1e-6)
