"""The binomial distribution."""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import ops
from ..core.common import dtypes as _dt
from ..core.tensor import Size, Tensor
from . import constraints
from .distribution import Distribution
from .utils import ProbsLogits, host_rng, host_values, support_values

__all__ = ["Binomial"]


def _clamp_by_zero(x: Tensor) -> Tensor:
    # max(x, 0) whose gradient at 0 is 1/2 (torch's choice, kept for matching gradients)
    return (ops.clamp(x, 0.0) + x - ops.clamp(x, None, 0.0)) / 2


class Binomial(ProbsLogits, Distribution):
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
    _expand_params = ("total_count", "probs", "logits")

    def __init__(
        self, total_count: Any = 1, probs: Any = None, logits: Any = None, validate_args: bool | None = None
    ) -> None:
        self._init_params(probs, logits, validate_args, total_count)

    @constraints.dependent_property(is_discrete=True, event_dim=0)
    def support(self) -> constraints.Constraint:
        return constraints.integer_interval(0, self.total_count)

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
        return support_values(ops.arange(1 + total, dtype=self._param.dtype), self._batch_shape, expand)
