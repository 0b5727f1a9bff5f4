"""The negative binomial distribution."""

from __future__ import annotations

from typing import Any

from .. import ops
from ..core.common import dtypes as _dt
from ..core.common import no_grad
from ..core.tensor import Size, Tensor
from . import constraints
from .distribution import Distribution
from .gamma import Gamma
from .utils import ProbsLogits, host_rng, host_values, lazy_property

__all__ = ["NegativeBinomial"]


class NegativeBinomial(ProbsLogits, Distribution):
    """The number of successes before `total_count` failures in Bernoulli(`probs`) trials
    (over-dispersed counts; a Gamma-Poisson mixture), with P(k) = C(k + r - 1, k) p**k (1-p)**r.

    `sample` draws Gamma(total_count, exp(-logits)) rates with nabla's generator, then Poisson
    counts on the host with NumPy (as `Poisson.sample`).

    Args:
        total_count: the number of failures r, >= 0 (need not be an integer).
        probs: the success probability, in [0, 1).
        logits: the log-odds of success (give exactly one of probs and logits).
        validate_args: check the parameters (see `Distribution`).

    Example:
        >>> NegativeBinomial(3.0, probs=nabla.tensor([0.25])).mean  # r p / (1 - p)
        Tensor([1.], dtype=float32)
    """

    arg_constraints = {
        "total_count": constraints.greater_than_eq(0),
        "probs": constraints.half_open_interval(0.0, 1.0),
        "logits": constraints.real,
    }
    support = constraints.nonnegative_integer
    _expand_params = ("total_count", "probs", "logits")

    def __init__(
        self, total_count: Any, probs: Any = None, logits: Any = None, validate_args: bool | None = None
    ) -> None:
        self._init_params(probs, logits, validate_args, total_count)

    @property
    def param_shape(self) -> Size:
        return Size(self._param.shape)

    @property
    def mean(self) -> Tensor:
        return self.total_count * self.logits.exp()

    @property
    def mode(self) -> Tensor:
        return ops.clamp(((self.total_count - 1) * self.logits.exp()).floor(), 0.0)

    @property
    def variance(self) -> Tensor:
        return self.mean / ops.sigmoid(-self.logits)

    @lazy_property
    def _gamma(self) -> Gamma:
        return Gamma(self.total_count, (-self.logits).exp(), validate_args=False)

    def sample(self, sample_shape: Any = ()) -> Tensor:
        with no_grad():
            rate = host_values(self._gamma.sample(sample_shape))
        draws = host_rng().poisson(rate.astype("float64"))
        return ops.tensor(draws.astype(_dt.to_numpy_dtype(self._param.dtype)), dtype=self._param.dtype)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        r, logits = self.total_count, self.logits
        log_unnormalized = r * ops.logsigmoid(-logits) + value * ops.logsigmoid(logits)
        log_normalization = -ops.lgamma(r + value) + ops.lgamma(1.0 + value) + ops.lgamma(r)
        log_normalization = ops.where(r + value == 0.0, 0.0, log_normalization)
        return log_unnormalized - log_normalization
