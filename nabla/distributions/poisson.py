"""The Poisson distribution."""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import ops
from ..core.common import dtypes as _dt
from ..core.tensor import Tensor
from . import constraints
from .distribution import Distribution
from .utils import broadcast_all, host_rng, host_values

__all__ = ["Poisson"]


class Poisson(Distribution):
    """Counts 0, 1, 2, ... with mean `rate`: P(k) = rate**k exp(-rate) / k!.

    `sample` draws on the host with NumPy (nabla has no Poisson draw op), from a generator
    seeded by nabla's global one (`nabla.manual_seed` repeats it); it computes `rate` if it is
    pending, so it cannot be traced by `nabla.compile`.

    Args:
        rate: the mean, >= 0.
        validate_args: check the parameters (see `Distribution`).

    Example:
        >>> Poisson(nabla.tensor([4.0])).log_prob(nabla.tensor([2.0])).shape
        (1,)
    """

    arg_constraints = {"rate": constraints.nonnegative}
    support = constraints.nonnegative_integer
    _expand_params = ("rate",)

    def __init__(self, rate: Any, validate_args: bool | None = None) -> None:
        (self.rate,) = broadcast_all(rate)
        super().__init__(self.rate.shape, validate_args=validate_args)

    @property
    def mean(self) -> Tensor:
        return self.rate

    @property
    def mode(self) -> Tensor:
        return self.rate.floor()

    @property
    def variance(self) -> Tensor:
        return self.rate

    def sample(self, sample_shape: Any = ()) -> Tensor:
        shape = tuple(self._extended_shape(sample_shape))
        rate = np.broadcast_to(host_values(self.rate.detach()).astype(np.float64), shape)
        draws = host_rng().poisson(rate)
        return ops.tensor(draws.astype(_dt.to_numpy_dtype(self.rate.dtype)), dtype=self.rate.dtype)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        rate, value = broadcast_all(self.rate, value)
        return ops.xlogy(value, rate) - rate - ops.lgamma(value + 1)
