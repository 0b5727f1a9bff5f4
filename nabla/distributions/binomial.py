"""The binomial distribution."""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import ops
from ..core.common import dtypes as _dt
from ..core.tensor import Size, Tensor
from . import constraints
from .bernoulli import _one_param
from .distribution import Distribution
from .utils import broadcast_all, host_rng, host_values, lazy_property, logits_to_probs, probs_to_logits

__all__ = ["Binomial"]


def _clamp_by_zero(x: Tensor) -> Tensor:
    # max(x, 0) whose gradient at 0 is 1/2 (torch's choice, kept for matching gradients)
    return (ops.clamp(x, 0.0) + x - ops.clamp(x, None, 0.0)) / 2


class Binomial(Distribution):
    """The number of successes in `total_count` independent trials of probability `probs`.

    `sample` draws on the host with NumPy, as `Poisson.sample` does.

    Args:
        total_count: the number of trials, an integer >= 0 (Tensor or int).
        probs: the success probability, in [0, 1].
        logits: the log-odds of success (give exactly one of probs and logits).
        validate_args: check the parameters (see `Distribution`).

    Example:
        >>> Binomial(10, nabla.tensor([0.5])).mean
        Tensor([5.], dtype=float32)
    """

    arg_constraints = {
        "total_count": constraints.nonnegative_integer,
        "probs": constraints.unit_interval,
        "logits": constraints.real,
    }
    has_enumerate_support = True

    def __init__(
        self, total_count: Any = 1, probs: Any = None, logits: Any = None, validate_args: bool | None = None
    ) -> None:
        _one_param(probs, logits)
        if probs is not None:
            self.total_count, self.probs = broadcast_all(total_count, probs)
            self.total_count = self.total_count.astype(self.probs.dtype)
        else:
            self.total_count, self.logits = broadcast_all(total_count, logits)
            self.total_count = self.total_count.astype(self.logits.dtype)
        self._param = self.probs if probs is not None else self.logits
        super().__init__(self._param.shape, validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> Binomial:
        new = self._get_checked_instance(Binomial, _instance)
        shape = tuple(batch_shape)
        new.total_count = ops.broadcast_to(self.total_count, shape)
        if "probs" in self.__dict__:
            new.probs = ops.broadcast_to(self.probs, shape)
            new._param = new.probs
        if "logits" in self.__dict__:
            new.logits = ops.broadcast_to(self.logits, shape)
            new._param = new.logits
        Distribution.__init__(new, batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @constraints.dependent_property(is_discrete=True, event_dim=0)
    def support(self) -> constraints.Constraint:
        return constraints.integer_interval(0, self.total_count)

    @lazy_property
    def logits(self) -> Tensor:
        return probs_to_logits(self.probs, is_binary=True)

    @lazy_property
    def probs(self) -> Tensor:
        return logits_to_probs(self.logits, is_binary=True)

    @property
    def param_shape(self) -> Size:
        return Size(self._param.shape)

    @property
    def mean(self) -> Tensor:
        return self.total_count * self.probs

    @property
    def mode(self) -> Tensor:
        return ops.minimum(((self.total_count + 1) * self.probs).floor(), self.total_count)

    @property
    def variance(self) -> Tensor:
        return self.total_count * self.probs * (1 - self.probs)

    def sample(self, sample_shape: Any = ()) -> Tensor:
        shape = tuple(self._extended_shape(sample_shape))
        n = np.broadcast_to(host_values(self.total_count.detach()).astype(np.int64), shape)
        p = np.broadcast_to(host_values(self.probs.detach()).astype(np.float64), shape)
        draws = host_rng().binomial(n, p)
        return ops.tensor(draws.astype(_dt.to_numpy_dtype(self._param.dtype)), dtype=self._param.dtype)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        n, logits = self.total_count, self.logits
        log_factorial_n = ops.lgamma(n + 1)
        log_factorial_k = ops.lgamma(value + 1)
        log_factorial_nmk = ops.lgamma(n - value + 1)
        # n * log(1 + exp(logits)), written to stay finite for large |logits|
        normalize_term = n * _clamp_by_zero(logits) + n * (-logits.abs()).exp().log1p() - log_factorial_n
        return value * logits - log_factorial_k - log_factorial_nmk - normalize_term

    def _homogeneous_count(self, who: str) -> int:
        counts = host_values(self.total_count.detach())
        total = int(counts.max()) if counts.size else 0
        if counts.size and counts.min() != total:
            raise NotImplementedError(f"Inhomogeneous total count not supported by `{who}`.")
        return total

    def entropy(self) -> Tensor:
        """Sums over the support; reads total_count on the host (it must be the same everywhere)."""
        self._homogeneous_count("entropy")
        log_prob = self.log_prob(self.enumerate_support(False))
        return -(log_prob.exp() * log_prob).sum(0)

    def enumerate_support(self, expand: bool = True) -> Tensor:
        total = self._homogeneous_count("enumerate_support")
        values = ops.arange(1 + total, dtype=self._param.dtype).reshape((-1,) + (1,) * len(self._batch_shape))
        return ops.broadcast_to(values, (1 + total, *self._batch_shape)) if expand else values
