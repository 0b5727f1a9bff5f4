"""The Pareto (type I) distribution."""

from __future__ import annotations

from typing import Any

from .. import ops
from ..core.tensor import Tensor
from . import constraints
from .exponential import Exponential
from .transformed_distribution import TransformedDistribution
from .transforms import AffineTransform, ExpTransform
from .utils import broadcast_all

__all__ = ["Pareto"]


class Pareto(TransformedDistribution):
    """The Pareto distribution: scale * exp(E) for E ~ Exponential(alpha), with density
    alpha scale**alpha / x**(alpha + 1) on x >= scale; reparameterized.

    Args:
        scale: the minimum value, > 0.
        alpha: the tail index, > 0.
        validate_args: check the parameters (see `Distribution`).

    Example:
        >>> Pareto(nabla.tensor([1.0]), nabla.tensor([3.0])).mean  # alpha scale / (alpha - 1)
        Tensor([1.5], dtype=float32)
    """

    arg_constraints = {"alpha": constraints.positive, "scale": constraints.positive}

    def __init__(self, scale: Any, alpha: Any, validate_args: bool | None = None) -> None:
        self.scale, self.alpha = broadcast_all(scale, alpha)
        base = Exponential(self.alpha, validate_args=validate_args)
        super().__init__(base, [ExpTransform(), AffineTransform(0.0, self.scale)], validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> Pareto:
        new = self._get_checked_instance(Pareto, _instance)
        new.scale = ops.broadcast_to(self.scale, tuple(batch_shape))
        new.alpha = ops.broadcast_to(self.alpha, tuple(batch_shape))
        return super().expand(batch_shape, new)

    @property
    def mean(self) -> Tensor:
        a = ops.clamp(self.alpha, 1.0)
        return a * self.scale / (a - 1)

    @property
    def mode(self) -> Tensor:
        return self.scale

    @property
    def variance(self) -> Tensor:
        a = ops.clamp(self.alpha, 2.0)
        return self.scale.pow(2) * a / ((a - 1).pow(2) * (a - 2))

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self) -> constraints.Constraint:
        return constraints.greater_than_eq(self.scale)

    def entropy(self) -> Tensor:
        return (self.scale / self.alpha).log() + (1 + self.alpha.reciprocal())
