"""The multinomial distribution."""

from __future__ import annotations

import math
from typing import Any

from .. import ops
from ..core.tensor import Size, Tensor
from . import constraints
from .binomial import Binomial
from .categorical import Categorical
from .distribution import Distribution
from .utils import size

__all__ = ["Multinomial"]


class Multinomial(Distribution):
    """Counts of each of K categories in `total_count` independent Categorical(`probs`) draws:
    P(x) = n! / prod(x_i!) * prod(p_i**x_i) for counts x summing to n.

    `log_prob` does not need `total_count` (it is read off the counts), so any count vectors
    can be scored, as in torch.

    Args:
        total_count: the number of draws, a Python int (the same for the whole batch).
        probs: non-negative weights, shape (*batch_shape, K) (normalized over the last dim).
        logits: unnormalized log-probabilities, shape (*batch_shape, K).
        validate_args: check the parameters (see `Distribution`).

    Example:
        >>> d = Multinomial(10, probs=nabla.tensor([0.2, 0.3, 0.5]))
        >>> d.sample().sum()  # 10 counts
        >>> d.log_prob(nabla.tensor([2.0, 3.0, 5.0]))
    """

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}

    def __init__(
        self, total_count: int = 1, probs: Any = None, logits: Any = None, validate_args: bool | None = None
    ) -> None:
        if not isinstance(total_count, int) or isinstance(total_count, bool):
            raise NotImplementedError("inhomogeneous total_count is not supported")
        self.total_count = total_count
        self._categorical = Categorical(probs=probs, logits=logits, validate_args=validate_args)
        self._binomial = Binomial(total_count=total_count, probs=self.probs, validate_args=False)
        batch_shape = self._categorical.batch_shape
        event_shape = self._categorical.param_shape[-1:]
        # (the parameters were checked by the Categorical)
        super().__init__(batch_shape, event_shape, validate_args=False)
        self._validate_args = self._categorical._validate_args

    def expand(self, batch_shape: Any, _instance: Any = None) -> Multinomial:
        new = self._get_checked_instance(Multinomial, _instance)
        new.total_count = self.total_count
        new._categorical = self._categorical.expand(batch_shape)
        new._binomial = Binomial(total_count=self.total_count, probs=new.probs, validate_args=False)
        Distribution.__init__(new, batch_shape, self._event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @constraints.dependent_property(is_discrete=True, event_dim=1)
    def support(self) -> constraints.Constraint:
        return constraints.multinomial(self.total_count)

    @property
    def logits(self) -> Tensor:
        return self._categorical.logits

    @property
    def probs(self) -> Tensor:
        return self._categorical.probs

    @property
    def param_shape(self) -> Size:
        return self._categorical.param_shape

    @property
    def mean(self) -> Tensor:
        return self.probs * self.total_count

    @property
    def variance(self) -> Tensor:
        return self.total_count * self.probs * (1 - self.probs)

    def sample(self, sample_shape: Any = ()) -> Tensor:
        k = self._event_shape[0]
        shape = tuple(self._extended_shape(sample_shape))
        if self.total_count == 0:
            return ops.zeros(shape, dtype=self.probs.dtype)
        draws = self._categorical.sample((self.total_count, *size(sample_shape)))
        return ops.one_hot(draws, k).astype(self.probs.dtype).sum(0).reshape(shape)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        shape = ops.broadcast_shapes(tuple(self.logits.shape), tuple(value.shape))
        logits, value = ops.broadcast_to(self.logits, shape), ops.broadcast_to(value, shape)
        log_factorial_n = ops.lgamma(value.sum(-1) + 1)
        log_factorial_xs = ops.lgamma(value + 1).sum(-1)
        # (a category of probability 0 that was not drawn contributes 0, not 0 * -inf)
        logits = ops.where(ops.logical_and(value == 0, logits == float("-inf")), 0.0, logits)
        return log_factorial_n - log_factorial_xs + (logits * value).sum(-1)

    def entropy(self) -> Tensor:
        n = float(self.total_count)
        term1 = n * self._categorical.entropy() - math.lgamma(n + 1)
        support = self._binomial.enumerate_support(expand=False)[1:]
        binomial_probs = self._binomial.log_prob(support).exp()
        weights = ops.lgamma(support + 1)
        return term1 + (binomial_probs * weights).sum((0, -1))
