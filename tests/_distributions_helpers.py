"""Helpers shared by the nabla.distributions tests (tests/test_distributions*.py).

`TD` is `torch.distributions` (None without torch: the torch-marked tests are skipped). Random
test data comes from each test module's own seeded generator, passed to `f32_sampler`, so the
draws of one module do not depend on what another module drew.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from _oracle import torch

import nabla as nb
import nabla.distributions as D

if torch is not None:
    import torch.distributions as TD
else:  # (the torch-marked tests are skipped)
    TD = None

__all__ = ["TD", "both", "call", "close", "f32_sampler", "to_np"]


def f32_sampler(rng: np.random.Generator) -> Callable[..., np.ndarray]:
    """`f32(*shape, low=-1, high=1)`: a float32 array of uniform draws from `rng`."""

    def f32(*shape: int, low: float = -1.0, high: float = 1.0) -> np.ndarray:
        return rng.uniform(low, high, shape).astype(np.float32)

    return f32


def to_np(x) -> np.ndarray:
    if isinstance(x, nb.Tensor):
        return x.numpy()
    if torch is not None and isinstance(x, torch.Tensor):
        return x.detach().numpy()
    return np.asarray(x)


def close(a, b, tol: float = 1e-4) -> None:
    a, b = to_np(a), to_np(b)
    assert a.shape == b.shape, (a.shape, b.shape)
    np.testing.assert_allclose(a, b, rtol=tol, atol=tol)


def both(case, requires_grad: bool = False):
    """A case `(id, factory(D, params), params, value, methods)` built in nabla and in torch: the
    two distributions and the two parameter dicts (leaves when `requires_grad`)."""
    _, factory, params, _, _ = case
    nb_params = {k: nb.tensor(v, requires_grad=requires_grad) for k, v in params.items()}
    t_params = {k: torch.tensor(v, requires_grad=requires_grad) for k, v in params.items()}
    return factory(D, nb_params), factory(TD, t_params), nb_params, t_params


def call(dist, method: str, value):
    """`dist.method(value)` for the methods that take a value, else the property; icdf at 0.3 in
    the value's shape (None for a NumPy value)."""
    if method in ("log_prob", "cdf"):
        return getattr(dist, method)(value)
    if method == "icdf":
        return dist.icdf(value * 0 + 0.3) if not isinstance(value, np.ndarray) else None
    if method == "entropy":
        return dist.entropy()
    return getattr(dist, method)
