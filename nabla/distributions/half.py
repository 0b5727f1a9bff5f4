"""HalfNormal and HalfCauchy: |X| for a zero-centred Normal or Cauchy X (weakly informative
priors on scales)."""

from __future__ import annotations

import math
from typing import Any

from .. import ops
from ..core.tensor import Tensor
from . import constraints
from .cauchy import Cauchy
from .normal import Normal
from .transformed_distribution import TransformedDistribution
from .transforms import AbsTransform

__all__ = ["HalfCauchy", "HalfNormal"]


class _Half(TransformedDistribution):
    """|X| for X of a zero-located `_base` family with scale `scale`: the density is twice the
    base's on x >= 0 (-inf below)."""

    arg_constraints = {"scale": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True
    _base: type = Normal

    def __init__(self, scale: Any, validate_args: bool | None = None) -> None:
        base = self._base(0.0, scale, validate_args=False)
        super().__init__(base, AbsTransform(), validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> _Half:
        return super().expand(batch_shape, self._get_checked_instance(type(self), _instance))

    @property
    def scale(self) -> Tensor:
        return self.base_dist.scale

    @property
    def mode(self) -> Tensor:
        return ops.zeros_like(self.scale)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        log_prob = self.base_dist.log_prob(value) + math.log(2)
        return ops.where(value >= 0, log_prob, float("-inf"))

    def cdf(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return 2 * self.base_dist.cdf(value) - 1

    def icdf(self, prob: Tensor) -> Tensor:
        return self.base_dist.icdf((prob + 1) / 2)

    def entropy(self) -> Tensor:
        return self.base_dist.entropy() - math.log(2)


class HalfNormal(_Half):
    """|X| for X ~ Normal(0, scale).

    Args:
        scale: the scale of the normal, > 0.
        validate_args: check the parameters (see `Distribution`).

    Example:
        >>> HalfNormal(nabla.tensor([1.0])).mean  # sqrt(2 / pi)
        Tensor([0.7978846], dtype=float32)
    """

    _base = Normal

    @property
    def mean(self) -> Tensor:
        return self.scale * math.sqrt(2 / math.pi)

    @property
    def variance(self) -> Tensor:
        return self.scale.pow(2) * (1 - 2 / math.pi)


class HalfCauchy(_Half):
    """|X| for X ~ Cauchy(0, scale). Its mean and variance are infinite.

    Args:
        scale: the scale of the Cauchy, > 0.
        validate_args: check the parameters (see `Distribution`).

    Example:
        >>> HalfCauchy(1.0).log_prob(nabla.tensor(0.0))  # log(2 / pi)
        Tensor(-0.4515827, dtype=float32)
    """

    _base = Cauchy

    @property
    def mean(self) -> Tensor:
        return ops.full(self._extended_shape(), float("inf"), dtype=self.scale.dtype)

    @property
    def variance(self) -> Tensor:
        return self.base_dist.variance
