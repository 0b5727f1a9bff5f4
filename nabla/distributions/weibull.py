"""The Weibull distribution."""

from __future__ import annotations

from typing import Any

from .. import ops
from ..core.tensor import Tensor
from . import constraints
from .exponential import Exponential
from .gumbel import _EULER
from .transformed_distribution import TransformedDistribution
from .transforms import AffineTransform, PowerTransform
from .utils import broadcast_all

__all__ = ["Weibull"]


class Weibull(TransformedDistribution):
    """The Weibull distribution: scale * E**(1 / concentration) for E ~ Exponential(1), with
    density (k / s) (x / s)**(k - 1) exp(-(x / s)**k) on x > 0; reparameterized.

    Args:
        scale: the scale s, > 0.
        concentration: the shape k, > 0.
        validate_args: check the parameters (see `Distribution`).

    Example:
        >>> Weibull(nabla.tensor([2.0]), nabla.tensor([1.0])).mean  # an Exponential of mean 2
        Tensor([2.], dtype=float32)
    """

    arg_constraints = {"scale": constraints.positive, "concentration": constraints.positive}
    support = constraints.positive

    def __init__(self, scale: Any, concentration: Any, validate_args: bool | None = None) -> None:
        self.scale, self.concentration = broadcast_all(scale, concentration)
        self.concentration_reciprocal = self.concentration.reciprocal()
        base = Exponential(ops.ones_like(self.scale), validate_args=validate_args)
        transforms = [PowerTransform(self.concentration_reciprocal), AffineTransform(0.0, self.scale)]
        super().__init__(base, transforms, validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> Weibull:
        new = self._get_checked_instance(Weibull, _instance)
        new.scale = ops.broadcast_to(self.scale, tuple(batch_shape))
        new.concentration = ops.broadcast_to(self.concentration, tuple(batch_shape))
        new.concentration_reciprocal = new.concentration.reciprocal()
        base = self.base_dist.expand(batch_shape)
        transforms = [PowerTransform(new.concentration_reciprocal), AffineTransform(0.0, new.scale)]
        TransformedDistribution.__init__(new, base, transforms, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def mean(self) -> Tensor:
        return self.scale * ops.lgamma(1 + self.concentration_reciprocal).exp()

    @property
    def mode(self) -> Tensor:
        k = self.concentration
        return self.scale * ((k - 1) / k) ** k.reciprocal()

    @property
    def variance(self) -> Tensor:
        r = self.concentration_reciprocal
        return self.scale.pow(2) * (ops.lgamma(1 + 2 * r).exp() - (2 * ops.lgamma(1 + r)).exp())

    def entropy(self) -> Tensor:
        r = self.concentration_reciprocal
        return _EULER * (1 - r) + (self.scale * r).log() + 1
