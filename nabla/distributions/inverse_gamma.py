"""The inverse gamma distribution: 1 / X for X ~ Gamma (a conjugate prior of a variance)."""

from __future__ import annotations

from typing import Any

from .. import ops
from ..core.tensor import Tensor
from . import constraints
from .gamma import Gamma
from .transformed_distribution import TransformedDistribution
from .transforms import PowerTransform

__all__ = ["InverseGamma"]


class InverseGamma(TransformedDistribution):
    """1 / X for X ~ Gamma(concentration, rate): density
    rate**c / Gamma(c) * x**(-c - 1) * exp(-rate / x) on x > 0.

    `rsample` is differentiable in both parameters (through Gamma's).

    Args:
        concentration: the shape c, > 0.
        rate: the scale of 1/X's gamma rate (the inverse gamma's scale), > 0.
        validate_args: check the parameters (see `Distribution`).

    Example:
        >>> InverseGamma(nabla.tensor([3.0]), nabla.tensor([2.0])).mean  # rate / (c - 1)
        Tensor([1.], dtype=float32)
    """

    arg_constraints = {"concentration": constraints.positive, "rate": constraints.positive}
    support = constraints.positive
    has_rsample = True

    def __init__(self, concentration: Any, rate: Any, validate_args: bool | None = None) -> None:
        base = Gamma(concentration, rate, validate_args=validate_args)
        neg_one = ops.full((), -1.0, dtype=base.rate.dtype)
        super().__init__(base, PowerTransform(neg_one), validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> InverseGamma:
        return super().expand(batch_shape, self._get_checked_instance(InverseGamma, _instance))

    @property
    def concentration(self) -> Tensor:
        return self.base_dist.concentration

    @property
    def rate(self) -> Tensor:
        return self.base_dist.rate

    @property
    def mean(self) -> Tensor:
        return ops.where(self.concentration > 1, self.rate / (self.concentration - 1), float("inf"))

    @property
    def mode(self) -> Tensor:
        return self.rate / (self.concentration + 1)

    @property
    def variance(self) -> Tensor:
        c = self.concentration
        return ops.where(c > 2, self.rate.pow(2) / ((c - 1).pow(2) * (c - 2)), float("inf"))

    def entropy(self) -> Tensor:
        c = self.concentration
        return c + self.rate.log() + ops.lgamma(c) - (1 + c) * ops.digamma(c)
