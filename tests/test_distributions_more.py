"""nabla.distributions, the families, transforms, constraint registry and KL pairs added after
the first port (HalfNormal ... MixtureSameFamily, biject_to / transform_to, cross-family KLs):
values and gradients against torch.distributions (2.13) where torch is installed, NumPy
formulas and seeded sample moments everywhere; and the support validation of counts given
as Python numbers."""

from __future__ import annotations

import numpy as np
import pytest
from _oracle import torch

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
