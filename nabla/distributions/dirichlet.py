"""The Dirichlet and beta distributions (a beta is a Dirichlet over two categories)."""

from __future__ import annotations

from typing import Any

from .. import ops
from ..core.tensor import Tensor
from . import constraints
from .distribution import Distribution
from .gamma import _floor_tiny, _standard_gamma_rsample
from .utils import broadcast_all

__all__ = ["Beta", "Dirichlet"]


class Dirichlet(Distribution):
    """The Dirichlet distribution over the probability simplex.

    `rsample` normalizes reparameterized gamma draws (see `Gamma`): its gradient is an
    unbiased implicit-reparameterization gradient, though not torch's formula for the same
    draw (torch differentiates the Beta marginals).

    Args:
        concentration: the concentrations, > 0, shape (*batch_shape, K).
        validate_args: check the parameters (see `Distribution`).

    Example:
        >>> Dirichlet(nabla.tensor([1.0, 3.0])).mean
        Tensor([0.25, 0.75], dtype=float32)
    """

    arg_constraints = {"concentration": constraints.independent(constraints.positive, 1)}
    support = constraints.simplex
    has_rsample = True
    _expand_params = ("concentration",)

    def __init__(self, concentration: Tensor, validate_args: bool | None = None) -> None:
        if not isinstance(concentration, Tensor):
            raise TypeError(f"`concentration` must be a Tensor, got {type(concentration).__name__}")
        if concentration.ndim < 1:
            raise ValueError("`concentration` parameter must be at least one-dimensional.")
        self.concentration = concentration
        super().__init__(concentration.shape[:-1], concentration.shape[-1:], validate_args=validate_args)

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        g = _standard_gamma_rsample(self.concentration, self._extended_shape(sample_shape))
        return _floor_tiny(g / g.sum(-1, keepdim=True))

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        c = self.concentration
        return ops.xlogy(c - 1.0, value).sum(-1) + ops.lgamma(c.sum(-1)) - ops.lgamma(c).sum(-1)

    @property
    def mean(self) -> Tensor:
        return self.concentration / self.concentration.sum(-1, keepdim=True)

    @property
    def mode(self) -> Tensor:
        cm1 = ops.clamp(self.concentration - 1, 0.0)
        mode = cm1 / cm1.sum(-1, keepdim=True)
        # (every concentration below 1: the density peaks at the corner of the largest one)
        corner = ops.one_hot(ops.argmax(mode, -1), cm1.shape[-1]).astype(mode.dtype)
        return ops.where(ops.all(self.concentration < 1, -1, True), corner, mode)

    @property
    def variance(self) -> Tensor:
        c = self.concentration
        total = c.sum(-1, keepdim=True)
        return c * (total - c) / (total.pow(2) * (total + 1))

    def entropy(self) -> Tensor:
        c = self.concentration
        k, total = c.shape[-1], c.sum(-1)
        return (
            ops.lgamma(c).sum(-1)
            - ops.lgamma(total)
            - (k - total) * ops.digamma(total)
            - ((c - 1.0) * ops.digamma(c)).sum(-1)
        )


class Beta(Distribution):
    """The beta distribution on [0, 1] with concentrations `concentration1` (alpha) and
    `concentration0` (beta).

    Args:
        concentration1: alpha, > 0.
        concentration0: beta, > 0.
        validate_args: check the parameters (see `Distribution`).

    Example:
        >>> Beta(nabla.tensor([2.0]), nabla.tensor([2.0])).mean
        Tensor([0.5], dtype=float32)
    """

    arg_constraints = {"concentration1": constraints.positive, "concentration0": constraints.positive}
    support = constraints.unit_interval
    has_rsample = True
    _expand_params = ("concentration1", "concentration0", "_dirichlet")

    def __init__(self, concentration1: Any, concentration0: Any, validate_args: bool | None = None) -> None:
        self.concentration1, self.concentration0 = broadcast_all(concentration1, concentration0)
        pair = ops.stack([self.concentration1, self.concentration0], -1)
        self._dirichlet = Dirichlet(pair, validate_args=False)  # (checked here, on the two parameters)
        super().__init__(self.concentration1.shape, validate_args=validate_args)
        self._dirichlet._validate_args = self._validate_args

    @property
    def mean(self) -> Tensor:
        return self.concentration1 / (self.concentration1 + self.concentration0)

    @property
    def mode(self) -> Tensor:
        return self._dirichlet.mode[..., 0]

    @property
    def variance(self) -> Tensor:
        total = self.concentration1 + self.concentration0
        return self.concentration1 * self.concentration0 / (total.pow(2) * (total + 1))

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        return self._dirichlet.rsample(sample_shape)[..., 0]

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return self._dirichlet.log_prob(ops.stack([value, 1.0 - value], -1))

    def entropy(self) -> Tensor:
        return self._dirichlet.entropy()
