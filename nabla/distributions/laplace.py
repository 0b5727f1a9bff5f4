"""The Laplace (double exponential) distribution."""

from __future__ import annotations

import math
from typing import Any

from .. import ops
from ..core.tensor import Tensor
from .location_scale import LocationScale
from .utils import _finfo

__all__ = ["Laplace"]


class Laplace(LocationScale):
    """The Laplace distribution with location `loc` and scale `scale`.

    Args:
        loc: the mean (a Tensor or number).
        scale: the scale, > 0.
        validate_args: check the parameters (see `Distribution`).

    Example:
        >>> Laplace(0.0, 1.0).variance
        Tensor(2., dtype=float32)
    """

    _expand_params = ("loc", "scale")

    @property
    def mean(self) -> Tensor:
        return self.loc

    @property
    def variance(self) -> Tensor:
        return 2 * self.scale.pow(2)

    @property
    def stddev(self) -> Tensor:
        return math.sqrt(2) * self.scale

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        eps = float(_finfo(self.loc.dtype).eps)  # (u > -1, so log1p(-|u|) is finite)
        u = ops.uniform(self._extended_shape(sample_shape), eps - 1, 1.0, dtype=self.loc.dtype)
        return self.loc - self.scale * u.sign() * (-u.abs()).log1p()

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return -(2 * self.scale).log() - (value - self.loc).abs() / self.scale

    def cdf(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return 0.5 - 0.5 * (value - self.loc).sign() * ops.expm1(-(value - self.loc).abs() / self.scale)

    def icdf(self, value: Tensor) -> Tensor:
        term = value - 0.5
        return self.loc - self.scale * term.sign() * (-2 * term.abs()).log1p()

    def entropy(self) -> Tensor:
        return 1 + (2 * self.scale).log()
