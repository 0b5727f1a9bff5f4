"""The Cauchy (Lorentz) distribution."""

from __future__ import annotations

import math
from typing import Any

from .. import ops
from ..core.tensor import Tensor
from .location_scale import LocationScale

__all__ = ["Cauchy"]


class Cauchy(LocationScale):
    """The Cauchy distribution: the ratio of two independent standard normals, shifted by
    `loc` and scaled by `scale`. Its mean and variance are undefined (nan and inf, as torch).

    Args:
        loc: the median (mode).
        scale: the half width at half maximum, > 0.
        validate_args: check the parameters (see `Distribution`).

    Example:
        >>> Cauchy(0.0, 1.0).cdf(nabla.tensor(1.0))
        Tensor(0.75, dtype=float32)
    """

    _expand_params = ("loc", "scale")

    @property
    def mean(self) -> Tensor:
        return ops.full(self._extended_shape(), float("nan"), dtype=self.loc.dtype)

    @property
    def variance(self) -> Tensor:
        return ops.full(self._extended_shape(), float("inf"), dtype=self.loc.dtype)

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        u = ops.rand(self._extended_shape(sample_shape), dtype=self.loc.dtype)
        return self.loc + ops.tan(math.pi * (u - 0.5)) * self.scale

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return -math.log(math.pi) - self.scale.log() - (((value - self.loc) / self.scale) ** 2).log1p()

    def cdf(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return ops.atan((value - self.loc) / self.scale) / math.pi + 0.5

    def icdf(self, value: Tensor) -> Tensor:
        return ops.tan(math.pi * (value - 0.5)) * self.scale + self.loc

    def entropy(self) -> Tensor:
        return math.log(4 * math.pi) + self.scale.log()
