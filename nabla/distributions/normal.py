"""The normal (Gaussian) distribution."""

from __future__ import annotations

import math
from typing import Any

from .. import ops
from ..core.tensor import Tensor
from .location_scale import LocationScale

__all__ = ["Normal"]


class Normal(LocationScale):
    """A normal distribution with mean `loc` and standard deviation `scale`.

    Args:
        loc: the mean (a Tensor or number).
        scale: the standard deviation, > 0 (a Tensor or number).
        validate_args: check the parameters (see `Distribution`).

    Example:
        >>> d = Normal(nabla.tensor([0.0]), nabla.tensor([1.0]))
        >>> d.rsample((4,)).shape  # differentiable in loc and scale
        (4, 1)
    """

    _expand_params = ("loc", "scale")

    @property
    def mean(self) -> Tensor:
        return self.loc

    @property
    def stddev(self) -> Tensor:
        return self.scale

    @property
    def variance(self) -> Tensor:
        return self.scale.pow(2)

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        eps = ops.randn(self._extended_shape(sample_shape), dtype=self.loc.dtype)
        return self.loc + eps * self.scale

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return (
            -((value - self.loc) ** 2) / (2 * self.scale.pow(2)) - self.scale.log() - math.log(math.sqrt(2 * math.pi))
        )

    def cdf(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return 0.5 * (1 + ops.erf((value - self.loc) / (self.scale * math.sqrt(2))))

    def icdf(self, value: Tensor) -> Tensor:
        return self.loc + self.scale * ops.erfinv(2 * value - 1) * math.sqrt(2)

    def entropy(self) -> Tensor:
        return 0.5 + 0.5 * math.log(2 * math.pi) + self.scale.log()
