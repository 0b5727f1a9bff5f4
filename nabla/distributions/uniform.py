"""The continuous uniform distribution."""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import ops
from ..core.tensor import Tensor
from . import constraints
from .distribution import Distribution, _known
from .utils import broadcast_all

__all__ = ["Uniform"]


class Uniform(Distribution):
    """Uniform samples in the half-open interval [low, high).

    Args:
        low: the lower bound, inclusive.
        high: the upper bound, exclusive; must exceed `low`.
        validate_args: check the parameters (see `Distribution`).

    Example:
        >>> Uniform(0.0, 5.0).sample((3,)).shape
        (3,)
    """

    arg_constraints = {
        "low": constraints.dependent(is_discrete=False, event_dim=0),
        "high": constraints.dependent(is_discrete=False, event_dim=0),
    }
    has_rsample = True
    _expand_params = ("low", "high")

    def __init__(self, low: Any, high: Any, validate_args: bool | None = None) -> None:
        self.low, self.high = broadcast_all(low, high)
        super().__init__(self.low.shape, validate_args=validate_args)
        if self._validate_args:
            lo, hi = _known(self.low), _known(self.high)
            if lo is not None and hi is not None and not np.all(lo < hi):
                raise ValueError(f"Uniform is not defined when low >= high: got low={lo}, high={hi}")

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self) -> constraints.Constraint:
        return constraints.interval(self.low, self.high)

    @property
    def mean(self) -> Tensor:
        return (self.high + self.low) / 2

    @property
    def mode(self) -> Tensor:
        return self.high * float("nan")

    @property
    def stddev(self) -> Tensor:
        return (self.high - self.low) / 12**0.5

    @property
    def variance(self) -> Tensor:
        return (self.high - self.low).pow(2) / 12

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        u = ops.rand(self._extended_shape(sample_shape), dtype=self.low.dtype)
        return self.low + u * (self.high - self.low)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        inside = ops.logical_and(self.low <= value, value < self.high).astype(self.low.dtype)
        return inside.log() - (self.high - self.low).log()

    def cdf(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return ops.clamp((value - self.low) / (self.high - self.low), 0.0, 1.0)

    def icdf(self, value: Tensor) -> Tensor:
        return value * (self.high - self.low) + self.low

    def entropy(self) -> Tensor:
        return (self.high - self.low).log()
